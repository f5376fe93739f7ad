package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// runFakeAgent is the --agent of the run tests. It counts its invocations
// per task, records when it started and ended and the prompt it got, and
// commits <task>.txt in its work tree, except on the first iteration of
// task d (which leaves the file uncommitted, so drover must ask again).
// Files in its folder steer it: "barrier" makes b and c each wait until
// both have started (they can only both finish if they ran at the same
// time); "block-<task>" makes that task wait for "release".
const runFakeAgent = `#!/bin/sh
d=$(dirname "$0")
t=$DROVER_TASK_ID
echo x >> "$d/count-$t"
echo $$ > "$d/pid-$t"
date +%s%N > "$d/start-$t"
for last; do :; done
printf '%s' "$last" > "$d/prompt-$t-$DROVER_ITERATION"
if [ -f "$d/barrier" ] && { [ "$t" = b ] || [ "$t" = c ]; }; then
  touch "$d/started-$t"
  i=0
  while [ ! -f "$d/started-b" ] || [ ! -f "$d/started-c" ]; do
    i=$((i+1)); [ $i -gt 300 ] && exit 5; sleep 0.1
  done
fi
if [ -f "$d/block-$t" ]; then
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
echo "$t" > "$t.txt"
if [ "$t" != d ] || [ "$DROVER_ITERATION" != 1 ]; then
  git add "$t.txt" && git commit -qm "task $t" || exit 4
fi
date +%s%N > "$d/end-$t"
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"num_turns":1,"result":"ok"}\n'
`

// runFakeSuite is the --suite-command: it logs each checkpoint, and fails
// once c.txt is merged when the file "fail-suite" exists.
const runFakeSuite = `#!/bin/sh
d=$(dirname "$0")
echo $(ls *.txt 2>/dev/null) >> "$d/suite-log"
if [ -f "$d/fail-suite" ] && [ -f c.txt ]; then echo "FAIL: c.txt broke the build"; exit 1; fi
`

// runGraph has four tasks in three waves: a; b and c; d.
const runGraph = `tasks:
  - id: a
    description: Write a.txt.
    tests: [a.txt]
  - id: b
    description: Write b.txt.
    tests: [b.txt]
    depends-on: [a]
  - id: c
    description: Write c.txt.
    tests: [c.txt]
    depends-on: [a]
  - id: d
    description: Write d.txt.
    tests: [d.txt]
    depends-on: [b, c]
`

type runFixture struct {
	*proj
	dir  string // the fake agent's folder
	args []string
}

func newRunFixture(t *testing.T) *runFixture {
	p := newProj(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"agent.sh": runFakeAgent, "suite.sh": runFakeSuite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	graph := filepath.Join(dir, "tasks.yaml")
	if err := os.WriteFile(graph, []byte(runGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	return &runFixture{proj: p, dir: dir, args: []string{
		"run", graph, "--concurrency", "2",
		"--agent", "'" + filepath.Join(dir, "agent.sh") + "'",
		"--test-command", "test -f {{packages}}",
		"--suite-command", "'" + filepath.Join(dir, "suite.sh") + "'",
	}}
}

func (f *runFixture) touch(name string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), nil, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *runFixture) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(f.dir, name))
	return strings.TrimSpace(string(b))
}

// stamp is a timestamp the fake agent wrote, in nanoseconds.
func (f *runFixture) stamp(name string) int64 {
	f.t.Helper()
	n, err := strconv.ParseInt(f.read(name), 10, 64)
	if err != nil {
		f.t.Fatalf("timestamp %s: %v", name, err)
	}
	return n
}

func (f *runFixture) count(task string) int {
	return strings.Count(f.read("count-"+task), "x")
}

func (f *runFixture) runStatus(id string) api.Run {
	f.t.Helper()
	out := f.must("", "run", "status", id, "--json")
	var r api.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		f.t.Fatalf("run status --json: %v\n%s", err, out)
	}
	return r
}

func runIDFrom(t *testing.T, out string) string {
	t.Helper()
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "run" {
		t.Fatalf("no run id in %q", out)
	}
	return strings.TrimSuffix(f[1], ":")
}

