package actors

import (
	"slices"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

func kinds(evs []events.Draft) []api.EventKind {
	out := make([]api.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// TestSessionEvents: what a commit changed in a session's record is the
// events it publishes, and a commit that changed nothing of note (a
// replay's record, a task file's) publishes none.
func TestSessionEvents(t *testing.T) {
	decided := func(r session.Record, req string, e hook.Event, out hook.Output) session.Record {
		r.Recorded = append(slices.Clone(r.Recorded), session.Recorded{RequestID: req, Event: e, Output: out})
		return r
	}
	base := session.Record{ID: "s1", Workflow: session.Loop, Loop: loop.State{Active: true, Iteration: 2}}
	iter := decided(base, "r1", hook.Stop, hook.Block("go on"))
	iter.Loop.Iteration, iter.Loop.LastRole, iter.Loop.LastStatus = 3, "debugger", "progressing"
	ended := decided(base, "r1", hook.Stop, hook.Output{})
	ended.Loop.Active, ended.Loop.Outcome = false, loop.MaxUSDSpent
	review := base
	review.Workflow = session.Plan
	review.Plan = plan.State{PlanID: "p", Review: &plan.InFlight{Kind: "plan", Iteration: 1, Model: "m"}}
	finished := review
	finished.Plan.Review = nil
	finished.Plan.LastRun = &api.PlanReviewRun{Plan: "p", Kind: "plan", Iteration: 1, Verdict: "fail", Findings: 3, Blocking: 1, CostUSD: 0.2}

	// A plan whose review cycle spent max_reviews: a Stop let through
	// waits for the user; a blocked one (validation) does not.
	spent := base
	spent.Workflow = session.Plan
	spent.Plan = plan.State{PlanID: "p", Phase: plan.PhaseNewPlan, NextPhase: plan.PhasePlanReview, Iteration: 3, MaxReviews: 3}
	spentCycle := spent
	spentCycle.Plan.Iteration = 2

	inReview := session.Record{ID: "s1", Workflow: session.Queue, Queue: queue.Session{State: queue.Review, Iteration: 4}}
	queueDone := decided(inReview, "r3", hook.Stop, hook.Output{})
	queueDone.Queue = queue.Session{State: queue.Off, Iteration: 5}
	queueSpent := decided(inReview, "r3", hook.Stop, hook.Output{SystemMessage: "max iterations reached"})
	queueSpent.Queue = queueDone.Queue
	queueStopped := inReview
	queueStopped.Queue = queue.StopCommand(inReview.Queue)

	for _, tc := range []struct {
		name  string
		old   session.Record
		found bool
		next  session.Record
		want  []api.EventKind
	}{
		{"first commit", session.Record{}, false, base, []api.EventKind{api.EventSessionStarted, api.EventLoopIteration}},
		{"nothing of note", base, true, base, []api.EventKind{}},
		{"a stop and an iteration", base, true, iter, []api.EventKind{api.EventHookDecided, api.EventLoopIteration}},
		{"a loop out of budget", base, true, ended, []api.EventKind{api.EventHookDecided, api.EventLoopEnded, api.EventBudgetReached}},
		{"session end", base, true, decided(base, "r2", hook.SessionEnd, hook.Output{}), []api.EventKind{api.EventHookDecided, api.EventSessionEnded}},
		{"a review starts", base, true, review, []api.EventKind{api.EventReviewStarted}},
		{"a review finishes", review, true, finished, []api.EventKind{api.EventReviewFinished}},
		{"a queue's review finds nothing more", inReview, true, queueDone, []api.EventKind{api.EventHookDecided, api.EventTaskDone}},
		{"a queue out of iterations", inReview, true, queueSpent, []api.EventKind{api.EventHookDecided, api.EventBudgetReached}},
		{"drover stop ends a queue", inReview, true, queueStopped, []api.EventKind{}},
		{"a plan past max_reviews waits for the user", spent, true, decided(spent, "r4", hook.Stop, hook.Output{SystemMessage: "max reviews"}), []api.EventKind{api.EventHookDecided, api.EventNeedsReview}},
		{"a plan past max_reviews blocked by validation", spent, true, decided(spent, "r4", hook.Stop, hook.Block("plan.md is missing")), []api.EventKind{api.EventHookDecided}},
		{"a plan with reviews left does not wait", spentCycle, true, decided(spentCycle, "r4", hook.Stop, hook.Output{}), []api.EventKind{api.EventHookDecided}},
		{"a prompt does not make a plan wait", spent, true, decided(spent, "r4", hook.UserPromptSubmit, hook.Output{}), []api.EventKind{api.EventHookDecided}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kinds(sessionEvents(tc.old, tc.found, tc.next))
			if !slices.Equal(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunEvents: a run's state, merged waves and task changes are its
// events; progress that only moves cost publishes none.
func TestRunEvents(t *testing.T) {
	old := api.Run{ID: "r1", State: api.RunRunning, Waves: 2, Tasks: []api.RunTask{{ID: "a", Wave: 1, State: api.TaskRunning, Iteration: 1}}}
	cost := old
	cost.Tasks = []api.RunTask{{ID: "a", Wave: 1, State: api.TaskRunning, Iteration: 1, CostUSD: 0.5}}
	worker := old
	worker.Tasks = []api.RunTask{{ID: "a", Wave: 1, State: api.TaskRunning, Iteration: 1, Worker: "w2"}}
	done := old
	done.Merged = 1
	done.Tasks = []api.RunTask{{ID: "a", Wave: 1, State: api.TaskDone, Iteration: 1, Reviews: 1, LastReview: &api.TaskReview{Outcome: "pass"}}}
	for _, tc := range []struct {
		name      string
		old, next runCommit
		want      []api.EventKind
	}{
		{"first commit", runCommit{}, runCommit{Run: old}, []api.EventKind{api.EventRunState, api.EventRunTask}},
		{"cost only", runCommit{Run: old}, runCommit{Run: cost}, []api.EventKind{}},
		{"task done, reviewed, wave merged", runCommit{Run: old}, runCommit{Run: done}, []api.EventKind{api.EventRunWave, api.EventRunTask, api.EventTaskDone, api.EventReviewFinished}},
		{"a task's budget", runCommit{Run: old}, runCommit{Run: cost, Ending: map[string]bool{"a": true}}, []api.EventKind{api.EventBudgetReached}},
		{"the run's budget", runCommit{Run: old}, runCommit{Run: old, Stop: "max-usd"}, []api.EventKind{api.EventBudgetReached}},
		{"a cancel", runCommit{Run: old}, runCommit{Run: old, Stop: "cancelled", Cancelled: true}, []api.EventKind{}},
		{"a worker takes the task", runCommit{Run: old}, runCommit{Run: worker}, []api.EventKind{api.EventRunTask}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kinds(runEvents(tc.old, tc.next)); !slices.Equal(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
	// The task event names the worker.
	if evs := runEvents(runCommit{Run: old}, runCommit{Run: worker}); len(evs) != 1 || evs[0].Data.(api.TaskData).Worker != "w2" {
		t.Errorf("the worker's task event: %+v, want worker w2", evs)
	}
}
