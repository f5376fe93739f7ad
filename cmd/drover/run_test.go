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
  git add "$t.txt" && git commit -qm "task $t" --allow-empty || exit 4
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
	if strings.Join(row, " ") != "d 3 done 2/3 developer passed $1.00" {
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

// runFailingTests is a --test-command whose tests always fail the same
// way, as go test -v would say it.
const runFailingTests = `#!/bin/sh
echo "=== RUN   TestAnswer"
echo "--- FAIL: TestAnswer (0.00s)"
echo "    answer_test.go:9: got 41, want 42"
echo FAIL
exit 1
`

func (f *runFixture) script(name, body string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return "'" + p + "'"
}

// withFlag returns the fixture's arguments with flag set to value.
func (f *runFixture) withFlag(flag, value string) []string {
	args := append([]string(nil), f.args...)
	for i := range args {
		if args[i] == flag && i+1 < len(args) {
			args[i+1] = value
			return args
		}
	}
	return append(args, flag, value)
}

func taskByID(r api.Run, id string) api.RunTask {
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return api.RunTask{}
}

func TestRunTaskTimeBudget(t *testing.T) {
	f := newRunFixture(t)
	// a waits for a release that never comes: only its budget ends it.
	f.touch("block-a")
	r := f.drover("", append(f.args, "--task-max-minutes", "0.002", "--max-iterations", "5")...)
	if r.code == 0 {
		t.Fatalf("a task past its budget exited 0:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "task a is failed: the task budget of 0.002 minutes (--task-max-minutes) is spent") {
		t.Errorf("the report does not name the task budget:\n%s", r.stdout)
	}
	if got := f.count("a"); got != 1 {
		t.Errorf("task a ran %d times after its budget was spent, want 1", got)
	}
	if f.count("b") != 0 {
		t.Errorf("wave 2 ran after task a failed")
	}
	run := f.runStatus(runIDFrom(t, r.stdout))
	if a := taskByID(run, "a"); run.State != api.RunFailed || a.State != api.TaskFailed || a.EndedAt.IsZero() {
		t.Errorf("run %s, task a %+v", run.State, a)
	}
}

func TestRunStopsOnRunBudgets(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		// a and b cost $0.50 each: $1.00 is past $0.90 while c still works.
		{"dollars", []string{"--max-usd", "0.9"}, "run stopped: the run budget of $0.90 (--max-usd) is spent: the agents cost $1.00"},
		// c never ends by itself: the run's time does.
		{"minutes", []string{"--max-minutes", "0.01"}, "run stopped: the run budget of 0.01 minutes (--max-minutes) is spent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRunFixture(t)
			f.touch("block-c")
			r := f.drover("", append(f.args, c.flags...)...)
			if r.code == 0 {
				t.Fatalf("a run past its budget exited 0:\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, c.want) || !strings.Contains(r.stdout, "task c is failed: stopped with the run") {
				t.Errorf("the report does not say which budget stopped the run and what it ended:\n%s", r.stdout)
			}
			if f.count("c") != 1 || f.count("d") != 0 {
				t.Errorf("task c ran %d times, d %d; want 1 and 0", f.count("c"), f.count("d"))
			}
			run := f.runStatus(runIDFrom(t, r.stdout))
			if run.State != api.RunFailed || taskByID(run, "c").State != api.TaskFailed || taskByID(run, "a").State != api.TaskDone {
				t.Errorf("run %s, tasks %+v", run.State, run.Tasks)
			}
		})
	}
}

func TestRunEndsThrashingTaskAndRoutesRoles(t *testing.T) {
	f := newRunFixture(t)
	args := f.withFlag("--test-command", f.script("failing-tests.sh", runFailingTests)+" {{packages}}")
	r := f.drover("", append(args, "--max-iterations", "6")...)
	if r.code == 0 {
		t.Fatalf("a thrashing task exited 0:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "task a is failed: thrashing after 3 iterations: the same failure") {
		t.Errorf("the report does not say the task was thrashing:\n%s", r.stdout)
	}
	if got := f.count("a"); got != 3 {
		t.Errorf("task a ran %d times, want 3 (ended on thrashing, not on its 6 iterations)", got)
	}
	// The first iteration is the developer's; failing tests route the
	// next ones to the debugger, told what failed.
	for it, want := range map[int][]string{
		1: {"## Role: developer", "implement the next piece"},
		2: {"## Role: debugger", "Reproduce", "iteration 2 of 6", "got 41, want 42"},
		3: {"## Role: debugger", "iteration 3 of 6"},
	} {
		p := f.read("prompt-a-" + strconv.Itoa(it))
		for _, w := range want {
			if !strings.Contains(p, w) {
				t.Errorf("prompt of iteration %d lacks %q:\n%s", it, w, p)
			}
		}
	}
	id := runIDFrom(t, r.stdout)
	a := taskByID(f.runStatus(id), "a")
	if a.Role != "debugger" || a.Status != "thrashing" || !strings.Contains(a.StatusReason, "same failure") {
		t.Errorf("task a: role %q, status %q (%s)", a.Role, a.Status, a.StatusReason)
	}
	if table := f.must("", "run", "status", id); !strings.Contains(table, "ROLE") || !tableRow(table, "a 1 failed 3/6 debugger failed") {
		t.Errorf("run status does not show the role:\n%s", table)
	}
	// The live view polls, so only its last line of a is certain.
	if !strings.Contains(r.stdout, "task a (wave 1): failed, iteration 3, debugger") {
		t.Errorf("the live view does not show the role:\n%s", r.stdout)
	}
}

// tableRow reports whether a line of table starts with the fields of row.
func tableRow(table, row string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(line), " "), row) {
			return true
		}
	}
	return false
}

