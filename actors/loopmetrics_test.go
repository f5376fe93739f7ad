package actors

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
)

// readMetrics decodes every line of a metrics history.
func readMetrics(t *testing.T, path string) []session.IterationMetrics {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []session.IterationMetrics
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m session.IterationMetrics
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestLoopMetricsHistory: every iteration a loop measures leaves one line
// in .drover/sessions/<id>/metrics.jsonl (seed 004's metrics file), with
// what the loop measured and decided; a crash between a Stop's commit and
// its effects, the retried hook, and a session actor started afresh from
// the store (as a new supervisor starts it) add no second line; a new loop
// sets the earlier loop's file aside.
func TestLoopMetricsHistory(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	pf := &planFixture{fixture: f.fixture}
	path := filepath.Join(f.root, ".drover", "sessions", "s1", MetricsFile)
	f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	stop := func(req, output, msg string) *HookResult {
		tr := testTranscript(t, output, msg)
		return f.ask("s1", &HandleHook{RequestID: req, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: tr, LastAssistantMessage: &msg}}).(*HookResult)
	}
	lines := func(n int) []session.IterationMetrics {
		t.Helper()
		var got []session.IterationMetrics
		if !eventually.Holds(testTimeout, func() bool { got = readMetrics(t, path); return len(got) >= n }) {
			t.Fatalf("metrics history has %d line(s), want %d", len(got), n)
		}
		return got
	}

	if r := stop("a", halfPass, "The lexer test fails."); r.Err != nil || !r.Output.IsBlock() {
		t.Fatalf("stop 1: %+v", r)
	}
	first := lines(1)[0]
	if first.Iteration != 1 || first.TestsPassed != 1 || first.TestsFailed != 1 || first.LastOutcome != "tests_failed" ||
		first.Status == "" || first.Role == "" || !first.Active || first.LoopStartedAt.IsZero() || first.Time.IsZero() {
		t.Errorf("line of iteration 1: %+v", first)
	}

	// A crash after the commit of iteration 2's Stop: the restarted actor
	// writes its line from the stored record, once.
	f.crash.armed.Store(true)
	if r := stop("b", halfPass, "Still failing."); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing stop: %+v", r)
	}
	lines(2)
	msg := "Still failing."
	if r := f.ask("s1", &HandleHook{RequestID: "b", Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &msg}}).(*HookResult); !r.Replayed {
		t.Errorf("the retried stop was not replayed: %+v", r)
	}
	// The session actor starts again from the store, as after a
	// supervisor's restart; its resume finds iteration 2 written.
	f.system.Root.Send(f.pid, &Forget{SessionID: "s1"})
	if st := pf.loop("s1", "status", nil); st.Iteration != 3 {
		t.Fatalf("status after the restart: %+v", st)
	}

	if r := stop("c", bothPass, "All tests pass. <promise>DONE</promise>\n<promise>DONE</promise>"); r.Err != nil || r.Output.IsBlock() {
		t.Fatalf("stop 3 did not end the loop: %+v", r)
	}
	got := lines(3)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (one per iteration): %+v", len(got), got)
	}
	for i, m := range got {
		if m.Iteration != i+1 || !m.LoopStartedAt.Equal(first.LoopStartedAt) {
			t.Errorf("line %d: iteration %d of the loop started %v", i+1, m.Iteration, m.LoopStartedAt)
		}
	}
	if last := got[2]; last.Active || last.Outcome != "done" || last.TestsPassed != 2 || last.TestsFailed != 0 {
		t.Errorf("line of the last iteration: %+v", last)
	}

	// A new loop: the earlier one's history is set aside, whole.
	f.startLoop(api.LoopStartArgs{Prompt: "build the printer", MaxIterations: 10})
	if !eventually.Holds(testTimeout, func() bool { _, err := os.Stat(path); return os.IsNotExist(err) }) {
		t.Fatal("the new loop did not set the earlier loop's metrics history aside")
	}
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "metrics.*.jsonl"))
	if len(old) != 1 || len(readMetrics(t, old[0])) != 3 {
		t.Errorf("set aside as %v, want one file of 3 lines", old)
	}
	stop("d", bothPass, "Printing works.")
	if got := lines(1); len(got) != 1 || got[0].Iteration != 1 || got[0].LoopStartedAt.Equal(first.LoopStartedAt) {
		t.Errorf("the new loop's history: %+v", got)
	}
	pf.loop("s1", "cancel", nil)
}

// TestAppendMetricsLine: the writer keeps one line per iteration of a
// loop, and a line cut short by a crash does not swallow the next one.
func TestAppendMetricsLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s", MetricsFile)
	first := readMetrics(t, path)
	if first != nil {
		t.Fatal("a missing file has lines")
	}
	line := func(it int) session.IterationMetrics {
		return session.IterationMetrics{Iteration: it, LoopStartedAt: testLoopStart}
	}
	for _, it := range []int{1, 1, 2, 1, 2} {
		if err := appendMetricsLine(path, line(it)); err != nil {
			t.Fatal(err)
		}
	}
	if got := readMetrics(t, path); len(got) != 2 {
		t.Fatalf("%d lines after iterations 1, 1, 2, 1, 2; want 2", len(got))
	}
	// A torn last line (a crash in the middle of a write).
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`{"iteration":3,"ti`); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if err := appendMetricsLine(path, line(3)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(all) != 4 || !strings.HasPrefix(all[3], `{"iteration":3,`) {
		t.Errorf("after a torn line:\n%s", data)
	}
}

var testLoopStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
