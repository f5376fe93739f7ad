package actors

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

// What status shows of each workflow's record, and of its task files.
func TestSessionStatus(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".drover", "sessions", "s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"20260101T000000.md", "20260101T000001.md", "20250101T000000.done.md", "20250101T000001.stuck.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name            string
		rec             session.Record
		state, workflow string
		iteration       int
		health          session.Health
	}{
		{"queue on", session.Record{Workflow: session.Queue, Queue: queue.Session{State: queue.On, Iteration: 3}}, "on", "queue", 3, session.Working},
		{"no workflow yet", session.Record{}, "off", "", 0, session.Idle},
		{"loop running", session.Record{Workflow: session.Loop, Loop: loop.State{Active: true, Iteration: 4}}, "on", "loop", 4, session.Working},
		{"loop running, silent too long", session.Record{Workflow: session.Loop, Loop: loop.State{Active: true, Iteration: 4}, LastHookAt: at.Add(-time.Hour)}, "on", "loop", 4, session.Stale},
		{"loop ended", session.Record{Workflow: session.Loop, Loop: loop.State{Iteration: 9, CostUSD: 0.6}}, "off", "loop", 9, session.Idle},
		{"plan", session.Record{Workflow: session.Plan, Plan: plan.State{Phase: plan.PhaseCodeReview, Iteration: 2, PlanID: "../escape"}}, string(plan.PhaseCodeReview), "plan", 2, session.Working},
		{"plan, session ended", session.Record{Workflow: session.Plan, Plan: plan.State{Phase: plan.PhaseCodeReview, Iteration: 2}, EndedAt: at}, string(plan.PhaseCodeReview), "plan", 2, session.Ended},
	}
	cfg := config.Defaults()
	cfg.Status.StaleAfter = time.Minute
	env := Env{Root: root, Config: func() config.Config { return cfg }, Now: func() time.Time { return at.Add(time.Second) }}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rec.ID = "s"
			if c.rec.LastHookAt.IsZero() {
				c.rec.UpdatedAt = at
			}
			st := sessionStatus(c.rec, env, dir)
			if st.ID != "s" || st.State != c.state || st.Workflow != c.workflow || st.Iteration != c.iteration || !st.UpdatedAt.Equal(c.rec.UpdatedAt) || st.Health != string(c.health) {
				t.Errorf("got %+v", st)
			}
			if st.Pending != 2 || st.Done != 1 || st.Stuck != 1 || st.NextTask != filepath.Join(dir, "20260101T000000.md") {
				t.Errorf("task counts: %+v", st)
			}
			// A loop shows its spend; a plan with an id that is not valid
			// shows none.
			if st.CostUSD != c.rec.Loop.CostUSD {
				t.Errorf("cost %v, want %v", st.CostUSD, c.rec.Loop.CostUSD)
			}
		})
	}
}
