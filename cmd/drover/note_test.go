package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

// TestNoteSurvivesCompaction is seed 003's context snapshot as the agent
// meets it: it records its notes with drover note (flags, or the slash
// command's --args -, in the session CLAUDE_CODE_SESSION_ID names), the
// PreCompact hook writes context-snapshot.json and prints them into the
// compaction instructions, and the SessionStart hook after the compaction
// puts them back into the model's context.
func TestNoteSurvivesCompaction(t *testing.T) {
	p := newProj(t)
	const id = "note-a"
	out := p.must("", "note", "--session", id, "--question", "Should tabs count as one column?")
	if !strings.Contains(out, "Pending question to the user: Should tabs count as one column?") {
		t.Errorf("note --question printed:\n%s", out)
	}
	env := p.env
	p.env = append(append([]string(nil), env...), "CLAUDE_CODE_SESSION_ID="+id)
	p.must(`--decision "keep the v1 wire format" --doing 'item 3: the lexer'`, "note", "--args", "-")
	p.env = env
	var n api.Notes
	if err := json.Unmarshal([]byte(p.must("", "note", "--session", id, "--json")), &n); err != nil {
		t.Fatal(err)
	}
	if n.Question != "Should tabs count as one column?" || n.Doing != "item 3: the lexer" || len(n.Decisions) != 1 || n.Decisions[0].Text != "keep the v1 wire format" {
		t.Fatalf("notes: %+v", n)
	}

	in, _ := json.Marshal(map[string]any{"session_id": id, "hook_event_name": "PreCompact", "trigger": "auto", "cwd": p.root})
	pre := p.drover(string(in), "hook", string(hook.PreCompact))
	if pre.code != 0 || !strings.Contains(pre.stdout, "Should tabs count as one column?") || !strings.Contains(pre.stdout, "keep the v1 wire format") {
		t.Errorf("pre-compact: exit %d\n%s%s", pre.code, pre.stdout, pre.stderr)
	}
	snapPath := filepath.Join(p.root, ".drover", "sessions", id, "context-snapshot.json")
	if n.Snapshot != snapPath {
		t.Errorf("note names the snapshot %q, want %q", n.Snapshot, snapPath)
	}
	var snap map[string]any
	if !eventually.Holds(10*time.Second, func() bool {
		data, err := os.ReadFile(snapPath)
		return err == nil && json.Unmarshal(data, &snap) == nil
	}) {
		t.Fatal("no context snapshot after PreCompact")
	}
	if snap["pendingQuestion"] != "Should tabs count as one column?" || snap["inProgressItem"] != "item 3: the lexer" || snap["activeSkill"] != nil || snap["version"] != 1.0 {
		t.Errorf("snapshot: %v", snap)
	}
	if rc, _ := snap["recentContext"].([]any); len(rc) != 1 {
		t.Errorf("recentContext: %v", snap["recentContext"])
	}

	h := p.hook(hook.SessionStart, map[string]any{"session_id": id, "hook_event_name": "SessionStart", "source": "compact"})
	if h.HookSpecificOutput == nil || !strings.Contains(h.HookSpecificOutput.AdditionalContext, "Should tabs count as one column?") ||
		!strings.Contains(h.HookSpecificOutput.AdditionalContext, "item 3: the lexer") {
		t.Errorf("session-start after the compaction: %+v", h)
	}

	// Status lists a session drover knows only by its notes, with no
	// workflow.
	if s := p.session(id); s.Workflow != "" || s.State != "off" {
		t.Errorf("status of a session with notes alone: %+v", s)
	}
	if out := p.must("", "status"); !tableRow(out, id+" - off") {
		t.Errorf("drover status does not show - for the workflow of a session with notes alone:\n%s", out)
	}
	if out := p.must("", "note", "--session", id, "--clear"); !strings.Contains(out, "No notes in session "+id) {
		t.Errorf("note --clear printed:\n%s", out)
	}
	for _, args := range [][]string{
		{"note", "--session", id, "--decision", ""},
		{"note", "--session", id, "stray words"},
	} {
		if r := p.drover("", args...); r.code == 0 {
			t.Errorf("drover %v succeeded:\n%s", args, r.stdout)
		}
	}
	if r := p.drover("stray --question x", "note", "--session", id, "--args", "-"); r.code == 0 || !strings.Contains(r.stderr, "stray") {
		t.Errorf("note --args with stray words: exit %d %s", r.code, r.stderr)
	}
	if r := p.drover("", "note"); r.code == 0 || !strings.Contains(r.stderr, "CLAUDE_CODE_SESSION_ID") {
		t.Errorf("note outside a session: exit %d %s", r.code, r.stderr)
	}
}

// TestLoopWritesItsMetricsHistory is seed 004's e2e case 9 at the hook:
// after a loop ran, .drover/sessions/<id>/metrics.jsonl holds one JSON
// object per iteration, a supervisor's restart in between included.
func TestLoopWritesItsMetricsHistory(t *testing.T) {
	p := newProj(t)
	const id = "metrics-a"
	p.must("", "loop", "start", "--session", id, "--max-iterations", "3", "Build a simple calculator with add and subtract functions")
	for i := range 3 {
		if i == 2 {
			// A new supervisor resumes the session from the store: the
			// line of iteration 2 is not written again.
			p.stopSupervisor()
		}
		if h := p.hook(hook.Stop, loopStop(id, "working")); h.IsBlock() != (i < 2) {
			t.Fatalf("stop %d: %+v", i+1, h)
		}
	}
	path := filepath.Join(p.root, ".drover", "sessions", id, "metrics.jsonl")
	var lines []string
	if !eventually.Holds(10*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		return len(lines) == 3
	}) {
		t.Fatalf("metrics.jsonl has %d lines, want 3: %q", len(lines), lines)
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		if m["iteration"] != float64(i+1) || m["status"] == nil || m["time"] == nil {
			t.Errorf("line %d: %v", i+1, m)
		}
	}
}
