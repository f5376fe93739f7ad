package loop

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/templates"
)

// The loop's small texts: the words its messages are filled with (end
// reasons, budget details, iteration counts, the budgets summary), each
// rendered from templates so that a project can reword them too.

// iterations is "1 iteration" or "N iterations", as the templates word it.
func iterations(t templates.Set, n int) string {
	name := templates.LoopIterationCount
	if n == 1 {
		name = templates.LoopIterationCountOne
	}
	return say(t, name, map[string]string{"count": strconv.Itoa(n)})
}

// EndReason describes in words how an ended loop ended, for `drover loop
// status`; it is empty for a loop still running.
func EndReason(s State, t templates.Set) (string, error) {
	vars := map[string]string{
		"outcome":       string(s.Outcome),
		"status":        s.LastStatus,
		"status_reason": s.LastStatusReason,
		"stuck_run":     iterations(t, s.StuckIterations),
	}
	var name string
	switch s.Outcome {
	case Running:
		return "", nil
	case Done:
		name = templates.LoopEndDone
	case MaxIterationsSpent, MaxMinutesSpent, MaxUSDSpent, BudgetExhausted:
		name = templates.LoopEndBudget
	case Converged:
		name = templates.LoopEndConverged
	case Stuck:
		name = templates.LoopEndStuck
	case Cancelled:
		name = templates.LoopEndCancelled
	default:
		return string(s.Outcome), nil
	}
	text, err := t.Render(name, vars)
	if err != nil {
		return "", fmt.Errorf("loop end reason: %w", err)
	}
	return text, nil
}

// spent returns the first budget s has used up after the iteration that
// just ended, and what it used, or Running when none is.
func spent(s State, f Facts, t templates.Set) (Outcome, string, error) {
	vars := map[string]string{
		"iteration":       strconv.Itoa(s.Iteration),
		"max_iterations":  strconv.Itoa(s.MaxIterations),
		"elapsed_minutes": strconv.Itoa(elapsedMinutes(s, f.Now)),
		"max_minutes":     strconv.Itoa(s.MaxMinutes),
		"cost_usd":        dollars(s.CostUSD),
		"max_usd":         dollars(s.MaxUSD),
		"status_reason":   clip(f.StatusReason, maxStatusReason),
	}
	var outcome Outcome
	var name string
	switch {
	case s.Iteration >= s.MaxIterations:
		outcome, name = MaxIterationsSpent, templates.LoopSpentIterations
	case s.MaxMinutes > 0 && !s.StartedAt.IsZero() && f.Now.Sub(s.StartedAt) >= time.Duration(s.MaxMinutes)*time.Minute:
		outcome, name = MaxMinutesSpent, templates.LoopSpentMinutes
	case s.MaxUSD > 0 && s.CostUSD >= s.MaxUSD:
		outcome, name = MaxUSDSpent, templates.LoopSpentUSD
	case f.Status == StatusBudgetExhausted:
		if vars["status_reason"] == "" {
			// The status word alone: there is no reason to give.
			return BudgetExhausted, string(BudgetExhausted), nil
		}
		outcome, name = BudgetExhausted, templates.LoopSpentExhausted
	default:
		return Running, "", nil
	}
	detail, err := t.Render(name, vars)
	if err != nil {
		return Running, "", fmt.Errorf("loop budget detail: %w", err)
	}
	return outcome, detail, nil
}

// budgets summarises the budgets in force, for the agent.
func budgets(s State, f Facts, t templates.Set) string {
	vars := map[string]string{
		"iteration":       strconv.Itoa(s.Iteration),
		"max_iterations":  strconv.Itoa(s.MaxIterations),
		"elapsed_minutes": strconv.Itoa(elapsedMinutes(s, f.Now)),
		"max_minutes":     strconv.Itoa(s.MaxMinutes),
		"cost_usd":        dollars(max(s.CostUSD, f.CostUSD)),
		"max_usd":         dollars(s.MaxUSD),
	}
	parts := []string{say(t, templates.LoopBudgetsIterations, vars)}
	if s.MaxMinutes > 0 {
		parts = append(parts, say(t, templates.LoopBudgetsMinutes, vars))
	}
	if s.MaxUSD > 0 {
		parts = append(parts, say(t, templates.LoopBudgetsUSD, vars))
	}
	return strings.Join(parts, "; ")
}

// say renders template name for a piece of a larger text. Every name
// passed here is a built-in one, so when t lacks it (the zero Set) the
// built-in stands in; the larger text's own render reports such a set.
func say(t templates.Set, name string, vars map[string]string) string {
	text, err := t.Render(name, vars)
	if err != nil {
		text, _ = templates.Defaults().Render(name, vars)
	}
	return text
}

func formatSpend(t templates.Set, v float64) string {
	if v <= 0 {
		return say(t, templates.LoopSpendUnknown, nil)
	}
	return "$" + dollars(v)
}
