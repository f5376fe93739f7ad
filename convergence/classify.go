// Package convergence turns what an agent did in each loop iteration into
// numbers (Metrics), a short account of the iteration (Reflection), and a
// judgement of where the loop is going (Status): converged, stuck on a
// plateau, thrashing on the same failure, exploring, progressing, or out of
// budget.
//
// Everything here is pure: the caller reads the transcript (see
// internal/transcript), keeps the history, and decides what to do with the
// status (the router maps it to a role).
package convergence

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Status is where a loop stands after an iteration.
type Status string

// The statuses.
const (
	// ConvergedSuccess: the last iteration's tests pass at the success
	// threshold and nothing known is broken.
	ConvergedSuccess Status = "converged_success"
	// StuckPlateau: the pass rate has barely moved over the plateau window.
	StuckPlateau Status = "stuck_plateau"
	// Thrashing: the same failure keeps coming back without the pass rate
	// improving.
	Thrashing Status = "thrashing"
	// Exploring: too little history to judge, or each iteration fails
	// differently.
	Exploring Status = "exploring"
	// BudgetExhausted: iterations, time or money ran out.
	BudgetExhausted Status = "budget_exhausted"
	// Progressing: the pass rate is rising by at least the minimum
	// improvement.
	Progressing Status = "progressing"
)

// Statuses lists every Status, for validating configuration.
func Statuses() []Status {
	return []Status{ConvergedSuccess, StuckPlateau, Thrashing, Exploring, BudgetExhausted, Progressing}
}

// Thresholds tune Classify and Reflect. A zero field means its default
// (see DefaultThresholds), so the zero value is ready to use.
type Thresholds struct {
	// SuccessPassRate is the test pass rate that counts as success (0.95).
	SuccessPassRate float64 `koanf:"success_pass_rate" json:"success_pass_rate,omitempty"`
	// RequireLintClean makes success also need zero lint issues when a
	// lint run was seen.
	RequireLintClean bool `koanf:"require_lint_clean" json:"require_lint_clean,omitempty"`
	// PlateauWindow is how many iterations the pass rate is compared across
	// (3): a plateau needs PlateauWindow+1 iterations of history.
	PlateauWindow int `koanf:"plateau_window" json:"plateau_window,omitempty"`
	// MinImprovement is the rise in pass rate (0..1) over the window that
	// counts as progress (0.05: five percentage points).
	MinImprovement float64 `koanf:"min_improvement" json:"min_improvement,omitempty"`
	// ThrashRepeats is how many iterations in a row ending on the same
	// failure make thrashing (3).
	ThrashRepeats int `koanf:"thrash_repeats" json:"thrash_repeats,omitempty"`
	// MinToolCalls is the fewest tool calls an iteration needs for a
	// reflection to be worth writing (10).
	MinToolCalls int `koanf:"min_tool_calls" json:"min_tool_calls,omitempty"`
}

// DefaultThresholds returns the thresholds seed 004 describes.
func DefaultThresholds() Thresholds {
	return Thresholds{SuccessPassRate: 0.95, PlateauWindow: 3, MinImprovement: 0.05, ThrashRepeats: 3, MinToolCalls: 10}
}

// WithDefaults fills the zero fields from DefaultThresholds.
func (th Thresholds) WithDefaults() Thresholds {
	d := DefaultThresholds()
	if th.SuccessPassRate == 0 {
		th.SuccessPassRate = d.SuccessPassRate
	}
	if th.PlateauWindow == 0 {
		th.PlateauWindow = d.PlateauWindow
	}
	if th.MinImprovement == 0 {
		th.MinImprovement = d.MinImprovement
	}
	if th.ThrashRepeats == 0 {
		th.ThrashRepeats = d.ThrashRepeats
	}
	if th.MinToolCalls == 0 {
		th.MinToolCalls = d.MinToolCalls
	}
	return th
}

