package hookclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/project"
)

// env builds a hermetic environment for one project with a store file, so
// the hook does not take its "nothing to do here" shortcut.
func setup(t *testing.T, extra ...string) (root string, o Options) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "p")
	run := filepath.Join(base, "run")
	if err := os.MkdirAll(filepath.Join(root, ".drover", "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".drover", "state", "drover.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	environ := append([]string{"XDG_RUNTIME_DIR=" + run, "HOME=" + base, "CLAUDE_PROJECT_DIR=" + root}, extra...)
	getenv := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	return root, Options{Event: hook.Stop, Getenv: getenv, Environ: environ, Cwd: root}
}

func decode(t *testing.T, r Result) hook.Output {
	t.Helper()
	var out hook.Output
	if s := strings.TrimSpace(r.Stdout); s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("stdout %q is not JSON: %v", s, err)
		}
	}
	if out.IsBlock() {
		t.Fatalf("the hook blocked on its own trouble: %+v", out)
	}
	return out
}

func TestDisabledAndReviewerHooksDoNothing(t *testing.T) {
	for _, v := range []string{ReviewerEnv + "=1", DisableEnv + "=1"} {
		_, o := setup(t, v)
		o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
		o.Spawn = func(string, project.Paths) error { t.Fatalf("%s: spawned a supervisor", v); return nil }
		if r := Run(context.Background(), o); r.Stdout != "" {
			t.Errorf("%s: printed %q", v, r.Stdout)
		}
	}
}

func TestNoSupervisorFailsOpenAfterOneStartAttempt(t *testing.T) {
	_, o := setup(t, "DROVER_HOOK_START_TIMEOUT=200ms")
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	var spawns atomic.Int32
	o.Spawn = func(string, project.Paths) error { spawns.Add(1); return nil }
	out := decode(t, Run(context.Background(), o))
	if !strings.Contains(out.SystemMessage, "could not decide on stop for session s1") {
		t.Errorf("systemMessage %q", out.SystemMessage)
	}
	if n := spawns.Load(); n != 1 {
		t.Errorf("spawned %d supervisors, want exactly 1", n)
	}

	_, o = setup(t)
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error { return errors.New("exec: drover: not found") }
	out = decode(t, Run(context.Background(), o))
	if !strings.Contains(out.SystemMessage, "not found") {
		t.Errorf("a failed start is not named: %q", out.SystemMessage)
	}
}

// A supervisor that accepts the connection but never answers must not hold
// the agent past the event's budget.
func TestBudgetExpiryAllows(t *testing.T) {
	root, o := setup(t, "DROVER_HOOK_BUDGET_STOP=300ms")
	p, err := project.PathsFor(root, o.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := project.EnsureRuntimeDir(p.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c // hold it open, never answer
		}
	}()
	defer func() {
		ln.Close()
		for c := range conns {
			c.Close()
		}
	}()
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error {
		t.Error("spawned although a supervisor answers the socket")
		return nil
	}
	out := decode(t, Run(context.Background(), o))
	if !strings.Contains(out.SystemMessage, "letting the agent go on") {
		t.Errorf("systemMessage %q", out.SystemMessage)
	}
}

func TestBadConfigStillDecidesWithDefaults(t *testing.T) {
	root, o := setup(t, "DROVER_HOOK_START_TIMEOUT=100ms")
	if err := os.WriteFile(filepath.Join(root, ".drover", "config.yaml"), []byte("hook:\n  budgett: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error { return nil }
	out := decode(t, Run(context.Background(), o))
	if !strings.Contains(out.SystemMessage, "budgett") || !strings.Contains(out.SystemMessage, "default hook budgets") {
		t.Errorf("systemMessage does not name the bad key: %q", out.SystemMessage)
	}
}

// A panic on the hook path must not escape: it would exit 2, which blocks
// the agent on Stop.
func TestPanicFailsOpen(t *testing.T) {
	_, o := setup(t)
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.NewRequestID = func() string { panic("injected") }
	o.Spawn = func(string, project.Paths) error { t.Fatal("spawned a supervisor after a panic"); return nil }
	r := Run(context.Background(), o)
	out := decode(t, r)
	if !strings.Contains(out.SystemMessage, "panic: injected") || !strings.Contains(out.SystemMessage, "the stop hook") {
		t.Errorf("systemMessage %q does not report the panic", out.SystemMessage)
	}
	if r.Problem == "" {
		t.Error("Problem is empty after a panic")
	}
}
