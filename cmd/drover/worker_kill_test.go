package main

import (
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
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/test/natstest"
)

// clusterAgent is the agent of the NATS cluster tests: it counts its
// runs per task, logs the directory it works in (which names its worker)
// in where-<task>, commits <task>.txt and costs $0.50. With "block-<task>"
// in its folder, the first run of that task records its pid in
// agent-pid-<task> and waits (for "release", or for ever: a test kills
// it); later runs go straight through.
const clusterAgent = `#!/bin/sh
d=$(dirname "$0")
t=$DROVER_TASK_ID
echo x >> "$d/count-$t"
pwd -P >> "$d/where-$t"
if [ -f "$d/block-$t" ] && [ ! -f "$d/agent-pid-$t" ]; then
  echo $$ > "$d/agent-pid-$t"
  i=0
  while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
fi
echo "$t" > "$t.txt"
git add "$t.txt" && git commit -qm "task $t" || exit 4
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"num_turns":1,"result":"ok"}\n'
`

// clusterGraph has six tasks in two waves.
const clusterGraph = `tasks:
  - {id: a1, description: Write a1.txt., tests: [a1.txt]}
  - {id: a2, description: Write a2.txt., tests: [a2.txt]}
  - {id: a3, description: Write a3.txt., tests: [a3.txt]}
  - {id: b1, description: Write b1.txt., tests: [b1.txt], depends-on: [a1, a2, a3]}
  - {id: b2, description: Write b2.txt., tests: [b2.txt], depends-on: [a1, a2, a3]}
  - {id: b3, description: Write b3.txt., tests: [b3.txt], depends-on: [a1, a2, a3]}
`

var clusterTasks = []string{"a1", "a2", "a3", "b1", "b2", "b3"}

// newClusterFixture is a run fixture with the cluster tests' agent and
// graph; its main's head before the run is returned too.
func newClusterFixture(t *testing.T) (*runFixture, string) {
	t.Helper()
	f := newRunFixture(t)
	for name, body := range map[string]string{"agent.sh": clusterAgent, "tasks.yaml": clusterGraph} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	head, err := f.gitOut("rev-parse", "main")
	if err != nil {
		t.Fatal(head, err)
	}
	return f, strings.TrimSpace(head)
}

// clusterWorker is a `drover worker` process of a cluster test.
type clusterWorker struct {
	name string
	dir  string
	cmd  *exec.Cmd
}

// startClusterWorker runs `drover worker` in f's project until the test
// ends (or it is killed), with a short ack wait and the flags of extra.
func startClusterWorker(t *testing.T, f *runFixture, url, name string, extra ...string) *clusterWorker {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(droverBin, "worker", "--nats", url, "--name", name, "--concurrency", "2", "--dir", dir, "--ack-wait", "1s")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Dir, cmd.Env = f.root, append(f.env, "CLAUDE_PROJECT_DIR="+f.root)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// A child of a killed worker that lives on holds its stderr.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &clusterWorker{name: name, dir: dir, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return // the test killed it
		}
		if err != nil {
			t.Errorf("drover worker %s: %v\n%s", name, err, stderr.String())
		}
	})
	return w
}

// startNATSRunAtA1 starts f's run detached on the NATS executor at url
// and waits until a1's agent (which block-a1 holds) is at work; it
// returns the run's id.
func startNATSRunAtA1(t *testing.T, f *runFixture, url string) string {
	t.Helper()
	id := runIDFrom(t, f.must("", append(slices.Clone(f.args), "--executor", "nats", "--nats", url, "--detach")...))
	if !eventually.Holds(45*time.Second, func() bool { return f.read("agent-pid-a1") != "" }) {
		t.Fatalf("a1's agent never started: %+v", f.runStatus(id))
	}
	return id
}

// a1AgentPID is the pid a1's agent recorded in agent-pid-a1.
func a1AgentPID(t *testing.T, f *runFixture) int {
	t.Helper()
	agent, err := strconv.Atoi(f.read("agent-pid-a1"))
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// workerOf names the worker whose directory holds dir.
func workerOf(workers []*clusterWorker, dir string) string {
	for _, w := range workers {
		if strings.HasPrefix(dir, w.dir+string(filepath.Separator)) {
			return w.name
		}
	}
	return "?" + dir
}

// processesUnder lists the live processes working in a directory under
// dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
			out = append(out, strconv.Itoa(pid)+" in "+cwd)
		}
	}
	return out
}

// descendants lists the live processes under pid.
func descendants(pid int) []int {
	parents := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			parents[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	under := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parents {
			if under[pp] && !under[p] {
				under[p], changed = true, true
				out = append(out, p)
			}
		}
	}
	return out
}

