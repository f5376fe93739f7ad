package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
)

// runBlockingSuite is a --suite-command that logs each checkpoint as
// runFakeSuite does; with "block-suite" in its folder, its first run
// records its pid in suite-pid and waits for "release".
const runBlockingSuite = `#!/bin/sh
d=$(dirname "$0")
echo $(ls *.txt 2>/dev/null) >> "$d/suite-log"
if [ -f "$d/block-suite" ] && [ ! -f "$d/suite-pid" ]; then
  echo $$ > "$d/suite-pid"
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
`

// TestRunResumeAfterKill9DuringTheCheckpoint kills the supervisor with -9
// while wave 1's checkpoint runs: the commit that asked for it is stored,
// a's branch is merged into main, and the suite has not finished. The
// resumed run merges and checks wave 1 again (the merge is a no-op) and
// finishes: no agent runs again, each task is merged into main once, and
// neither the spend nor the time worked before the kill counts twice.
func TestRunResumeAfterKill9DuringTheCheckpoint(t *testing.T) {
	f := newRunFixture(t)
	f.touch("block-suite")
	suite := f.script("blocking-suite.sh", runBlockingSuite)
	id := runIDFrom(t, f.must("", append(f.withFlag("--suite-command", suite), "--detach")...))

	if !eventually.Holds(45*time.Second, func() bool { return f.read("suite-pid") != "" }) {
		t.Fatalf("wave 1's suite never started: %+v", f.runStatus(id))
	}
	suitePID, err := strconv.Atoi(f.read("suite-pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := f.supervisorPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	// The watchdog ends the suite; should it not, a person would.
	_ = syscall.Kill(-suitePID, syscall.SIGKILL)
	if !gone(suitePID, 30*time.Second) {
		t.Fatalf("the suite (pid %d) outlived the supervisor", suitePID)
	}

	before := f.runStatus(id)
	if before.State != api.RunRunning || before.Merged != 0 || taskByID(before, "a").State != api.TaskDone {
		t.Fatalf("after the kill: run %s, %d waves merged, task a %s; want running, 0, done", before.State, before.Merged, taskByID(before, "a").State)
	}
	if n := f.mergesOf(id, "a"); n != 1 {
		t.Fatalf("main has %d merges of task a before the resume, want 1: the checkpoint was not under way", n)
	}
	time.Sleep(200 * time.Millisecond) // no supervisor: no budget counts this
	f.must("", "run", "resume", id, "--detach")
	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 3 {
		t.Fatalf("the resumed run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}

	for task, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 2} {
		if got := f.count(task); got != want {
			t.Errorf("task %s's agent ran %d times, want %d", task, got, want)
		}
		if n := f.mergesOf(id, task); n != 1 {
			t.Errorf("main has %d merges of task %s, want 1", n, task)
		}
	}
	// Wave 1 was checked twice, the others once.
	if got, want := f.read("suite-log"), "a.txt\na.txt\na.txt b.txt c.txt\na.txt b.txt c.txt d.txt"; got != want {
		t.Errorf("suite log:\n%s\nwant:\n%s", got, want)
	}
	// Five agent runs of $0.50.
	if math.Abs(final.CostUSD-2.5) > 1e-9 || math.Abs(taskByID(final, "a").CostUSD-0.5) > 1e-9 {
		t.Errorf("the run cost $%v, task a $%v; want $2.50 and $0.50", final.CostUSD, taskByID(final, "a").CostUSD)
	}
	if worked := before.UpdatedAt.Sub(before.ResumedAt); final.WorkedBefore != worked {
		t.Errorf("the run worked %s before the resume, want %s (its time before the kill)", final.WorkedBefore, worked)
	}
}

// mergesOf counts the merges of a task's branch into main.
func (f *runFixture) mergesOf(id, task string) int {
	f.t.Helper()
	out, err := f.gitOut("log", "--format=%s", "main")
	if err != nil {
		f.t.Fatalf("git log: %v\n%s", err, out)
	}
	return strings.Count(out+"\n", "Merge branch 'refs/heads/drover/"+id+"/"+task+"'\n")
}

// runBlockingMergeHook is a pre-merge-commit hook for the project: with
// "block-merge" in its folder, the first merge it sees records its
// environment in merge-env, leaves index.lock behind as a git killed while
// it wrote the index would, records its pid in merge-pid and waits for
// "release". The hook is the merge's child, in its process group.
const runBlockingMergeHook = `#!/bin/sh
d=%q
if [ -f "$d/block-merge" ] && [ ! -f "$d/merge-pid" ]; then
  env > "$d/merge-env"
  : > "$(git rev-parse --git-dir)/index.lock"
  echo $$ > "$d/merge-pid"
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
`

// TestRunResumeAfterKill9DuringTheMerge kills the supervisor with -9 while
// wave 1's merge runs: git has staged a's branch in main's index and left
// index.lock, and its pre-merge-commit hook waits. The merge carries the
// supervisor's tag and the run's id, so the watchdog ends it, hook
// included; the resumed run clears the lock and the half-done merge, and
// merges every task into main once.
func TestRunResumeAfterKill9DuringTheMerge(t *testing.T) {
	f := newRunFixture(t)
	hook := filepath.Join(f.root, ".git", "hooks", "pre-merge-commit")
	if err := os.WriteFile(hook, []byte(fmt.Sprintf(runBlockingMergeHook, f.dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	f.touch("block-merge")
	id := runIDFrom(t, f.must("", append(slices.Clone(f.args), "--detach")...))

	if !eventually.Holds(45*time.Second, func() bool { return f.read("merge-pid") != "" }) {
		t.Fatalf("wave 1's merge never ran its hook: %+v", f.runStatus(id))
	}
	hookPID, err := strconv.Atoi(f.read("merge-pid"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(hookPID, syscall.SIGKILL) })
	env := "\n" + f.read("merge-env") + "\n"
	if !strings.Contains(env, "\nDROVER_RUN_ID="+id+"\n") || !strings.Contains(env, "\nDROVER_SUPERVISOR_RUN=") {
		t.Errorf("the merge does not carry the run's id and the supervisor's tag:\n%s", env)
	}
	pid := f.supervisorPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if !gone(hookPID, 30*time.Second) {
		t.Errorf("the merge's hook (pid %d) outlived the supervisor: the watchdog did not end the merge", hookPID)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git", "index.lock")); err != nil {
		t.Fatalf("the killed merge left no index.lock to clean up: %v", err)
	}
	if st, _ := f.gitOut("status", "--porcelain", "--untracked-files=no"); st == "" {
		t.Fatalf("the killed merge left nothing staged in main")
	}

	f.must("", "run", "resume", id, "--detach")
	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 3 {
		t.Fatalf("the resumed run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		if n := f.mergesOf(id, task); n != 1 {
			t.Errorf("main has %d merges of task %s, want 1", n, task)
		}
	}
	if _, err := os.Stat(filepath.Join(f.root, ".git", "index.lock")); err == nil {
		t.Errorf("index.lock is still in main's git directory")
	}
	if st, err := f.gitOut("status", "--porcelain", "--untracked-files=no"); err != nil || st != "" {
		t.Errorf("main's work tree after the run: %q %v; want it clean", st, err)
	}
}
