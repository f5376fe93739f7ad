package actors

import (
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// StatusQuery asks a session actor what `drover status` shows of its
// session; it is answered with a *StatusResult. The supervisor only
// forwards it: what each workflow shows is the actors' to say.
type StatusQuery struct{}

// StatusResult is the answer to StatusQuery.
type StatusResult struct {
	Status api.SessionStatus
	Err    error
}

// status answers a StatusQuery from the session's committed record.
func (a *sessionActor) status() *StatusResult {
	if a.loadErr != nil {
		return &StatusResult{Err: a.loadErr}
	}
	rec := a.rec
	if !a.found {
		// Task files without a record (the store was removed by hand):
		// a stopped queue.
		rec = session.Record{ID: a.id, Workflow: session.Queue}
	}
	return &StatusResult{Status: sessionStatus(rec, a.env, a.sessionDir())}
}

// sessionStatus is what status shows of rec: its workflow's state and
// iteration, its health at env's now by status.stale_after, what its
// plan's reviews or its loop cost against which budget, and the task
// files in dir.
func sessionStatus(rec session.Record, env Env, dir string) api.SessionStatus {
	root := env.Root
	state, iteration := SessionState(rec)
	st := api.SessionStatus{ID: rec.ID, Workflow: string(rec.Workflow), State: state, Iteration: iteration, UpdatedAt: rec.UpdatedAt, LastHookAt: rec.LastHookAt}
	// The id comes from the store; a bad one must not name a path outside
	// the plans folder.
	switch {
	case rec.Workflow == session.Loop:
		st.CostUSD, st.SpentUSD, st.BudgetUSD = rec.Loop.CostUSD, rec.Loop.CostUSD, rec.Loop.MaxUSD
	case rec.Workflow == session.Plan && plan.ValidPlanID(rec.Plan.PlanID):
		t := ReadPlanTotals(planDirAt(root, rec.Plan.PlanID), rec.ID)
		st.CostUSD, st.SpentUSD, st.BudgetUSD = t.SessionCostUSD, t.CostUSD, rec.Plan.BudgetUSD
	}
	st.Health = string(rec.Health(env.now(), env.Config().Status.StaleAfter))
	if list, err := tasks.Scan(dir); err == nil {
		st.Pending, st.Done, st.Stuck = len(list.Pending), len(list.Done), len(list.Stuck)
		if len(list.Pending) > 0 {
			st.NextTask = list.Pending[0]
		}
	}
	return st
}

// SessionState is the state and iteration that status shows of rec's
// workflow: the queue's state, a loop's on or off, a plan's phase ("off"
// when there is none). /metrics counts sessions by the same words, from
// the store, without waking each session's actor.
func SessionState(rec session.Record) (state string, iteration int) {
	state, iteration = string(rec.Queue.State), rec.Queue.Iteration
	switch rec.Workflow {
	case session.Loop:
		state, iteration = "off", rec.Loop.Iteration
		if rec.Loop.Active {
			state = "on"
		}
	case session.Plan:
		state, iteration = string(rec.Plan.Phase), rec.Plan.Iteration
	}
	if state == "" {
		state = "off"
	}
	return state, iteration
}