// TestRunOnNATSWorkersSurvivesKill9: three drover workers on an embedded
// NATS server work a two-wave run of six tasks to the same merged result
// as the local executor, each task on the worker its status names. The
// worker running a1's agent is killed with -9 in the middle of it: the
// pid the user kills is the worker's (nothing of it lives on to finish
// the job), its job goes to another worker after the ack wait, a1 is
// merged once and counted as one iteration and one agent run.
func TestRunOnNATSWorkersSurvivesKill9(t *testing.T) {
	local, localBase := newClusterFixture(t)
	out := local.must("", local.args...)
	if !strings.Contains(out, "run "+runIDFrom(t, out)+" done") {
		t.Fatalf("the local run did not finish:\n%s", out)
	}
	want, err := local.gitOut("diff", localBase, "main")
	if err != nil {
		t.Fatal(want, err)
	}

	f, base := newClusterFixture(t)
	f.touch("block-a1")
	url := natstest.URL(t)
	var workers []*clusterWorker
	for _, name := range []string{"w1", "w2", "w3"} {
		workers = append(workers, startClusterWorker(t, f, url, name))
	}
	id := startNATSRunAtA1(t, f, url)
	agent := a1AgentPID(t, f)
	victim := workers[slices.IndexFunc(workers, func(w *clusterWorker) bool {
		return w.name == workerOf(workers, f.read("where-a1"))
	})]
	// What the worker started (its watchdog, a1's agent): none may
	// outlive it.
	children := descendants(victim.cmd.Process.Pid)
	if len(children) < 2 {
		t.Fatalf("worker %s runs %v; want its watchdog and a1's agent at least", victim.name, children)
	}
	if err := syscall.Kill(victim.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait() // killed: reaped
	for _, pid := range children {
		if !gone(pid, 30*time.Second) {
			t.Errorf("process %d of the killed worker %s outlived it", pid, victim.name)
		}
	}
	if !gone(agent, 30*time.Second) {
		t.Errorf("a1's agent (pid %d) outlived its killed worker", agent)
	}
	if left := processesUnder(victim.dir); !eventually.Holds(30*time.Second, func() bool { left = processesUnder(victim.dir); return len(left) == 0 }) {
		t.Errorf("processes of the killed worker %s left behind: %v", victim.name, left)
	}

	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 2 {
		t.Fatalf("the run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}
	got, err := f.gitOut("diff", base, "main")
	if err != nil || got != want {
		t.Errorf("main after the NATS run differs from the local run's (%v):\n%s\nwant:\n%s", err, got, want)
	}
	for _, task := range clusterTasks {
		rt := taskByID(final, task)
		where := strings.Fields(f.read("where-" + task))
		// a1's agent, and any other the killed worker had at work, ran
		// twice: killed there, and again on another worker. One the
		// killed worker finished before stays its.
		agents := 1
		if task == "a1" || (len(where) > 0 && workerOf(workers, where[0]) == victim.name && rt.Worker != victim.name) {
			agents = 2
		}
		if len(where) != agents || rt.Iteration != 1 || rt.Runs != 1 || f.mergesOf(id, task) != 1 {
			t.Errorf("task %s: %d agents (want %d), iteration %d, runs %d, %d merges; want iteration 1, 1 run, 1 merge",
				task, len(where), agents, rt.Iteration, rt.Runs, f.mergesOf(id, task))
			continue
		}
		if agents == 2 && workerOf(workers, where[1]) == victim.name {
			t.Errorf("task %s ran again on %s, the worker killed", task, victim.name)
		}
		if ran := workerOf(workers, where[len(where)-1]); rt.Worker != ran {
			t.Errorf("task %s ran on %s, its status says %q", task, ran, rt.Worker)
		}
	}
	if final.CostUSD != 3 {
		t.Errorf("the run cost $%v, want $3 (six agents that finished)", final.CostUSD)
	}
}

// TestRunOnNATSResumeAdoptsJobsInFlight: the supervisor of a run on a
// NATS worker is killed with -9 while a1's agent works on the worker; the
// resumed run adopts a1's job in flight (the job's id is kept in the
// run's state) rather than publishing it again: every agent runs once,
// every task is merged once, and a1 counts one iteration.
func TestRunOnNATSResumeAdoptsJobsInFlight(t *testing.T) {
	f, _ := newClusterFixture(t)
	f.touch("block-a1")
	url := natstest.URL(t)
	w := startClusterWorker(t, f, url, "w1")
	id := startNATSRunAtA1(t, f, url)
	pid := f.supervisorPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	agent := a1AgentPID(t, f)
	time.Sleep(500 * time.Millisecond)
	if syscall.Kill(agent, 0) != nil {
		t.Fatalf("a1's agent on the worker ended with the supervisor")
	}
	f.must("", "run", "resume", id, "--detach")
	if !eventually.Holds(30*time.Second, func() bool {
		r := f.runStatus(id)
		return r.State == api.RunRunning && taskByID(r, "a1").State == api.TaskRunning
	}) {
		t.Fatalf("the resumed run does not work a1: %+v", f.runStatus(id))
	}
	f.touch("release")
	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 2 {
		t.Fatalf("the resumed run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}
	for _, task := range clusterTasks {
		rt := taskByID(final, task)
		if n := f.count(task); n != 1 || rt.Iteration != 1 || f.mergesOf(id, task) != 1 || rt.Worker != w.name {
			t.Errorf("task %s: %d agents, iteration %d, %d merges, on %q; want 1, 1, 1, on %s",
				task, n, rt.Iteration, f.mergesOf(id, task), rt.Worker, w.name)
		}
	}
}

// TestRunOnNATSCancelEndsWorkerAgents: drover run cancel of a run on a
// NATS worker ends the agent at work on the worker, which goes on serving;
// the run resumed works the task again on it and finishes.
func TestRunOnNATSCancelEndsWorkerAgents(t *testing.T) {
	f, _ := newClusterFixture(t)
	f.touch("block-a1")
	url := natstest.URL(t)
	w := startClusterWorker(t, f, url, "w1")
	id := startNATSRunAtA1(t, f, url)
	agent := a1AgentPID(t, f)
	if out := f.must("", "run", "cancel", id); !strings.Contains(out, "run "+id+" cancelled") {
		t.Errorf("cancel did not report the run cancelled:\n%s", out)
	}
	if !gone(agent, 30*time.Second) {
		t.Fatalf("a1's agent (pid %d) on the worker still runs after the cancel", agent)
	}
	f.must("", "run", "resume", id, "--detach")
	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 2 {
		t.Fatalf("the resumed run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}
	for _, task := range clusterTasks {
		// a1's agent ran twice: cancelled, and resumed. a2's and a3's
		// may have been at work on the worker too when the run was
		// cancelled.
		agents := 1
		if task == "a1" || (task != "b1" && task != "b2" && task != "b3" && f.count(task) == 2) {
			agents = 2
		}
		if n := f.count(task); n != agents || f.mergesOf(id, task) != 1 || taskByID(final, task).Worker != w.name {
			t.Errorf("task %s: %d agents (want %d), %d merges, on %q", task, n, agents, f.mergesOf(id, task), taskByID(final, task).Worker)
		}
	}
}

// TestRunOnNATSPausesWhileNATSIsLost: NATS goes away while a1's agent
// works on a worker: the run's status says a1 is paused, naming the NATS
// URL; NATS comes back with its store, and the run goes on and finishes,
// losing nothing: every agent ran once, every task merged once in one
// iteration. The URL is a proxy's, which the test holds throughout: the
// server restarts behind it on any port (its old one may be taken by then
// on a busy machine).
func TestRunOnNATSPausesWhileNATSIsLost(t *testing.T) {
	f, _ := newClusterFixture(t)
	f.touch("block-a1")
	store := t.TempDir()
	s := natstest.Start(t, -1, store)
	proxy := natstest.NewProxy(t, s.Addr().String())
	url, hostPort := proxy.URL(), proxy.HostPort()
	w := startClusterWorker(t, f, url, "w1")
	id := startNATSRunAtA1(t, f, url)
	proxy.Down()
	s.Shutdown()
	s.WaitForShutdown()
	if !eventually.Holds(30*time.Second, func() bool { return strings.Contains(taskByID(f.runStatus(id), "a1").Paused, hostPort) }) {
		t.Fatalf("a1 is not told paused on NATS at %s: %+v", hostPort, taskByID(f.runStatus(id), "a1"))
	}
	if out := f.must("", "run", "status", id); !strings.Contains(out, "task a1: paused: NATS at "+url+" is unreachable") {
		t.Errorf("drover run status does not say a1 is paused on NATS at %s:\n%s", url, out)
	}
	proxy.Up(natstest.Start(t, -1, store).Addr().String())
	if !eventually.Holds(30*time.Second, func() bool { return taskByID(f.runStatus(id), "a1").Paused == "" }) {
		t.Fatalf("a1 still paused with NATS back: %+v", taskByID(f.runStatus(id), "a1"))
	}
	f.touch("release")
	final := f.waitRun(id)
	if final.State != api.RunDone || final.Merged != 2 {
		t.Fatalf("the run: %s, %d waves merged: %s", final.State, final.Merged, final.Report)
	}
	for _, task := range clusterTasks {
		rt := taskByID(final, task)
		if n := f.count(task); n != 1 || rt.Iteration != 1 || f.mergesOf(id, task) != 1 || rt.Worker != w.name || rt.Paused != "" {
			t.Errorf("task %s: %d agents, iteration %d, %d merges, on %q, paused %q; want 1, 1, 1, on %s, not paused",
				task, n, rt.Iteration, f.mergesOf(id, task), rt.Worker, rt.Paused, w.name)
		}
	}
}
