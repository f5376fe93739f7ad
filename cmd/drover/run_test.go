package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/eventually"
)

// runFakeAgent is the --agent of the run tests. It counts its invocations
// per task, records when it started and ended and the prompt it got, and
// commits <task>.txt in its work tree, except on the first iteration of
// task d (which leaves the file uncommitted, so drover must ask again).
// Files in its folder steer it: "barrier" makes b and c each wait until
// both have started (they can only both finish if they ran at the same
// time); "block-<task>" makes that task wait for "release", and
// "block-<task>-<iteration>" that iteration of it; "usage-<task>"
// makes it print, first, an assistant message with one tool call and
// 100,000 sonnet input tokens ($0.30 at list prices); "shared" makes every
// task also write its id as the one line of shared.txt; "overlap" makes
// each agent log "start <task>" when it starts and "end <task>" when it is
// about to exit, in the file overlap-log, and take a little time between;
// "orphan-<task>" makes that task's agent start a sleeper in a session of
// its own, as Claude Code runs a tool call, which writes its pid in
// orphan-pid-<task>; "limit-<task>" makes that task's first agent fail as
// Claude Code does on a usage limit, which resets as many seconds later
// as the file says.
const runFakeAgent = `#!/bin/sh
d=$(dirname "$0")
t=$DROVER_TASK_ID
echo x >> "$d/count-$t"
echo $$ > "$d/pid-$t"
if [ -f "$d/limit-$t" ] && [ ! -f "$d/limited-$t" ]; then
  touch "$d/limited-$t"
  printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"num_turns":1,"total_cost_usd":0,"result":"API Error: Request rejected (429) · Claude AI usage limit reached|%s"}\n' $(( $(date +%s) + $(cat "$d/limit-$t") ))
  exit 1
fi
if [ -f "$d/orphan-$t" ]; then
  setsid sh -c 'echo $$ > "$1/orphan-pid-$2"; exec sleep 3600' sh "$d" "$t" </dev/null >/dev/null 2>&1 &
fi
date +%s%N > "$d/start-$t"
[ -f "$d/overlap" ] && echo "start $t" >> "$d/overlap-log" && sleep 0.3
for last; do :; done
printf '%s' "$last" > "$d/prompt-$t-$DROVER_ITERATION"
if [ -f "$d/barrier" ] && { [ "$t" = b ] || [ "$t" = c ]; }; then
  touch "$d/started-$t"
  i=0
  while [ ! -f "$d/started-b" ] || [ ! -f "$d/started-c" ]; do
    i=$((i+1)); [ $i -gt 300 ] && exit 5; sleep 0.1
  done
fi
if [ -f "$d/usage-$t" ]; then
  printf '{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100000,"output_tokens":0}}}\n'
fi
if [ -f "$d/block-$t" ] || [ -f "$d/block-$t-$DROVER_ITERATION" ]; then
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
echo "$t" > "$t.txt"
[ -f "$d/shared" ] && echo "$t" > shared.txt
if [ "$t" != d ] || [ "$DROVER_ITERATION" != 1 ]; then
  git add "$t.txt" && { [ ! -f "$d/shared" ] || git add shared.txt; } && git commit -qm "task $t" --allow-empty || exit 4
fi
date +%s%N > "$d/end-$t"
[ -f "$d/overlap" ] && echo "end $t" >> "$d/overlap-log"
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
		"--no-review",
	}}
}

// reviewed returns the fixture's arguments without --no-review.
func (f *runFixture) reviewed() []string {
	var out []string
	for _, a := range f.args {
		if a != "--no-review" {
			out = append(out, a)
		}
	}
	return out
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
	if strings.Join(row, " ") != "d 3 done 2/3 developer passed 0 $1.00 - local" {
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
	var r api.Run
	var reached bool
	// A run that ended will not get there: no use waiting.
	eventually.Holds(45*time.Second, func() bool {
		r = f.runStatus(id)
		st := map[string]api.TaskState{}
		for _, task := range r.Tasks {
			st[task.ID] = task.State
		}
		reached = st["b"] == api.TaskDone && st["c"] == api.TaskRunning && f.read("pid-c") != ""
		return reached || r.State != api.RunRunning
	})
	if !reached {
		t.Fatalf("run never reached b done, c running: %+v", r)
	}
	f.killSupervisor("c")
	before := f.runStatus(id)

	table := f.must("", "run", "status", id)
	if !strings.Contains(table, "interrupted") || !tableRow(table, "b 2 done 1/3 developer passed 0 $0.50") || !tableRow(table, "c 2 running 1/3 developer - 0 $0.00") {
		t.Errorf("status after kill -9 does not say the run was interrupted, or where b and c were:\n%s", table)
	}
	out := f.must("", "run", "resume", id, "--detach")
	if !strings.Contains(out, "run "+id+" resumed") {
		t.Fatalf("resume did not say so:\n%s", out)
	}
	// The resumed run shows every task as it was: c's cut-short iteration
	// is worked again, under its number and role.
	sameProgress(t, before, f.runStatus(id), "a", "b", "c", "d")
	// The run's report says the same of them.
	if table := f.must("", "run", "status", id); !tableRow(table, "b 2 done 1/3 developer passed 0 $0.50") || (!tableRow(table, "c 2 pending 1/3 developer - 0 $0.00") && !tableRow(table, "c 2 running 1/3 developer - 0 $0.00")) {
		t.Errorf("status after resume does not show b and c where they were:\n%s", table)
	}
	f.touch("release")
	final := f.waitRun(id)
	if final.State != api.RunDone {
		t.Fatalf("the resumed run did not finish: %s: %s", final.State, final.Report)
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 2, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	// c worked its first iteration again rather than a second one.
	if c := taskByID(final, "c"); c.Iteration != 1 || c.Runs != 2 || c.Interrupted {
		t.Errorf("task c after the resumed run: %+v; want iteration 1 run twice", c)
	}
	if b, fb := taskByID(before, "b"), taskByID(final, "b"); fb.Iteration != b.Iteration || fb.Role != b.Role || fb.CostUSD != b.CostUSD || !sameTest(fb.LastTest, b.LastTest) {
		t.Errorf("task b after the resumed run: %+v\nbefore: %+v", fb, b)
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
}

// runSlowTests is a --test-command ({{packages}} as its argument) that,
// when the file slow-<test> exists, records its pid in test-pid-<test>,
// starts a sleeper in a session of its own that records its pid in
// test-orphan-pid-<test>, and waits for "release"; then it checks that
// the test file exists.
const runSlowTests = `#!/bin/sh
d=$(dirname "$0")
if [ -f "$d/slow-$1" ]; then
  echo $$ > "$d/test-pid-$1"
  setsid sh -c 'echo $$ > "$1/test-orphan-pid-$2"; exec sleep 3600' sh "$d" "$1" </dev/null >/dev/null 2>&1 &
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
test -f "$1"
`

// TestRunKill9LeavesNothingRunning kills the real supervisor with SIGKILL
// while one task's agent works and another task's test command runs, each
// with a child in a session of its own (where neither a group kill nor
// the parent-death signal reaches): the watchdog ends them all, without
// waiting for a resume; then the resumed run finishes.
func TestRunKill9LeavesNothingRunning(t *testing.T) {
	f := newRunFixture(t)
	tests := f.script("tests.sh", runSlowTests)
	f.touch("orphan-b")
	f.touch("block-b")
	f.touch("slow-c.txt")
	id := runIDFrom(t, f.must("", append(f.withFlag("--test-command", tests+" {{packages}}"), "--detach")...))

	pidFiles := []string{"pid-b", "orphan-pid-b", "test-pid-c.txt", "test-orphan-pid-c.txt"}
	pids := map[string]int{}
	if !eventually.Holds(45*time.Second, func() bool {
		for _, name := range pidFiles {
			if pid, err := strconv.Atoi(f.read(name)); err == nil && pid > 0 {
				pids[name] = pid
			}
		}
		return len(pids) == len(pidFiles)
	}) {
		t.Fatalf("the agent of b and the test command of c never both started their children: %v, %+v", pids, f.runStatus(id))
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	pid := f.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	for _, name := range pidFiles {
		if !gone(pids[name], 30*time.Second) {
			t.Errorf("%s (pid %d) outlived the supervisor", strings.TrimSuffix(name, ".txt"), pids[name])
		}
	}

	for _, name := range []string{"orphan-b", "block-b", "slow-c.txt"} {
		if err := os.Remove(filepath.Join(f.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.must("", "run", "resume", id, "--detach")
	if r := f.waitRun(id); r.State != api.RunDone {
		t.Fatalf("the resumed run did not finish: %s: %s", r.State, r.Report)
	}
}

// gone waits up to limit for process pid to end, and says whether it did.
func gone(pid int, limit time.Duration) bool {
	return eventually.Holds(limit, func() bool { return syscall.Kill(pid, 0) != nil })
}

// sameProgress checks that tasks are where they were before a crash in
// a resumed run: the same iteration, role, last test and cost, and the
// same state (or, for a task the crash cut short, at work again).
func sameProgress(t *testing.T, before, after api.Run, tasks ...string) {
	t.Helper()
	for _, task := range tasks {
		b, a := taskByID(before, task), taskByID(after, task)
		sameState := a.State == b.State || (b.State == api.TaskRunning && a.State == api.TaskPending)
		if a.Iteration != b.Iteration || a.Role != b.Role || a.CostUSD != b.CostUSD || !sameTest(a.LastTest, b.LastTest) || !sameState {
			t.Errorf("task %s after resume: %+v\nbefore: %+v", task, a, b)
		}
	}
}

// sameTest says whether two last test results are the same one.
func sameTest(a, b *api.TestResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Command == b.Command && a.Passed == b.Passed && a.Output == b.Output && a.At.Equal(b.At)
}

// killSupervisor kills the supervisor with -9, and the agent of task,
// which outlives it in its own process group, as a person would.
func (f *runFixture) killSupervisor(task string) {
	f.t.Helper()
	pid := f.supervisorPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	waitGone(f.t, pid)
	if agent, err := strconv.Atoi(f.read("pid-" + task)); err == nil {
		_ = syscall.Kill(-agent, syscall.SIGKILL)
	}
}

// waitRun polls the run until it is no longer running.
func (f *runFixture) waitRun(id string) api.Run {
	f.t.Helper()
	var r api.Run
	if !eventually.Holds(60*time.Second, func() bool { r = f.runStatus(id); return r.State != api.RunRunning }) {
		f.t.Fatalf("run %s still running: %+v", id, r)
	}
	return r
}

func TestRunResumeTellsLastFeedback(t *testing.T) {
	f := newRunFixture(t)
	// d's first iteration commits nothing; its second waits.
	f.touch("block-d-2")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))
	if !eventually.Holds(45*time.Second, func() bool { return f.read("prompt-d-2") != "" }) {
		t.Fatalf("d's second iteration never started: %+v", f.runStatus(id))
	}
	f.killSupervisor("d")
	before := f.runStatus(id)
	if d := taskByID(before, "d"); d.State != api.TaskRunning || d.Iteration != 2 || d.LastTest == nil || d.Feedback == "" {
		t.Fatalf("task d before the crash: %+v", d)
	}
	if err := os.Remove(filepath.Join(f.dir, "prompt-d-2")); err != nil {
		t.Fatal(err)
	}
	f.must("", "run", "resume", id, "--detach")
	// d's second iteration waits again: the run shows it as it was.
	sameProgress(t, before, f.runStatus(id), "a", "b", "c", "d")
	f.touch("release")
	if r := f.waitRun(id); r.State != api.RunDone {
		t.Fatalf("the resumed run did not finish: %s: %s", r.State, r.Report)
	}
	// The second iteration, worked again, was told again why the first
	// did not count.
	if p := f.read("prompt-d-2"); !strings.Contains(p, "iteration 2 of 3") || !strings.Contains(p, "no commit") {
		t.Errorf("prompt of d's second iteration after the resume:\n%s", p)
	}
	if d := taskByID(f.runStatus(id), "d"); f.count("d") != 3 || d.Iteration != 2 || d.Runs != 3 || d.Feedback != "" {
		t.Errorf("task d ran %d times: %+v; want iteration 2 done after 3 runs", f.count("d"), d)
	}
}

func TestRunResumeKeepsBudgets(t *testing.T) {
	cases := []struct {
		name, flag, want string
	}{
		{"task", "--task-max-usd", "task a is failed: the task budget of $0.50 (--task-max-usd) is spent: its agents cost $0.60 after 1 iterations"},
		{"run", "--max-usd", "run stopped: the run budget of $0.50 (--max-usd) is spent: the agents cost $0.60"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRunFixture(t)
			// a's agent spends $0.30 and waits for a release that never comes.
			f.touch("usage-a")
			f.touch("block-a")
			id := runIDFrom(t, f.must("", append(f.args, "--detach", c.flag, "0.5")...))
			f.waitTask(id, "a", api.TaskRunning, 1, 0.30)
			f.killSupervisor("a")

			// The agent of the resumed iteration spends $0.30 more: $0.60
			// in all is past the budget of $0.50, which ends it. Counted
			// afresh, $0.30 would not be, and the agent would wait.
			r := f.drover("", "run", "resume", id)
			if r.code == 0 {
				t.Fatalf("a run past its dollar budget across a crash exited 0:\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, c.want) {
				t.Errorf("the report does not say the spend before the crash counted:\n%s", r.stdout)
			}
			run := f.runStatus(id)
			if a := taskByID(run, "a"); run.State != api.RunFailed || a.State != api.TaskFailed || a.Runs != 2 || a.Iteration != 1 ||
				math.Abs(a.CostUSD-0.60) > 1e-9 || math.Abs(run.CostUSD-0.60) > 1e-9 || a.ToolCalls != 2 {
				t.Errorf("run %s cost $%v, task a %+v; want a failed after 2 runs of iteration 1 and $0.60", run.State, run.CostUSD, a)
			}
			if f.read("end-a") != "" || f.count("a") != 2 {
				t.Errorf("task a ran %d times (ended: %q); want its second agent ended by the budget", f.count("a"), f.read("end-a"))
			}
		})
	}
}

// gitOut runs git in the project and returns its output, failed or not.
func (f *runFixture) gitOut(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = f.root, f.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestRunMergeConflictNeedsReview(t *testing.T) {
	f := newRunFixture(t)
	// a writes shared.txt; b and c, in one wave, both change its line.
	f.touch("shared")
	r := f.drover("", f.args...)
	if r.code == 0 {
		t.Fatalf("a run with a merge conflict exited 0:\n%s", r.stdout)
	}
	id := runIDFrom(t, r.stdout)
	for _, want := range []string{
		"wave 2: branches conflict with main and need review (the others were merged)",
		"task c: merge conflict in shared.txt",
		// The combined diff, b's line against c's, between the markers.
		"diff --cc shared.txt", "++<<<<<<< HEAD\n +b\n++=======\n+ c\n++>>>>>>> refs/heads/drover/" + id + "/c\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	run := f.runStatus(id)
	c := taskByID(run, "c")
	if run.State != api.RunFailed || run.Merged != 1 || c.State != api.TaskNeedsReview || strings.Join(c.Conflict, ",") != "shared.txt" || taskByID(run, "b").State != api.TaskDone {
		t.Errorf("run %s merged %d, task c %+v; want c needs-review on shared.txt after wave 1", run.State, run.Merged, c)
	}
	if table := f.must("", "run", "status", id); !tableRow(table, "c 2 needs-review") {
		t.Errorf("run status does not show c as needs-review:\n%s", table)
	}
	if f.count("d") != 0 {
		t.Errorf("wave 3 ran after a conflict")
	}
	// main has b, not c, and no merge half done.
	if got, _ := f.gitOut("show", "main:shared.txt"); got != "b" {
		t.Errorf("main's shared.txt is %q, want b's", got)
	}
	if _, err := f.gitOut("cat-file", "-e", "main:c.txt"); err == nil {
		t.Errorf("c's branch was merged into main despite the conflict")
	}
	if st, err := f.gitOut("status", "--porcelain", "--untracked-files=no"); err != nil || st != "" {
		t.Errorf("main work tree is not clean: %q, %v", st, err)
	}
	if _, err := f.gitOut("rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
		t.Errorf("a merge is in progress in the main work tree")
	}

	// A person resolves it on main, and the run goes on from there.
	branch := c.Branch
	if _, err := f.gitOut("merge", "--no-edit", branch); err == nil {
		t.Fatalf("merging %s by hand did not conflict", branch)
	}
	if err := os.WriteFile(filepath.Join(f.root, "shared.txt"), []byte("b and c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.git("add", "shared.txt")
	f.git("commit", "-q", "--no-edit")
	out := f.must("", "run", "resume", id)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("resume after the resolution did not finish the run:\n%s", out)
	}
	for task, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
	if run := f.runStatus(id); run.State != api.RunDone || run.Merged != 3 || taskByID(run, "c").State != api.TaskDone {
		t.Errorf("after resume: run %s merged %d, task c %+v", run.State, run.Merged, taskByID(run, "c"))
	}
}

func TestRunConcurrencyBound(t *testing.T) {
	const graph = `tasks:
  - {id: w1, description: Write w1.txt., tests: [w1.txt]}
  - {id: w2, description: Write w2.txt., tests: [w2.txt]}
  - {id: w3, description: Write w3.txt., tests: [w3.txt]}
  - {id: w4, description: Write w4.txt., tests: [w4.txt]}
