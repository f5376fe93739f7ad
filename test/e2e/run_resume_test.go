//go:build linux

// Linux only: the supervisor's agents die with it through the kernel's
// parent-death signal (internal/agentrun/deathsig_linux.go), and the test
// finds a run's processes in /proc.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// resumeTasks are the tasks of testdata/run-resume-graph.yaml: fast and
// slow in wave 1, last in wave 2.
var resumeTasks = []string{"fast", "slow", "last"}

// Which task a CLI session worked on, from its prompt: an agent's, or the
// reviewer's.
var (
	agentPromptRE  = regexp.MustCompile(`working on task "(\w+)" of a drover run`)
	reviewPromptRE = regexp.MustCompile(`You are an independent reviewer of task "(\w+)" of a drover run`)
)

// TestRunResumeAfterKill9 kills the supervisor with SIGKILL in the middle
// of wave 1, once task fast is done (reviewed and recorded) while the
// agent of task slow is still at work, and has `drover run resume` finish
// the run with a new supervisor. The kill takes the run's agent processes
// with it; fast is not worked again (one agent, one review, one commit);
// slow starts over in the work tree it had; wave 2 runs; the run ends done.
func TestRunResumeAfterKill9(t *testing.T) {
	p := newRunProject(t, "run-resume.yaml")
	e2e := filepath.Join(p.root, ".git", "e2e")
	graph, err := filepath.Abs(filepath.Join("testdata", "run-resume-graph.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := p.exec(time.Minute, "run", graph, "--detach", "--reviewer", "claude")
	if code != 0 {
		t.Fatalf("drover run --detach exited %d:\n%s", code, out)
	}
	id := printedRunID(t, out)
	// Should the test stop early, no process of the run outlives it.
	t.Cleanup(func() { killRunProcesses(t, id) })

	// Mid-wave: fast is done, slow's agent waits in its commit step.
	var before api.Run
	eventually.True(t, runTimeout, "task fast done while task slow's agent waits", func() bool {
		before = p.quietStatus(id)
		if before.State != api.RunRunning {
			t.Fatalf("run %s ended (%s) before the kill: %s", id, before.State, before.Report)
		}
		fast, slow := taskOf(t, before, "fast"), taskOf(t, before, "slow")
		return fast.State == api.TaskDone && slow.State == api.TaskRunning && countLines(t, filepath.Join(e2e, "waiting-slow")) == 1
	})
	if before.Merged != 0 || taskOf(t, before, "last").State != api.TaskPending {
		t.Fatalf("not mid-wave 1: %d waves merged, task last %s", before.Merged, taskOf(t, before, "last").State)
	}
	fastBranch := taskOf(t, before, "fast").Branch
	fastTip := p.git("rev-parse", fastBranch)
	procs := runProcesses(t, id)
	waiter, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(e2e, "waiting-slow"))))
	if err != nil {
		t.Fatalf("waiting-slow: %v", err)
	}
	if _, ok := procs[waiter]; !ok {
		t.Fatalf("the shell of slow's commit step (pid %d) is not among the run's processes %v", waiter, procs)
	}

	sup := p.supervisorPID()
	if sup == 0 {
		t.Fatal("no supervisor runs")
	}
	// The agents are the supervisor's children: the CLI of task slow now.
	agents := map[int]runProcess{}
	for pid, rp := range procs {
		if rp.ppid == sup {
			agents[pid] = rp
		}
	}
	if !hasTaskProcess(agents, "slow") {
		t.Fatalf("no agent process of task slow is a child of the supervisor %d: %v", sup, procs)
	}
	seen := len(p.model.Messages())
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", sup, err)
	}
	if !waitGone(sup, 30*time.Second) {
		t.Fatalf("supervisor %d survived kill -9", sup)
	}

	// What drover guarantees: its agents die with it (the kernel's
	// parent-death signal, internal/agentrun/deathsig_linux.go).
	eventually.True(t, 30*time.Second, "the agents gone after the kill", func() bool {
		for pid := range agents {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	// What it does not: the CLI runs each Bash tool call in a session of
	// its own, which neither that signal nor a kill of the agent's process
	// group reaches. So slow's first commit step (its waiting shell) may
	// still run here; the scenario never releases it, so it cannot commit,
	// and resume must kill it (checked at the end of the test).
	for pid, rp := range runProcesses(t, id) {
		t.Logf("left running by the kill: pid %d (%s)", pid, rp)
	}

	// After the crash the run is interrupted mid-wave 1. `run status`
	// starts a new supervisor (with the agents' environment).
	crashed := p.runStatus(id)
	if crashed.State != api.RunRunning || crashed.Active || crashed.Merged != 0 {
		t.Errorf("after the kill: state %s, active %t, %d waves merged; want running, not active, 0", crashed.State, crashed.Active, crashed.Merged)
	}
	for task, want := range map[string]api.TaskState{"fast": api.TaskDone, "slow": api.TaskRunning, "last": api.TaskPending} {
		if got := taskOf(t, crashed, task).State; got != want {
			t.Errorf("after the kill task %s is %s, want %s", task, got, want)
		}
	}
	if second := p.supervisorPID(); second == 0 || second == sup {
		t.Errorf("supervisor after the kill: pid %d (the killed one was %d), want a new one", second, sup)
	}

	// Let the next agent of slow commit at once, and resume.
	if err := os.WriteFile(filepath.Join(e2e, "release-slow-2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = p.exec(runTimeout, "run", "resume", id)
	if code != 0 || !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("drover run resume exited %d; want 0 and %q in:\n%s", code, "run "+id+" done", out)
	}
	if w := "run " + id + " resumed: 1 of 3 tasks done, 0 of 2 waves merged"; !strings.Contains(out, w) {
		t.Errorf("drover run resume did not print %q", w)
	}

	r := p.runStatus(id)
	if r.State != api.RunDone || r.Active || r.Waves != 2 || r.Merged != 2 {
		t.Errorf("run: state %s, active %t, %d of %d waves merged; want done, not active, 2 of 2", r.State, r.Active, r.Merged, r.Waves)
	}
	if r.Suite == nil || !r.Suite.Passed {
		t.Errorf("last checkpoint: %+v; want passed", r.Suite)
	}
	wantRuns := map[string]int{"fast": 1, "slow": 2, "last": 1}
	for _, task := range resumeTasks {
		rt := taskOf(t, r, task)
		if rt.State != api.TaskDone || rt.Runs != wantRuns[task] || rt.LastTest == nil || !rt.LastTest.Passed {
			t.Errorf("task %s: state %s, %d agent runs, last test %+v; want done after %d runs, tests passed", task, rt.State, rt.Runs, rt.LastTest, wantRuns[task])
		}
	}

	// fast was not worked again: one agent run, one review, no model
	// request after the kill, its branch as it was.
	agentSessions, reviewSessions := sessionsByTask(p.model.Messages())
	for _, task := range resumeTasks {
		if n := len(agentSessions[task]); n != wantRuns[task] {
			t.Errorf("the model saw %d agent sessions of task %s, want %d", n, task, wantRuns[task])
		}
		if n := len(reviewSessions[task]); n != 1 {
			t.Errorf("the model saw %d reviews of task %s, want 1", n, task)
		}
		if n := countLines(t, filepath.Join(e2e, "starts-"+task)); n != wantRuns[task] {
			t.Errorf("the agent of task %s started %d times, want %d", task, n, wantRuns[task])
		}
	}
	fastSessions := map[string]bool{}
	for _, ss := range [][]string{agentSessions["fast"], reviewSessions["fast"]} {
		for _, s := range ss {
			fastSessions[s] = true
		}
	}
	for _, req := range since(p.model.Messages(), seen) {
		if fastSessions[req.SessionID] {
			t.Errorf("model request #%d after the kill is task fast's (session %s)", req.Seq, req.SessionID)
		}
	}
	if got := p.git("rev-parse", fastBranch); got != fastTip {
		t.Errorf("%s moved from %s to %s on resume", fastBranch, fastTip, got)
	}
	// slow's re-run started from its branch's last commit: the next agent
	// did not find the file the killed one wrote (waiting-slow below shows
	// the killed one got as far as its commit step) and did not commit.
	mustNotExist(t, filepath.Join(e2e, "leftover"))
	if n := countLines(t, filepath.Join(e2e, "waiting-slow")); n != 2 {
		t.Errorf("slow's commit step ran %d times, want 2", n)
	}

	// One commit per task on main, every branch merged.
	subjects := strings.Split(p.git("log", "--format=%s", "main"), "\n")
	for _, task := range resumeTasks {
		n := 0
		for _, s := range subjects {
			if s == "task "+task {
				n++
			}
		}
		if n != 1 {
			t.Errorf("main has %d commits %q, want 1:\n%s", n, "task "+task, strings.Join(subjects, "\n"))
		}
		b := taskOf(t, r, task).Branch
		if _, err := claudecli.Git(t.Context(), p.root, "merge-base", "--is-ancestor", b, "main"); err != nil {
			t.Errorf("%s is not merged into main: %v", b, err)
		}
		p.git("cat-file", "-e", "main:pkg/"+task+"/"+task+"_test.go")
	}
	// Every agent of the run ended, and with it what it started, the
	// first commit step of slow included: resume killed what the kill left.
	for pid, rp := range runProcesses(t, id) {
		if pid == waiter {
			t.Errorf("slow's first commit step (pid %d) still runs: the kill left it and resume did not end it", pid)
			continue
		}
		t.Errorf("process of the run left after it ended: pid %d (%s)", pid, rp)
	}
}

// printedRunID is the run id `drover run` prints first.
func printedRunID(t *testing.T, out string) string {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "run" || !strings.HasSuffix(f[1], ":") {
		t.Fatalf("drover run printed no run id first:\n%s", out)
	}
	return strings.TrimSuffix(f[1], ":")
}

// quietStatus is runStatus without logging, for polling.
func (p *runProject) quietStatus(id string) api.Run {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, "run", "status", id, "--json")
	cmd.Dir = p.root
	cmd.Env = p.environ
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("drover run status %s --json: %v\n%s", id, err, errb.String())
	}
	var r api.Run
	if err := json.Unmarshal(out, &r); err != nil {
		p.t.Fatalf("drover run status --json: %v\n%s", err, out)
	}
	return r
}

// taskOf returns the task id of r; it fails the test if r has none.
func taskOf(t *testing.T, r api.Run, id string) api.RunTask {
	t.Helper()
	for _, task := range r.Tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("run %s has no task %s: %+v", r.ID, id, r.Tasks)
	return api.RunTask{}
}

// countLines is the number of lines of path, 0 when it does not exist.
func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// runProcess is a live process of a run: an agent, or something it
// started (each inherits the agent's environment).
type runProcess struct {
	task, cmdline   string
	ppid, pgid, sid int
}

func (r runProcess) String() string {
	return "task " + r.task + ", parent " + strconv.Itoa(r.ppid) + ", group " + strconv.Itoa(r.pgid) +
		", session " + strconv.Itoa(r.sid) + ": " + r.cmdline
}

// runProcesses returns the live processes (zombies excluded) whose
// environment holds DROVER_RUN_ID=id, by pid.
func runProcesses(t *testing.T, id string) map[int]runProcess {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]runProcess{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue // gone, or not ours
		}
		var rp runProcess
		found := false
		for kv := range strings.SplitSeq(string(environ), "\x00") {
			switch {
			case kv == "DROVER_RUN_ID="+id:
				found = true
			case strings.HasPrefix(kv, "DROVER_TASK_ID="):
				rp.task = strings.TrimPrefix(kv, "DROVER_TASK_ID=")
			}
		}
		if !found {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndex(stat, []byte(") "))
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+2:]))
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		rp.ppid, _ = strconv.Atoi(f[1])
		rp.pgid, _ = strconv.Atoi(f[2])
		rp.sid, _ = strconv.Atoi(f[3])
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		rp.cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		out[pid] = rp
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndex(stat, []byte(") "))
	return i < 0 || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

