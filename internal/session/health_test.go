package session

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

func TestRecordHealth(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const limit = 30 * time.Minute
	queueOn := Record{Workflow: Queue, Queue: queue.Session{State: queue.On}, UpdatedAt: t0, LastHookAt: t0}
	with := func(r Record, f func(*Record)) Record { f(&r); return r }
	cases := []struct {
		name  string
		rec   Record
		now   time.Time
		limit time.Duration
		want  Health
	}{
		{"no workflow", Record{LastHookAt: t0}, t0.Add(time.Hour), limit, Idle},
		{"queue off, long silent", with(queueOn, func(r *Record) { r.Queue.State = queue.Off }), t0.Add(time.Hour), limit, Idle},
		{"queue on, just heard", queueOn, t0.Add(time.Minute), limit, Working},
		{"queue on, exactly at the limit", queueOn, t0.Add(limit), limit, Working},
		{"queue on, past the limit", queueOn, t0.Add(limit + time.Second), limit, Stale},
		{"queue in review, past the limit", with(queueOn, func(r *Record) { r.Queue.State = queue.Review }), t0.Add(time.Hour), limit, Stale},
		{"loop running, past the limit", Record{Workflow: Loop, Loop: loop.State{Active: true}, LastHookAt: t0}, t0.Add(time.Hour), limit, Stale},
		{"loop ended, past the limit", Record{Workflow: Loop, LastHookAt: t0}, t0.Add(time.Hour), limit, Idle},
		{"plan in a phase, past the limit", Record{Workflow: Plan, Plan: plan.State{Phase: plan.PhaseCodeReview}, LastHookAt: t0}, t0.Add(time.Hour), limit, Stale},
		{"plan complete, past the limit", Record{Workflow: Plan, Plan: plan.State{Phase: plan.PhaseComplete}, LastHookAt: t0}, t0.Add(time.Hour), limit, Idle},
		{"limit 0 never stale", queueOn, t0.Add(24 * time.Hour), 0, Working},
		// A queue started by a command after an old hook counts from
		// its start.
		{"started after an old hook", with(queueOn, func(r *Record) { r.LastHookAt = t0.Add(-time.Hour) }), t0.Add(time.Minute), limit, Working},
		{"old record, no hook time", with(queueOn, func(r *Record) { r.LastHookAt = time.Time{} }), t0.Add(time.Hour), limit, Stale},
		{"ended while working", with(queueOn, func(r *Record) { r.EndedAt = t0 }), t0.Add(time.Minute), limit, Ended},
		{"ended, idle", Record{EndedAt: t0}, t0.Add(time.Hour), limit, Ended},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rec.Health(c.now, c.limit); got != c.want {
				t.Errorf("Health() = %q, want %q", got, c.want)
			}
		})
	}
}
