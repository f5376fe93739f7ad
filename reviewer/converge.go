package reviewer

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/templates"
)

// DefaultModels is the alternation used when none is configured: the
// strongest model first.
var DefaultModels = []string{"opus", "sonnet"}

// NextModel returns the model for the next review of a cycle in which
// reviewsInCycle reviews already ran: models[0] first, then each in turn
// (opus, sonnet, opus, ...). A new cycle starts again at 0, so it always
// begins with the strongest model. An empty models means DefaultModels.
func NextModel(models []string, reviewsInCycle int) string {
	if len(models) == 0 {
		models = DefaultModels
	}
	if reviewsInCycle < 0 {
		reviewsInCycle = 0
	}
	return models[reviewsInCycle%len(models)]
}

// Clean reports whether a review found the work clean, which is what two
// reviews in a row must be for a cycle to end. A Failed run is never clean.
//
// With blockingOnly (the default policy) only blocking findings make a
// review unclean: a FAIL that lists nothing but minor nits is clean, so a
// reviewer that always finds some nit cannot keep a cycle going forever. A
// FAIL with no findings at all is not clean: it gives no reason, and must
// not be read as one. Without blockingOnly, clean means PASS with no
// findings of any kind.
func Clean(r Result, blockingOnly bool) bool {
	if r.Outcome != Pass && r.Outcome != Fail {
		return false
	}
	blocking := 0
	for _, f := range r.Findings {
		if f.Blocking() {
			blocking++
		}
	}
	if blockingOnly {
		return blocking == 0 && (r.Verdict == VerdictPass || len(r.Findings) > 0)
	}
	return r.Verdict == VerdictPass && len(r.Findings) == 0
}

// MaxLedgerEntries bounds a Ledger. Past it, the entries that have been
// resolved longest are dropped first.
const MaxLedgerEntries = 500

// LedgerEntry is one distinct finding of a review cycle and when it was
// reported.
type LedgerEntry struct {
	Finding
	// FirstReview and LastReview are the review numbers that first and
	// most recently reported it; Times counts the reviews that did.
	FirstReview int `json:"first_review"`
	LastReview  int `json:"last_review"`
	Times       int `json:"times"`
}

// Ledger tracks the findings of one review cycle across its reviews, so
// that each review after the first can be asked to re-check what the
// previous one found instead of reviewing the world again.
//
// The zero Ledger is empty and ready to use.
type Ledger struct {
	Cycle    int           `json:"cycle"`
	Latest   int           `json:"latest"`
	Findings []LedgerEntry `json:"findings,omitempty"`
}

// Add records the findings of review number review. Findings with the same
// file and summary (compared after normalising case, spaces and trailing
// punctuation) are one entry; a blocking report of it makes it blocking.
func (l *Ledger) Add(review int, fs []Finding) {
	l.Latest = max(l.Latest, review)
	for _, f := range fs {
		k := key(f)
		i := slices.IndexFunc(l.Findings, func(e LedgerEntry) bool { return key(e.Finding) == k })
		if i < 0 {
			l.Findings = append(l.Findings, LedgerEntry{Finding: f, FirstReview: review, LastReview: review, Times: 1})
			continue
		}
		e := &l.Findings[i]
		if e.LastReview != review {
			e.Times++
		}
		e.LastReview = max(e.LastReview, review)
		if f.Blocking() && !e.Blocking() {
			e.Severity = f.Severity
		}
		if e.Line == 0 {
			e.Line = f.Line
		}
	}
	l.trim()
}

// Open returns the findings the most recent review reported, deduplicated,
// blocking ones first, then by file, line and summary. Findings an earlier
// review reported and the latest did not are taken as resolved.
func (l Ledger) Open() []LedgerEntry {
	var open []LedgerEntry
	for _, e := range l.Findings {
		if e.LastReview == l.Latest {
			open = append(open, e)
		}
	}
	slices.SortStableFunc(open, func(a, b LedgerEntry) int {
		if a.Blocking() != b.Blocking() {
			if a.Blocking() {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Summary, b.Summary))
	})
	return open
}

func (l *Ledger) trim() {
	if len(l.Findings) <= MaxLedgerEntries {
		return
	}
	// Oldest LastReview first; stable, so earlier entries go first among
	// equals.
	slices.SortStableFunc(l.Findings, func(a, b LedgerEntry) int { return cmp.Compare(a.LastReview, b.LastReview) })
	l.Findings = slices.Clone(l.Findings[len(l.Findings)-MaxLedgerEntries:])
}

// key is the identity of a finding for deduplication.
func key(f Finding) string {
	file := strings.TrimSpace(f.File)
	if file != "" {
		file = path.Clean(strings.TrimPrefix(file, "./"))
	}
	summary := strings.ToLower(strings.Join(strings.Fields(f.Summary), " "))
	summary = strings.TrimRight(summary, ".:;!,")
	return file + "\x00" + summary
}

// Bounds on RecheckPrompt's pieces: the whole prompt travels as one argv
// string (see MaxPromptBytes).
const (
	MaxRecheckFindings = 50
	MaxDiffBytes       = 32 << 10
)

// RecheckPrompt returns the part of a review prompt that asks a reviewer to
// re-check the previous review's open findings and to review the diff since
// that review, rather than the whole work again. It renders the
// reviewer_recheck template of t, so a project can reword it.
//
// previous is typically Ledger.Open(); diffSince is `git diff` from where
// the previous review started. Both are cut to fit in a prompt.
func RecheckPrompt(t templates.Set, previous []LedgerEntry, diffSince string) (string, error) {
	// say renders one of the pieces; only an unknown name fails, and the
	// prompt's own render below reports that.
	var sayErr error
	say := func(name string, n int) string {
		text, err := t.Render(name, map[string]string{"count": strconv.Itoa(n)})
		if err != nil && sayErr == nil {
			sayErr = err
		}
		return text
	}
	var b strings.Builder
	for i, e := range previous {
		if i == MaxRecheckFindings {
			b.WriteString("- " + say(templates.ReviewerRecheckMore, len(previous)-MaxRecheckFindings) + "\n")
			break
		}
		fmt.Fprintf(&b, "- [%s] %s%s\n", e.Severity, where(e.Finding), oneLine(e.Summary))
	}
	list := strings.TrimRight(b.String(), "\n")
	if list == "" {
		list = "- " + say(templates.ReviewerRecheckNone, 0)
	}
	diff := strings.TrimSpace(diffSince)
	switch {
	case diff == "":
		diff = say(templates.ReviewerRecheckNoDiff, 0)
	case len(diff) > MaxDiffBytes:
		diff = cut(diff, MaxDiffBytes) + "\n" + say(templates.ReviewerRecheckDiffCut, len(diff)-MaxDiffBytes)
	}
	if sayErr != nil {
		return "", fmt.Errorf("recheck prompt: %w", sayErr)
	}
	text, err := t.Render(templates.ReviewerRecheck, map[string]string{
		"previous_findings": list,
		"previous_count":    strconv.Itoa(len(previous)),
		"diff_since":        diff,
	})
	if err != nil {
		return "", fmt.Errorf("recheck prompt: %w", err)
	}
	return text, nil
}

func where(f Finding) string {
	switch {
	case f.File != "" && f.Line > 0:
		return fmt.Sprintf("%s:%d: ", f.File, f.Line)
	case f.File != "":
		return f.File + ": "
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