`
	for _, c := range []int{1, 2} {
		t.Run("concurrency "+strconv.Itoa(c), func(t *testing.T) {
			f := newRunFixture(t)
			f.touch("overlap")
			args := f.withGraph(f.withFlag("--concurrency", strconv.Itoa(c)), "wave.yaml", graph)
			out := f.must("", args...)
			if !strings.Contains(out, "done: all 4 tasks done in 1 waves") {
				t.Fatalf("the wave did not finish:\n%s", out)
			}
			// Each agent logs its start after it was started and its end
			// before it exits, so the log shows at most the agents that
			// ran at once; the lines are short appends, never mixed.
			most := 0
			for _, now := range f.overlapLog() {
				most = max(most, len(now))
			}
			if most > c {
				t.Errorf("%d agents ran at once at --concurrency %d:\n%s", most, c, f.read("overlap-log"))
			}
			for _, task := range []string{"w1", "w2", "w3", "w4"} {
				if f.count(task) != 1 {
					t.Errorf("task %s ran %d times, want 1", task, f.count(task))
				}
				f.git("cat-file", "-e", "main:"+task+".txt")
			}
		})
	}
}

// overlapLog reads the fake agent's overlap-log: the tasks that ran at
// once after each start, in order.
func (f *runFixture) overlapLog() [][]string {
	f.t.Helper()
	var out [][]string
	running := map[string]bool{}
	log := f.read("overlap-log")
	for _, line := range strings.Split(log, "\n") {
		what, task, _ := strings.Cut(line, " ")
		switch what {
		case "start":
			running[task] = true
			var now []string
			for t := range running {
				now = append(now, t)
			}
			slices.Sort(now)
			out = append(out, now)
		case "end":
			if !running[task] {
				f.t.Fatalf("task %s ended before it started:\n%s", task, log)
			}
			delete(running, task)
		default:
			f.t.Fatalf("odd log line %q", line)
		}
	}
	if len(running) != 0 {
		f.t.Fatalf("tasks %v never ended:\n%s", running, log)
	}
	return out
}

// A graph in seed 003's form loads, and its parallel: false task runs with
// no other task of its wave beside it.
func TestRunParallelFalseRunsAlone(t *testing.T) {
	const graph = `tasks:
  - id: w1
    files: [w1.txt]
    tests: [w1.txt]
    description: Write w1.txt.
    parallel: true
  - id: solo
    files: [solo.txt]
    tests: [solo.txt]
    description: Write solo.txt.
    parallel: false
  - id: w2
    files: [w2.txt]
    tests: [w2.txt]
    description: Write w2.txt.
    parallel: true
  - id: w3
    files: [w3.txt]
    tests: [w3.txt]
    description: Write w3.txt.
