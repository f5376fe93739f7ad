package actors

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
)

// faultStore is a store whose commits fail, while fault is set, as bbolt's
// do on a full or read-only disk: the write is refused and nothing is
// stored. Loads go on working, as reads of a full disk do.
type faultStore struct {
	Store
	path  string
	mu    sync.Mutex
	fault error
	fails int
}

func (s *faultStore) set(errno error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = errno
}

func (s *faultStore) failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fails
}

func (s *faultStore) Save(ctx context.Context, rec session.Record) error {
	s.mu.Lock()
	fault := s.fault
	if fault != nil {
		s.fails++
	}
	s.mu.Unlock()
	if fault != nil {
		// What bbolt returns when its page write fails, wrapped as
		// store.Save wraps it.
		return fmt.Errorf("saving session %s: %w", rec.ID, &fs.PathError{Op: "write", Path: s.path, Err: fault})
	}
	return s.Store.Save(ctx, rec)
}

// TestFailedCommitFailsOpenAndKeepsTheCommittedState: while the store
// cannot commit (no space left, a read-only file system), a Stop lets the
// agent go on and says why, naming the store file; the session keeps its
// last committed state in memory as in the store (no half-applied
// decision); and once the disk is writable again, the next Stop is decided
// from that state and committed, without a restart.
func TestFailedCommitFailsOpenAndKeepsTheCommittedState(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS} {
		for _, wf := range []string{"queue", "loop"} {
			t.Run(wf+"/"+errno.Error(), func(t *testing.T) {
				var fault *faultStore
				f := newPlanFixtureEnv(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
					fault = &faultStore{Store: e.Store, path: "/project/.drover/state/drover.db"}
					e.Store = fault
				})
				const id = "s1"
				stop := func(req string) *HookResult {
					t.Helper()
					msg := "Working on it."
					return f.ask(id, &HandleHook{RequestID: req, Event: hook.Stop, Input: hook.Input{SessionID: id, HookEventName: "Stop", LastAssistantMessage: &msg}}).(*HookResult)
				}
				switch wf {
				case "queue":
					f.add(id, "write the parser")
					f.add(id, "write the lexer")
					if r := f.command(id, "start"); r.Err != nil {
						t.Fatalf("start: %v", r.Err)
					}
				case "loop":
					f.loop(id, "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
				}
				first := stop("a")
				if first.Err != nil || !first.Output.IsBlock() {
					t.Fatalf("the first stop: %+v", first)
				}
				committed := f.storedPlan(id)
				status := f.ask(id, &StatusQuery{}).(*StatusResult)

				fault.set(errno)
				failed := stop("b")
				if failed.Err != nil || failed.Output.IsBlock() {
					t.Fatalf("the stop on a failing disk: %+v, want it let through", failed)
				}
				msg := failed.Output.SystemMessage
				for _, want := range []string{errno.Error(), fault.path, id} {
					if !strings.Contains(msg, want) {
						t.Errorf("systemMessage %q does not say %q", msg, want)
					}
				}
				// A second failing stop, as the agent goes on: still
				// nothing half-applied.
				if again := stop("c"); again.Err != nil || again.Output.IsBlock() {
					t.Fatalf("the second stop on a failing disk: %+v", again)
				}
				if n := fault.failed(); n != 2 {
					t.Errorf("%d failed commits, want 2 (one per stop)", n)
				}
				if got := f.storedPlan(id); !reflect.DeepEqual(got, committed) {
					t.Errorf("the stored record changed under failed commits:\n got %+v\nwant %+v", got, committed)
				}
				if got := f.ask(id, &StatusQuery{}).(*StatusResult); !reflect.DeepEqual(got, status) {
					t.Errorf("the session's state in memory moved past its last commit:\n got %+v\nwant %+v", got.Status, status.Status)
				}
				if wf == "loop" {
					// The tracker is an effect of a committed stop: none
					// ran for the failed ones (the status query above was
					// handled after their effects would have been).
					tr, err := tracker.Read(tracker.Path(filepath.Join(f.root, ".drover", "sessions", id)))
					if err != nil || tr.Iteration != committed.Loop.Iteration {
						t.Errorf("tracker at iteration %d (%v), want the committed %d", tr.Iteration, err, committed.Loop.Iteration)
					}
				}

				// Space returns: the next stop is the one after the
				// first, committed, with no restart.
				fault.set(nil)
				next := stop("d")
				if next.Err != nil || !next.Output.IsBlock() || next.Output.SystemMessage != "" {
					t.Fatalf("the stop once the disk is writable: %+v", next)
				}
				after := f.storedPlan(id)
				if after.Events != committed.Events+1 {
					t.Errorf("events %d after recovery, want %d", after.Events, committed.Events+1)
				}
				switch wf {
				case "queue":
					if after.Queue.Iteration != committed.Queue.Iteration+1 {
						t.Errorf("queue iteration %d after recovery, want %d", after.Queue.Iteration, committed.Queue.Iteration+1)
					}
				case "loop":
					if after.Loop.Iteration != committed.Loop.Iteration+1 {
						t.Errorf("loop iteration %d after recovery, want %d", after.Loop.Iteration, committed.Loop.Iteration+1)
					}
				}
				if _, ok := after.Lookup("b", hook.Stop); ok {
					t.Error("the answer of the failed stop was recorded")
				}
			})
		}
	}
}

// TestFailedCommitKeepsTheWarningsOfItsAnswer: a warning due with the next
// answer (here, that the session's record was quarantined) is said with
// the answer of a stop whose commit failed, not lost with its decision.
func TestFailedCommitKeepsTheWarningsOfItsAnswer(t *testing.T) {
	var fault *faultStore
	f := newFixture(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
		fault = &faultStore{Store: e.Store, path: "/project/.drover/state/drover.db"}
		e.Store = fault
	})
	if err := f.store.PutRaw(context.Background(), "s1", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	f.add("s1", "write the parser")
	if r := f.command("s1", "start"); r.Err != nil {
		t.Fatalf("start: %v", r.Err)
	}
	fault.set(syscall.ENOSPC)
	r := f.stop("s1", "a")
	if r.Err != nil || r.Output.IsBlock() {
		t.Fatalf("the stop on a full disk: %+v", r)
	}
	for _, want := range []string{"quarantined", "no space left on device"} {
		if !strings.Contains(r.Output.SystemMessage, want) {
			t.Errorf("systemMessage %q does not say %q", r.Output.SystemMessage, want)
		}
	}
	fault.set(nil)
	if r := f.stop("s1", "b"); !r.Output.IsBlock() || r.Output.SystemMessage != "" {
		t.Errorf("the stop once the disk is writable: %+v, want the block and no warning said twice", r)
	}
}
