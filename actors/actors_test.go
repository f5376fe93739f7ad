package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/workflow/queue"
	"github.com/drover-dev/drover/templates"
)

const testTimeout = 20 * time.Second

type fixture struct {
	t      *testing.T
	root   string
	store  *store.Store
	system *actor.ActorSystem
	pid    *actor.PID
	panics atomic.Bool
}

// newFixture starts a sessions actor on a fresh store; each mod may change
// the session actors' Env before it starts.
func newFixture(t *testing.T, opts SessionsOptions, mods ...func(*Env)) *fixture {
	t.Helper()
	f := &fixture{t: t, root: t.TempDir()}
	st, err := store.Open(context.Background(), filepath.Join(f.root, ".drover", "state", "drover.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.store = st
	cfg := config.Defaults()
	env := Env{
		Store:       st,
		Root:        f.root,
		SessionsDir: filepath.Join(f.root, ".drover", "sessions"),
		Config:      func() config.Config { return cfg },
		Templates:   func() (templates.Set, error) { return templates.Defaults(), nil },
		Dirty: func(context.Context, string) (bool, []string, error) {
			if f.panics.Load() {
				panic("injected failure while gathering facts")
			}
			return false, nil, nil
		},
	}
	for _, mod := range mods {
		mod(&env)
	}
	f.system = actor.NewActorSystem()
	pid, err := f.system.Root.SpawnNamed(NewSessionsProps(env, opts), "sessions")
	if err != nil {
		t.Fatal(err)
	}
	f.pid = pid
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	if f.system == nil {
		return
	}
	if err := f.system.Root.StopFuture(f.pid).Wait(); err != nil {
		f.t.Errorf("stopping sessions actor: %v", err)
	}
	f.system.Shutdown()
	f.system = nil
	if err := f.store.Close(); err != nil {
		f.t.Errorf("closing store: %v", err)
	}
}

func (f *fixture) ask(id string, msg any) any {
	f.t.Helper()
	res, err := f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: id, Msg: msg}, testTimeout).Result()
	if err != nil {
		f.t.Fatalf("asking session %s: %v", id, err)
	}
	return res
}

func (f *fixture) add(id, prompt string) string {
	f.t.Helper()
	r := f.ask(id, &AddTask{Prompt: prompt}).(*AddResult)
	if r.Err != nil {
		f.t.Fatalf("add to %s: %v", id, r.Err)
	}
	return r.Response.Path
}

func (f *fixture) command(id, verb string) *CommandResult {
	f.t.Helper()
	return f.ask(id, &Command{Verb: verb}).(*CommandResult)
}

func (f *fixture) stop(id, reqID string) *HookResult {
	f.t.Helper()
	return f.ask(id, &HandleHook{RequestID: reqID, Event: hook.Stop, Input: hook.Input{SessionID: id, HookEventName: "Stop"}}).(*HookResult)
}

func (f *fixture) stored(id string) queue.Session {
	f.t.Helper()
	rec, st, err := f.store.Load(context.Background(), id)
	if err != nil || st != store.Found {
		f.t.Fatalf("loading %s: status %v err %v", id, st, err)
	}
	return rec.Queue
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSessionsStayIsolated(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3, RestartWindow: time.Minute})
	const n = 50
	ids := make([]string, n)
	files := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("session-%02d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := ids[i]
			res, err := f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: id, Msg: &AddTask{Prompt: "task of " + id}}, testTimeout).Result()
			if err != nil || res.(*AddResult).Err != nil {
				errs <- fmt.Errorf("add %s: %v %v", id, err, res)
				return
			}
			files[i] = res.(*AddResult).Response.Path
			res, err = f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: id, Msg: &Command{Verb: "start"}}, testTimeout).Result()
			if err != nil || res.(*CommandResult).Err != nil {
				errs <- fmt.Errorf("start %s: %v %v", id, err, res)
				return
			}
			for k := 0; k < 3; k++ {
				res, err = f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: id, Msg: &HandleHook{RequestID: fmt.Sprintf("%s-%d", id, k), Event: hook.Stop, Input: hook.Input{SessionID: id}}}, testTimeout).Result()
				if err != nil {
					errs <- fmt.Errorf("stop %s: %v", id, err)
					return
				}
				out := res.(*HookResult)
				if out.Err != nil || !out.Output.IsBlock() {
					errs <- fmt.Errorf("stop %s #%d: want block, got %+v", id, k, out)
					return
				}
				if !strings.Contains(out.Output.Reason, files[i]) {
					errs <- fmt.Errorf("stop %s: reason does not name its own task %s:\n%s", id, files[i], out.Output.Reason)
					return
				}
				for j, other := range ids {
					if j != i && strings.Contains(out.Output.Reason, other+"/") {
						errs <- fmt.Errorf("stop %s: reason names session %s", id, other)
						return
					}
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		if got := f.stored(id); got.State != queue.On || got.Iteration != 3 {
			t.Errorf("session %s stored %+v, want on at iteration 3", id, got)
		}
	}
}

