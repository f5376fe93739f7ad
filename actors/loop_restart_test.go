package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/internal/workflow/loop"
)

// crashingStore saves, and then, once armed, fails the session actor as a
// crash would: the record is committed, and none of its effects ran.
type crashingStore struct {
	Store
	armed atomic.Bool
}

func (c *crashingStore) Save(ctx context.Context, rec session.Record) error {
	if err := c.Store.Save(ctx, rec); err != nil {
		return err
	}
	if c.armed.CompareAndSwap(true, false) {
		panic("injected crash between the commit and its effects")
	}
	return nil
}

// countingReviewer is a reviewer CLI that appends its model to runs, then
// fails the work with one blocking finding.
const countingReviewer = "#!/bin/sh\nd=$(dirname \"$0\")\necho \"$1\" >> \"$d/runs\"\n" +
	`printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"parser.go","line":3,"summary":"unicode letters are rejected"}]},"total_cost_usd":0.1}\n'` + "\n"

// crashFixture is a sessions actor over a crashingStore whose reviewer is
// countingReviewer; each of its commands appends a line to a file in dir.
type crashFixture struct {
	*fixture
	crash *crashingStore
	dir   string
}

func newCrashFixture(t *testing.T, mod func(c *config.Config, dir string)) *crashFixture {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-reviewer")
	if err := os.WriteFile(script, []byte(countingReviewer), 0o755); err != nil {
		t.Fatal(err)
	}
	var crash *crashingStore
	pf := newPlanFixtureEnv(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
		crash = &crashingStore{Store: e.Store}
		e.Store = crash
	}, func(c *config.Config) {
		c.Review.Command = "'" + script + "' {{model}} {{prompt}}"
		c.Loop.CheckTimeout = time.Minute
		c.Loop.MinToolCalls = 1
		mod(c, dir)
	})
	return &crashFixture{fixture: pf.fixture, crash: crash, dir: dir}
}

// lines counts the lines of the file name in the fixture's dir.
func (f *crashFixture) lines(name string) int {
	data, _ := os.ReadFile(filepath.Join(f.dir, name))
	return strings.Count(string(data), "\n")
}

func (f *crashFixture) record() session.Record {
	rec, _, _ := f.store.Load(context.Background(), "s1")
	return rec
}

func (f *crashFixture) startLoop(args api.LoopStartArgs) {
	f.t.Helper()
	(&planFixture{fixture: f.fixture}).loop("s1", "start", args)
}

