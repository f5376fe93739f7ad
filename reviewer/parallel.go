package reviewer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/conc/panics"
	"github.com/sourcegraph/conc/pool"
)

// Quorum is how the verdicts of parallel reviewers combine.
type Quorum int

// The quorums. Failed runs never vote: they are counted in
// Combined.FailedRuns, and with no vote at all the combined outcome is
// Failed.
const (
	// All passes only when every reviewer that answered said PASS.
	All Quorum = iota
	// Majority passes when more reviewers said PASS than FAIL; a tie
	// fails.
	Majority
)

// String returns "all" or "majority".
func (q Quorum) String() string {
	switch q {
	case All:
		return "all"
	case Majority:
		return "majority"
	}
	return fmt.Sprintf("Quorum(%d)", int(q))
}

// Combined is the outcome of several reviewers. Its Result holds the
// combined Outcome and Verdict, the findings of every reviewer that answered
// (duplicates by file and summary merged, blocking wins), each one's review
// under a heading that names its model, the refused tool calls of all, the
// summed cost and tokens, and the wall time of the whole batch; Model lists
// the models.
type Combined struct {
	Result
	Quorum                           Quorum
	PassVotes, FailVotes, FailedRuns int
}

// RunParallel runs every spec at once on a pool of at most limit goroutines
// (limit <= 0 means one per spec), so the batch takes as long as its slowest
// reviewer rather than the sum. Each run is also bound by its own Spec's
// Limiter, which is how a global cap across sessions applies here too.
//
// results are in the order of specs (each Result's Index says which spec it
// came from). A panic inside one run is that run's failure, not the
// caller's.
func RunParallel(ctx context.Context, specs []Spec, limit int, quorum Quorum) (Combined, []Result) {
	if len(specs) == 0 {
		c := Combine(nil, quorum)
		return c, nil
	}
	if limit <= 0 || limit > len(specs) {
		limit = len(specs)
	}
	start := time.Now()
	// A v0.3.0 pool cannot be reused after Wait, so each batch has its own.
	p := pool.NewWithResults[Result]().WithMaxGoroutines(limit)
	for i, s := range specs {
		p.Go(func() Result {
			var (
				r Result
				c panics.Catcher
			)
			c.Try(func() { r = Run(ctx, s) })
			if rec := c.Recovered(); rec != nil {
				r = Result{Model: s.Model, Outcome: Failed, ExitCode: -1, Err: fmt.Errorf("reviewer run panicked: %w", rec.AsError())}
			}
			r.Index = i
			return r
		})
	}
	results := p.Wait()
	// The pool returns results in completion order in v0.3.0.
	slices.SortFunc(results, func(a, b Result) int { return a.Index - b.Index })
	c := Combine(results, quorum)
	c.Duration = time.Since(start)
	return c, results
}

// Combine applies quorum to results. It is pure: RunParallel uses it, and
// so can a caller that gathered results some other way. Duration is the
// longest of the results'.
func Combine(results []Result, quorum Quorum) Combined {
	c := Combined{Quorum: quorum}
	var (
		models  []string
		errs    []error
		ledger  Ledger
		reviews []string
	)
	for _, r := range results {
		models = append(models, r.Model)
		c.Denials = append(c.Denials, r.Denials...)
		c.CostUSD += r.CostUSD
		c.InputTokens += r.InputTokens
		c.OutputTokens += r.OutputTokens
		c.Duration = max(c.Duration, r.Duration)
		switch r.Outcome {
		case Pass:
			c.PassVotes++
		case Fail:
			c.FailVotes++
		default:
			c.FailedRuns++
			errs = append(errs, fmt.Errorf("%s: %w", r.Model, r.Err))
			continue
		}
		ledger.Add(1, r.Findings)
		if r.Review != "" {
			reviews = append(reviews, "### "+r.Model+"\n\n"+r.Review)
		}
	}
	c.Model = strings.Join(models, ",")
	c.Review = strings.Join(reviews, "\n\n")
	c.ExitCode = 0
	for _, e := range ledger.Open() {
		c.Findings = append(c.Findings, e.Finding)
	}
	votes := c.PassVotes + c.FailVotes
	var pass bool
	switch quorum {
	case Majority:
		pass = c.PassVotes > c.FailVotes
	default:
		pass = c.FailVotes == 0
	}
	switch {
	case votes == 0:
		c.Outcome = Failed
		c.Findings = nil
		c.ExitCode = -1
		c.Err = errors.Join(errs...)
		if c.Err == nil {
			c.Err = errors.New("reviewer: no reviewer to run")
		}
		c.Err = fmt.Errorf("no reviewer answered (%d failed): %w", c.FailedRuns, c.Err)
	case pass:
		c.Outcome, c.Verdict = Pass, VerdictPass
	default:
		c.Outcome, c.Verdict = Fail, VerdictFail
	}
	return c
}
