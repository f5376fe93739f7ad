package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

// drover status shows a session's health: working while its queue runs
// and it sends hooks, stale once it has been silent for longer than
// status.stale_after (here lowered, through a reloaded project config,
// from 1h to 1ms), ended after its SessionEnd, which leaves the queue as
// it was; the table and --json say the same words.
func TestStatusHealth(t *testing.T) {
	p := newProj(t)
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(p.root, ".drover", "config.yaml")
	writeCfg := func(staleAfter string) {
		t.Helper()
		body := "queue:\n  git_commit_check: false\nstatus:\n  stale_after: " + staleAfter + "\n"
		if err := os.WriteFile(cfgFile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("1h")
	id := "health"
	p.must("", "do", "--session", id, "x")
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() {
		t.Fatalf("stop of a queue with a pending task: %+v", h)
	}
	check := func(want string) {
		t.Helper()
		if s := p.session(id); s.Health != want || s.State != "on" || s.LastHookAt.IsZero() {
			t.Errorf("status --json: health %q state %q last hook %v, want %q, on, set", s.Health, s.State, s.LastHookAt, want)
		}
		if out := p.must("", "status"); !strings.Contains(out, "HEALTH") || !tableRow(out, id+" queue on "+want+" 1") {
			t.Errorf("status table does not show %s %s:\n%s", id, want, out)
		}
	}
	check("working")

	writeCfg("1ms")
	eventually.True(t, 30*time.Second, "the session to show stale once the supervisor reloads stale_after 1ms", func() bool {
		return p.session(id).Health == "stale"
	})
	check("stale")

	p.hook(hook.SessionEnd, map[string]any{"session_id": id, "hook_event_name": "SessionEnd", "reason": "other"})
	check("ended")
}
