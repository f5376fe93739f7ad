package run

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
)

// limitedRun is an iteration of task whose agent met a usage limit that
// resets at reset (zero: it did not say).
func limitedRun(task string, iteration int, reset time.Time) IterationDone {
	return IterationDone{
		Task: task, Iteration: iteration, Base: "base0", Progress: Progress{Finished: true},
		AgentErr: errors.New("agent reported an error (success): API Error: Request rejected (429)"),
		Limit:    &agentrun.Limit{Status: 429, Reset: reset, Message: "API Error: Request rejected (429) · usage limit reached\nmore"},
	}
}

func wakes(effects []Effect) []time.Time {
	var out []time.Time
	for _, e := range effects {
		if w, ok := e.(WakeAt); ok {
			out = append(out, w.At)
		}
	}
	return out
}

// A task whose agent meets a usage limit waits for its reset without
// spending an iteration, and its place goes to the rest of the wave; the
// time it comes back is asked for (WakeAt) at every step while it waits,
// and the task goes on, under the same iteration, once it has come.
func TestStepWaitsForTheLimitsReset(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{Concurrency: 1, MaxIterations: 1, LimitRetries: 3})
	s, _, eff := step(t, s, Begin{}, f, t0)
	if got := starts(eff); len(got) != 1 || got[0] != "c" {
		t.Fatalf("begin: starts %v", got)
	}
	reset := t0.Add(30 * time.Minute)
	s, d, eff := step(t, s, limitedRun("c", 1, reset), f, t0.Add(time.Minute))
	c := s.Task("c")
	if c.State != api.TaskPending || !c.Waiting() || !c.LimitUntil.Equal(reset) || c.Iteration != 1 || c.LimitRetries != 1 || c.Limits != 1 || !c.Interrupted || c.Error != "" {
		t.Fatalf("task c after its limit: %+v", c)
	}
	if c.Limit != "API Error: Request rejected (429) · usage limit reached" || c.Feedback != "" || len(s.History["c"]) != 0 {
		t.Errorf("task c keeps %q, feedback %q, history %v; want the limit's first line and nothing of an iteration", c.Limit, c.Feedback, s.History["c"])
	}
	// The rest of the wave goes on: a takes c's place.
	if got := starts(eff); len(got) != 1 || got[0] != "a" || !reflect.DeepEqual(wakes(eff), []time.Time{reset}) || d.Finished {
		t.Fatalf("after c's limit: effects %v, finished %v", eff, d.Finished)
	}
	s, _, eff = step(t, s, IterationDone(passed("a", 1, 0.5)), f, t0.Add(2*time.Minute))
	if len(starts(eff)) != 0 || !reflect.DeepEqual(wakes(eff), []time.Time{reset}) || s.Merging {
		t.Fatalf("a done while c waits: effects %v, merging %v", eff, s.Merging)
	}
	// A wake before the reset starts nothing.
	s, _, eff = step(t, s, Wake{}, f, reset.Add(-time.Second))
	if len(starts(eff)) != 0 || !reflect.DeepEqual(wakes(eff), []time.Time{reset}) {
		t.Fatalf("early wake: %v", eff)
	}
	s, _, eff = step(t, s, Wake{}, f, reset)
	// Another attempt at the same iteration (c's second start): a job
	// of its own, not the limited one.
	want := StartIteration{Task: "c", Iteration: 1, Role: "developer", Base: "base0", Branch: "drover/run-1/c", Fresh: true, Attempt: 2}
	if len(eff) != 1 || !reflect.DeepEqual(eff[0], want) {
		t.Fatalf("wake at the reset: %v, want %+v", eff, want)
	}
	if c := s.Task("c"); c.Waiting() || c.Limit != "" || c.Waited != 29*time.Minute || c.Runs != 2 || c.Interrupted {
		t.Errorf("task c back at work: %+v", c)
	}
	s, _, eff = step(t, s, IterationDone(passed("c", 1, 0.5)), f, reset.Add(time.Minute))
	if c := s.Task("c"); c.State != api.TaskDone || c.LimitRetries != 0 || c.Limits != 1 || len(eff) != 1 {
		t.Errorf("task c done with one iteration of one: %+v, effects %v", c, eff)
	}
}

