package actors

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tracker"
)

// TestLoopRestartDoesNotKeepAnEarlierLoopsTracker: a crash between the
// commit of a loop start and its fresh tracker leaves the earlier loop's
// tracker on disk, whose body may end with the completion marker. The
// restarted actor writes the new loop's tracker without that body, so the
// new loop's first stop is not taken for a completion.
func TestLoopRestartDoesNotKeepAnEarlierLoopsTracker(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	path := tracker.Path(filepath.Join(f.root, ".drover", "sessions", "s1"))
	if r := f.ask("s1", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: []byte(`{"prompt":"old task","max_iterations":10}`)}).(*WorkflowResult); r.Err != nil {
		t.Fatal(r.Err)
	}
	tr, err := tracker.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	tr.Body += "\n" + tracker.DefaultCompletionMarker + "\n"
	if err := tracker.Write(path, tr); err != nil {
		t.Fatal(err)
	}
	msg := "done"
	stop := func(id string) *HookResult {
		return f.ask("s1", &HandleHook{RequestID: id, Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &msg}}).(*HookResult)
	}
	if r := stop("a"); r.Err != nil || f.record().Loop.Active {
		t.Fatalf("the earlier loop did not end on its marker: %+v", r)
	}

	f.crash.armed.Store(true)
	if r := f.ask("s1", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: []byte(`{"prompt":"new task","max_iterations":10}`)}).(*WorkflowResult); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing start: %+v", r)
	}
	if !eventually.Holds(testTimeout, func() bool {
		tr, err := tracker.Read(path)
		return err == nil && tr.Prompt == "new task"
	}) {
		t.Fatal("the restarted session did not write the new loop's tracker")
	}
	if tr, _ := tracker.Read(path); tr.Complete() || strings.Contains(tr.Body, "old task") {
		t.Errorf("the new loop's tracker kept the earlier loop's body:\n%s", tr.Body)
	}
	if r := stop("b"); r.Err != nil || !f.record().Loop.Active || r.Output.Decision != "block" {
		t.Errorf("the new loop's first stop: %+v, loop %+v; want it blocked and the loop going on", r.Output, f.record().Loop)
	}
}
