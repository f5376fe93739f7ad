//go:build linux

// Package soak is drover's crash soak: sessions driven through queues and
// loops by the hook client while the supervisor (the real droverd) is
// killed with SIGKILL at random moments, both from outside and by itself
// at named points of a hook's handling (internal/faultinject). At the end
// every session's iteration must equal the stops it was answered for, no
// task file may be lost or renamed twice, and no process drover started
// may be left running.
//
// `go test` runs a short form; `make soak` runs the long one (-long: 10
// sessions, 1,000 stops).
package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/faultinject"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/hookclient"
	"github.com/drover-dev/drover/internal/proctag"
	"github.com/drover-dev/drover/internal/project"
)

var long = flag.Bool("long", false, "run the long soak (10 sessions, 1,000 stops) instead of the short one")

// binDir holds drover and droverd, built once for the soak.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		dir, err := os.MkdirTemp("", "drover-soak-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		build := exec.Command("go", "build", "-o", dir, "../../cmd/drover", "../../cmd/droverd")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building drover and droverd: %v\n%s", err, out)
			return 1
		}
		binDir = dir
		return m.Run()
	}()
	os.Exit(code)
}

// shape is one soak's size and fault rates.
type shape struct {
	sessions, stops int
	// faults is the DROVERD_TEST_FAULTS spec.
	faults string
	// killEvery is the mean pause of the outside killer between kills.
	killEvery time.Duration
	// renameEvery is how many stops a queue session's agent takes per task.
	renameEvery int
}

var (
	short = shape{sessions: 2, stops: 60, faults: "receive=0.03,commit=0.03,effect=0.02", killEvery: time.Second, renameEvery: 4}
	full  = shape{sessions: 10, stops: 1000, faults: "receive=0.01,commit=0.01,effect=0.005", killEvery: 250 * time.Millisecond, renameEvery: 4}
)

// figures are what the soak counts.
type figures struct {
	stops, outsideKills, faultKills, retries, replays, failOpens, renames atomic.Int64
	leftovers                                                             int
}

// pendingRE matches a pending task file's name.
var pendingRE = regexp.MustCompile(`^\d{8}T\d{6}\.md$`)

// nextTaskRE finds the task a queue's Stop names.
var nextTaskRE = regexp.MustCompile(`Next task: (\S+\.md)`)