`
	f := newRunFixture(t)
	f.touch("overlap")
	args := f.withGraph(f.withFlag("--concurrency", "3"), "seed.yaml", graph)
	out := f.must("", args...)
	if !strings.Contains(out, "done: all 4 tasks done in 1 waves") {
		t.Fatalf("the wave did not finish:\n%s", out)
	}
	// Whether the others overlap depends on the machine's speed; that
	// they may is TestRunConcurrencyBound's and the core's to show.
	for _, now := range f.overlapLog() {
		if slices.Contains(now, "solo") && len(now) > 1 {
			t.Errorf("solo ran beside %v:\n%s", now, f.read("overlap-log"))
		}
	}
	for _, task := range []string{"w1", "solo", "w2", "w3"} {
		f.git("cat-file", "-e", "main:"+task+".txt")
	}
}

// A task whose graph says tests: [] (a docs task) runs no tests between
// its iterations, not the full suite: only the wave's checkpoint runs it.
func TestRunEmptyTestsRunNothingBetweenIterations(t *testing.T) {
	// d's first iteration leaves its file uncommitted: two iterations.
	const graph = `tasks:
  - id: d
    files: [docs/d.md]
    tests: []  # docs only
    description: Write d.txt.
`
	f := newRunFixture(t)
	args := f.withGraph(f.args, "docs.yaml", graph)
	out := f.must("", args...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}
	if f.count("d") != 2 {
		t.Errorf("task d ran %d times, want 2", f.count("d"))
	}
	// The suite ran once, at the wave's checkpoint, in the main work tree.
	if got := f.read("suite-log"); got != "d.txt" {
		t.Errorf("the suite ran:\n%s\nwant once, at the checkpoint", got)
	}
	if d := taskByID(f.runStatus(id), "d"); d.State != api.TaskDone || d.LastTest != nil {
		t.Errorf("task d: %s, last test %+v; want done with no test run", d.State, d.LastTest)
	}
	// The agent was told so, and not to run the suite itself.
	if p := f.read("prompt-d-1"); !strings.Contains(p, "This task has no targeted tests") || !strings.Contains(p, "Do NOT run the full test suite") {
		t.Errorf("the prompt does not say the task has no tests:\n%s", p)
	}
}

// The agent is told the command of its task's targeted tests, as the run
// runs it, and not to run the full suite, which the wave checkpoint runs.
func TestRunPromptGivesTestCommand(t *testing.T) {
	const graph = `tasks:
  - id: a
    files: [a.txt]
    tests: [a.txt]
    description: Write a.txt.
  - id: b
    files: [b.txt]
    description: Write b.txt.
