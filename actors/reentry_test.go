package actors

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/store"
)

// A CLI whose stop_hook_active cannot be trusted (Gemini CLI) gets its
// continuations counted by the session: each blocked Stop counts one, the
// continuation arriving again as a prompt (Gemini's BeforeAgent) keeps the
// count, and a prompt of the user's ends it. A CLI whose flag is trusted
// costs no count.
func TestUntrustedReentryIsCounted(t *testing.T) {
	f := newFixture(t, SessionsOptions{RestartMax: 3, RestartWindow: time.Minute})
	for _, id := range []string{"gem", "cc"} {
		f.add(id, "one")
		f.add(id, "two")
		if r := f.command(id, "start"); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	stored := func(id string) int {
		t.Helper()
		rec, st, err := f.store.Load(context.Background(), id)
		if err != nil || st != store.Found {
			t.Fatalf("loading %s: %v %v", id, st, err)
		}
		return rec.Continuations
	}
	hookOf := func(id, req string, e hook.Event, prompt string, untrusted bool) *HookResult {
		t.Helper()
		in := hook.Input{SessionID: id, Prompt: prompt, ReentryUntrusted: untrusted}
		r := f.ask(id, &HandleHook{RequestID: req, Event: e, Input: in}).(*HookResult)
		if r.Err != nil {
			t.Fatalf("%s %s: %v", id, e, r.Err)
		}
		return r
	}

	first := hookOf("gem", "1", hook.Stop, "", true)
	if !first.Output.IsBlock() || stored("gem") != 1 {
		t.Fatalf("first Stop: block %v, count %d; want a block counted once", first.Output.IsBlock(), stored("gem"))
	}
	hookOf("gem", "2", hook.UserPromptSubmit, first.Output.Reason+"\n", true)
	if n := stored("gem"); n != 1 {
		t.Errorf("the continuation as a prompt changed the count to %d, want 1", n)
	}
	if second := hookOf("gem", "3", hook.Stop, "", true); !second.Output.IsBlock() || stored("gem") != 2 {
		t.Errorf("second Stop: block %v, count %d; want 2", second.Output.IsBlock(), stored("gem"))
	}
	hookOf("gem", "4", hook.UserPromptSubmit, "what is left?", true)
	if n := stored("gem"); n != 0 {
		t.Errorf("a prompt of the user's left the count at %d, want 0", n)
	}

	if r := hookOf("cc", "1", hook.Stop, "", false); !r.Output.IsBlock() {
		t.Fatalf("claude Stop not blocked: %+v", r.Output)
	}
	if n := stored("cc"); n != 0 {
		t.Errorf("a trusted flag's session counted %d continuations, want none", n)
	}
}

// The plan's folder validation blocks once, not twice in a row, by
// stop_hook_active; for a CLI whose flag stays false (Gemini after a tool
// turn) the session's own count says the second Stop is a continuation.
func TestUntrustedReentryKeepsValidationFromBlockingTwice(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-gem"
	f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
	f.runCleanReviews(sid)
	f.write("demo", "Bad Name.md", "x\n")
	stop := func(req string) *HookResult {
		t.Helper()
		in := hook.Input{SessionID: sid, StopHookActive: false, ReentryUntrusted: true}
		r := f.ask(sid, &HandleHook{RequestID: req, Event: hook.Stop, Input: in}).(*HookResult)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}
	first := stop("1")
	if !first.Output.IsBlock() || !strings.Contains(first.Output.Reason, "Bad Name.md") {
		t.Fatalf("first Stop: %+v; want a block naming the bad file", first.Output)
	}
	second := stop("2")
	if second.Output.IsBlock() || !strings.Contains(second.Output.SystemMessage, "Bad Name.md") {
		t.Errorf("second Stop in a row: %+v; want the violations as a warning, not a second block", second.Output)
	}
}