// Validate reports every out-of-range field, by its config name.
func (th Thresholds) Validate() error {
	var errs []error
	if th.SuccessPassRate < 0 || th.SuccessPassRate > 1 || math.IsNaN(th.SuccessPassRate) {
		errs = append(errs, fmt.Errorf("success_pass_rate %v is not between 0 and 1", th.SuccessPassRate))
	}
	if th.PlateauWindow < 0 {
		errs = append(errs, fmt.Errorf("plateau_window %d is negative", th.PlateauWindow))
	}
	if th.MinImprovement < 0 || th.MinImprovement > 1 || math.IsNaN(th.MinImprovement) {
		errs = append(errs, fmt.Errorf("min_improvement %v is not between 0 and 1", th.MinImprovement))
	}
	if th.ThrashRepeats < 0 || th.ThrashRepeats == 1 {
		errs = append(errs, fmt.Errorf("thrash_repeats %d must be 2 or more", th.ThrashRepeats))
	}
	if th.MinToolCalls < 0 {
		errs = append(errs, fmt.Errorf("min_tool_calls %d is negative", th.MinToolCalls))
	}
	return errors.Join(errs...)
}

// Budget is what a loop may spend and what it has spent. A zero limit
// means no limit.
type Budget struct {
	MaxIterations int
	MaxMinutes    float64
	MaxUSD        float64

	// Iteration is the current iteration; zero means the Iteration of the
	// last metrics in the history.
	Iteration int
	Elapsed   time.Duration
	CostUSD   float64
}

// Exhausted says whether a limit is reached, and which, in words.
func (b Budget) Exhausted() (bool, string) {
	switch {
	case b.MaxIterations > 0 && b.Iteration >= b.MaxIterations:
		return true, fmt.Sprintf("iteration %d reached the budget of %d iterations", b.Iteration, b.MaxIterations)
	case b.MaxMinutes > 0 && b.Elapsed.Minutes() >= b.MaxMinutes:
		return true, fmt.Sprintf("%s elapsed reached the budget of %g minutes", b.Elapsed.Round(time.Second), b.MaxMinutes)
	case b.MaxUSD > 0 && b.CostUSD >= b.MaxUSD:
		return true, fmt.Sprintf("$%.2f spent reached the budget of $%.2f", b.CostUSD, b.MaxUSD)
	}
	return false, ""
}

// eps absorbs float noise in rate differences (0.65-0.60 is 0.0500000004).
const eps = 1e-9

