package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/templates"
)

// The agent's notes (drover note) and the context snapshot: the notes are
// kept in the session's record whatever workflow runs; at PreCompact the
// snapshot file is written from the record, and after a compaction the
// notes go back into the model's context beside the workflow's own text.

// SnapshotFile is the context snapshot's name in the session's folder.
const SnapshotFile = "context-snapshot.json"

func (a *sessionActor) snapshotPath() string { return filepath.Join(a.sessionDir(), SnapshotFile) }

// writeSnapshot is the effect of a PreCompact: write the context snapshot.
type writeSnapshot struct {
	snapshot session.ContextSnapshot
}

// notesCommand runs drover note: "set" changes the notes, "show" reads
// them.
func (a *sessionActor) notesCommand(m *WorkflowCommand) *WorkflowResult {
	tmpl, err := a.env.Templates()
	if err != nil {
		return &WorkflowResult{Err: fmt.Errorf("loading templates: %w", err)}
	}
	switch m.Verb {
	case "show":
	case "set":
		var args api.NoteArgs
		if len(m.Args) > 0 {
			if err := json.Unmarshal(m.Args, &args); err != nil {
				return &WorkflowResult{Err: fmt.Errorf("%w: decoding note arguments: %w", ErrBadRequest, err)}
			}
		}
		now := a.env.now()
		next, err := a.rec.Notes.Apply(session.NoteChange{Question: args.Question, Doing: args.Doing, Decision: args.Decision, Clear: args.Clear}, now)
		if errors.Is(err, session.ErrBadNote) {
			return &WorkflowResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		if err := a.commitEvent(ctx, a.rec.WithNotes(a.id, a.found, next, now)); err != nil {
			return &WorkflowResult{Err: err}
		}
	default:
		return &WorkflowResult{Err: unknownf("unknown note command %q (set, show)", m.Verb)}
	}
	n := a.rec.Notes
	resp := api.Notes{SessionID: a.id, Question: n.Question, Doing: n.Doing, Decisions: []api.NoteDecision{}, UpdatedAt: n.UpdatedAt, Snapshot: a.snapshotPath()}
	for _, d := range n.Decisions {
		resp.Decisions = append(resp.Decisions, api.NoteDecision{Text: d.Text, At: d.At})
	}
	if resp.Message, err = notesText(a.id, n, tmpl); err != nil {
		return &WorkflowResult{Err: err}
	}
	if resp.Message == "" {
		if resp.Message, err = tmpl.Render(templates.NotesNone, map[string]string{"session_id": a.id}); err != nil {
			return &WorkflowResult{Err: err}
		}
	}
	b, err := json.Marshal(resp)
	return &WorkflowResult{Response: b, Err: err}
}

// notesText is the text that brings n back into the model's context; ""
// when there are no notes.
func notesText(id string, n session.Notes, t templates.Set) (string, error) {
	if n.Empty() {
		return "", nil
	}
	var lines []string
	add := func(name string, vars map[string]string) error {
		line, err := t.Render(name, vars)
		if err != nil {
			return fmt.Errorf("rendering the notes of session %s: %w", id, err)
		}
		if line != "" {
			lines = append(lines, line)
		}
		return nil
	}
	if n.Question != "" {
		if err := add(templates.NotesQuestion, map[string]string{"question": n.Question}); err != nil {
			return "", err
		}
	}
	if n.Doing != "" {
		if err := add(templates.NotesDoing, map[string]string{"doing": n.Doing}); err != nil {
			return "", err
		}
	}
	for _, d := range n.Decisions {
		if err := add(templates.NotesDecision, map[string]string{"decision": d.Text, "at": d.At.UTC().Format("2006-01-02 15:04")}); err != nil {
			return "", err
		}
	}
	text, err := t.Render(templates.NotesContext, map[string]string{"session_id": id, "notes": strings.Join(lines, "\n")})
	if err != nil {
		return "", fmt.Errorf("rendering the notes of session %s: %w", id, err)
	}
	return text, nil
}

// withNotes adds what every workflow shares to its decision on a
// compaction: at PreCompact the context snapshot is written (an effect,
// for a session drover knows) and the notes join the compaction
// instructions; at a SessionStart after a compaction (or a resume) the
// notes go back into the model's context after the workflow's own text.
func (a *sessionActor) withNotes(d decision, m *HandleHook) (decision, error) {
	if m.Event != hook.PreCompact && (m.Event != hook.SessionStart || !m.Input.Resumed()) {
		return d, nil
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		return d, fmt.Errorf("loading templates: %w", err)
	}
	text, err := notesText(a.id, a.rec.Notes, tmpl)
	if err != nil {
		return d, err
	}
	if m.Event == hook.PreCompact {
		if a.found {
			rec := a.rec
			rec.ID = a.id
			d.effects = append(d.effects, writeSnapshot{snapshot: rec.Snapshot(a.env.now(), a.currentItem())})
		}
		d.Text = joinParagraphs(d.Text, text)
		return d, nil
	}
	if text == "" {
		return d, nil
	}
	if o := d.Output.HookSpecificOutput; o != nil {
		spec := *o
		spec.AdditionalContext = joinParagraphs(spec.AdditionalContext, text)
		d.Output.HookSpecificOutput = &spec
	} else {
		d.Output.HookSpecificOutput = hook.Context(hook.SessionStart, text).HookSpecificOutput
	}
	return d, nil
}

// currentItem is the queue's next task file, for the snapshot of an agent
// that noted no item in progress ("" for the other workflows, whose record
// names theirs).
func (a *sessionActor) currentItem() string {
	if a.rec.Workflow != session.Queue || !a.rec.Active() {
		return ""
	}
	list, err := tasks.Scan(a.sessionDir())
	if err != nil || len(list.Pending) == 0 {
		return ""
	}
	return list.Pending[0]
}

// writeSnapshotFile writes the context snapshot, replacing the last one.
func (a *sessionActor) writeSnapshotFile(e writeSnapshot) {
	data, err := json.MarshalIndent(e.snapshot, "", "  ")
	if err != nil {
		a.log.Warn("encoding the context snapshot", zap.Error(err))
		return
	}
	if _, err := tasks.EnsureDroverDir(a.env.Root); err != nil {
		a.log.Warn("creating the drover folder", zap.Error(err))
		return
	}
	if err := os.MkdirAll(a.sessionDir(), 0o755); err != nil {
		a.log.Warn("creating session folder", zap.Error(err))
		return
	}
	if err := writeFileAtomic(a.snapshotPath(), append(data, '\n')); err != nil {
		a.log.Warn("writing the context snapshot", zap.Error(err))
	}
}

// sessionEffect performs one of the effects every workflow shares.
func (a *sessionActor) sessionEffect(_ actor.Context, e effect) bool {
	switch e := e.(type) {
	case writeSnapshot:
		a.writeSnapshotFile(e)
	case appendMetrics:
		a.appendMetricsLine(e)
	default:
		return false
	}
	return true
}

func joinParagraphs(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
