package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/faultinject"
	"github.com/drover-dev/drover/internal/hook"
)

// droverBin is the drover binary built once for the process tests, with
// droverd beside it, where drover looks for it first.
var droverBin string

func TestMain(m *testing.M) {
	if target := os.Getenv(accessProbeEnv); target != "" {
		// The test binary run as another user by TestOtherUserIsShutOut.
		os.Exit(accessProbe(target))
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "drover-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		droverBin = filepath.Join(dir, "drover")
		// Built as make build builds them: drover without cgo, so that it
		// is a static binary that starts without the dynamic loader.
		build := exec.Command("go", "build", "-o", dir, ".", "../droverd")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building drover and droverd: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// proj is a temporary git project with its own runtime dir, HOME and
// config, so tests never meet each other's supervisors.
type proj struct {
	t    testing.TB
	root string
	env  []string
}

func newProj(t testing.TB) *proj {
	t.Helper()
	return newProjIn(t, t.TempDir())
}

// newProjIn is newProj in the directory base.
func newProjIn(t testing.TB, base string) *proj {
	t.Helper()
	root := filepath.Join(base, "repo")
	run := filepath.Join(base, "run")
	home := filepath.Join(base, "home")
	for _, d := range []string{root, run, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	root, _ = filepath.EvalSymlinks(root)
	p := &proj{t: t, root: root, env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + run,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}}
	p.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.git("add", ".")
	p.git("commit", "-q", "-m", "initial")
	t.Cleanup(p.stopSupervisor)
	return p
}

func (p *proj) git(args ...string) {
	p.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = p.root, p.env
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// drover runs the binary with stdin and returns what it printed.
func (p *proj) drover(stdin string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Dir, cmd.Env = p.root, append(p.env, "CLAUDE_PROJECT_DIR="+p.root)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("running drover %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (p *proj) must(stdin string, args ...string) string {
	p.t.Helper()
	r := p.drover(stdin, args...)
	if r.code != 0 {
		p.t.Fatalf("drover %v exited %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func (p *proj) hook(event hook.Event, in map[string]any) hook.Output {
	p.t.Helper()
	if _, ok := in["cwd"]; !ok {
		in["cwd"] = p.root
	}
	b, _ := json.Marshal(in)
	r := p.drover(string(b), "hook", string(event))
	if r.code != 0 {
		p.t.Fatalf("drover hook %s exited %d (must always exit 0)\nstderr: %s", event, r.code, r.stderr)
	}
	var out hook.Output
	if s := strings.TrimSpace(r.stdout); s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			p.t.Fatalf("hook %s printed non-JSON %q: %v", event, s, err)
		}
	}
	return out
}

func (p *proj) status() api.StatusResponse {
	p.t.Helper()
	var st api.StatusResponse
	out := p.must("", "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		p.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

func (p *proj) session(id string) api.SessionStatus {
	p.t.Helper()
	for _, s := range p.status().Sessions {
		if s.ID == id {
			return s
		}
	}
	p.t.Fatalf("session %s not in status", id)
	return api.SessionStatus{}
}

// stopSupervisor ends whatever supervisor serves the project, gracefully.
func (p *proj) stopSupervisor() {
	pid := p.supervisorPID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	waitGone(p.t, pid)
}

func (p *proj) supervisorPID() int {
	sock := p.socket()
	if _, err := os.Stat(sock); err != nil {
		return 0
	}
	r := p.drover("", "status", "--json")
	var st api.StatusResponse
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		return 0
	}
	return st.PID
}

// socket finds the supervisor's socket in the project's runtime dir.
func (p *proj) socket() string {
	for _, kv := range p.env {
		if dir, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
			m, _ := filepath.Glob(filepath.Join(dir, "drover", "*.sock"))
			if len(m) == 1 {
				return m[0]
			}
		}
	}
	return ""
}

func waitGone(t testing.TB, pid int) {
	t.Helper()
	if !eventually.Holds(30*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Errorf("process %d still running", pid)
	}
}

func stopInput(id string) map[string]any {
	return map[string]any{"session_id": id, "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "done"}
}

func TestQueueSurvivesKill9(t *testing.T) {
	p := newProj(t)
	id := "11111111-2222-3333-4444-555555555555"
	p.must("", "add", "--session", id, "first task")
	p.must("", "add", "--session", id, "second task")
	start := p.must("", "start", "--session", id)
	if !strings.Contains(start, ".md") {
		t.Fatalf("start did not name the next task:\n%s", start)
	}
	for i := 1; i <= 3; i++ {
		out := p.hook(hook.Stop, stopInput(id))
		if !out.IsBlock() {
			t.Fatalf("stop %d: want block, got %+v", i, out)
		}
		if got := p.session(id).Iteration; got != i {
			t.Fatalf("after stop %d the iteration is %d", i, got)
		}
	}
	// The agent finishes the first task.
	first := p.session(id).NextTask
	if err := os.Rename(first, strings.TrimSuffix(first, ".md")+".done.md"); err != nil {
		t.Fatal(err)
	}

	pid := p.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)

	// The next stop starts a new supervisor, which goes on from the store.
	out := p.hook(hook.Stop, stopInput(id))
	if !out.IsBlock() || !strings.Contains(out.Reason, "Next task") && !strings.Contains(out.Reason, ".md") {
		t.Fatalf("stop after kill -9: want a block with the next task, got %+v", out)
	}
	s := p.session(id)
	if s.Iteration != 4 || s.State != "on" || s.Pending != 1 || s.Done != 1 {
		t.Errorf("after kill -9 and one stop: %+v, want on, iteration 4, 1 pending, 1 done", s)
	}
	if npid := p.supervisorPID(); npid == 0 || npid == pid {
		t.Errorf("no new supervisor (old %d, new %d)", pid, npid)
	}
}

func TestHookFailsOpenOnBadInput(t *testing.T) {
	p := newProj(t)
	id := "s-bad-input"
	p.must("", "do", "--session", id, "a task")
	big := strings.Repeat("x", 10<<20)
	cases := []struct {
		name, event, stdin string
		wantMsg            string // substring of systemMessage; "" = silent allow
	}{
		{"malformed JSON", "stop", `{"session_id": "s-bad-input",`, "could not read"},
		{"not an object", "stop", `[1,2,3]`, "could not read"},
		{"empty session id", "stop", `{"session_id": ""}`, "session_id"},
		{"missing session id", "user-prompt-submit", `{"prompt": "hi"}`, "session_id"},
		{"path-like session id", "stop", `{"session_id": "../x"}`, "not a valid session id"},
		{"unknown event", "bogus-event", `{"session_id": "s-bad-input"}`, "unknown hook event"},
		{"10 MB prompt", "user-prompt-submit", `{"session_id": "s-bad-input", "prompt": "` + big + `"}`, ""},
		{"over the size cap", "stop", `{"session_id": "s-bad-input", "x": "` + strings.Repeat("y", 17<<20) + `"}`, "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := p.drover(c.stdin, "hook", c.event)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0; stderr %s", r.code, r.stderr)
			}
			var out hook.Output
			if s := strings.TrimSpace(r.stdout); s != "" {
				if err := json.Unmarshal([]byte(s), &out); err != nil {
					t.Fatalf("stdout is not JSON: %q", s[:min(len(s), 200)])
				}
			}
			if out.IsBlock() {
				t.Fatalf("blocked the agent: %+v", out)
			}
			if c.wantMsg != "" && !strings.Contains(out.SystemMessage, c.wantMsg) {
				t.Errorf("systemMessage %q does not mention %q", out.SystemMessage, c.wantMsg)
			}
		})
	}
	// Nothing was lost: the queue is exactly where it was.
	if s := p.session(id); s.State != "on" || s.Iteration != 0 || s.Pending != 1 {
		t.Errorf("bad input changed the session: %+v", s)
	}
}

func TestHookWithoutDroverDirAllowsSilently(t *testing.T) {
	p := newProj(t)
	for _, e := range hook.Events {
		r := p.drover(`{"session_id":"abc","cwd":"`+p.root+`"}`, "hook", string(e))
		if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("%s without .drover/: exit %d stdout %q", e, r.code, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(p.root, ".drover")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a hook in a project without drover created .drover/")
	}
	if out := p.must("", "status"); !strings.Contains(out, "nothing has been queued") {
		t.Errorf("status without .drover/: %q", out)
	}
}

// TestHookWithDroverDirRemovedUnderARunningSupervisor: the session goes on
// from the supervisor's memory (its task files went with .drover/, so the
// queue moves to its review), and the user is told why it is at risk.
func TestHookWithDroverDirRemovedUnderARunningSupervisor(t *testing.T) {
	p := newProj(t)
	p.env = append(p.env, "DROVER_QUEUE_GIT_COMMIT_CHECK=false")
	id := "s-removed"
	p.must("", "do", "--session", id, "first task")
	p.must("", "add", "--session", id, "second task")
	if err := os.RemoveAll(filepath.Join(p.root, ".drover")); err != nil {
		t.Fatal(err)
	}
	out := p.hook(hook.Stop, stopInput(id))
	if !out.IsBlock() || !strings.Contains(out.SystemMessage, "is missing (was .drover/ removed?)") {
		t.Fatalf("stop after .drover/ was removed: %+v", out)
	}
	// status still reaches the supervisor, so the user learns the pid to
	// stop it by (and the test's cleanup can stop it).
	if st := p.status(); st.PID == 0 || len(st.Sessions) != 1 || st.Sessions[0].ID != id {
		t.Errorf("status --json after .drover/ was removed: %+v", st)
	}
	r := p.drover("", "status")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stderr, "was .drover/ removed?") {
		t.Errorf("status after .drover/ was removed: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestCorruptStoreRecordIsQuarantined(t *testing.T) {
	p := newProj(t)
	id := "s-corrupt"
	p.must("", "do", "--session", id, "a task")
	p.stopSupervisor()
	corruptRecord(t, filepath.Join(p.root, ".drover", "state", "drover.db"), id)

	out := p.hook(hook.Stop, stopInput(id))
	if out.IsBlock() || !strings.Contains(out.SystemMessage, "quarantined") {
		t.Fatalf("stop on a corrupt record: %+v", out)
	}
	// Every later hook works, and the task file is still there.
	out = p.hook(hook.Stop, stopInput(id))
	if out.IsBlock() || out.SystemMessage != "" {
		t.Errorf("second stop after quarantine: %+v", out)
	}
	if s := p.session(id); s.Pending != 1 {
		t.Errorf("the task file was lost: %+v", s)
	}
	if st := p.status(); st.Quarantined != 1 {
		t.Errorf("status reports %d quarantined records, want 1", st.Quarantined)
	}
}

func TestSecondSupervisorRefusedAndShutdownIsClean(t *testing.T) {
	p := newProj(t)
	p.must("", "serve", "--detach")
	pid := p.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor after serve --detach")
	}
	r := p.drover("", "serve")
	if r.code != 0 || !strings.Contains(r.stderr, "already running") {
		t.Errorf("second serve: exit %d stderr %q", r.code, r.stderr)
	}
	sock := p.socket()
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v mode %v", err, fi)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after SIGTERM: %v", err)
	}
}