// Classify judges a loop from its metrics history (oldest first) and its
// budget, and says why in words. The checks run in this order, first
// match wins:
//
//  1. converged_success: the last iteration's pass rate is at least
//     SuccessPassRate, its build (if seen) passed, and with
//     RequireLintClean its lint (if seen) is clean. Done beats out of
//     budget.
//  2. budget_exhausted: a budget limit is reached.
//  3. thrashing: the last ThrashRepeats iterations ended on the same
//     failure (error hash) and the pass rate did not rise by
//     MinImprovement across them.
//  4. stuck_plateau: the pass rate rose by less than MinImprovement (or
//     fell) from PlateauWindow iterations before the last to the last.
//  5. exploring: the last iterations (up to PlateauWindow) each failed
//     differently, or there are fewer than two pass rates to compare.
//  6. progressing: the pass rate rose by at least MinImprovement across
//     the window.
//  7. exploring otherwise.
func Classify(history []Metrics, b Budget, th Thresholds) (Status, string) {
	th = th.WithDefaults()
	if b.Iteration == 0 && len(history) > 0 {
		b.Iteration = history[len(history)-1].Iteration
	}
	if len(history) > 0 {
		if ok, why := succeeded(history[len(history)-1], th); ok {
			return ConvergedSuccess, why
		}
	}
	if ok, why := b.Exhausted(); ok {
		return BudgetExhausted, why
	}
	if len(history) == 0 {
		return Exploring, "no iteration has been measured yet"
	}
	if s, why := thrashing(history, th); s != "" {
		return s, why
	}
	last := history[len(history)-1]
	if len(history) > th.PlateauWindow {
		first := history[len(history)-1-th.PlateauWindow]
		if known(first.TestPassRate) && known(last.TestPassRate) {
			d := last.TestPassRate - first.TestPassRate
			if d < th.MinImprovement-eps {
				if d < -eps {
					return StuckPlateau, fmt.Sprintf("test pass rate fell from %.2f to %.2f over the last %d iterations",
						first.TestPassRate, last.TestPassRate, th.PlateauWindow)
				}
				return StuckPlateau, fmt.Sprintf("test pass rate %.2f has improved by only %.2f over the last %d iterations (needs %.2f)",
					last.TestPassRate, math.Abs(d), th.PlateauWindow, th.MinImprovement)
			}
		}
	}
	window := history[max(0, len(history)-th.PlateauWindow):]
	if n := distinctFailures(window); n == len(window) && n >= 2 {
		return Exploring, fmt.Sprintf("each of the last %d iterations failed differently (%d distinct error hashes)", n, n)
	}
	span := history[max(0, len(history)-1-th.PlateauWindow):]
	firstKnown, lastKnown := -1, -1
	for i, m := range span {
		if known(m.TestPassRate) {
			if firstKnown < 0 {
				firstKnown = i
			}
			lastKnown = i
		}
	}
	switch {
	case firstKnown < 0:
		return Exploring, "no test pass rate has been measured yet"
	case firstKnown == lastKnown:
		return Exploring, fmt.Sprintf("only one test pass rate (%.2f) so far", span[firstKnown].TestPassRate)
	}
	from, to := span[firstKnown].TestPassRate, span[lastKnown].TestPassRate
	if to-from >= th.MinImprovement-eps {
		return Progressing, fmt.Sprintf("test pass rate rose from %.2f to %.2f over %s",
			from, to, plural(lastKnown-firstKnown, "iteration"))
	}
	return Exploring, fmt.Sprintf("test pass rate moved from %.2f to %.2f, less than the %.2f that counts as progress",
		from, to, th.MinImprovement)
}

func succeeded(m Metrics, th Thresholds) (bool, string) {
	if !known(m.TestPassRate) || m.TestPassRate < th.SuccessPassRate-eps {
		return false, ""
	}
	if m.BuildOK != nil && !*m.BuildOK {
		return false, ""
	}
	if th.RequireLintClean && m.LintIssues > 0 {
		return false, ""
	}
	why := fmt.Sprintf("test pass rate %.2f meets the success threshold %.2f", m.TestPassRate, th.SuccessPassRate)
	if m.TestsPassed+m.TestsFailed > 0 {
		why = fmt.Sprintf("test pass rate %.2f (%d of %d) meets the success threshold %.2f",
			m.TestPassRate, m.TestsPassed, m.TestsPassed+m.TestsFailed, th.SuccessPassRate)
	}
	if m.BuildOK != nil {
		why += " and the build passes"
	}
	return true, why
}

func thrashing(history []Metrics, th Thresholds) (Status, string) {
	n := th.ThrashRepeats
	if len(history) < n {
		return "", ""
	}
	window := history[len(history)-n:]
	h := window[0].ErrorHash
	if h == "" {
		return "", ""
	}
	for _, m := range window[1:] {
		if m.ErrorHash != h {
			return "", ""
		}
	}
	first, last := window[0].TestPassRate, window[n-1].TestPassRate
	if !known(first) || !known(last) {
		return Thrashing, fmt.Sprintf("the same failure (error hash %s) ended each of the last %d iterations", h, n)
	}
	if last-first >= th.MinImprovement-eps {
		return "", "" // the same first failure, but other tests are getting fixed
	}
	return Thrashing, fmt.Sprintf("the same failure (error hash %s) ended each of the last %d iterations and the test pass rate went from %.2f to %.2f",
		h, n, first, last)
}

// distinctFailures counts distinct error hashes, or returns 0 if any
// iteration has none.
func distinctFailures(window []Metrics) int {
	seen := map[string]bool{}
	for _, m := range window {
		if m.ErrorHash == "" {
			return 0
		}
		seen[m.ErrorHash] = true
	}
	return len(seen)
}

func known(rate float64) bool { return rate >= 0 && !math.IsNaN(rate) }