// TestLoopEffectsSurviveACrashAfterTheCommit: the session actor fails
// right after a Stop's decision is committed, before any of its effects
// ran. The restarted actor re-derives them from the stored record: each
// background job runs exactly once, the files are written, and the retried
// hook gets the recorded answer without a second count.
func TestLoopEffectsSurviveACrashAfterTheCommit(t *testing.T) {
	const msg = "The parser tests ran."
	for _, tc := range []struct {
		name  string
		cfg   func(c *config.Config, dir string)
		start api.LoopStartArgs
		// claim is the final message of the crashing stop.
		claim string
		// done waits for the effect's outcome in the record.
		done func(rec session.Record) bool
		// after checks what the effects left, once done.
		after func(t *testing.T, f *crashFixture)
	}{
		{
			name:  "checkpoint review",
			cfg:   func(*config.Config, string) {},
			start: api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, CheckpointEvery: 1},
			claim: msg,
			done:  func(rec session.Record) bool { return rec.LoopCheckpoint != "" },
			after: func(t *testing.T, f *crashFixture) {
				if n := f.lines("runs"); n != 2 {
					t.Errorf("%d reviewer runs, want 2 (opus and sonnet, once each)", n)
				}
				if rec := f.record(); rec.Loop.CheckpointFor != 0 || !strings.Contains(rec.LoopCheckpoint, "After iteration 1: FAIL") {
					t.Errorf("checkpoint for %d, consensus %q", rec.Loop.CheckpointFor, rec.LoopCheckpoint)
				}
			},
		},
		{
			name: "metric commands",
			cfg: func(c *config.Config, dir string) {
				c.Loop.MetricCommands = "echo run >> '" + filepath.Join(dir, "metrics") + "'; printf -- '--- FAIL: TestParse (0.00s)\\nFAIL\\nFAIL\\texample.com/parser\\t0.01s\\n'; exit 1"
			},
			start: api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10},
			claim: msg,
			done: func(rec session.Record) bool {
				return len(rec.LoopHistory) == 1 && rec.LoopHistory[0].CommandOutcome != "" && rec.Loop.MetricsFor == 0
			},
			after: func(t *testing.T, f *crashFixture) {
				if n := f.lines("metrics"); n != 1 {
					t.Errorf("the metric command ran %d times, want once", n)
				}
			},
		},
		{
			name: "checks",
			cfg: func(c *config.Config, dir string) {
				c.Loop.CheckCommand = "echo run >> '" + filepath.Join(dir, "checks") + "'"
			},
			start: api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, RequireChecks: true},
			claim: "<promise>DONE</promise>",
			done: func(rec session.Record) bool {
				return rec.Loop.Checks != nil && !rec.Loop.Checks.Running
			},
			after: func(t *testing.T, f *crashFixture) {
				if n := f.lines("checks"); n != 1 {
					t.Errorf("the check command ran %d times, want once", n)
				}
				claim := "<promise>DONE</promise>"
				res := f.ask("s1", &HandleHook{RequestID: "b", Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &claim}}).(*HookResult)
				if res.Err != nil || res.Output.IsBlock() || f.record().Loop.Outcome != "done" {
					t.Errorf("the claim after the passed checks: %+v, outcome %q", res, f.record().Loop.Outcome)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCrashFixture(t, tc.cfg)
			f.startLoop(tc.start)
			path := testTranscript(t, bothPass, tc.claim)
			claim := tc.claim
			stop := &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &claim}}
			before := f.record().Events

			f.crash.armed.Store(true)
			crashed := f.ask("s1", stop).(*HookResult)
			if !errors.Is(crashed.Err, ErrSessionFailed) {
				t.Fatalf("the crashing stop: %+v, want ErrSessionFailed", crashed)
			}
			committed := f.record()
			if committed.Events != before+1 {
				t.Fatalf("events %d after the crashing stop, want %d: the decision was not committed", committed.Events, before+1)
			}
			if !eventually.Holds(testTimeout, func() bool { return tc.done(f.record()) }) {
				t.Fatalf("the restarted session never did the committed effect: %+v", f.record().Loop)
			}
			tc.after(t, f)

			// The hook client retries: it gets the committed answer, and
			// nothing is counted or started again.
			retried := f.ask("s1", stop).(*HookResult)
			if !retried.Replayed || retried.Err != nil {
				t.Errorf("the retried stop: %+v, want the recorded answer", retried)
			}
			want := committed.Recorded[len(committed.Recorded)-1].Output
			if retried.Output.Reason != want.Reason || retried.Output.Decision != want.Decision {
				t.Errorf("the retried stop got %+v, the committed answer is %+v", retried.Output, want)
			}
		})
	}
}

// TestLoopFilesSurviveACrashAfterTheCommit: the tracker, the reflection
// and the setting aside of an earlier loop's reflections are effects too;
// a crash after the commit of a loop start and of a stop leaves them to the
// restarted actor, which writes them from the stored record.
func TestLoopFilesSurviveACrashAfterTheCommit(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	sessionDir := filepath.Join(f.root, ".drover", "sessions", "s1")
	reflections := filepath.Join(sessionDir, "reflections")
	if err := os.MkdirAll(reflections, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(reflections, "iteration-7.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	f.crash.armed.Store(true)
	raw := []byte(`{"prompt":"build the parser","max_iterations":10}`)
	if r := f.ask("s1", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: raw}).(*WorkflowResult); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing start: %+v", r)
	}
	if !eventually.Holds(testTimeout, func() bool {
		tr, err := tracker.Read(tracker.Path(sessionDir))
		_, serr := os.Stat(filepath.Join(reflections, "iteration-7.json"))
		return err == nil && tr.Iteration == 1 && tr.Active && os.IsNotExist(serr)
	}) {
		t.Fatal("the restarted session did not write the new loop's tracker and set the earlier reflections aside")
	}
	if old, _ := filepath.Glob(reflections + ".*"); len(old) != 1 {
		t.Errorf("earlier reflections set aside as %v, want one folder", old)
	}

	msg := "The parser tests ran."
	path := testTranscript(t, halfPass, msg)
	f.crash.armed.Store(true)
	stop := &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &msg}}
	if r := f.ask("s1", stop).(*HookResult); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing stop: %+v", r)
	}
	if !eventually.Holds(testTimeout, func() bool {
		tr, err := tracker.Read(tracker.Path(sessionDir))
		_, rerr := os.Stat(filepath.Join(reflections, "iteration-1.json"))
		return err == nil && tr.Iteration == 2 && rerr == nil
	}) {
		t.Fatal("the restarted session did not write the stop's tracker and reflection")
	}
	if names := dirNames(t, reflections); len(names) != 1 {
		t.Errorf("reflections %v, want only iteration-1.json", names)
	}
	if old, _ := filepath.Glob(reflections + ".*"); len(old) != 1 {
		t.Errorf("the restart set reflections aside again: %v", old)
	}
}

