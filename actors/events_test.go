package actors

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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

	endedAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := decided(base, "r2", hook.SessionEnd, hook.Output{})
	end.EndedAt = endedAt
	// Most SessionEnds decide nothing new: only the end time is saved.
	endOnly := base
	endOnly.EndedAt = endedAt
	endAgain := endOnly
	endAgain.LastHookAt = endedAt.Add(time.Minute)

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
		{"session end", base, true, end, []api.EventKind{api.EventHookDecided, api.EventSessionEnded}},
		{"a session end that decides nothing", base, true, endOnly, []api.EventKind{api.EventSessionEnded}},
		{"a session end after the end", endOnly, true, endAgain, []api.EventKind{}},
		{"a resumed session", endOnly, true, base, []api.EventKind{api.EventSessionStarted}},
		{"a review starts", base, true, review, []api.EventKind{api.EventReviewStarted}},
		{"a review finishes", review, true, finished, []api.EventKind{api.EventReviewFinished}},
		{"a queue's review finds nothing more", inReview, true, queueDone, []api.EventKind{api.EventHookDecided, api.EventTaskDone}},
		{"a queue out of iterations", inReview, true, queueSpent, []api.EventKind{api.EventHookDecided, api.EventBudgetReached}},
		{"drover stop ends a queue", inReview, true, queueStopped, []api.EventKind{}},
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
	finished := done
	finished.State, finished.Merged = api.RunDone, 2
	// Two waves, a then b: a's done and merged and b started in one
	// commit read in that order.
	twoWaves := old
	twoWaves.Tasks = append(slices.Clone(old.Tasks), api.RunTask{ID: "b", Wave: 2, State: api.TaskPending})
	nextWave := twoWaves
	nextWave.Merged = 1
	nextWave.Tasks = []api.RunTask{{ID: "a", Wave: 1, State: api.TaskDone, Iteration: 1}, {ID: "b", Wave: 2, State: api.TaskRunning, Iteration: 1}}
	for _, tc := range []struct {
		name      string
		old, next runCommit
		want      []api.EventKind
	}{
		{"first commit", runCommit{}, runCommit{Run: old}, []api.EventKind{api.EventRunState, api.EventRunTask}},
		{"cost only", runCommit{Run: old}, runCommit{Run: cost}, []api.EventKind{}},
		{"task done, reviewed, wave merged", runCommit{Run: old}, runCommit{Run: done}, []api.EventKind{api.EventRunTask, api.EventTaskDone, api.EventReviewFinished, api.EventRunWave}},
		{"a wave merged and the next one started", runCommit{Run: twoWaves}, runCommit{Run: nextWave}, []api.EventKind{api.EventRunTask, api.EventTaskDone, api.EventRunWave, api.EventRunTask}},
		{"the last wave merged ends the run", runCommit{Run: done}, runCommit{Run: finished}, []api.EventKind{api.EventRunWave, api.EventRunState}},
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

// TestSessionEndPublishesEnded: every SessionEnd of a session with a
// record publishes session.ended once it is committed, though most decide
// nothing new (an idle session's, an active queue's), and the first hook
// of the resumed session publishes session.started: the stream, the live
// sessions page and notifications see every end and every resume.
func TestSessionEndPublishesEnded(t *testing.T) {
	var (
		mu        sync.Mutex
		published []events.Draft
	)
	f := newFixture(t, SessionsOptions{}, func(env *Env) {
		env.Events = func(_ context.Context, evs ...events.Draft) {
			mu.Lock()
			defer mu.Unlock()
			published = append(published, evs...)
		}
	})
	send := func(id string, e hook.Event, in hook.Input) {
		t.Helper()
		in.SessionID = id
		if res := f.ask(id, &HandleHook{Event: e, Input: in}).(*HookResult); res.Err != nil {
			t.Fatalf("%s: %v", e, res.Err)
		}
	}
	// What session id published since the last call, but its decisions.
	lifecycle := func(id string) []api.EventKind {
		mu.Lock()
		defer mu.Unlock()
		out := []api.EventKind{}
		for _, e := range published {
			if e.Session == id && (e.Kind == api.EventSessionStarted || e.Kind == api.EventSessionEnded) {
				out = append(out, e.Kind)
			}
		}
		published = slices.DeleteFunc(published, func(e events.Draft) bool { return e.Session == id })
		return out
	}
	for _, tc := range []struct {
		name  string
		setup func(id string)
	}{
		{"an idle session", func(id string) { f.add(id, "never started"); send(id, hook.Stop, hook.Input{}) }},
		{"an active queue", func(id string) {
			f.add(id, "a task")
			if r := f.command(id, "start"); r.Err != nil {
				t.Fatal(r.Err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(tc.name, " ", "-")
			tc.setup(id)
			if got := lifecycle(id); !slices.Equal(got, []api.EventKind{api.EventSessionStarted}) {
				t.Fatalf("before SessionEnd: %v, want one session.started", got)
			}
			steps := []struct {
				what string
				e    hook.Event
				in   hook.Input
				want []api.EventKind
			}{
				{"SessionEnd", hook.SessionEnd, hook.Input{}, []api.EventKind{api.EventSessionEnded}},
				{"a second SessionEnd", hook.SessionEnd, hook.Input{}, []api.EventKind{}},
				{"resumed", hook.SessionStart, hook.Input{Source: "resume"}, []api.EventKind{api.EventSessionStarted}},
				{"a prompt", hook.UserPromptSubmit, hook.Input{Prompt: "go on"}, []api.EventKind{}},
				{"SessionEnd again", hook.SessionEnd, hook.Input{}, []api.EventKind{api.EventSessionEnded}},
			}
			for _, s := range steps {
				send(id, s.e, s.in)
				if got := lifecycle(id); !slices.Equal(got, s.want) {
					t.Errorf("after %s: %v, want %v", s.what, got, s.want)
				}
			}
		})
	}
}

// A decision's reason past reasonCap is cut at a character's start, so the
// event's reason stays valid UTF-8.
func TestDecisionReasonIsCutAtARune(t *testing.T) {
	long := strings.Repeat("a", reasonCap-1) + "é and more"
	if got := cutReason(long); !utf8.ValidString(got) {
		t.Fatalf("reason %q is not valid UTF-8", got)
	}
}