`
	f := newRunFixture(t)
	args := f.withGraph(f.withFlag("--test-command", "test -e {{packages}} && echo targeted"), "prompt.yaml", graph)
	f.must("", args...)
	a := f.read("prompt-a-1")
	for _, want := range []string{"run ONLY this task's targeted tests: a.txt", "Command: test -e a.txt && echo targeted", "Do NOT run the full test suite"} {
		if !strings.Contains(a, want) {
			t.Errorf("the prompt of a does not say %q:\n%s", want, a)
		}
	}
	// A run has no tracker: its role texts do not send the agent to one.
	if !strings.Contains(a, "You are the developer this iteration") || strings.Contains(a, "tracker") {
		t.Errorf("the prompt of a lacks the developer's role, or speaks of a tracker:\n%s", a)
	}
	// b's tests are derived from its file: its directory, as written for
	// a runner that is not go test.
	if b := f.read("prompt-b-1"); !strings.Contains(b, "Command: test -e . && echo targeted") {
		t.Errorf("the prompt of b does not give its derived test command:\n%s", b)
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

// TestRunExecutorNATSRefused: the nats executor with NATS that does not
// answer is refused with an error naming its URL, and so are a NATS URL
// holding credentials and an unknown executor.
func TestRunExecutorNATSRefused(t *testing.T) {
	f := newRunFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := "nats://" + l.Addr().String()
	l.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"nats unreachable", []string{"--executor", "nats", "--nats", nowhere}, "executor nats: connecting to NATS at " + nowhere},
		{"nats without url", []string{"--executor", "nats"}, "executor nats: no NATS URL (drover run --nats URL, or run.nats.url)"},
		{"credentials in the url", []string{"--executor", "nats", "--nats", "nats://me:secret@127.0.0.1:4222"}, "holds credentials; they go in run.nats.user"},
		{"unknown", []string{"--executor", "ssh"}, `executor "ssh": not one of local, nats`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.drover("", append(slices.Clone(f.args), c.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "secret") {
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

// withGraph writes graph to the file name in the fixture's folder and
// returns args, drover run's arguments, with that file as the graph.
func (f *runFixture) withGraph(args []string, name, graph string) []string {
	f.t.Helper()
	file := filepath.Join(f.dir, name)
	if err := os.WriteFile(file, []byte(graph), 0o644); err != nil {
		f.t.Fatal(err)
	}
	args = slices.Clone(args)
	args[1] = file
	return args
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
	// One iteration started; its agent may not even have got going on a
	// loaded machine before the budget killed it, but none came after.
	if got := f.count("a"); got > 1 {
		t.Errorf("task a ran %d times after its budget was spent, want at most 1", got)
	}
	if f.count("b") != 0 {
		t.Errorf("wave 2 ran after task a failed")
	}
	run := f.runStatus(runIDFrom(t, r.stdout))
	if a := taskByID(run, "a"); run.State != api.RunFailed || a.State != api.TaskFailed || a.EndedAt.IsZero() || a.Runs != 1 {
		t.Errorf("run %s, task a %+v; want a failed after 1 run", run.State, a)
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
			// b's own result line spent the dollars: its work is done,
			// judged when its iteration ended, not cut short.
			if b := taskByID(run, "b"); c.name == "dollars" && b.State != api.TaskDone {
				t.Errorf("task b %+v; want it done", b)
			}
		})
	}
}

func TestRunTaskDollarBudget(t *testing.T) {
	f := newRunFixture(t)
	// Every iteration costs $0.50: a, b and c are done in one; d's first
	// leaves its work uncommitted, and spends the budget of its task.
	r := f.drover("", append(f.args, "--task-max-usd", "0.5")...)
	if r.code == 0 {
		t.Fatalf("a task past its dollar budget exited 0:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "task d is failed: the task budget of $0.50 (--task-max-usd) is spent: its agents cost $0.50 after 1 iterations") {
		t.Errorf("the report does not say which task budget failed d:\n%s", r.stdout)
	}
	if got := f.count("d"); got != 1 {
		t.Errorf("task d ran %d times, want 1: its budget was spent after the first", got)
	}
	run := f.runStatus(runIDFrom(t, r.stdout))
	if d := taskByID(run, "d"); run.State != api.RunFailed || run.Merged != 2 || d.State != api.TaskFailed || d.CostUSD != 0.5 || run.Options.TaskMaxUSD != 0.5 {
		t.Errorf("run %s merged %d, options %+v, task d %+v; want d failed after $0.50", run.State, run.Merged, run.Options, d)
	}
}

// waitTask polls the run until task has the state, tool calls and cost
// wanted.
func (f *runFixture) waitTask(id, task string, state api.TaskState, tools int, cost float64) api.Run {
	f.t.Helper()
	var r api.Run
	wanted := func() bool {
		tk := taskByID(r, task)
		return tk.State == state && tk.ToolCalls == tools && math.Abs(tk.CostUSD-cost) < 1e-9
	}
	// A run that ended will not get there: no use waiting.
	eventually.Holds(45*time.Second, func() bool { r = f.runStatus(id); return wanted() || r.State != api.RunRunning })
	if !wanted() {
		f.t.Fatalf("task %s never was %s with %d tool calls and $%.2f: %+v", task, state, tools, cost, taskByID(r, task))
	}
	return r
}

func TestRunShowsRunningAgentsProgress(t *testing.T) {
	f := newRunFixture(t)
	f.touch("usage-a")
	f.touch("block-a")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))
	// a's agent has made its tool call and spent its tokens, and waits.
	r := f.waitTask(id, "a", api.TaskRunning, 1, 0.30)
	if math.Abs(r.CostUSD-0.30) > 1e-9 {
		t.Errorf("run cost while a works: $%v, want $0.30", r.CostUSD)
	}
	// The local executor runs it: the status says so.
	if table := f.must("", "run", "status", id); !tableRow(table, "a 1 running 1/3 developer - 1 $0.30 - local") || !strings.Contains(table, "TOOLS") || !strings.Contains(table, "WORKER") {
		t.Errorf("run status does not show a's progress and worker:\n%s", table)
	}
	f.touch("release")
	// Its result line gives the cost in the end: it replaces the estimate.
	f.waitTask(id, "a", api.TaskDone, 1, 0.5)
	r = f.waitRun(id)
	if r.State != api.RunDone || math.Abs(r.CostUSD-2.5) > 1e-9 {
		t.Errorf("run %s, cost $%v; want done, $2.50", r.State, r.CostUSD)
	}
}

func TestRunCountsKilledAgentsUsage(t *testing.T) {
	f := newRunFixture(t)
	f.touch("usage-a")
	f.touch("block-a")
	// a's agent never ends by itself and never prints a result line: what
	// it spent so far is past the run's budget, which kills it.
	r := f.drover("", append(f.args, "--max-usd", "0.25")...)
	if r.code == 0 {
		t.Fatalf("a run past its budget exited 0:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "run stopped: the run budget of $0.25 (--max-usd) is spent: the agents cost $0.30") || !strings.Contains(r.stdout, "task a is failed: stopped with the run") {
		t.Errorf("the report does not say the killed agent's spending stopped the run:\n%s", r.stdout)
	}
	if f.read("end-a") != "" || f.count("b") != 0 {
		t.Errorf("task a's agent finished, or b ran: the budget did not stop the run at once")
	}
	run := f.runStatus(runIDFrom(t, r.stdout))
	if a := taskByID(run, "a"); run.State != api.RunFailed || math.Abs(run.CostUSD-0.30) > 1e-9 || math.Abs(a.CostUSD-0.30) > 1e-9 || a.ToolCalls != 1 || a.State != api.TaskFailed {
		t.Errorf("run %s cost $%v, task a %+v; want failed, $0.30 and 1 tool call counted", run.State, run.CostUSD, a)
	}
}

func TestRunTaskDollarBudgetEndsRunningAgent(t *testing.T) {
	f := newRunFixture(t)
	// a's agent spends $0.30 and then waits for a release that never
	// comes: its task's budget, spent as it works, ends it.
	f.touch("usage-a")
	f.touch("block-a")
	r := f.drover("", append(f.args, "--task-max-usd", "0.25")...)
	if r.code == 0 {
		t.Fatalf("a task past its dollar budget exited 0:\n%s", r.stdout)
	}
	want := "task a is failed: the task budget of $0.25 (--task-max-usd) is spent: its agents cost $0.30 after 1 iterations; the last: The agent run failed: agent run stopped"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the report does not say the budget ended a's agent:\n%s", r.stdout)
	}
	if f.read("end-a") != "" || f.count("a") != 1 || f.count("b") != 0 {
		t.Errorf("task a ran %d times (ended: %q), b %d; want a's one agent ended by its budget", f.count("a"), f.read("end-a"), f.count("b"))
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
	out := f.must("", append(f.reviewed(), "--reviewer", rev+" {{prompt}}")...)
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

// runModelReviewer is review.command in the config of the run tests: it
// notes the model it was given for each task and fails the first review
// of task a with one finding; each review costs $0.25.
const runModelReviewer = `#!/bin/sh
d=$(dirname "$0")
t=$(git rev-parse --abbrev-ref HEAD); t=${t##*/}
echo "$1" >> "$d/models-$t"
if [ "$t" = a ] && [ "$(wc -l < "$d/models-$t")" -eq 1 ]; then
  echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","summary":"no docs"}]}}'
else
  echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"PASS","findings":[]}}'
