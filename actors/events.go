package actors

import (
	"context"
	"reflect"
	"unicode/utf8"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

// Events are derived from what a commit changed, old record against new,
// by the pure functions below, and published once the commit succeeded:
// a stream client never sees a change the store does not hold. A fact the
// record does not keep (a plan that waits for the user, plan.WaitForUser)
// comes as an effect of the committed decision instead, and is published
// when the effect runs, after the commit too.

// publish hands evs to the event stream, if the engine has one.
func publish(pub func(context.Context, ...events.Draft), ctx context.Context, evs []events.Draft) {
	if pub != nil && len(evs) > 0 {
		pub(ctx, evs...)
	}
}

// reasonCap bounds the reason an event carries: the stream says what was
// decided, the session's transcript has the whole text.
const reasonCap = 200

// sessionEvents returns the events of the commit of next over old (found
// is false when the session had no record before).
func sessionEvents(old session.Record, found bool, next session.Record) []events.Draft {
	id := next.ID
	var out []events.Draft
	add := func(k api.EventKind, data any) {
		out = append(out, events.Draft{Kind: k, Session: id, Data: data})
	}
	// A session starts with its first record, and again when a hook of a
	// resumed session clears the end time its SessionEnd saved. It ends
	// when the end time is saved, whatever else the commit changed: most
	// SessionEnds decide nothing new (an idle session's, a loop's that
	// already ended), and only the time is committed.
	ended, wasEnded := !next.EndedAt.IsZero(), found && !old.EndedAt.IsZero()
	if !found || wasEnded && !ended {
		add(api.EventSessionStarted, api.SessionData{Workflow: string(next.Workflow)})
	}
	d, decided := newDecision(old, next)
	if decided {
		reason := cutReason(d.Output.Reason)
		decision := "allow"
		if d.Output.IsBlock() {
			decision = "block"
		}
		add(api.EventHookDecided, api.DecisionData{Event: string(d.Event), Request: d.RequestID, Decision: decision, Reason: reason})
	}
	if ended && !wasEnded {
		add(api.EventSessionEnded, api.SessionData{Workflow: string(next.Workflow)})
	}
	out = append(out, queueEvents(id, old, next, d, decided)...)
	out = append(out, loopEvents(id, old, next)...)
	out = append(out, planEvents(id, old.Plan, next.Plan)...)
	return out
}

// newDecision returns the decision next recorded that old did not have.
func newDecision(old, next session.Record) (session.Recorded, bool) {
	if len(next.Recorded) == 0 {
		return session.Recorded{}, false
	}
	last := next.Recorded[len(next.Recorded)-1]
	if n := len(old.Recorded); n > 0 {
		prev := old.Recorded[n-1]
		if prev.RequestID == last.RequestID && prev.Event == last.Event && reflect.DeepEqual(prev.Output, last.Output) {
			return session.Recorded{}, false
		}
	}
	return last, true
}

// queueEvents reports a queue that a Stop ended (d is the commit's new
// decision, if decided): done when its review found no more tasks (queue.Stop
// then allows the stop with no message), out of budget when it ran past
// queue.max_iterations (allowed with the max-iterations message). drover
// stop ends a queue too, with no Stop: the user's own act is not news.
func queueEvents(id string, old, next session.Record, d session.Recorded, decided bool) []events.Draft {
	if !decided || d.Event != hook.Stop || !old.Queue.Active() || next.Queue.Active() {
		return nil
	}
	q := next.Queue
	if old.Queue.State == queue.Review && d.Output.SystemMessage == "" {
		return []events.Draft{{Kind: api.EventTaskDone, Session: id, Data: api.TaskData{Task: "queue", State: "done", Iteration: q.Iteration}}}
	}
	return []events.Draft{{Kind: api.EventBudgetReached, Session: id, Data: api.BudgetData{What: "queue.max_iterations", Reason: d.Output.SystemMessage}}}
}

// loopEvents reports a loop's new iteration and its end.
func loopEvents(id string, old, next session.Record) []events.Draft {
	o, n := old.Loop, next.Loop
	var out []events.Draft
	data := func() api.LoopIterationData {
		d := api.LoopIterationData{Iteration: n.Iteration, Status: n.LastStatus, StatusReason: n.LastStatusReason, Role: n.LastRole, CostUSD: n.CostUSD, Outcome: string(n.Outcome)}
		if h := next.LoopHistory; len(h) > 0 {
			m := h[len(h)-1]
			if m.TestPassRate >= 0 {
				d.TestPassRate = &m.TestPassRate
			}
			if m.LintIssues >= 0 {
				d.LintIssues = &m.LintIssues
			}
		}
		return d
	}
	if n.Iteration > o.Iteration && next.Workflow == session.Loop {
		out = append(out, events.Draft{Kind: api.EventLoopIteration, Session: id, Data: data()})
	}
	if n.Outcome != o.Outcome && n.Outcome != loop.Running {
		d := data()
		out = append(out, events.Draft{Kind: api.EventLoopEnded, Session: id, Data: d})
		task := api.TaskData{Task: "loop", State: string(n.Outcome), Iteration: n.Iteration, Role: n.LastRole, Status: n.LastStatus, CostUSD: n.CostUSD}
		switch n.Outcome {
		case loop.Done, loop.Converged:
			out = append(out, events.Draft{Kind: api.EventTaskDone, Session: id, Data: task})
		case loop.Stuck:
			out = append(out, events.Draft{Kind: api.EventTaskStuck, Session: id, Data: task})
		case loop.MaxUSDSpent, loop.BudgetExhausted, loop.MaxIterationsSpent, loop.MaxMinutesSpent:
			out = append(out, events.Draft{Kind: api.EventBudgetReached, Session: id, Data: api.BudgetData{What: string(n.Outcome), CostUSD: n.CostUSD}})
		}
	}
	return out
}

// planEvents reports a plan review that started or finished, and a plan
// that waits for the user's review.
func planEvents(id string, o, n plan.State) []events.Draft {
	var out []events.Draft
	if n.Review != nil && (o.Review == nil || o.Review.Iteration != n.Review.Iteration || o.Review.Kind != n.Review.Kind) {
		out = append(out, events.Draft{Kind: api.EventReviewStarted, Session: id, Data: api.ReviewData{
			Plan: n.PlanID, Kind: string(n.Review.Kind), Task: n.Review.Task, Model: n.Review.Model, Phase: string(n.Phase), Iteration: n.Review.Iteration,
		}})
	}
	if n.LastRun != nil && (o.LastRun == nil || *o.LastRun != *n.LastRun) {
		r := n.LastRun
		out = append(out, events.Draft{Kind: api.EventReviewFinished, Session: id, Data: api.ReviewData{
			Plan: r.Plan, Kind: r.Kind, Task: r.Task, Model: r.Model, Phase: string(n.Phase), Iteration: r.Iteration,
			Verdict: reviewVerdict(r), Findings: r.Findings, Blocking: r.Blocking, CostUSD: r.CostUSD,
		}})
	}
	if n.Phase != o.Phase && n.Phase == plan.PhaseComplete {
		out = append(out, events.Draft{Kind: api.EventTaskDone, Session: id, Data: api.TaskData{Task: n.PlanID, State: string(n.Phase)}})
	}
	return out
}

// reviewVerdict is a review run's verdict, or its outcome when it gave
// none (it failed).
func reviewVerdict(r *api.PlanReviewRun) string {
	if r.Verdict != "" {
		return r.Verdict
	}
	return r.Outcome
}

// runCommit is what the events of a run's commit are derived from: the
// run as stored, and the run workflow's budget state, which is not.
type runCommit struct {
	Run api.Run
	// Stop is why the run ends early (run.State.Stop), Cancelled whether
	// that was the user's cancel rather than a budget, and Ending the
	// tasks whose dollar budget is spent.
	Stop      string
	Cancelled bool
	Ending    map[string]bool
}

// runEvents returns the events of the commit of run next over old (old
// has no ID when the run had not been committed by this actor before).
func runEvents(oldC, nextC runCommit) []events.Draft {
	old, next := oldC.Run, nextC.Run
	id := next.ID
	var out []events.Draft
	if nextC.Stop != "" && oldC.Stop == "" && !nextC.Cancelled {
		out = append(out, events.Draft{Kind: api.EventBudgetReached, Run: id, Data: api.BudgetData{What: "run", CostUSD: next.CostUSD, Reason: nextC.Stop}})
	}
	for _, t := range next.Tasks {
		if nextC.Ending[t.ID] && !oldC.Ending[t.ID] {
			out = append(out, events.Draft{Kind: api.EventBudgetReached, Run: id, Data: api.BudgetData{What: "task " + t.ID, CostUSD: t.CostUSD}})
		}
	}
	// One commit's events go in the order things happen: the run starts,
	// the tasks of the merged waves change, a wave is merged, the tasks of
	// the next waves change (start), the run ends. A reader never sees a
	// wave's task start before the wave before it is merged, nor a run
	// done before its last wave is merged.
	state := api.RunStateData{State: string(next.State), Merged: next.Merged, Waves: next.Waves, CostUSD: next.CostUSD, Report: next.Report}
	if old.ID == "" {
		out = append(out, events.Draft{Kind: api.EventRunState, Run: id, Data: state})
	}
	prev := map[string]api.RunTask{}
	for _, t := range old.Tasks {
		prev[t.ID] = t
	}
	merged := old.ID != "" && old.Merged != next.Merged
	for _, after := range []bool{false, true} {
		if after && merged {
			out = append(out, events.Draft{Kind: api.EventRunWave, Run: id, Data: state})
		}
		for _, t := range next.Tasks {
			if (merged && t.Wave > next.Merged) == after {
				p, had := prev[t.ID]
				out = append(out, taskEvents(id, p, had, t)...)
			}
		}
	}
	if old.ID != "" && old.State != next.State {
		out = append(out, events.Draft{Kind: api.EventRunState, Run: id, Data: state})
	}
	return out
}

// taskEvents returns the events of run id's task t, p before the commit
// (had is false when the run had no such task).
func taskEvents(id string, p api.RunTask, had bool, t api.RunTask) []events.Draft {
	var out []events.Draft
	data := api.TaskData{Task: t.ID, State: string(t.State), Wave: t.Wave, Iteration: t.Iteration, Role: t.Role, Status: t.Status, CostUSD: t.CostUSD, Worker: t.Worker}
	// Cost and tool calls move with every progress report: the stream
	// follows the task's state, iteration, role, status and worker.
	if !had || p.State != t.State || p.Iteration != t.Iteration || p.Role != t.Role || p.Status != t.Status || p.Worker != t.Worker {
		out = append(out, events.Draft{Kind: api.EventRunTask, Run: id, Data: data})
	}
	if had && p.State != t.State {
		switch t.State {
		case api.TaskDone:
			out = append(out, events.Draft{Kind: api.EventTaskDone, Run: id, Data: data})
		case api.TaskFailed:
			out = append(out, events.Draft{Kind: api.EventTaskStuck, Run: id, Data: data})
		case api.TaskNeedsReview:
			out = append(out, events.Draft{Kind: api.EventNeedsReview, Run: id, Data: api.ReviewData{Task: t.ID, Iteration: t.Iteration}})
		}
	}
	if had && t.Reviews > p.Reviews && t.LastReview != nil {
		r := t.LastReview
		out = append(out, events.Draft{Kind: api.EventReviewFinished, Run: id, Data: api.ReviewData{
			Task: t.ID, Model: r.Model, Iteration: r.Iteration, Verdict: r.Outcome, Findings: r.Blocking + r.Minor, Blocking: r.Blocking, CostUSD: r.CostUSD,
		}})
	}
	return out
}

// cutReason bounds a decision's reason to reasonCap bytes, cut at a
// rune's start: half a character is not UTF-8, and the event is JSON.
func cutReason(reason string) string {
	if len(reason) <= reasonCap {
		return reason
	}
	n := reasonCap
	for n > 0 && !utf8.RuneStart(reason[n]) {
		n--
	}
	return reason[:n] + "…"
}