func TestRetriedRequestReturnsRecordedDecision(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3})
	f.add("s1", "one")
	if r := f.command("s1", "start"); r.Err != nil {
		t.Fatal(r.Err)
	}
	first := f.stop("s1", "req-1")
	again := f.stop("s1", "req-1")
	if !again.Replayed {
		t.Errorf("second try of req-1 not replayed")
	}
	if again.Output != first.Output {
		t.Errorf("replayed output differs:\n%+v\n%+v", first.Output, again.Output)
	}
	if got := f.stored("s1").Iteration; got != 1 {
		t.Errorf("iteration after a retried request = %d, want 1", got)
	}
}

func TestPanicRestartsFromStoredState(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 5, RestartWindow: time.Minute})
	task := f.add("s1", "the task")
	if r := f.command("s1", "start"); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := f.stop("s1", "a"); !r.Output.IsBlock() {
		t.Fatalf("first stop: %+v", r)
	}
	f.panics.Store(true)
	r := f.stop("s1", "b")
	if !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("stop during a failure: want ErrSessionFailed, got %+v", r)
	}
	f.panics.Store(false)
	if got := f.stored("s1").Iteration; got != 1 {
		t.Fatalf("a failed request changed the stored iteration to %d", got)
	}
	r = f.stop("s1", "c")
	if r.Err != nil || !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, task) {
		t.Fatalf("stop after restart: %+v", r)
	}
	if got := f.stored("s1").Iteration; got != 2 {
		t.Errorf("iteration after restart = %d, want 2 (the restarted actor must continue from the store)", got)
	}
}

func TestIdleSessionIsPassivatedAndRecovered(t *testing.T) {
	f := newFixture(t, SessionsOptions{IdleTimeout: 20 * time.Millisecond, RestartMax: 3})
	f.add("s1", "x")
	if r := f.command("s1", "start"); r.Err != nil {
		t.Fatal(r.Err)
	}
	f.stop("s1", "a")
	// Wait until the session actor is gone, asking the sessions actor's
	// children rather than sleeping a fixed time.
	eventually.True(t, testTimeout, "the idle session actor to be passivated", func() bool { return !f.hasSessionChild() })
	r := f.stop("s1", "b")
	if r.Err != nil || !r.Output.IsBlock() {
		t.Fatalf("stop after passivation: %+v", r)
	}
	if got := f.stored("s1").Iteration; got != 2 {
		t.Errorf("iteration after recovery = %d, want 2", got)
	}
}

// hasSessionChild reports whether the actor of session s1 is registered in
// the process registry.
func (f *fixture) hasSessionChild() bool {
	_, ok := f.system.ProcessRegistry.GetLocal(f.pid.Id + "/session-s1")
	return ok
}

func TestUnknownSessionNeverBlocked(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3})
	for _, e := range hook.Events {
		r := f.ask("never-seen", &HandleHook{RequestID: "r-" + string(e), Event: e, Input: hook.Input{SessionID: "never-seen"}}).(*HookResult)
		if r.Err != nil || r.Output.IsBlock() {
			t.Errorf("%s on an unknown session: %+v", e, r)
		}
	}
	if _, st, _ := f.store.Load(context.Background(), "never-seen"); st != store.NotFound {
		t.Errorf("hooks on an unknown session stored a record (status %v)", st)
	}
	if _, err := os.Stat(filepath.Join(f.root, ".drover", "sessions", "never-seen")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hooks on an unknown session created its folder")
	}
}

func TestCorruptRecordIsQuarantinedAndReported(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3})
	if err := f.store.PutRaw(context.Background(), "s1", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	r := f.stop("s1", "a")
	if r.Err != nil || r.Output.IsBlock() {
		t.Fatalf("stop on a corrupt record: %+v", r)
	}
	if !strings.Contains(r.Output.SystemMessage, "quarantined") {
		t.Errorf("systemMessage does not report the quarantine: %q", r.Output.SystemMessage)
	}
	// The session works again afterwards.
	f.add("s1", "fresh")
	if c := f.command("s1", "start"); c.Err != nil {
		t.Fatalf("start after quarantine: %v", c.Err)
	}
	if r := f.stop("s1", "b"); !r.Output.IsBlock() || r.Output.SystemMessage != "" {
		t.Errorf("stop after quarantine: %+v", r)
	}
	q, err := f.store.Quarantined(context.Background())
	if err != nil || len(q) != 1 {
		t.Errorf("quarantine holds %d entries (err %v), want 1", len(q), err)
	}
}