fi
`

// readProjectFile reads a file of the project, "" when it cannot.
func (f *runFixture) readProjectFile(rel string) string {
	b, _ := os.ReadFile(filepath.Join(f.root, rel))
	return string(b)
}

// writeProjectFile writes a file under the project's root.
func (f *runFixture) writeProjectFile(rel, body string) {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// TestRunReviewsByDefaultWithProjectConfig runs without --reviewer or
// --no-review: every task is reviewed by the configured reviewer
// (review.cli custom, review.models in turn, opus first), iterations are
// routed by loop.routes, and the agent's prompt is the project's override
// of run_task.
func TestRunReviewsByDefaultWithProjectConfig(t *testing.T) {
	f := newRunFixture(t)
	rev := f.script("reviewer.sh", runModelReviewer)
	f.writeProjectFile(".drover/config.yaml", "review:\n  cli: custom\n  command: \""+rev+" {{model}} {{prompt}}\"\n  models: opus,sonnet\n"+
		"loop:\n  routes: 'phase=initial -> architect; anything -> developer'\n")
	f.writeProjectFile(".drover/templates/run_task.md", "PROJECT PROMPT for task {{task_id}} on {{branch}}: {{description}}\n\n{{role_prompt}}\n\n{{retry_section}}\n")

	out := f.must("", f.reviewed()...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") || !strings.Contains(out, "reviewer.sh {{model}} {{prompt}} (opus, sonnet in turn)") {
		t.Fatalf("run did not say who reviews, or did not end done:\n%s", out)
	}
	// a's first review (opus) failed, so a ran again and its second review
	// was sonnet's; every other task was reviewed once, by opus (d's
	// first iteration did not commit, so it was not reviewed).
	for task, want := range map[string]string{"a": "opus sonnet", "b": "opus", "c": "opus", "d": "opus"} {
		if got := strings.Join(strings.Fields(f.read("models-"+task)), " "); got != want {
			t.Errorf("task %s was reviewed by %q, want %q", task, got, want)
		}
	}
	if p := f.read("prompt-a-1"); !strings.Contains(p, `PROJECT PROMPT for task "a" on drover/`+id+"/a: Write a.txt.") || !strings.Contains(p, "You are the architect this iteration") {
		t.Errorf("the first prompt of a is not the project's template with the architect's role:\n%s", p)
	}
	if p := f.read("prompt-a-2"); !strings.Contains(p, "PROJECT PROMPT") || !strings.Contains(p, "blocking: no docs") {
		t.Errorf("the second prompt of a does not carry the review's findings:\n%s", p)
	}
	// The live view's last line of each task: role, tests, review, cost.
	for _, w := range []string{
		"task a (wave 1): done, iteration 2, developer, tests passed, review pass (sonnet), $1.50",
		"task b (wave 2): done, iteration 1, architect, tests passed, review pass (opus), $0.75",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the live view lacks %q:\n%s", w, out)
		}
	}
	r := f.runStatus(id)
	a := taskByID(r, "a")
	if a.Reviews != 2 || a.LastReview == nil || a.LastReview.Model != "sonnet" || a.LastReview.Outcome != api.ReviewPass || a.LastReview.Iteration != 2 {
		t.Errorf("task a: %d reviews, last %+v; want 2, the last sonnet's pass of iteration 2", a.Reviews, a.LastReview)
	}
	// Agents: 6 runs at $0.50 (a and d twice); reviews: 5 at $0.25.
	if r.CostUSD != 4.25 {
		t.Errorf("run cost $%v, want $4.25", r.CostUSD)
	}
	if table := f.must("", "run", "status", id); !tableRow(table, "a 1 done 2/3 developer passed 0 $1.50 pass (sonnet)") || !strings.Contains(table, "REVIEW") {
		t.Errorf("run status does not show the reviews:\n%s", table)
	}
}

// TestRunReadsConfigAtStart: a run reads the supervisor's configuration
// as last reloaded. Once .drover/config.yaml says loop.thrash_repeats 2,
// the next run ends a task whose tests fail the same way twice.
func TestRunReadsConfigAtStart(t *testing.T) {
	f := newRunFixture(t)
	// A first run starts the supervisor with the defaults.
	if out := f.must("", f.args...); !strings.Contains(out, " done") {
		t.Fatalf("first run:\n%s", out)
	}
	f.writeProjectFile(".drover/config.yaml", "loop:\n  thrash_repeats: 2\n")
	eventually.True(t, 30*time.Second, "the supervisor to reload .drover/config.yaml", func() bool {
		return strings.Contains(f.must("", "config", "--from-supervisor"), "thrash_repeats: 2")
	})
	for _, task := range []string{"a", "b", "c", "d"} {
		if err := os.Remove(filepath.Join(f.dir, "count-"+task)); err != nil {
			t.Fatal(err)
		}
	}
	args := f.withFlag("--test-command", f.script("failing-tests.sh", runFailingTests)+" {{packages}}")
	r := f.drover("", append(args, "--max-iterations", "6")...)
	if r.code == 0 || !strings.Contains(r.stdout, "task a is failed: thrashing after 2 iterations") {
		t.Errorf("exit %d; want the run failed on a thrashing after 2 iterations:\n%s", r.code, r.stdout)
	}
	if got := f.count("a"); got != 2 {
		t.Errorf("task a ran %d times, want 2", got)
	}
}

// planTasksMD is the task table of the plan of TestRunPlan: task 1 is
// done, 2 and 3 are left, one after the other.
const planTasksMD = `| Id | Status | Description |
|----|--------|-------------|
| 1 | done | Write one.txt. |
| 2 | in progress | Write two.txt. |
| 3 | pending | Write three.txt. |
`

func TestRunPlan(t *testing.T) {
	f := newRunFixture(t)
	f.writeProjectFile(".drover/plans/p1/plan.md", "# Plan\n")
	f.writeProjectFile(".drover/plans/p1/tasks.md", planTasksMD)
	f.writeProjectFile(".drover/plans/p1/task-2.md", "# Task 2\n\nWrite two.txt with the number two.\n")
	// A plan is committed with the project.
	f.git("add", ".drover/plans")
	f.git("commit", "-q", "-m", "plan p1")
	out := f.must("", append([]string{"run", "--plan", "p1"}, f.args[2:]...)...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "2 tasks in 2 waves") || !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("drover run --plan did not work tasks 2 then 3:\n%s", out)
	}
	for task, want := range map[string]int{"1": 0, "2": 1, "3": 1} {
		if got := f.count(task); got != want {
			t.Errorf("task %s ran %d times, want %d", task, got, want)
		}
	}
	if e2, s3 := f.stamp("end-2"), f.stamp("start-3"); e2 > s3 {
		t.Errorf("task 3 started before task 2 ended")
	}
	if p := f.read("prompt-2-1"); !strings.Contains(p, "Write two.txt with the number two.") {
		t.Errorf("task 2 was not described by its task file:\n%s", p)
	}
	if p := f.read("prompt-3-1"); !strings.Contains(p, "Write three.txt.") {
		t.Errorf("task 3 was not described by its row:\n%s", p)
	}
	r := f.runStatus(id)
	if r.File != filepath.Join(".drover", "plans", "p1", "tasks.md") || len(r.Tasks) != 2 || r.State != api.RunDone || r.Plan != "p1" {
		t.Errorf("run of the plan: file %q, plan %q, %d tasks, %s", r.File, r.Plan, len(r.Tasks), r.State)
	}

	// Each merged task is done in tasks.md, in the form the plan
	// workflow reads, and committed on main with its merge.
	want := strings.NewReplacer("| 2 | in progress |", "| 2 | done        |", "| 3 | pending |", "| 3 | done    |").Replace(planTasksMD)
	if got := f.readProjectFile(".drover/plans/p1/tasks.md"); got != want {
		t.Errorf("tasks.md after the run:\n%s\nwant:\n%s", got, want)
	}
	if st, err := f.gitOut("status", "--porcelain", "--untracked-files=no"); err != nil || st != "" {
		t.Errorf("main's work tree after the run: %q %v; want it clean", st, err)
	}
	if log, _ := f.gitOut("log", "--format=%s", "main"); !strings.Contains(log, "drover: plan p1: task 2 done (run "+id+")") ||
		!strings.Contains(log, "drover: plan p1: task 3 done (run "+id+")") {
		t.Errorf("main's log has no commit marking tasks 2 and 3 done:\n%s", log)
	}

	// A second run of the plan has nothing left to do.
	again := f.drover("", append([]string{"run", "--plan", "p1"}, f.args[2:]...)...)
	if again.code == 0 || !strings.Contains(again.stderr, "every task is done; there is nothing to run") {
		t.Errorf("a second drover run --plan: exit %d\n%s%s\nwant it to say every task is done", again.code, again.stdout, again.stderr)
	}
	for task, want := range map[string]int{"2": 1, "3": 1} {
		if got := f.count(task); got != want {
			t.Errorf("after the second run, task %s ran %d times, want %d", task, got, want)
		}
	}
}

func TestRunPlanRejects(t *testing.T) {
	f := newRunFixture(t)
	f.writeProjectFile(".drover/plans/cyc/tasks.md", "| Id | Status | Depends on | Description |\n|---|---|---|---|\n| 1 | todo | 2 | One. |\n| 2 | todo | 1 | Two. |\n")
	f.writeProjectFile(".drover/plans/bare/plan.md", "# Plan\n")
	graph := filepath.Join(f.dir, "tasks.yaml")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"file and plan", []string{"run", graph, "--plan", "cyc"}, "give a task graph FILE (" + graph + ") or --plan cyc, not both"},
		{"neither", []string{"run"}, "no tasks: give a task graph FILE or --plan PLAN-ID"},
		{"no such plan", []string{"run", "--plan", "nope"}, "no plan nope: " + filepath.Join(".drover", "plans", "nope") + " does not exist"},
		{"no tasks yet", []string{"run", "--plan", "bare"}, "plan bare has no tasks yet"},
		{"bad plan id", []string{"run", "--plan", "../x"}, `plan id "../x" is not valid`},
		{"cycle", []string{"run", "--plan", "cyc"}, filepath.Join(".drover", "plans", "cyc", "tasks.md") + `:3: task "1": dependency cycle: 1 -> 2 -> 1`},
		{"reviewer and no review", []string{"run", graph, "--reviewer", "claude", "--no-review"}, "none of the others can be"},
		{"an infinite budget", []string{"run", graph, "--max-usd", "inf"}, "--max-usd +Inf is not a budget (0 for none)"},
		{"a budget that is not a number", []string{"run", graph, "--task-max-minutes", "NaN"}, "--task-max-minutes NaN is not a budget"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.drover("", c.args...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, c.want)
			}
		})
	}
	if f.supervisorPID() != 0 {
		t.Errorf("a refused run started a supervisor")
	}
}

// TestRunStatusWatch: run status --watch, its stdout not a terminal,
// prints a new view at each change, as plain text, until the run ends.
func TestRunStatusWatch(t *testing.T) {
	f := newRunFixture(t)
	f.touch("block-a")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, "run", "status", id, "--watch")
	cmd.Dir, cmd.Env = f.root, append(f.env, "CLAUDE_PROJECT_DIR="+f.root, "TERM=xterm")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read the views as they come; release a once the first shows it at
	// work, so that later views must follow.
	var lines []string
	released := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if fs := strings.Fields(line); !released && len(fs) > 2 && fs[0] == "a" && fs[2] == "running" {
			f.touch("release")
			released = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run status --watch: %v\n%s", err, stderr.String())
	}
	out := strings.Join(lines, "\n")
	if !released {
		t.Fatalf("no view showed task a running:\n%s", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("--watch into a pipe wrote terminal escapes:\n%q", out)
	}
	// The polls may miss steps, never the first view and the last.
	if views := strings.Count(out, "TASK  "); views < 2 {
		t.Errorf("--watch printed %d views, want one per change (at least a running and the end):\n%s", views, out)
	}
	last := out[strings.LastIndex(out, "run "+id):]
	if !strings.Contains(last, ": done, 3 of 3 waves merged") || !tableRow(last, "d 3 done") {
		t.Errorf("the last view is not the finished run:\n%s", last)
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}, "xterm") {
		t.Error("a buffer is a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f, "xterm") {
		t.Error("a regular file is a terminal")
	}
	if isTerminal(os.Stdout, "dumb") || isTerminal(os.Stdout, "") {
		t.Error("a dumb or unnamed terminal gets escapes")
	}
}

func TestProgressLine(t *testing.T) {
	tests := &api.TestResult{Passed: true}
	until := time.Now().Add(90 * time.Minute)
	cases := []struct {
		task api.RunTask
		want string
	}{
		{api.RunTask{ID: "a", Wave: 1, State: api.TaskPending}, "task a (wave 1): pending"},
		{api.RunTask{ID: "a", Wave: 1, State: api.TaskRunning, Iteration: 2, Role: "debugger", LastTest: tests, CostUSD: 1}, "task a (wave 1): running, iteration 2, debugger"},
		{
			api.RunTask{ID: "a", Wave: 1, State: api.TaskPending, Iteration: 1, Role: "developer", LimitUntil: until, LimitRetries: 1, Limit: "API Error: Request rejected (429)"},
			"task a (wave 1): pending, iteration 1, developer, $0.00: waiting for the usage limit until " + until.Local().Format("15:04") + ": API Error: Request rejected (429)",
		},
		{
			api.RunTask{ID: "a", Wave: 1, State: api.TaskPending, Iteration: 1, Role: "developer", LastTest: tests, CostUSD: 0.75, Reviews: 1, LastReview: &api.TaskReview{Model: "opus", Outcome: api.ReviewFail, Blocking: 2, Iteration: 1}},
			"task a (wave 1): pending, iteration 1, developer, tests passed, review fail: 2 blocking (opus), $0.75",
		},
		{
			// A review of an earlier iteration is not this one's.
			api.RunTask{ID: "b", Wave: 2, State: api.TaskFailed, Iteration: 3, Role: "architect", LastTest: &api.TestResult{}, CostUSD: 2, LastReview: &api.TaskReview{Outcome: api.ReviewPass, Iteration: 1}, Error: "thrashing"},
			"task b (wave 2): failed, iteration 3, architect, tests failed, $2.00: thrashing",
		},
	}
	for _, c := range cases {
		if got := progressLine(c.task); got != c.want {
			t.Errorf("progressLine(%+v) =\n%q, want\n%q", c.task, got, c.want)
		}
	}
}

func TestPrintProgressOrdersWaveMerges(t *testing.T) {
	task := func(id string, wave int, state api.TaskState, it int) api.RunTask {
		return api.RunTask{ID: id, Wave: wave, State: state, Iteration: it, Role: "developer"}
	}
	cases := []struct {
		name   string
		run    api.Run
		seen   map[string]string
		merged int
		want   []string
	}{
		{
			// One poll saw wave 1's last task finish, the wave merged and
			// wave 2 started: the merge comes between them.
			name: "merge between waves",
			run: api.Run{Target: "main", Merged: 1, Tasks: []api.RunTask{
				task("a", 1, api.TaskDone, 1), task("b", 2, api.TaskRunning, 1),
			}},
			want: []string{
				"task a (wave 1): done, iteration 1, developer, $0.00",
				"wave 1 merged into main; suite passed",
				"task b (wave 2): running, iteration 1, developer",
			},
		},
		{
			name: "two merges in one poll",
			run: api.Run{Target: "main", Merged: 2, Tasks: []api.RunTask{
				task("c", 3, api.TaskRunning, 1), task("b", 2, api.TaskDone, 1), task("a", 1, api.TaskDone, 1),
			}},
			want: []string{
				"task a (wave 1): done, iteration 1, developer, $0.00",
				"wave 1 merged into main; suite passed",
				"task b (wave 2): done, iteration 1, developer, $0.00",
				"wave 2 merged into main; suite passed",
				"task c (wave 3): running, iteration 1, developer",
			},
		},
		{
			name: "merges printed before are not printed again",
			run: api.Run{Target: "main", Merged: 1, Tasks: []api.RunTask{
				task("a", 1, api.TaskDone, 1), task("b", 2, api.TaskRunning, 2),
			}},
			seen:   map[string]string{"a": "done/1/developer/0"},
			merged: 1,
			want:   []string{"task b (wave 2): running, iteration 2, developer"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen := c.seen
			if seen == nil {
				seen = map[string]string{}
			}
			var b strings.Builder
			if got := printProgress(&b, c.run, seen, c.merged); got != c.run.Merged {
				t.Errorf("printProgress returned %d merged waves, want %d", got, c.run.Merged)
			}
			if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestWatchRunSupervisorGone: a supervisor killed (-9, a crash) while
// drover run or drover run status --watch follows its run is not there
// to ask; the user is told the run stopped and how to go on, not shown
// a socket error alone.
func TestWatchRunSupervisorGone(t *testing.T) {
	run := api.Run{ID: "run-1", State: api.RunRunning, Active: true, Target: "main", Waves: 1,
		Tasks: []api.RunTask{{ID: "a", Wave: 1, State: api.TaskRunning, Iteration: 1}}}
	c := client.New(filepath.Join(t.TempDir(), "gone.sock"))
	for name, watch := range map[string]func(a *app) error{
		"run":          func(a *app) error { return a.watchRun(context.Background(), c, run) },
		"status watch": func(a *app) error { return a.watchStatus(context.Background(), c, run, false) },
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			a := &app{stdout: &out}
			err := watch(a)
			if err == nil || !strings.Contains(err.Error(), "drover run resume run-1") || !strings.Contains(err.Error(), "supervisor stopped") {
				t.Errorf("error %v; want the run's stop told with drover run resume run-1", err)
			}
			if !client.IsUnavailable(err) {
				t.Errorf("error %v does not wrap client.ErrUnavailable", err)
			}
		})
	}
}

// TestRunCancel cancels a run while task a's agent works: the agent is
// killed at once, the run ends failed saying it was cancelled, a cancel
// of a run not worked is refused, and the run resumed finishes.
func TestRunCancel(t *testing.T) {
	f := newRunFixture(t)
	f.touch("block-a")
	id := runIDFrom(t, f.must("", append(f.args, "--detach")...))
	if !eventually.Holds(45*time.Second, func() bool { return f.read("pid-a") != "" }) {
		t.Fatalf("task a's agent never started: %+v", f.runStatus(id))
	}
	pid, err := strconv.Atoi(f.read("pid-a"))
	if err != nil {
		t.Fatal(err)
	}
	out := f.must("", "run", "cancel", id)
	if !strings.Contains(out, "run "+id+" cancelled") || !strings.Contains(out, "task a is failed: stopped with the run: cancelled") {
		t.Errorf("cancel did not report the run cancelled:\n%s", out)
	}
	if !gone(pid, 10*time.Second) {
		t.Errorf("task a's agent (pid %d) still runs after the cancel", pid)
	}
	if r := f.runStatus(id); r.State != api.RunFailed || r.Active || !strings.Contains(r.Report, "run stopped: cancelled") {
		t.Errorf("run after cancel: %s, active %v: %s", r.State, r.Active, r.Report)
	}
	if r := f.drover("", "run", "cancel", id); r.code == 0 || !strings.Contains(r.stderr, "is not being worked") {
		t.Errorf("a second cancel exited %d: %s", r.code, r.stderr)
	}
	if err := os.Remove(filepath.Join(f.dir, "block-a")); err != nil {
		t.Fatal(err)
	}
	f.must("", "run", "resume", id, "--detach")
	if r := f.waitRun(id); r.State != api.RunDone {
		t.Fatalf("the resumed run did not finish: %s: %s", r.State, r.Report)
	}
}

// runDeniedReviewer is a --reviewer that prints claude's envelope with a
// refused Bash call: it fails the first review of a task, passes the next.
const runDeniedReviewer = `#!/bin/sh
d=$(dirname "$0")
t=$(git rev-parse --abbrev-ref HEAD); t=${t##*/}
echo x >> "$d/reviews-$t"
denied='"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"go test ./...","description":"Run the tests"}}]'
if [ "$(grep -c x "$d/reviews-$t")" = 1 ]; then
  echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","summary":"the tests were not run"}]},'"$denied"'}'
else
  echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25,"structured_output":{"verdict":"PASS","findings":[]},'"$denied"'}'
