package session

import (
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
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