// runFakeReviewer is a --reviewer: it fails the first review of task a
// with one finding and passes every other, each review costing $0.25.
const runFakeReviewer = `#!/bin/sh
d=$(dirname "$0")
t=$(git rev-parse --abbrev-ref HEAD); t=${t##*/}
echo x >> "$d/reviews-$t"
for last; do :; done
printf '%s' "$last" > "$d/review-prompt-$t"
if [ "$t" = a ] && [ "$(grep -c x "$d/reviews-$t")" = 1 ]; then
  echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"a.txt","line":1,"summary":"a.txt says a, it must say A"}]}}'
else
  echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"PASS","findings":[]}}'
fi
`

func TestRunReviewerMustPassTask(t *testing.T) {
	f := newRunFixture(t)
	rev := f.script("reviewer.sh", runFakeReviewer)
	out := f.must("", append(f.args, "--reviewer", rev+" {{prompt}}")...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}
	// a was reviewed twice (FAIL, then PASS) and so ran twice; d's first
	// iteration did not commit, so it was not reviewed.
	for task, want := range map[string][2]int{"a": {2, 2}, "b": {1, 1}, "c": {1, 1}, "d": {2, 1}} {
		if runs, reviews := f.count(task), strings.Count(f.read("reviews-"+task), "x"); runs != want[0] || reviews != want[1] {
			t.Errorf("task %s: %d runs, %d reviews; want %d and %d", task, runs, reviews, want[0], want[1])
		}
	}
	if p := f.read("prompt-a-2"); !strings.Contains(p, "reviewer did not pass the task") || !strings.Contains(p, "blocking (a.txt:1): a.txt says a, it must say A") {
		t.Errorf("the findings did not reach a's next iteration:\n%s", p)
	}
	if p := f.read("review-prompt-b"); !strings.Contains(p, "independent reviewer") || !strings.Contains(p, "Write b.txt.") || !strings.Contains(p, "git diff ") || strings.Contains(p, "{{base}}") {
		t.Errorf("review prompt of b:\n%s", p)
	}
	// Agents: 6 runs at $0.50; reviews: 5 at $0.25.
	if r := f.runStatus(id); r.CostUSD != 4.25 || taskByID(r, "a").CostUSD != 1.5 {
		t.Errorf("cost: run $%v, task a $%v; want $4.25 and $1.50", r.CostUSD, taskByID(r, "a").CostUSD)
	}
}