fi
`

// TestRunReportsRefusedReviewerCalls: a task review whose CLI refused the
// reviewer a tool call says so, to the task's next iteration and in the
// run's status, so that nobody takes it for checks that were made.
func TestRunReportsRefusedReviewerCalls(t *testing.T) {
	f := newRunFixture(t)
	rev := f.script("reviewer.sh", runDeniedReviewer)
	args := f.withGraph(f.reviewed(), "one.yaml", "tasks:\n  - id: a\n    description: Write a.txt.\n    tests: [a.txt]\n")
	out := f.must("", append(args, "--reviewer", rev+" {{prompt}}")...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}
	p := f.read("prompt-a-2")
	if !strings.Contains(p, "blocking: the tests were not run") || !strings.Contains(p, "refused it 1 tool call(s)") || !strings.Contains(p, "- `Bash` `go test ./...`") {
		t.Errorf("a's next iteration was not told of the refused call:\n%s", p)
	}
	status := f.must("", "run", "status", id)
	if !tableRow(status, "a 1 done 2/3 developer passed 0 $1.50 pass (sonnet), 1 tool call(s) refused") {
		t.Errorf("the review column does not count the refused call:\n%s", status)
	}
	if !strings.Contains(status, "task a: the reviewer's CLI refused it 1 tool call(s) in the review of iteration 2, so the review may rest on checks it could not make: `Bash` `go test ./...`") {
		t.Errorf("run status does not name the refused call:\n%s", status)
	}
	if r := taskByID(f.runStatus(id), "a").LastReview; r == nil || len(r.Denied) != 1 {
		t.Errorf("run status --json: last review %+v, want one refused call", r)
	}
}
