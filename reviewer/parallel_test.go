package reviewer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRunParallel(t *testing.T) {
	specs := []Spec{
		fake("FAKE_VERDICT=PASS"),
		fake("FAKE_VERDICT=FAIL", `FAKE_FINDINGS=[{"severity":"blocking","file":"a.go","summary":"bug"}]`),
		fake("FAKE_EXIT=1"),
	}
	specs[0].Model, specs[1].Model, specs[2].Model = "opus", "sonnet", "haiku"
	global := NewLimiter(2)
	for i := range specs {
		specs[i].Limiter = global
	}

	c, results := RunParallel(context.Background(), specs, 0, Majority)
	if len(results) != 3 {
		t.Fatalf("%d results", len(results))
	}
	for i, r := range results {
		if r.Index != i || r.Model != specs[i].Model {
			t.Errorf("results[%d] has index %d model %q: not in spec order", i, r.Index, r.Model)
		}
	}
	if results[0].Outcome != Pass || results[1].Outcome != Fail || results[2].Outcome != Failed {
		t.Errorf("outcomes %s %s %s", results[0].Outcome, results[1].Outcome, results[2].Outcome)
	}
	// One pass and one fail is a tie: Majority fails; the failed run did not vote.
	if c.Outcome != Fail || c.PassVotes != 1 || c.FailVotes != 1 || c.FailedRuns != 1 {
		t.Errorf("combined %s with %d/%d/%d votes, want fail 1/1/1", c.Outcome, c.PassVotes, c.FailVotes, c.FailedRuns)
	}
	if len(c.Findings) != 1 || c.Model != "opus,sonnet,haiku" || c.CostUSD != 0.75 {
		t.Errorf("combined findings %v model %q cost %v", c.Findings, c.Model, c.CostUSD)
	}
	if global.InUse() != 0 {
		t.Errorf("%d limiter slots still taken", global.InUse())
	}
}

func TestRunParallelNoSpecs(t *testing.T) {
	c, results := RunParallel(context.Background(), nil, 4, All)
	if c.Outcome != Failed || c.Err == nil || results != nil {
		t.Errorf("empty batch: %s %v %v", c.Outcome, c.Err, results)
	}
}

func TestCombine(t *testing.T) {
	pass := Result{Model: "a", Outcome: Pass, Verdict: VerdictPass, Duration: time.Second, InputTokens: 100, OutputTokens: 10}
	fail := Result{Model: "b", Outcome: Fail, Verdict: VerdictFail, Duration: 3 * time.Second, Findings: []Finding{
		{Severity: SeverityMinor, File: "x.go", Summary: "Rename it."},
	}}
	fail2 := Result{Model: "c", Outcome: Fail, Verdict: VerdictFail, Findings: []Finding{
		{Severity: SeverityBlocking, File: "./x.go", Summary: "rename  it"},
	}}
	broken := Result{Model: "d", Outcome: Failed, Err: errors.New("exit 1"), InputTokens: 7, OutputTokens: 1}
	tests := []struct {
		name    string
		results []Result
		quorum  Quorum
		want    Outcome
	}{
		{"all: every vote passes", []Result{pass, pass}, All, Pass},
		{"all: one fail fails", []Result{pass, pass, fail}, All, Fail},
		{"all: a failed run is no vote", []Result{pass, broken}, All, Pass},
		{"all: only failed runs is Failed", []Result{broken, broken}, All, Failed},
		{"majority: more passes", []Result{pass, pass, fail}, Majority, Pass},
		{"majority: tie fails", []Result{pass, fail, broken}, Majority, Fail},
		{"majority: more fails", []Result{pass, fail, fail2}, Majority, Fail},
		{"majority: nothing answered", []Result{broken}, Majority, Failed},
		{"none at all", nil, All, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Combine(tt.results, tt.quorum)
			if c.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s", c.Outcome, tt.want)
			}
			if (c.Outcome == Failed) != (c.Err != nil) {
				t.Errorf("err %v with outcome %s", c.Err, c.Outcome)
			}
			if c.Outcome == Failed && c.Findings != nil {
				t.Errorf("a Failed combination has findings %v", c.Findings)
			}
		})
	}
	c := Combine([]Result{pass, fail, fail2}, All)
	if len(c.Findings) != 1 || !c.Findings[0].Blocking() || c.Duration != 3*time.Second {
		t.Errorf("merged findings %+v (want one, blocking), duration %v (want the longest)", c.Findings, c.Duration)
	}
	// Tokens spent count whether or not the run answered.
	if c := Combine([]Result{pass, broken, pass}, All); c.InputTokens != 207 || c.OutputTokens != 21 {
		t.Errorf("combined tokens %d/%d, want 207/21", c.InputTokens, c.OutputTokens)
	}
	if c := Combine([]Result{broken}, All); !strings.Contains(c.Err.Error(), "d: exit 1") {
		t.Errorf("err %v does not name the failed model", c.Err)
	}
}

// TestRunParallelPanicIsAFailure checks that a panic in one run (here from
// a nil context, which Run does not expect) is that run's Failed result.
func TestRunParallelPanicIsAFailure(t *testing.T) {
	s := fake()
	s.Limiter = NewLimiter(1)
	//lint:ignore SA1012 a nil context is the point: it makes Run panic.
	c, results := RunParallel(nil, []Spec{s}, 1, All)
	if results[0].Outcome != Failed || !strings.Contains(fmt.Sprint(results[0].Err), "panicked") || c.Outcome != Failed {
		t.Fatalf("got %s %v", results[0].Outcome, results[0].Err)
	}
}

func TestQuorumString(t *testing.T) {
	got := []string{All.String(), Majority.String(), Quorum(7).String()}
	if !slices.Equal(got, []string{"all", "majority", "Quorum(7)"}) {
		t.Errorf("got %v", got)
	}
}
