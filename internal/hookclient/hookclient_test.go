package hookclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
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
	// No Stop is held for a reviewer unless a test asks for it: a test of
	// the budget must not wait review.hold's five minutes.
	environ := append([]string{"XDG_RUNTIME_DIR=" + run, "HOME=" + base, "CLAUDE_PROJECT_DIR=" + root, "DROVER_REVIEW_HOLD=0s"}, extra...)
	getenv := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	return root, Options{Event: hook.Stop, Getenv: getenv, Cwd: root}
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

// A supervisor that dies after receiving the request (here: drops the
// connection without answering) may or may not have committed the
// decision. The client asks again with the same request id, so that a
// decision already committed is replayed rather than counted twice, and
// prints the decision it then gets.
func TestRetryAfterDroppedConnectionReusesTheRequestID(t *testing.T) {
	root, o := setup(t)
	p, err := project.PathsFor(root, o.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := project.EnsureRuntimeDir(p.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ids []string
	serveStops(t, root, p, func(w http.ResponseWriter, r *http.Request) {
		var req api.HookRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decoding the hook request: %v", err)
		}
		mu.Lock()
		ids = append(ids, req.RequestID)
		first := len(ids) == 1
		mu.Unlock()
		if first {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijacking: %v", err)
				return
			}
			conn.Close()
			return
		}
		_ = json.NewEncoder(w).Encode(api.HookResponse{Output: hook.Output{Decision: "block", Reason: "the next task"}, Replayed: true})
	})

	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	// A fresh id on each call, so that a retry that asked for a new one
	// would show.
	var n atomic.Int32
	o.NewRequestID = func() string { return fmt.Sprintf("req-%d", n.Add(1)) }
	o.Spawn = func(string, project.Paths) error {
		t.Error("spawned although a supervisor answers its health check")
		return nil
	}
	r := Run(context.Background(), o)
	var out hook.Output
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("stdout %q is not JSON: %v", r.Stdout, err)
	}
	if !out.IsBlock() || out.Reason != "the next task" || r.Problem != "" {
		t.Errorf("want the supervisor's decision, got %+v (problem %q)", out, r.Problem)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != "req-1" || ids[1] != "req-1" {
		t.Errorf("request ids sent: %q, want the same id twice", ids)
	}
}

// A hook whose supervisor answers reads no config file it does not need:
// with the budget in the environment, not even a broken one (here a
// directory where .drover/config.yaml should be) is opened, and
// hook.start_timeout is read only to start a supervisor.
func TestWarmHookReadsNoConfigFile(t *testing.T) {
	root, o := setup(t, "DROVER_HOOK_BUDGET_STOP=5s")
	if err := os.Mkdir(filepath.Join(root, ".drover", "config.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
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
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.HookPath(hook.Stop), func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.HookResponse{Output: hook.Output{Decision: "block", Reason: "next"}})
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error { t.Error("spawned although a supervisor answers"); return nil }
	r := Run(context.Background(), o)
	if r.Problem != "" || !strings.Contains(r.Stdout, `"block"`) || strings.Contains(r.Stdout, "config") {
		t.Errorf("got %q (problem %q)", r.Stdout, r.Problem)
	}
	// Without the variable the project's file must be read, and its
	// trouble is said.
	o2 := o
	o2.Getenv = func(k string) string {
		if k == "DROVER_HOOK_BUDGET_STOP" {
			return ""
		}
		return o.Getenv(k)
	}
	o2.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	if r := Run(context.Background(), o2); !strings.Contains(r.Stdout, "config.yaml") || !strings.Contains(r.Stdout, `"block"`) {
		t.Errorf("with an unreadable config file: %q", r.Stdout)
	}
}

// serveStops serves a supervisor at p's socket that answers its health
// check and hands every Stop to stop, until the test ends.
func serveStops(t *testing.T, root string, p project.Paths, stop http.HandlerFunc) {
	t.Helper()
	if err := project.EnsureRuntimeDir(p.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.HealthResponse{PID: 1, Project: root})
	})
	mux.HandleFunc("POST "+api.HookPath(hook.Stop), stop)
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
}