func TestSoak(t *testing.T) {
	sh := short
	if *long {
		sh = full
	}
	h := newHarness(t)

	// Sessions: even ones are queues, odd ones loops.
	type sess struct {
		id        string
		queue     bool
		stops     int
		base      int
		tasks     map[string]bool
		renamed   map[string]bool
		answered  int
		lastError string
	}
	var all []*sess
	for i := range sh.sessions {
		s := &sess{id: fmt.Sprintf("soak-%02d", i), queue: i%2 == 0, stops: sh.stops / sh.sessions, renamed: map[string]bool{}}
		if i < sh.stops%sh.sessions {
			s.stops++
		}
		if s.queue {
			// One task more than the agent finishes: the queue never
			// runs dry, so every stop is a counted, blocked one.
			for n := range s.stops/sh.renameEvery + 1 {
				h.drover("add", "--session", s.id, fmt.Sprintf("soak task %d", n))
			}
			h.drover("start", "--session", s.id)
			s.tasks = h.taskFiles(s.id)
		} else {
			h.drover("loop", "start", "--session", s.id, "--max-iterations", "100000", "--completion-promise", "NEVER SAID", "keep improving the thing")
		}
		all = append(all, s)
	}
	base := h.status()
	for _, s := range all {
		s.base = base[s.id]
	}
	// From here on every supervisor started carries the faults.
	h.stopSupervisor()
	t.Setenv(faultinject.Env, sh.faults)

	var fig figures
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		h.killer(ctx, sh.killEvery, &fig)
	}()

	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			for n := range s.stops {
				out, err := h.stop(s.id, fmt.Sprintf("%s-stop-%d", s.id, n), &fig)
				if err != nil {
					s.lastError = err.Error()
					return
				}
				s.answered++
				if s == all[0] && n == s.stops/2 {
					// One kill at a known moment, so that no soak,
					// however short, goes without one: right after an
					// answer, the supervisor is up, or was killed since.
					if pid := h.supervisorPID(); pid != 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
						fig.outsideKills.Add(1)
					}
				}
				if !s.queue || (n+1)%sh.renameEvery != 0 {
					continue
				}
				// The agent finishes the task the stop named.
				m := nextTaskRE.FindStringSubmatch(out.Reason)
				if m == nil {
					s.lastError = fmt.Sprintf("stop %d named no task: %q", n, out.Reason)
					return
				}
				name := filepath.Base(m[1])
				if s.renamed[name] {
					s.lastError = fmt.Sprintf("stop %d named %s, which the agent already finished", n, name)
					return
				}
				if err := os.Rename(m[1], strings.TrimSuffix(m[1], ".md")+".done.md"); err != nil {
					s.lastError = fmt.Sprintf("finishing the task stop %d named: %v", n, err)
					return
				}
				s.renamed[name] = true
				fig.renames.Add(1)
			}
		})
	}
	wg.Wait()
	cancel()
	<-killerDone

	// A supervisor that may still carry the faults is killed; a clean
	// one answers the final look.
	h.killSupervisor(&fig)
	t.Setenv(faultinject.Env, "")
	final := h.status()
	atPoint := h.faultKills()
	fig.faultKills.Store(int64(atPoint[actors.FaultReceive] + atPoint[actors.FaultCommitted] + atPoint[actors.FaultEffect]))

	for _, s := range all {
		if s.lastError != "" {
			t.Errorf("session %s: %s", s.id, s.lastError)
		}
		if got := final[s.id] - s.base; got != s.answered {
			t.Errorf("session %s: the iteration went up by %d, but %d stops were answered", s.id, got, s.answered)
		}
		if s.queue {
			h.checkTasks(s.id, s.tasks, s.renamed)
		}
	}
	h.stopSupervisor()
	fig.leftovers = h.leftovers()
	if fig.leftovers > 0 {
		t.Errorf("%d processes drover started are left running", fig.leftovers)
	}
	kills := fig.outsideKills.Load() + fig.faultKills.Load()
	msg := fmt.Sprintf("soak: %s, %d sessions, %d stops, %d kills (%d from outside; at fault points %d after receive, %d after commit, %d before an effect), %d retries, %d replays, %d fail-opens retried, %d tasks finished, %d leftovers",
		time.Since(began).Round(time.Second), sh.sessions, fig.stops.Load(), kills, fig.outsideKills.Load(), atPoint[actors.FaultReceive], atPoint[actors.FaultCommitted], atPoint[actors.FaultEffect], fig.retries.Load(), fig.replays.Load(), fig.failOpens.Load(), fig.renames.Load(), fig.leftovers)
	t.Log(msg)
	fmt.Println(msg)
	if n := fig.failOpens.Load(); n > 0 {
		// The client retries, and starts supervisors, within its budget:
		// a kill must not make it let the agent go on undecided.
		t.Errorf("%d stops failed open (sent again above, so that the counts could still be checked)", n)
	}
	if kills == 0 {
		t.Errorf("no supervisor was killed: the soak showed nothing")
	}
}

