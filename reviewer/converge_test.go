package reviewer

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
	"github.com/drover-dev/drover/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
	goldenfile.Check(t, path, []byte(got), *update)
}

func TestNextModel(t *testing.T) {
	var got []string
	for n := range 5 {
		got = append(got, NextModel(nil, n))
	}
	if want := []string{"opus", "sonnet", "opus", "sonnet", "opus"}; !slices.Equal(got, want) {
		t.Errorf("default alternation %v, want %v", got, want)
	}
	three := []string{"a", "b", "c"}
	if NextModel(three, 4) != "b" || NextModel(three, -3) != "a" || NextModel([]string{"haiku"}, 9) != "haiku" {
		t.Error("NextModel does not cycle through a configured list")
	}
	// A new cycle starts again at 0: the strongest model first.
	if NextModel(nil, 0) != "opus" {
		t.Error("a new cycle does not start with opus")
	}
}

func TestClean(t *testing.T) {
	minor := Finding{Severity: SeverityMinor, Summary: "nit"}
	blocking := Finding{Severity: SeverityBlocking, Summary: "bug"}
	tests := []struct {
		name               string
		r                  Result
		blockingOnly, want bool
	}{
		{"pass with nothing", Result{Outcome: Pass, Verdict: VerdictPass}, true, true},
		{"pass with nothing, strict", Result{Outcome: Pass, Verdict: VerdictPass}, false, true},
		{"fail with only nits is clean by default", Result{Outcome: Fail, Verdict: VerdictFail, Findings: []Finding{minor, minor}}, true, true},
		{"fail with only nits, strict", Result{Outcome: Fail, Verdict: VerdictFail, Findings: []Finding{minor}}, false, false},
		{"pass with nits, strict", Result{Outcome: Pass, Verdict: VerdictPass, Findings: []Finding{minor}}, false, false},
		{"pass with a blocking finding is not clean", Result{Outcome: Pass, Verdict: VerdictPass, Findings: []Finding{blocking}}, true, false},
		{"fail with a blocking finding", Result{Outcome: Fail, Verdict: VerdictFail, Findings: []Finding{minor, blocking}}, true, false},
		{"fail with no reason is not clean", Result{Outcome: Fail, Verdict: VerdictFail}, true, false},
		{"failed run", Result{Outcome: Failed}, true, false},
		{"zero result", Result{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.r, tt.blockingOnly); got != tt.want {
				t.Errorf("Clean = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLedger(t *testing.T) {
	var l Ledger
	l.Add(1, []Finding{
		{Severity: SeverityMinor, File: "./b.go", Line: 3, Summary: "Rename x."},
		{Severity: SeverityBlocking, File: "a.go", Line: 9, Summary: "nil deref"},
		{Severity: SeverityMinor, File: "c.go", Summary: "typo"},
		{Severity: SeverityMinor, File: "b.go", Summary: "rename   X"}, // same as the first
	})
	if len(l.Findings) != 3 {
		t.Fatalf("%d entries after dedupe, want 3: %+v", len(l.Findings), l.Findings)
	}
	l.Add(2, []Finding{
		{Severity: SeverityBlocking, File: "b.go", Summary: "rename x"}, // still there, now blocking
		{Severity: SeverityMinor, File: "d.go", Summary: "new nit"},
	})
	open := l.Open()
	var got []string
	for _, e := range open {
		got = append(got, fmt.Sprintf("%s %s %d-%d x%d", e.Severity, e.File, e.FirstReview, e.LastReview, e.Times))
	}
	want := []string{"blocking ./b.go 1-2 x2", "minor d.go 2-2 x1"}
	if !slices.Equal(got, want) {
		t.Errorf("Open() = %q, want %q (a.go and c.go were resolved)", got, want)
	}
	if l.Latest != 2 {
		t.Errorf("Latest = %d", l.Latest)
	}

	var empty Ledger
	if empty.Open() != nil {
		t.Error("an empty ledger has open findings")
	}
	empty.Add(1, nil)
	if empty.Open() != nil || empty.Latest != 1 {
		t.Error("a clean review left open findings")
	}
}

func TestLedgerIsBounded(t *testing.T) {
	var l Ledger
	for review := 1; review <= 30; review++ {
		fs := make([]Finding, 50)
		for i := range fs {
			fs[i] = Finding{Severity: SeverityMinor, Summary: "finding " + strconv.Itoa(review*1000+i)}
		}
		l.Add(review, fs)
	}
	if len(l.Findings) != MaxLedgerEntries {
		t.Fatalf("%d entries, want the cap %d", len(l.Findings), MaxLedgerEntries)
	}
	if open := l.Open(); len(open) != 50 {
		t.Errorf("the latest review's findings were dropped: %d open", len(open))
	}
}

func TestRecheckPrompt(t *testing.T) {
	var l Ledger
	l.Add(1, []Finding{
		{Severity: SeverityBlocking, File: "main.go", Line: 12, Summary: "nil map\nwrite"},
		{Severity: SeverityMinor, Summary: "docs are thin"},
	})
	text, err := RecheckPrompt(templates.Defaults(), l.Open(), "diff --git a/main.go b/main.go\n+m := map[string]int{}\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- [blocking] main.go:12: nil map write", "- [minor] docs are thin", "+m := map[string]int{}", "these 2 finding(s)"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	golden(t, text+"\n")

	text, err = RecheckPrompt(templates.Defaults(), nil, strings.Repeat("+x\n", MaxDiffBytes))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "(none: the previous review found nothing)") || !strings.Contains(text, "[diff cut:") || len(text) > MaxDiffBytes+4096 {
		t.Errorf("empty ledger or long diff not handled (%d bytes)", len(text))
	}
	if text, _ := RecheckPrompt(templates.Defaults(), nil, ""); !strings.Contains(text, "(no changes since the previous review)") {
		t.Error("an empty diff is not said so")
	}
	if _, err := RecheckPrompt(templates.Set{}, nil, ""); err == nil {
		t.Error("no error without the template")
	}
	many := make([]LedgerEntry, MaxRecheckFindings+2)
	for i := range many {
		many[i].Severity, many[i].Summary = SeverityMinor, fmt.Sprint("nit ", i)
	}
	text, err = RecheckPrompt(templates.Defaults(), many, "")
	if err != nil || !strings.Contains(text, "- [minor] nit 49\n- ... and 2 more\n") || strings.Contains(text, "nit 50") {
		t.Errorf("a long list of findings is not cut at %d (%v):\n%s", MaxRecheckFindings, err, text)
	}
}

// TestConvergesOnNits runs a scripted reviewer that always answers FAIL with
// a few random minor nits. With the default policy (blockingOnly) such
// reviews are clean, so the cycle ends after the minimum of two reviews;
// strict counting never converges within the limit.
func TestConvergesOnNits(t *testing.T) {
	const maxReviews = 4
	for _, tt := range []struct {
		blockingOnly bool
		want         int // reviews run; maxReviews+1 means it never converged
	}{
		{blockingOnly: true, want: 2},
		{blockingOnly: false, want: maxReviews + 1},
	} {
		t.Run(fmt.Sprintf("blockingOnly=%v", tt.blockingOnly), func(t *testing.T) {
			var (
				ledger Ledger
				clean  int
				models []string
			)
			reviews := 0
			for reviews < maxReviews && clean < 2 {
				s := fake("FAKE_NITS=" + strconv.Itoa(reviews+1))
				s.Model = NextModel(nil, reviews)
				reviews++
				r := Run(context.Background(), s)
				if r.Outcome != Fail || len(r.Findings) == 0 {
					t.Fatalf("review %d: %s %v %v", reviews, r.Outcome, r.Findings, r.Err)
				}
				models = append(models, r.Model)
				ledger.Add(reviews, r.Findings)
				if Clean(r, tt.blockingOnly) {
					clean++
				} else {
					clean = 0
				}
			}
			got := reviews
			if clean < 2 {
				got = maxReviews + 1
			}
			if got != tt.want {
				t.Fatalf("converged after %d review(s) (models %v), want %d", got, models, tt.want)
			}
			if models[0] != "opus" || (len(models) > 1 && models[1] != "sonnet") {
				t.Errorf("models %v do not alternate from opus", models)
			}
		})
	}
}
