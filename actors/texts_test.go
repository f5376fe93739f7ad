package actors

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

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

	args, _ := json.Marshal(LoopStartArgs{Prompt: "keep going"})
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
