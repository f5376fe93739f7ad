package session

import (
	"testing"

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