func TestRunWorksWavesInOrder(t *testing.T) {
	f := newRunFixture(t)
	f.touch("barrier")
	out := f.must("", f.args...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}

	// Waves in order: a before b and c; b and c before d.
	if ea := f.stamp("end-a"); ea > f.stamp("start-b") || ea > f.stamp("start-c") {
		t.Errorf("wave 2 started before task a ended")
	}
	if sd := f.stamp("start-d"); f.stamp("end-b") > sd || f.stamp("end-c") > sd {
		t.Errorf("wave 3 started before wave 2 ended")
	}
	// b and c ran at the same time (each also waited for the other).
	if !(f.stamp("start-b") < f.stamp("end-c") && f.stamp("start-c") < f.stamp("end-b")) {
		t.Errorf("tasks b and c did not overlap in time")
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	// The second iteration of d was told why the first did not count.
	if p := f.read("prompt-d-2"); !strings.Contains(p, "iteration 2 of 3") || !strings.Contains(p, "no commit") {
		t.Errorf("prompt of d's second iteration:\n%s", p)
	}
	// Each wave was merged before its checkpoint ran.
	if got := f.read("suite-log"); got != "a.txt\na.txt b.txt c.txt\na.txt b.txt c.txt d.txt" {
		t.Errorf("suite checkpoints saw:\n%s", got)
	}
	// Every merge landed on main, in the main work tree.
	for _, task := range []string{"a", "b", "c", "d"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
	r := f.runStatus(id)
	if r.State != api.RunDone || r.Merged != 3 || r.Waves != 3 || r.CostUSD != 2.5 {
		t.Errorf("run status: state %s, merged %d of %d, cost %v", r.State, r.Merged, r.Waves, r.CostUSD)
	}
	for _, task := range r.Tasks {
		if task.State != api.TaskDone || task.LastTest == nil || !task.LastTest.Passed {
			t.Errorf("task %s: %+v", task.ID, task)
		}
	}
	table := f.must("", "run", "status")
	var row []string
	for _, line := range strings.Split(table, "\n") {
		if fs := strings.Fields(line); len(fs) > 0 && fs[0] == "d" {
			row = fs
		}
	}
	if strings.Join(row, " ") != "d 3 done 2/3 passed $1.00" {
		t.Errorf("run status table, row of d %q:\n%s", row, table)
	}
}

func TestRunStopsOnFailingSuite(t *testing.T) {
	f := newRunFixture(t)
	f.touch("fail-suite")
	r := f.drover("", f.args...)
	if r.code == 0 {
		t.Fatalf("a failing checkpoint exited 0:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "wave 2 checkpoint failed") || !strings.Contains(r.stdout, "FAIL: c.txt broke the build") {
		t.Errorf("the report does not say what failed:\n%s", r.stdout)
	}
	run := f.runStatus(runIDFrom(t, r.stdout))
	if run.State != api.RunFailed || run.Merged != 1 {
		t.Errorf("run: state %s, merged %d; want failed after wave 1", run.State, run.Merged)
	}
	if f.count("d") != 0 {
		t.Errorf("wave 3 ran after a failed checkpoint")
	}
}

func TestRunResumesAfterKill9(t *testing.T) {
	f := newRunFixture(t)
	f.touch("block-c")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))

	// Wait until b is done and c is at work.
	deadline := time.Now().Add(45 * time.Second)
	for {
		r := f.runStatus(id)
		st := map[string]api.TaskState{}
		for _, task := range r.Tasks {
			st[task.ID] = task.State
		}
		if st["b"] == api.TaskDone && st["c"] == api.TaskRunning && f.read("pid-c") != "" {
			break
		}
		if time.Now().After(deadline) || r.State != api.RunRunning {
			t.Fatalf("run never reached b done, c running: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pid := f.supervisorPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	// The agent of c outlived its supervisor (its own process group);
	// end it as a person would.
	if agent, err := strconv.Atoi(f.read("pid-c")); err == nil {
		_ = syscall.Kill(-agent, syscall.SIGKILL)
	}

	if out := f.must("", "run", "status", id); !strings.Contains(out, "interrupted") {
		t.Errorf("status after kill -9 does not say the run was interrupted:\n%s", out)
	}
	f.touch("release")
	out := f.must("", "run", "resume", id)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("resume did not finish the run:\n%s", out)
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 2, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
}

func TestRunRejectsBadGraph(t *testing.T) {
	p := newProj(t)
	cases := []struct{ name, graph, want string }{
		{"missing dependency", "tasks:\n  - id: x\n    description: X.\n    depends-on: [nope]\n", `task "x": depends on "nope"`},
		{"cycle", "tasks:\n  - id: x\n    description: X.\n    depends-on: [y]\n  - id: y\n    description: Y.\n    depends-on: [x]\n", `dependency cycle`},
		{"unknown key", "tasks:\n  - id: x\n    description: X.\n    colour: red\n", `task "x": unknown key "colour"`},
		{"duplicate id", "tasks:\n  - id: x\n    description: X.\n  - id: x\n    description: Y.\n", `task "x": duplicate id`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tasks.yaml")
			if err := os.WriteFile(file, []byte(c.graph), 0o644); err != nil {
				t.Fatal(err)
			}
			r := p.drover("", "run", file)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, c.want)
			}
		})
	}
}