// A supervisor that answers its health check but drops every Stop is not
// asked again in a tight loop for the whole budget: the retries back off,
// and the agent is let go at the end of the budget.
func TestRetriesBackOff(t *testing.T) {
	root, o := setup(t)
	p, err := project.PathsFor(root, o.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	serveStops(t, root, p, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error { return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r := Run(ctx, o)
	var out hook.Output
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("stdout %q is not JSON: %v", r.Stdout, err)
	}
	if out.IsBlock() || !strings.Contains(out.SystemMessage, "letting the agent go on") {
		t.Errorf("want the stop allowed with a reason, got %+v", out)
	}
	// Pauses of 20, 40, 80, 160, 320 and 500 ms fit about 7 tries in a
	// second; a tight loop makes hundreds. A slow machine only makes fewer.
	if n := asked.Load(); n < 2 || n > 10 {
		t.Errorf("the Stop was sent %d times in one second, want a few (2 to 10)", n)
	}
}

// A Stop may be held while a plan reviewer runs: the hook waits its budget
// plus review.hold for the answer, and tells the supervisor how long it
// can wait. A hold that does not fit under the Stop timeout of hooks.json
// is not used, and the user hears why.
func TestStopBudgetCoversTheHold(t *testing.T) {
	tests := []struct {
		name     string
		hold     string
		wantHold int64
		// wantAnswer: the held answer arrives; else the hook gives up at
		// its budget and says why.
		wantAnswer bool
		wantWarn   string
	}{
		{name: "held", hold: "1m", wantHold: 60000, wantAnswer: true},
		{name: "not held", hold: "0s", wantHold: 0},
		{name: "hold beyond the Stop timeout", hold: "20m", wantHold: 0, wantWarn: "review.hold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, o := setup(t, "DROVER_HOOK_BUDGET_STOP=100ms", "DROVER_REVIEW_HOLD="+tc.hold)
			p, err := project.PathsFor(root, o.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			var gotHold atomic.Int64
			serveStops(t, root, p, func(w http.ResponseWriter, r *http.Request) {
				var req api.HookRequest
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
					t.Errorf("decoding the hook request: %v", err)
				}
				gotHold.Store(req.HoldMS)
				// The reviewer answers well past the Stop's own budget.
				select {
				case <-time.After(time.Second):
				case <-r.Context().Done():
					return
				}
				_ = json.NewEncoder(w).Encode(api.HookResponse{Output: hook.Output{Decision: "block", Reason: "the review found 1 blocking issue"}})
			})
			o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
			o.Spawn = func(string, project.Paths) error { t.Error("spawned although a supervisor answers"); return nil }
			r := Run(context.Background(), o)
			if got := gotHold.Load(); got != tc.wantHold {
				t.Errorf("the request asks for a hold of %dms, want %dms", got, tc.wantHold)
			}
			if tc.wantAnswer {
				var out hook.Output
				if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || !out.IsBlock() || !strings.Contains(out.Reason, "blocking issue") {
					t.Errorf("want the held answer, got %q (problem %q)", r.Stdout, r.Problem)
				}
				return
			}
			out := decode(t, r)
			if !strings.Contains(out.SystemMessage, "letting the agent go on") || !strings.Contains(out.SystemMessage, tc.wantWarn) {
				t.Errorf("systemMessage %q", out.SystemMessage)
			}
		})
	}
}

// The hold is for an answer the supervisor holds, not for reaching one: a
// supervisor that drops every Stop is given up on at the Stop's budget, as
// without a hold, not review.hold later.
func TestHoldDoesNotExtendTheRetries(t *testing.T) {
	root, o := setup(t, "DROVER_HOOK_BUDGET_STOP=300ms", "DROVER_REVIEW_HOLD=9m")
	p, err := project.PathsFor(root, o.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	serveStops(t, root, p, func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	o.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	o.Spawn = func(string, project.Paths) error { return nil }
	// The caller's own deadline is far beyond the budget and far below
	// the hold: the hook must end on its budget, before it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := decode(t, Run(ctx, o))
	if ctx.Err() != nil {
		t.Fatal("the hook retried until its caller's deadline: the hold extended the retries")
	}
	if !strings.Contains(out.SystemMessage, "letting the agent go on") {
		t.Errorf("systemMessage %q", out.SystemMessage)
	}
}