// harness is one scratch project with its own runtime dir and HOME, set in
// the test's environment so that the hook client, and every supervisor it
// starts, see them.
type harness struct {
	t     *testing.T
	root  string
	paths project.Paths
	// mark is an environment entry of every process the soak starts, for
	// the leftover scan.
	mark string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	home := filepath.Join(base, "home")
	// Short, because the socket path must fit in sun_path.
	run, err := os.MkdirTemp("", "drv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	for _, d := range []string{root, home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	root, _ = filepath.EvalSymlinks(root)
	var b [8]byte
	_, _ = rand.Read(b[:])
	h := &harness{t: t, root: root, mark: "SOAK_MARK=" + hex.EncodeToString(b[:])}
	k, v, _ := strings.Cut(h.mark, "=")
	for _, kv := range [][2]string{
		{k, v},
		{"HOME", home},
		{"XDG_RUNTIME_DIR", run},
		{"XDG_CONFIG_HOME", filepath.Join(home, ".config")},
		{"DROVERD_BIN", filepath.Join(binDir, "droverd")},
		{"CLAUDE_PROJECT_DIR", root},
		{"GIT_CONFIG_NOSYSTEM", "1"},
		{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@example.com"},
		{"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@example.com"},
		{faultinject.Env, ""},
	} {
		t.Setenv(kv[0], kv[1])
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// Budgets far above what any session reaches; a short metric command
	// so that loop stops start a process the kills may orphan.
	cfg := "queue:\n  max_iterations: 100000\nloop:\n  metric_commands: \"sleep 0.2\"\n"
	if err := os.MkdirAll(filepath.Join(root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".drover", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if h.paths, err = project.PathsFor(root, os.Getenv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever the test's end, no supervisor outlives it.
		if pid := h.supervisorPID(); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return h
}

// drover runs the drover binary in the project.
func (h *harness) drover(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "drover"), args...)
	cmd.Dir = h.root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("drover %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

// stop sends one Stop for session id as the hook client does (retrying
// and starting supervisors within its budget). An answer that failed open
// is sent again with the same request id, as a retried hook would: the
// soak then sees whether the first send was applied.
func (h *harness) stop(id, requestID string, fig *figures) (hook.Output, error) {
	in, _ := json.Marshal(map[string]any{"session_id": id, "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "still working", "cwd": h.root})
	for try := 0; try < 50; try++ {
		res := hookclient.Run(context.Background(), hookclient.Options{
			Event:        hook.Stop,
			Stdin:        bytes.NewReader(in),
			Getenv:       os.Getenv,
			Cwd:          h.root,
			Project:      h.root,
			NewRequestID: func() string { return requestID },
		})
		fig.retries.Add(int64(res.Retries))
		if res.Problem != "" {
			if fig.failOpens.Add(1) <= 5 {
				h.t.Logf("stop %s failed open: %s", requestID, res.Problem)
			}
			fig.retries.Add(1)
			continue
		}
		var out hook.Output
		if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
			return out, fmt.Errorf("stop %s: the hook printed %q: %w", requestID, res.Stdout, err)
		}
		if !out.IsBlock() {
			return out, fmt.Errorf("stop %s: want a block, got %+v", requestID, out)
		}
		fig.stops.Add(1)
		if res.Replayed {
			fig.replays.Add(1)
		}
		return out, nil
	}
	return hook.Output{}, fmt.Errorf("stop %s: no answer in 50 tries", requestID)
}

// killer kills the running supervisor with SIGKILL after random pauses
// (up to twice every) until ctx ends. After each kill it waits for a stop
// to be answered before it pauses again: on a slow machine a supervisor
// may take longer to start than the pause, and kills that outpace the
// restarts would show only how slow the machine is.
func (h *harness) killer(ctx context.Context, every time.Duration, fig *figures) {
	for {
		t := time.NewTimer(time.Duration(mrand.Int64N(int64(2 * every))))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		answered := fig.stops.Load()
		if pid := h.supervisorPID(); pid == 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
			continue
		}
		fig.outsideKills.Add(1)
		for fig.stops.Load() == answered {
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// supervisorPID is the pid of the supervisor answering on the socket, or
// 0.
func (h *harness) supervisorPID() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hl, err := client.New(h.paths.Socket).Health(ctx)
	if err != nil {
		return 0
	}
	return hl.PID
}

// killSupervisor kills the running supervisor, if any, and waits for it.
func (h *harness) killSupervisor(fig *figures) {
	if pid := h.supervisorPID(); pid != 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
		fig.outsideKills.Add(1)
		h.waitGone(pid)
	}
}

// stopSupervisor ends the running supervisor, if any, gracefully.
func (h *harness) stopSupervisor() {
	if pid := h.supervisorPID(); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		h.waitGone(pid)
	}
}

func (h *harness) waitGone(pid int) {
	h.t.Helper()
	eventually.True(h.t, time.Minute, fmt.Sprintf("process %d to end", pid), func() bool {
		// A child of the test (a supervisor the hook client started) is
		// reaped by the client's goroutine; until then it is a zombie.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(b), ") Z ")
	})
}

// status starts a supervisor when none runs and returns every session's
// iteration.
func (h *harness) status() map[string]int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(h.paths.Socket)
	spawn := client.Spawner{Root: h.root, OutFile: filepath.Join(h.paths.LogsDir, "serve.out")}.Spawn
	if _, err := client.Ensure(ctx, c, spawn); err != nil {
		h.t.Fatalf("starting a supervisor: %v", err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		h.t.Fatalf("status: %v", err)
	}
	out := map[string]int{}
	for _, s := range st.Sessions {
		out[s.ID] = s.Iteration
	}
	return out
}

// faultKills counts, by point, the supervisors that killed themselves at
// a fault point, from what they printed before.
func (h *harness) faultKills() map[string]int {
	out := map[string]int{}
	b, err := os.ReadFile(filepath.Join(h.paths.LogsDir, "serve.out"))
	if err != nil {
		return out
	}
	for _, p := range []string{actors.FaultReceive, actors.FaultCommitted, actors.FaultEffect} {
		out[p] = bytes.Count(b, []byte("test fault: killed at "+p+"\n"))
	}
	return out
}

// taskFiles lists session id's task files by name.
func (h *harness) taskFiles(id string) map[string]bool {
	h.t.Helper()
	ents, err := os.ReadDir(filepath.Join(h.paths.SessionsDir, id))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".md") {
			out[e.Name()] = true
		}
	}
	return out
}

// checkTasks checks that every task file added is there exactly once:
// done if the agent finished it, else pending.
func (h *harness) checkTasks(id string, added, renamed map[string]bool) {
	h.t.Helper()
	now := h.taskFiles(id)
	want := map[string]bool{}
	for name := range added {
		if !pendingRE.MatchString(name) {
			continue
		}
		if renamed[name] {
			want[strings.TrimSuffix(name, ".md")+".done.md"] = true
		} else {
			want[name] = true
		}
	}
	for name := range want {
		if !now[name] {
			h.t.Errorf("session %s: task file %s is missing", id, name)
		}
	}
	for name := range now {
		if !want[name] && (pendingRE.MatchString(name) || strings.HasSuffix(name, ".done.md") || strings.HasSuffix(name, ".stuck.md")) {
			h.t.Errorf("session %s: unexpected task file %s", id, name)
		}
	}
}

// leftovers waits for the processes the soak started (its mark in their
// environment), and those carrying drover's tags, to end, and returns how
// many did not within a minute, naming them.
func (h *harness) leftovers() int {
	var left []string
	eventually.Holds(time.Minute, func() bool {
		left = h.marked()
		return len(left) == 0
	})
	for _, p := range left {
		h.t.Logf("left running: %s", p)
	}
	return len(left)
}

// marked lists the live processes other than this one whose environment
// holds h.mark, with their command lines and drover tags.
func (h *harness) marked() []string {
	ents, _ := os.ReadDir("/proc")
	self := fmt.Sprint(os.Getpid())
	var out []string
	for _, e := range ents {
		if e.Name() == self || e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(h.mark+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		var tags []string
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if k, _, ok := strings.Cut(string(kv), "="); ok && proctag.IsKey(k) {
				tags = append(tags, string(kv))
			}
		}
		out = append(out, fmt.Sprintf("pid %s: %s %v", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), tags))
	}
	return out
}