// TestLoopRecoveryStartsTheCheckpointTheRecordWaitsFor: a supervisor that
// starts over a store whose record says a checkpoint review runs (it died
// with the old supervisor, or never started) starts it when the session is
// next touched, once, and adopts its consensus.
func TestLoopRecoveryStartsTheCheckpointTheRecordWaitsFor(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	started := time.Now()
	rec := session.Record{ID: "s1", Workflow: session.Loop, CreatedAt: started, UpdatedAt: started, Events: 2,
		Loop: loop.State{Active: true, Iteration: 2, MaxIterations: 10, CompletionPromise: "DONE", Prompt: "build the parser",
			StartedAt: started, CheckpointEvery: 1, CheckpointFor: 1}}
	if err := f.store.Save(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if st := (&planFixture{fixture: f.fixture}).loop("s1", "status", nil); !st.Active || st.Iteration != 2 {
		t.Fatalf("status of the recovered loop: %+v", st)
	}
	if !eventually.Holds(testTimeout, func() bool { return f.record().LoopCheckpoint != "" }) {
		t.Fatal("the recovered session never ran the checkpoint its record waits for")
	}
	if n := f.lines("runs"); n != 2 {
		t.Errorf("%d reviewer runs, want 2 (opus and sonnet, once each)", n)
	}
	msg := "working"
	res := f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &msg}}).(*HookResult)
	if !res.Output.IsBlock() || !strings.Contains(res.Output.Reason, "After iteration 1: FAIL") {
		t.Errorf("the consensus is not in the next block reason:\n%s", res.Output.Reason)
	}
}

// A glance at status must not wake a stored session: its actor would
// resume the work the record waits for, a paid review here, for a session
// no agent may use any more. The first hook does wake it.
func TestStatusDoesNotResumeAStoredSessionsWork(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	started := time.Now()
	rec := session.Record{ID: "s1", Workflow: session.Loop, CreatedAt: started, UpdatedAt: started, Events: 2,
		Loop: loop.State{Active: true, Iteration: 2, MaxIterations: 10, CompletionPromise: "DONE", Prompt: "build the parser",
			StartedAt: started, CheckpointEvery: 1, CheckpointFor: 1}}
	if err := f.store.Save(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	res, ok := f.ask("s1", &StatusQuery{}).(*StatusResult)
	if !ok || res.Err != nil {
		t.Fatalf("status: %+v", res)
	}
	if res.Status.Workflow != "loop" || res.Status.State != "on" || res.Status.Iteration != 2 {
		t.Errorf("status of the stored loop = %+v, want loop, on, iteration 2", res.Status)
	}
	// The review would have started at once; give it the time a start takes.
	time.Sleep(300 * time.Millisecond)
	if n := f.lines("runs"); n != 0 {
		t.Fatalf("status started %d reviewer runs of a stored session", n)
	}
	msg := "working"
	f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &msg}})
	if !eventually.Holds(testTimeout, func() bool { return f.lines("runs") == 2 }) {
		t.Errorf("the first hook did not resume the checkpoint the record waits for (%d runs)", f.lines("runs"))
	}
}

// TestEndedLoopTrackerSurvivesACrashAfterTheCommit: a crash between the
// commit of a cancel and its tracker write leaves a tracker that says the
// loop runs; the restarted actor rewrites it as ended, keeping the agent's
// notes.
func TestEndedLoopTrackerSurvivesACrashAfterTheCommit(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	path := tracker.Path(filepath.Join(f.root, ".drover", "sessions", "s1"))
	f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	tr, err := tracker.Read(path)
	if err != nil || !tr.Active {
		t.Fatalf("the started loop's tracker: %+v, %v", tr, err)
	}
	tr.Body += "\nnotes of the agent\n"
	if err := tracker.Write(path, tr); err != nil {
		t.Fatal(err)
	}

	f.crash.armed.Store(true)
	if r := f.ask("s1", &WorkflowCommand{Workflow: "loop", Verb: "cancel"}).(*WorkflowResult); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing cancel: %+v", r)
	}
	if f.record().Loop.Active {
		t.Fatal("the cancel was not committed")
	}
	if !eventually.Holds(testTimeout, func() bool {
		tr, err := tracker.Read(path)
		return err == nil && !tr.Active
	}) {
		t.Fatal("the restarted session left the ended loop's tracker active")
	}
	if tr, _ := tracker.Read(path); !strings.Contains(tr.Body, "notes of the agent") {
		t.Errorf("the rewritten tracker lost the agent's notes:\n%s", tr.Body)
	}
}
