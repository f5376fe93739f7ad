package actors

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/templates"
)

// The texts drover stop and a quarantine show the user come from the
// templates, so a project's override rewords them; an override set that
// does not load leaves the built-in text in place rather than no answer.
func TestUserTextsComeFromTemplates(t *testing.T) {
	dir := t.TempDir()
	overrides := map[string]string{
		templates.Stopped:     "STOPPED {{session_id}} at {{iteration}}",
		templates.Quarantined: "QUARANTINED {{session_id}}",
		templates.LoopStopped: "LOOP STOPPED {{session_id}} at {{iteration}}",
		templates.LoopNone:    "NO LOOP {{session_id}}",
	}
	for name, text := range overrides {
		if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
		e.Templates = func() (templates.Set, error) { return templates.Load(dir) }
	})

	if err := f.store.PutRaw(context.Background(), "corrupt", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if r := f.stop("corrupt", "a"); r.Output.SystemMessage != "QUARANTINED corrupt" {
		t.Errorf("quarantine notice %q", r.Output.SystemMessage)
	}

	f.add("q", "a task")
	if c := f.command("q", "start"); c.Err != nil {
		t.Fatal(c.Err)
	}
	f.stop("q", "s1")
	if c := f.command("q", "stop"); c.Err != nil || c.Response.Message != "STOPPED q at 1" {
		t.Errorf("queue stop: %+v", c)
	}

	args, _ := json.Marshal(api.LoopStartArgs{Prompt: "keep going"})
	if r := f.ask("l", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: args}).(*WorkflowResult); r.Err != nil {
		t.Fatal(r.Err)
	}
	if c := f.command("l", "stop"); c.Err != nil || c.Response.Message != "LOOP STOPPED l at 1" {
		t.Errorf("loop stop: %+v", c)
	}
	if c := f.command("l", "stop"); c.Err != nil || c.Response.Message != "NO LOOP l" {
		t.Errorf("second loop stop: %+v", c)
	}
}

func TestStopTextFallsBackToTheBuiltIn(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
		e.Templates = func() (templates.Set, error) { return templates.Set{}, errors.New("a broken override") }
	})
	f.add("q", "a task")
	if c := f.command("q", "stop"); c.Err != nil || c.Response.Message != "[drover] Stopped session q at iteration 0. The agent may stop now." {
		t.Errorf("stop with broken templates: %+v", c)
	}
}

// failingStore is a store whose saves fail once fail is set.
type failingStore struct {
	Store
	fail atomic.Bool
}

func (s *failingStore) Save(ctx context.Context, rec session.Record) error {
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return s.Store.Save(ctx, rec)
}

// A hook whose decision could not be saved lets the agent stop with the
// save_failed text, the built-in one or a project's rewording of it.
func TestSaveFailureTextComesFromTemplates(t *testing.T) {
	tests := []struct {
		name     string
		override string
		want     string
	}{
		{"built-in", "", "drover: could not save the state of session q (disk full); letting the agent stop."},
		{"override", "SAVE FAILED {{session_id}}: {{error}}", "SAVE FAILED q: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.override != "" {
				if err := os.WriteFile(filepath.Join(dir, templates.SaveFailed+".md"), []byte(tt.override+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var fs *failingStore
			f := newFixture(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
				fs = &failingStore{Store: e.Store}
				e.Store = fs
				e.Templates = func() (templates.Set, error) { return templates.Load(dir) }
			})
			f.add("q", "a task")
			if c := f.command("q", "start"); c.Err != nil {
				t.Fatal(c.Err)
			}
			fs.fail.Store(true)
			r := f.stop("q", "s1")
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Output.SystemMessage != tt.want {
				t.Errorf("system message %q, want %q", r.Output.SystemMessage, tt.want)
			}
			if r.Output.Decision != "" {
				t.Errorf("decision %q: an unsaved decision must let the agent stop", r.Output.Decision)
			}
		})
	}
}

// A malformed loop tracker is set aside, and the user reads what became of
// it in the words of the templates.
func TestTrackerSetAsideTextComesFromTemplates(t *testing.T) {
	tests := []struct {
		name     string
		override string
		want     string
	}{
		{"built-in", "", "; it was set aside as "},
		{"override", "SET ASIDE {{moved_to}}", "(SET ASIDE " + tracker.FileName + "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.override != "" {
				if err := os.WriteFile(filepath.Join(dir, templates.LoopTrackerSetAside+".md"), []byte(tt.override+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := newFixture(t, SessionsOptions{RestartMax: 3}, func(e *Env) {
				e.Templates = func() (templates.Set, error) { return templates.Load(dir) }
			})
			args, _ := json.Marshal(api.LoopStartArgs{Prompt: "keep going"})
			if r := f.ask("l", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: args}).(*WorkflowResult); r.Err != nil {
				t.Fatal(r.Err)
			}
			path := tracker.Path(filepath.Join(f.root, ".drover", "sessions", "l"))
			if err := os.WriteFile(path, []byte("no front matter\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := f.stop("l", "s1")
			if r.Err != nil || !strings.Contains(r.Output.SystemMessage, tt.want) {
				t.Errorf("stop on a malformed tracker: %v, message %q, want it to contain %q", r.Err, r.Output.SystemMessage, tt.want)
			}
		})
	}
}

// drover plan continue with no plan anywhere is refused in the words of
// the templates.
func TestPlanContinueRefusalComesFromTemplates(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3})
	r := f.ask("p", &WorkflowCommand{Workflow: "plan", Verb: "continue", Args: []byte("{}")}).(*WorkflowResult)
	want := "session p has no plan and " + filepath.Join(f.root, ".drover", "plans") + " holds none; start one with drover plan new <plan-id>"
	if !errors.Is(r.Err, ErrBadRequest) || !strings.HasSuffix(r.Err.Error(), want) {
		t.Errorf("plan continue with no plan: %v, want a bad request ending %q", r.Err, want)
	}
}