// A limit that names no reset is waited out with a backoff that doubles;
// past run.limit_retries limits in a row the task fails, and says why.
func TestStepLimitBackoffAndCap(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{Concurrency: 2, MaxIterations: 1, LimitRetries: 2})
	s, _, _ = step(t, s, Begin{}, f, t0)
	now := t0
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute} {
		now = now.Add(time.Second)
		s, _, _ = step(t, s, limitedRun("c", 1, time.Time{}), f, now)
		if c := s.Task("c"); !c.LimitUntil.Equal(now.Add(wait)) || c.LimitRetries != i+1 {
			t.Fatalf("limit %d: task c %+v, want a wait of %s", i+1, c, wait)
		}
		now = now.Add(wait)
		var eff []Effect
		if s, _, eff = step(t, s, Wake{}, f, now); len(starts(eff)) != 1 {
			t.Fatalf("wake %d: %v", i+1, eff)
		}
	}
	s, _, _ = step(t, s, limitedRun("c", 1, time.Time{}), f, now.Add(time.Second))
	c := s.Task("c")
	if c.State != api.TaskFailed || c.Waiting() || c.Iteration != 1 || c.Limits != 3 {
		t.Fatalf("third limit in a row: %+v", c)
	}
	if want := "the agent met a usage or rate limit again after waiting for it 2 times in a row (run.limit_retries): API Error: Request rejected (429) · usage limit reached"; c.Error != want {
		t.Errorf("error %q\nwant  %q", c.Error, want)
	}
	// With run.limit_retries 0 the first limit fails the task.
	s = fresh(t, api.RunOptions{Concurrency: 2})
	s, _, _ = step(t, s, Begin{}, f, t0)
	s, _, _ = step(t, s, limitedRun("c", 1, t0.Add(time.Hour)), f, t0.Add(time.Second))
	if c := s.Task("c"); c.State != api.TaskFailed || !strings.Contains(c.Error, "0 times") {
		t.Errorf("no retries: %+v", c)
	}
}

func TestLimitUntil(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reset time.Time
		retry int
		want  time.Time
	}{
		{"named reset", t0.Add(3 * time.Hour), 1, t0.Add(3 * time.Hour)},
		{"reset passed", t0.Add(-time.Minute), 1, t0.Add(time.Minute)},
		{"third backoff", time.Time{}, 3, t0.Add(4 * time.Minute)},
		{"backoff capped", time.Time{}, 40, t0.Add(time.Hour)},
		{"reset too far", t0.Add(30 * 24 * time.Hour), 1, t0.Add(7 * 24 * time.Hour)},
	} {
		if got := LimitUntil(agentrun.Limit{Reset: tt.reset}, tt.retry, t0); !got.Equal(tt.want) {
			t.Errorf("%s: LimitUntil = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A task that waits for a limit when its supervisor dies still waits
// after the resume, for the same reset (the wake asked for again at
// Begin), and its wait is not counted in its time budget.
func TestStepLimitWaitSurvivesRestart(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{Concurrency: 2, TaskMaxMinutes: 60, LimitRetries: 1})
	s, _, _ = step(t, s, Begin{}, f, t0)
	reset := t0.Add(2 * time.Hour)
	s, _, _ = step(t, s, limitedRun("c", 1, reset), f, t0.Add(10*time.Minute))
	stored := s.Run
	stored.UpdatedAt = t0.Add(40 * time.Minute) // the last heartbeat
	resumed := t0.Add(time.Hour)
	rs := Restore(Resume(stored, resumed), resumed)
	rs, _, eff := step(t, rs, Begin{}, f, resumed)
	c := rs.Task("c")
	if !c.Waiting() || !c.LimitUntil.Equal(reset) || c.State != api.TaskPending || !reflect.DeepEqual(wakes(eff), []time.Time{reset}) {
		t.Fatalf("after the resume: task c %+v, effects %v", c, eff)
	}
	for _, e := range starts(eff) {
		if e == "c" {
			t.Fatalf("c started before its reset: %v", eff)
		}
	}
	// c worked 10 minutes before its limit: the two hours it waited (the
	// 30 minutes up to the crash among them) leave it 50 minutes.
	rs, _, eff = step(t, rs, Wake{}, f, reset)
	if c := rs.Task("c"); c.State != api.TaskRunning || c.Waited != 30*time.Minute+time.Hour {
		t.Fatalf("task c after the wake: %+v, effects %v", c, eff)
	}
	var deadline time.Time
	for _, e := range eff {
		if si, ok := e.(StartIteration); ok && si.Task == "c" {
			deadline = si.Deadline
		}
	}
	if want := reset.Add(50 * time.Minute); !deadline.Equal(want) {
		t.Errorf("c's deadline %v, want %v: the wait is no part of its 60 minutes", deadline, want)
	}
}
