package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// TestSessionAfterACompletePlan: a finished workflow does not hold its
// session, so a session whose plan is complete can start a loop, or a
// queue; a plan still under way keeps both out.
func TestSessionAfterACompletePlan(t *testing.T) {
	f := newPlanFixture(t)
	seed := func(sid string, phase plan.Phase) {
		t.Helper()
		rec := session.Record{ID: sid, Workflow: session.Plan, Plan: plan.State{PlanID: "p", Phase: phase}}
		if err := f.store.Save(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	loopStart := func(sid string) *WorkflowResult {
		raw, _ := json.Marshal(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 3})
		return f.ask(sid, &WorkflowCommand{Workflow: "loop", Verb: "start", Args: raw}).(*WorkflowResult)
	}

	seed("done-loop", plan.PhaseComplete)
	if r := loopStart("done-loop"); r.Err != nil {
		t.Fatalf("a loop after a complete plan: %v", r.Err)
	}
	if st := f.loop("done-loop", "status", nil); !st.Active {
		t.Errorf("status after the start: %+v", st)
	}

	seed("done-queue", plan.PhaseComplete)
	f.add("done-queue", "a task")
	if r := f.command("done-queue", "start"); r.Err != nil || r.Response.State != "on" {
		t.Fatalf("a queue after a complete plan: %+v", r)
	}

	seed("busy", plan.PhaseCodeReview)
	if r := loopStart("busy"); !errors.Is(r.Err, ErrBadRequest) || !strings.Contains(r.Err.Error(), "works on plan p") {
		t.Errorf("a loop beside a plan under way: %v", r.Err)
	}
	f.add("busy", "a task")
	if r := f.command("busy", "start"); !errors.Is(r.Err, ErrBadRequest) || !strings.Contains(r.Err.Error(), "a queue needs its own session") {
		t.Errorf("a queue beside a plan under way: %+v", r)
	}
}