// The commit gate checks the work tree the agent works in: a session in a
// linked worktree shares the main tree's supervisor, but its uncommitted
// changes are its own.
func TestCommitGateChecksTheSessionsWorktree(t *testing.T) {
	p := newProj(t)
	wt := filepath.Join(filepath.Dir(p.root), "wt")
	p.git("worktree", "add", "-q", "-b", "feature", wt)
	other := filepath.Join(filepath.Dir(p.root), "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "init", "-q", other)
	cmd.Env = p.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(wt, "pkg"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{wt, other} {
		if err := os.WriteFile(filepath.Join(dir, "uncommitted.go"), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := "s-worktree"
	p.must("", "add", "--session", id, "first task")
	p.must("", "add", "--session", id, "second task")
	p.must("", "start", "--session", id)

	cases := []struct {
		name, cwd string
		gated     bool
	}{
		{"dirty linked worktree", wt, true},
		{"subdirectory of the dirty worktree", filepath.Join(wt, "pkg"), true},
		{"clean main tree", p.root, false},
		{"another repository is not this project", other, false},
		{"no cwd falls back to the main tree", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := stopInput(id)
			in["cwd"] = c.cwd
			out := p.hook(hook.Stop, in)
			if !out.IsBlock() {
				t.Fatalf("want a block, got %+v", out)
			}
			gated := strings.Contains(out.Reason, "uncommitted changes")
			if gated != c.gated {
				t.Errorf("commit gate = %v, want %v; reason:\n%s", gated, c.gated, out.Reason)
			}
			if c.gated && !strings.Contains(out.Reason, "uncommitted.go") {
				t.Errorf("the block does not name the uncommitted file:\n%s", out.Reason)
			}
		})
	}
}

// TestHookRetriesWhenTheSupervisorItStartedDies: the hook starts the
// supervisor, which commits the stop and dies before it answers (killed
// there by the test fault hook). The hook must start another and send the
// request again, getting the recorded decision, not fail open with "the
// supervisor exited while starting": that left the agent stopped on a
// stop the store had counted.
func TestHookRetriesWhenTheSupervisorItStartedDies(t *testing.T) {
	p := newProj(t)
	id := "retry-after-kill"
	p.must("", "add", "--session", id, "a task")
	p.must("", "start", "--session", id)
	p.stopSupervisor()

	p.env = append(p.env, faultinject.Env+"=commit=1")
	out := p.hook(hook.Stop, stopInput(id))
	if !out.IsBlock() || !strings.Contains(out.Reason, ".md") {
		t.Fatalf("want the recorded block naming the task, got %+v", out)
	}
	serveOut, _ := os.ReadFile(filepath.Join(p.root, ".drover", "logs", "serve.out"))
	if !bytes.Contains(serveOut, []byte("test fault: killed at commit")) {
		t.Fatalf("the supervisor was not killed at the commit:\n%s", serveOut)
	}
	if got := p.session(id).Iteration; got != 1 {
		t.Errorf("iteration %d after one stop, want 1", got)
	}
}

// TestHookStartsAnotherWhenTheSupervisorItStartedIsKilled: the first
// supervisor the hook starts is killed by a signal before it answers (a
// droverd wrapper that kills itself once). That is no failed start, as a
// bad config is: the hook starts another and gets its decision, instead of
// failing open with "the supervisor exited while starting".
func TestHookStartsAnotherWhenTheSupervisorItStartedIsKilled(t *testing.T) {
	p := newProj(t)
	id := "killed-at-start"
	p.must("", "add", "--session", id, "a task")
	p.must("", "start", "--session", id)
	p.stopSupervisor()

	dir := t.TempDir()
	once := filepath.Join(dir, "killed-once")
	wrapper := filepath.Join(dir, "droverd")
	script := fmt.Sprintf("#!/bin/sh\nif [ ! -e %q ]; then : > %q; kill -9 $$; fi\nexec %q \"$@\"\n", once, once, filepath.Join(filepath.Dir(droverBin), "droverd"))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.env = append(p.env, "DROVERD_BIN="+wrapper)
	out := p.hook(hook.Stop, stopInput(id))
	if !out.IsBlock() || !strings.Contains(out.Reason, ".md") {
		t.Fatalf("want a block naming the task, got %+v", out)
	}
	if _, err := os.Stat(once); err != nil {
		t.Fatalf("the first supervisor was not killed: %v", err)
	}
	if got := p.session(id).Iteration; got != 1 {
		t.Errorf("iteration %d after one stop, want 1", got)
	}
}
