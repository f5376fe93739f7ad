package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
)

// limitIn makes task's first agent fail on a usage limit that resets
// seconds later.
func (f *runFixture) limitIn(task, seconds string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "limit-"+task), []byte(seconds), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// An agent that hits a usage limit once costs its task no iteration: the
// task waits for the reset its agent named and its first iteration is
// worked again, and the run is done.
func TestRunWaitsOutUsageLimit(t *testing.T) {
	f := newRunFixture(t)
	f.limitIn("c", "1")
	out := f.must("", f.withFlag("--concurrency", "1")...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("the run did not finish:\n%s", out)
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 2, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	c := taskByID(f.runStatus(id), "c")
	if c.State != api.TaskDone || c.Iteration != 1 || c.Runs != 2 || c.Limits != 1 || c.Waiting() {
		t.Errorf("task c: %+v; want done in its one iteration, worked twice", c)
	}
	if !tableRow(f.must("", "run", "status", id), "c 2 done 1/3 developer passed") {
		t.Errorf("run status does not show c done in its first iteration")
	}
}

// While a task waits for a usage limit, `drover run status` says until
// when, the rest of its wave goes on, and the wait survives a kill -9 of
// the supervisor and a resume.
func TestRunStatusShowsUsageLimitWait(t *testing.T) {
	f := newRunFixture(t)
	f.limitIn("c", "3600")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))
	var r api.Run
	if !eventually.Holds(45*time.Second, func() bool {
		r = f.runStatus(id)
		return taskByID(r, "c").Waiting() && taskByID(r, "b").State == api.TaskDone || r.State != api.RunRunning
	}) || r.State != api.RunRunning {
		t.Fatalf("c never waited for its limit while b finished: %+v", r)
	}
	c := taskByID(r, "c")
	if c.Iteration != 1 || c.LimitRetries != 1 || time.Until(c.LimitUntil) < 50*time.Minute {
		t.Fatalf("task c waiting: %+v", c)
	}
	line := regexp.MustCompile(`task c: waiting for the usage limit until (\d\d:\d\d) \(wait 1 of 5\): API Error: Request rejected \(429\)`)
	table := f.must("", "run", "status", id)
	m := line.FindStringSubmatch(table)
	if m == nil || m[1] != c.LimitUntil.Local().Format("15:04") || !tableRow(table, "c 2 waiting 1/3") {
		t.Fatalf("run status does not say c waits until %s:\n%s", c.LimitUntil.Local().Format("15:04"), table)
	}

	f.killSupervisor("c")
	f.must("", "run", "resume", id, "--detach")
	after := taskByID(f.runStatus(id), "c")
	if !after.Waiting() || !after.LimitUntil.Equal(c.LimitUntil) || f.count("c") != 1 {
		t.Fatalf("task c after the resume: %+v (started %d times)", after, f.count("c"))
	}
	if table := f.must("", "run", "status", id); !strings.Contains(table, m[0]) {
		t.Errorf("run status after the resume:\n%s", table)
	}
	f.must("", "run", "cancel", id)
	if r := f.waitRun(id); r.State != api.RunFailed || f.count("c") != 1 {
		t.Errorf("cancelled run: %s, c started %d times", r.State, f.count("c"))
	}
}

func TestLimitClock(t *testing.T) {
	now := time.Date(2026, 11, 27, 13, 0, 0, 0, time.Local)
	if got := limitClock(now.Add(90*time.Minute), now); got != "14:30" {
		t.Errorf("limitClock in 90 minutes = %q", got)
	}
	if got := limitClock(now.Add(5*24*time.Hour), now); got != "13:00 on Dec 2" {
		t.Errorf("limitClock in 5 days = %q", got)
	}
}
