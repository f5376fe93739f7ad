package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
	"github.com/drover-dev/drover/templates"
)

func TestRecordActive(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		want bool
	}{
		{"no workflow", Record{}, false},
		{"queue off", Record{Workflow: Queue, Queue: queue.Session{State: queue.Off}}, false},
		{"queue on", Record{Workflow: Queue, Queue: queue.Session{State: queue.On}}, true},
		{"queue in review", Record{Workflow: Queue, Queue: queue.Session{State: queue.Review}}, true},
		{"loop running", Record{Workflow: Loop, Loop: loop.State{Active: true}}, true},
		{"loop ended", Record{Workflow: Loop, Loop: loop.State{Active: false}}, false},
		{"plan in a phase", Record{Workflow: Plan, Plan: plan.State{Phase: plan.PhaseCodeReview}}, true},
		{"plan complete", Record{Workflow: Plan, Plan: plan.State{Phase: plan.PhaseComplete}}, false},
		{"plan none", Record{Workflow: Plan}, false},
		// The workflow named decides: a stale queue state under a loop
		// does not count.
		{"loop with a stale queue", Record{Workflow: Loop, Queue: queue.Session{State: queue.On}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rec.Active(); got != c.want {
				t.Errorf("Active() = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRecordLookup(t *testing.T) {
	block := hook.Block("next task")
	var r Record
	r = r.Remember("r1", hook.Stop, block)
	r = r.Remember("", hook.Stop, hook.Block("not remembered"))
	tests := []struct {
		name   string
		id     string
		event  hook.Event
		want   hook.Output
		wantOK bool
	}{
		{"a retried stop gets its decision", "r1", hook.Stop, block, true},
		{"an unknown id is a new request", "r2", hook.Stop, hook.Output{}, false},
		{"an empty id is never a retry", "", hook.Stop, hook.Output{}, false},
		{"the id of a stop reused for another event is a new request", "r1", hook.UserPromptSubmit, hook.Output{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.Lookup(tt.id, tt.event)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("Lookup(%q, %s) = %+v, %v; want %+v, %v", tt.id, tt.event, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRecordHolder(t *testing.T) {
	queueOn := Record{ID: "s", Workflow: Queue, Queue: queue.Session{State: queue.On}}
	loopOn := Record{ID: "s", Workflow: Loop, Loop: loop.State{Active: true, Iteration: 3}}
	planOn := Record{ID: "s", Workflow: Plan, Plan: plan.State{PlanID: "p", Phase: plan.PhaseCodeReview}}
	planDone := Record{ID: "s", Workflow: Plan, Plan: plan.State{PlanID: "p", Phase: plan.PhaseComplete}}
	loopEnded := Record{ID: "s", Workflow: Loop, Loop: loop.State{Iteration: 9}}
	queueOff := Record{ID: "s", Workflow: Queue, Queue: queue.Session{State: queue.Off}}
	cases := []struct {
		name  string
		rec   Record
		want  Workflow
		held  Workflow
		texts []string
	}{
		{"fresh session, queue", Record{ID: "s"}, Queue, None, nil},
		{"fresh session, loop", Record{ID: "s"}, Loop, None, nil},
		{"fresh session, plan", Record{ID: "s"}, Plan, None, nil},
		{"queue on, loop", queueOn, Loop, Queue, []string{"session s has an active queue", "state on", "drover stop", "starting a loop"}},
		{"queue on, plan", queueOn, Plan, Queue, []string{"task queue", "starting a plan"}},
		{"queue on, queue again", queueOn, Queue, None, nil},
		{"queue off, loop", queueOff, Loop, None, nil},
		{"loop running, queue", loopOn, Queue, Loop, []string{"session s runs a loop (iteration 3)", "drover loop cancel", "starting a queue"}},
		{"loop running, plan", loopOn, Plan, Loop, []string{"runs a loop", "starting a plan"}},
		{"loop running, loop again", loopOn, Loop, None, nil},
		{"loop ended, queue", loopEnded, Queue, None, nil},
		{"plan in review, loop", planOn, Loop, Plan, []string{"session s works on plan p", "a loop needs its own session"}},
		{"plan in review, queue", planOn, Queue, Plan, []string{"a queue needs its own session"}},
		{"plan complete, loop", planDone, Loop, None, nil},
		{"plan complete, queue", planDone, Queue, None, nil},
		{"plan complete, plan", planDone, Plan, None, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rec.Holder(c.want); got != c.held {
				t.Fatalf("Holder(%s) = %q, want %q", c.want, got, c.held)
			}
			err := c.rec.CheckStart(templates.Defaults(), c.want)
			if c.held == None {
				if err != nil {
					t.Fatalf("CheckStart(%s) = %v, want nil", c.want, err)
				}
				return
			}
			var held *HeldError
			if !errors.As(err, &held) || held.Holder != c.held {
				t.Fatalf("CheckStart(%s) = %v, want a HeldError by %s", c.want, err, c.held)
			}
			for _, s := range c.texts {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("CheckStart(%s) = %q, want it to say %q", c.want, err, s)
				}
			}
		})
	}
}

func TestRecordStopTarget(t *testing.T) {
	cases := []struct {
		rec  Record
		want Workflow
	}{
		{Record{}, Queue},
		{Record{Workflow: Queue}, Queue},
		{Record{Workflow: Loop}, Loop},
		{Record{Workflow: Loop, Loop: loop.State{Active: true}}, Loop},
		{Record{Workflow: Plan}, Plan},
	}
	for _, c := range cases {
		if got := c.rec.StopTarget(); got != c.want {
			t.Errorf("StopTarget(%q) = %q, want %q", c.rec.Workflow, got, c.want)
		}
	}
}

func TestRecordTaskAdded(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	known := Record{ID: "s", Workflow: Loop, Loop: loop.State{Active: true}}
	if got, changed := known.TaskAdded(true, now); changed || got.Workflow != Loop {
		t.Errorf("a known session: %+v, changed %v; want it unchanged", got, changed)
	}
	got, changed := Record{ID: "s"}.TaskAdded(false, now)
	if !changed || got.Workflow != Queue || got.Queue.State != queue.Off || !got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now) || got.Active() {
		t.Errorf("an unknown session: %+v, changed %v; want an off queue created now", got, changed)
	}
}

func TestRecordLoopSession(t *testing.T) {
	st := loop.State{Active: true, Iteration: 2}
	rec := Record{Workflow: Loop}.WithLoop(loop.Session{State: st, Consensus: "c", Findings: "f"})
	if got := rec.LoopSession(); got.State != st || got.Consensus != "c" || got.Findings != "f" {
		t.Errorf("LoopSession() = %+v, want the loop put in", got)
	}
	rec.Workflow = Queue
	if got := rec.LoopSession(); got.State.Active || got.State.Iteration != 0 {
		t.Errorf("LoopSession() under a queue = %+v, want none", got)
	}
}

func TestRecordRuns(t *testing.T) {
	then := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := then.Add(time.Hour)
	if got := (Record{}).Runs(Loop, now); got.Workflow != Loop || !got.CreatedAt.Equal(now) {
		t.Errorf("a new session: %+v", got)
	}
	if got := (Record{Workflow: Plan, CreatedAt: then}).Runs(Queue, now); got.Workflow != Queue || !got.CreatedAt.Equal(then) {
		t.Errorf("a known session: %+v, want it created when it was", got)
	}
}
