package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/test/natstest"
)

// TestRunOnNATSWorkers: drover run --executor nats works the fixture's
// three waves on two drover workers with the same result as the local
// executor, and its status names the worker of each task.
func TestRunOnNATSWorkers(t *testing.T) {
	f := newRunFixture(t)
	url := natstest.URL(t)
	startClusterWorker(t, f, url, "w1")
	startClusterWorker(t, f, url, "w2")
	out := f.must("", append(f.args, "--executor", "nats", "--nats", url)...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
	r := f.runStatus(id)
	if r.State != api.RunDone || r.Merged != 3 || r.Waves != 3 || r.CostUSD != 2.5 {
		t.Errorf("run status: state %s, merged %d of %d, cost %v", r.State, r.Merged, r.Waves, r.CostUSD)
	}
	for _, task := range r.Tasks {
		if task.State != api.TaskDone || (task.Worker != "w1" && task.Worker != "w2") {
			t.Errorf("task %s: %+v; want done on w1 or w2", task.ID, task)
		}
	}
}

// TestRunOnNATSWorkerOfAnotherNameRefuses: a worker started under another
// repository name (--repo-name) gets the run's jobs (the same history) and
// refuses them; the run ends with the task failed on an error naming both
// identities, in drover run status, rather than waiting for ever.
func TestRunOnNATSWorkerOfAnotherNameRefuses(t *testing.T) {
	f := newRunFixture(t)
	url := natstest.URL(t)
	startClusterWorker(t, f, url, "w1", "--repo-name", "elsewhere")
	r := f.drover("", append(f.args, "--executor", "nats", "--nats", url)...)
	id := runIDFrom(t, r.stdout+r.stderr)
	st := f.runStatus(id)
	var a api.RunTask
	for _, task := range st.Tasks {
		if task.ID == "a" {
			a = task
		}
	}
	if a.State != api.TaskFailed || !strings.Contains(a.Error, "refused") || !strings.Contains(a.Error, "elsewhere@") ||
		!strings.Contains(a.Error, filepath.Base(f.root)+"@") {
		t.Fatalf("task a: %+v; want failed, refused by the worker naming both identities\n%s%s", a, r.stdout, r.stderr)
	}
	if n := f.count("a"); n != 0 {
		t.Errorf("task a's agent ran %d times on a worker of another repository", n)
	}
}
