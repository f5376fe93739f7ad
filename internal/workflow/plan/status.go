package plan

import (
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
)

// Status describes s, the plan of session f.SessionID, for `drover plan
// status` and the answer of every plan command, with msg as its message.
// What only the caller knows (whether the review runs now, the totals of
// the run log) it fills in itself.
func Status(s State, f Facts, msg string) api.PlanStatus {
	st := api.PlanStatus{SessionID: f.SessionID, Message: msg, TakenBy: s.TakenBy}
	if s.PlanID == "" {
		return st
	}
	st.PlanID, st.PlanDir, st.Active = s.PlanID, f.PlanDir, s.Active()
	st.Phase = string(s.Phase)
	if s.NextPhase != PhaseNone {
		np := string(s.NextPhase)
		st.NextPhase = &np
	}
	if s.CurrentTask != "" {
		ct := s.CurrentTask
		st.CurrentTask = &ct
	}
	st.PhaseIteration, st.MaxReviews, st.ConsecutiveClean, st.TDD = s.Iteration, s.MaxReviews, s.ConsecutiveClean, s.TDD
	st.BudgetUSD, st.Standalone = s.BudgetUSD, s.Standalone
	st.CleanStreak = f.cleanStreak()
	st.ReviewModel = reviewer.NextModel(f.Models, s.ModelIndex)
	if r := s.Review; r != nil {
		st.ReviewRunning = true
		st.Review = &api.PlanReview{Kind: string(r.Kind), Iteration: r.Iteration, Model: r.Model, Task: r.Task}
	}
	st.LastReview = s.LastRun
	st.Cycle = s.Ledger.Cycle
	st.OpenFindings = len(s.Ledger.Open())
	return st
}

// Findings lists the findings of s's current cycle, then of its past
// cycles, newest first.
func Findings(s State) []api.PlanFinding {
	out := findingsOf(CycleLedger{Kind: s.LedgerKind, Task: s.LedgerTask, Ledger: s.Ledger}, true)
	for i := len(s.PastLedgers) - 1; i >= 0; i-- {
		out = append(out, findingsOf(s.PastLedgers[i], false)...)
	}
	return out
}

func findingsOf(c CycleLedger, current bool) []api.PlanFinding {
	l := c.Ledger
	out := make([]api.PlanFinding, 0, len(l.Findings))
	for _, e := range l.Findings {
		out = append(out, api.PlanFinding{Severity: e.Severity, File: e.File, Line: e.Line, Summary: e.Summary, FirstReview: e.FirstReview, LastReview: e.LastReview, Times: e.Times, Open: e.LastReview == l.Latest, Cycle: l.Cycle, Kind: string(c.Kind), Task: c.Task, Current: current})
	}
	return out
}
