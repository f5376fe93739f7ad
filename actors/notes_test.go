package actors

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
)

// note runs drover note's "set" (args not nil) or "show" in session id.
func (f *planFixture) note(id string, args *api.NoteArgs) (api.Notes, error) {
	f.t.Helper()
	verb, raw := "show", json.RawMessage(nil)
	if args != nil {
		verb = "set"
		var err error
		if raw, err = json.Marshal(args); err != nil {
			f.t.Fatal(err)
		}
	}
	r := f.ask(id, &WorkflowCommand{Workflow: api.NotesWorkflow, Verb: verb, Args: raw}).(*WorkflowResult)
	if r.Err != nil {
		return api.Notes{}, r.Err
	}
	var n api.Notes
	if err := json.Unmarshal(r.Response, &n); err != nil {
		f.t.Fatalf("note %s answered %s: %v", verb, r.Response, err)
	}
	return n, nil
}

func (f *planFixture) mustNote(id string, args *api.NoteArgs) api.Notes {
	f.t.Helper()
	n, err := f.note(id, args)
	if err != nil {
		f.t.Fatalf("note %+v: %v", args, err)
	}
	return n
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// TestNotesSurviveCompaction: whatever workflow a session runs, none
// included, the agent's notes are written into context-snapshot.json at
// PreCompact with seed 003's fields, join the compaction instructions, and
// come back into the model's context at the SessionStart that follows the
// compaction, after the workflow's own reminder.
func TestNotesSurviveCompaction(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *planFixture, id string)
		// skill and step are the snapshot's activeSkill and currentStep
		// (nil: null); reminder is in the workflow's own text.
		skill, step, item *string
		reminder          string
	}{
		{name: "none", setup: func(*planFixture, string) {}},
		{
			name: "queue",
			setup: func(f *planFixture, id string) {
				f.add(id, "make the lexer handle tabs")
				if r := f.command(id, "start"); r.Err != nil {
					t.Fatal(r.Err)
				}
			},
			skill: ptr("queue"), step: ptr("iteration 0"), reminder: "[drover] Active session",
		},
		{
			name: "loop",
			setup: func(f *planFixture, id string) {
				f.loop(id, "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 5})
			},
			skill: ptr("loop"), step: ptr("iteration 1 of 5"), reminder: "Active loop in session",
		},
		{
			name: "plan",
			setup: func(f *planFixture, id string) {
				f.mustPlan(id, "new", api.PlanArgs{PlanID: "lexer"})
			},
			skill: ptr("plan"), step: ptr("lexer/new-plan"), reminder: "plan.md",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixture(t)
			id := "s-" + tc.name
			tc.setup(f, id)
			f.mustNote(id, &api.NoteArgs{Decision: "keep the v1 wire format"})
			f.mustNote(id, &api.NoteArgs{Question: ptr("Should tabs count as one column?"), Doing: ptr("item 3: the lexer")})
			n := f.mustNote(id, nil)
			if n.Question != "Should tabs count as one column?" || n.Doing != "item 3: the lexer" || len(n.Decisions) != 1 || n.Decisions[0].Text != "keep the v1 wire format" {
				t.Fatalf("notes: %+v", n)
			}

			pre := f.ask(id, &HandleHook{Event: hook.PreCompact, Input: hook.Input{SessionID: id, HookEventName: "PreCompact", Trigger: "auto"}}).(*HookResult)
			if pre.Err != nil {
				t.Fatal(pre.Err)
			}
			for _, want := range []string{"Pending question to the user: Should tabs count as one column?", "In progress: item 3: the lexer", "Decided: keep the v1 wire format", tc.reminder} {
				if !strings.Contains(pre.Text, want) {
					t.Errorf("the compaction instructions lack %q:\n%s", want, pre.Text)
				}
			}
			// The snapshot is the PreCompact's effect: written once the
			// answer is sent.
			var data []byte
			if !eventually.Holds(testTimeout, func() bool {
				var err error
				data, err = os.ReadFile(filepath.Join(f.root, ".drover", "sessions", id, SnapshotFile))
				return err == nil
			}) {
				t.Fatal("no context snapshot after PreCompact")
			}
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatalf("snapshot is not JSON: %v\n%s", err, data)
			}
			for _, k := range []string{"version", "timestamp", "activeSkill", "currentStep", "pendingQuestion", "inProgressItem", "recentContext"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("the snapshot has no %q: %s", k, data)
				}
			}
			var snap session.ContextSnapshot
			if err := json.Unmarshal(data, &snap); err != nil {
				t.Fatal(err)
			}
			eq := func(what string, got, want *string) {
				if (got == nil) != (want == nil) || got != nil && *got != *want {
					t.Errorf("%s = %v, want %v", what, deref(got), deref(want))
				}
			}
			eq("activeSkill", snap.ActiveSkill, tc.skill)
			eq("currentStep", snap.CurrentStep, tc.step)
			eq("pendingQuestion", snap.PendingQuestion, ptr("Should tabs count as one column?"))
			eq("inProgressItem", snap.InProgressItem, ptr("item 3: the lexer"))
			if snap.Version != 1 || snap.SessionID != id || len(snap.RecentContext) != 1 || snap.RecentContext[0] != (session.ContextEntry{Type: "decision", Content: "keep the v1 wire format", At: snap.RecentContext[0].At}) {
				t.Errorf("snapshot: %+v", snap)
			}

			start := f.ask(id, &HandleHook{Event: hook.SessionStart, Input: hook.Input{SessionID: id, HookEventName: "SessionStart", Source: "compact"}}).(*HookResult)
			if start.Err != nil || start.Output.HookSpecificOutput == nil {
				t.Fatalf("SessionStart after the compaction: %+v", start)
			}
			ctx := start.Output.HookSpecificOutput.AdditionalContext
			if start.Output.HookSpecificOutput.HookEventName != "SessionStart" {
				t.Errorf("hookEventName %q", start.Output.HookSpecificOutput.HookEventName)
			}
			for _, want := range []string{"Should tabs count as one column?", "item 3: the lexer", "keep the v1 wire format", tc.reminder} {
				if !strings.Contains(ctx, want) {
					t.Errorf("the context after the compaction lacks %q:\n%s", want, ctx)
				}
			}
			if tc.reminder != "" && strings.Index(ctx, tc.reminder) > strings.Index(ctx, "Your notes") {
				t.Errorf("the notes come before the workflow's reminder:\n%s", ctx)
			}

			// A fresh start gets nothing back: the notes are for a
			// conversation that goes on.
			fresh := f.ask(id, &HandleHook{Event: hook.SessionStart, Input: hook.Input{SessionID: id, HookEventName: "SessionStart", Source: "startup"}}).(*HookResult)
			if o := fresh.Output.HookSpecificOutput; o != nil && strings.Contains(o.AdditionalContext, "Your notes") {
				t.Errorf("a fresh start got the notes: %+v", o)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestNoteCommand: the changes a user makes with drover note, and the
// refusals, in one session.
func TestNoteCommand(t *testing.T) {
	f := newPlanFixture(t)
	if n := f.mustNote("s1", nil); !strings.Contains(n.Message, "No notes in session s1") || len(n.Decisions) != 0 {
		t.Errorf("notes of a new session: %+v", n)
	}
	for i := range session.MaxDecisions + 2 {
		f.mustNote("s1", &api.NoteArgs{Decision: "decision " + string(rune('a'+i))})
	}
	n := f.mustNote("s1", &api.NoteArgs{Question: ptr("tabs?")})
	if len(n.Decisions) != session.MaxDecisions || n.Decisions[0].Text != "decision c" || n.Question != "tabs?" {
		t.Errorf("after %d decisions: %+v", session.MaxDecisions+2, n)
	}
	if n := f.mustNote("s1", &api.NoteArgs{Question: ptr("")}); n.Question != "" || len(n.Decisions) != session.MaxDecisions {
		t.Errorf("--question \"\" did not clear the question alone: %+v", n)
	}
	if n := f.mustNote("s1", &api.NoteArgs{Clear: true, Doing: ptr("the lexer")}); n.Doing != "the lexer" || len(n.Decisions) != 0 || n.Question != "" {
		t.Errorf("--clear --doing: %+v", n)
	}
	for name, args := range map[string]api.NoteArgs{
		"nothing":  {},
		"too long": {Decision: strings.Repeat("x", session.MaxNoteBytes+1)},
	} {
		if _, err := f.note("s1", &args); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: err %v, want a bad request", name, err)
		}
	}
	// A session that only has notes still takes a queue.
	f.add("s1", "a task")
	if r := f.command("s1", "start"); r.Err != nil || r.Response.State != "on" {
		t.Errorf("a queue after notes: %+v", r)
	}
	if n := f.mustNote("s1", nil); n.Doing != "the lexer" {
		t.Errorf("the queue's start lost the notes: %+v", n)
	}
}