// hasTaskProcess reports whether one of ps works on task.
func hasTaskProcess(ps map[int]runProcess, task string) bool {
	for _, p := range ps {
		if p.task == task {
			return true
		}
	}
	return false
}

// killRunProcesses kills, by pid, whatever processes of run id the test
// left behind (agents it made the supervisor start).
func killRunProcesses(t *testing.T, id string) {
	for pid, p := range runProcesses(t, id) {
		t.Logf("killing process %d of run %s left behind (%s)", pid, id, p)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// sessionsByTask maps each task to the CLI sessions, in order, that
// worked on it as its agent and as its reviewer, from their prompts.
func sessionsByTask(reqs []fakemodel.Request) (agent, review map[string][]string) {
	agent, review = map[string][]string{}, map[string][]string{}
	seen := map[string]bool{}
	for _, r := range reqs {
		if seen[r.SessionID] {
			continue
		}
		for _, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			if s := agentPromptRE.FindStringSubmatch(m.Text); s != nil {
				agent[s[1]] = append(agent[s[1]], r.SessionID)
				seen[r.SessionID] = true
			} else if s := reviewPromptRE.FindStringSubmatch(m.Text); s != nil {
				review[s[1]] = append(review[s[1]], r.SessionID)
				seen[r.SessionID] = true
			}
			break
		}
	}
	return agent, review
}
