package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
)

// TestRunLimitWaitSurvivesRestart: a task whose agent meets a usage limit
// waits for its reset while the rest of its wave goes on; the wait is in
// the store, so a new supervisor that resumes the run before the reset
// waits too, its timer set again, and works the task's iteration again
// once the reset has come. The second supervisor's clock is the test's:
// it stands before the reset until the test moves it past, so that only
// the re-armed timer can start the task.
func TestRunLimitWaitSurvivesRestart(t *testing.T) {
	f := newRestartFixture(t, "limit-a")
	identity := func(s RunStore) RunStore { return s }
	first := f.start(identity)
	opts := f.options(2)
	opts.LimitRetries = 2
	res, err := first.system.Root.RequestFuture(first.pid, &StartRun{Request: api.StartRunRequest{File: "g.yaml", Graph: restartGraph, Options: opts}}, testTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*RunReply).Run.ID
	var waiting api.Run
	eventually.True(t, testTimeout, "task a to wait for its limit and b to be done", func() bool {
		waiting, _, _ = first.db.LoadRun(context.Background(), id)
		return len(waiting.Tasks) == 3 && waiting.Tasks[0].Waiting() && waiting.Tasks[1].State == api.TaskDone
	})
	a := waiting.Tasks[0]
	if a.State != api.TaskPending || a.Iteration != 1 || a.LimitRetries != 1 || a.LimitUntil.Before(time.Now().Add(50*time.Minute)) || a.Limit == "" {
		t.Fatalf("task a waiting: %+v", a)
	}
	first.stop()

	var clock atomic.Int64
	clock.Store(a.LimitUntil.Add(-time.Second).UnixNano())
	f.now = func() time.Time { return time.Unix(0, clock.Load()) }
	second := f.start(identity)
	res, err = second.system.Root.RequestFuture(second.pid, &ResumeRun{ID: id}, testTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	resumed := res.(*RunReply)
	if resumed.Err != nil {
		t.Fatalf("resume: %v", resumed.Err)
	}
	if ra := resumed.Run.Tasks[0]; !ra.Waiting() || !ra.LimitUntil.Equal(a.LimitUntil) || ra.State != api.TaskPending {
		t.Fatalf("task a after the resume: %+v", ra)
	}
	// The reset comes: the timer, set again by the resumed run, fires
	// and the task goes on.
	clock.Store(a.LimitUntil.Add(time.Second).UnixNano())
	var final api.Run
	eventually.True(t, testTimeout, "the resumed run to end", func() bool {
		final, _, _ = second.db.LoadRun(context.Background(), id)
		return final.State != api.RunRunning
	})
	runsIdle(t, second.system, second.pid)
	if final.State != api.RunDone {
		t.Fatalf("the resumed run ended %s: %s", final.State, final.Report)
	}
	if fa := final.Tasks[0]; fa.Iteration != 1 || fa.Runs != 2 || fa.Limits != 1 || fa.LimitRetries != 0 || fa.Waiting() {
		t.Errorf("task a at the end: %+v; want its first iteration worked twice", fa)
	}
	if runs := f.agentRuns(); runs["a 1"] != 2 || runs["b 1"] != 1 || runs["c 1"] != 1 || len(runs) != 3 {
		t.Errorf("agent starts %v", runs)
	}
}
