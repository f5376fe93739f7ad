package actors

import (
	"context"
	"fmt"
	"strconv"
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
// and no block cap costs no count.
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
		in := hook.Input{SessionID: id, Prompt: prompt, ReentryUntrusted: untrusted, Uncapped: true}
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
		t.Errorf("an uncapped trusted flag's session counted %d continuations, want none", n)
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

// A CLI with a block cap (hook.Input.Uncapped false: Claude Code with its
// cap on) may end the turn at the Stop after hook.BlockCap blocks in a
// row while drover counts that block: the user hears it once, at that
// Stop, and a Stop whose stop_hook_active is false (the first after a
// prompt of the user's) starts the count over. An uncapped CLI
// (Codex, Gemini, Claude Code with the cap off) never hears it, whatever
// the facts' source: the actor reads Uncapped, not the CLI.
func TestBlockCapNoticeOnlyForACappedCLI(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       hook.Input
		noticeAt int // 0: never
	}{
		{"capped", hook.Input{TranscriptFormat: hook.TranscriptClaude}, hook.BlockCap + 1},
		{"capped with untrusted re-entry", hook.Input{ReentryUntrusted: true}, hook.BlockCap + 1},
		{"uncapped", hook.Input{TranscriptFormat: hook.TranscriptCodex, Uncapped: true}, 0},
		{"uncapped with untrusted re-entry", hook.Input{TranscriptFormat: hook.TranscriptGemini, Uncapped: true, ReentryUntrusted: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, SessionsOptions{RestartMax: 3, RestartWindow: time.Minute})
			for i := range 2*hook.BlockCap + 4 {
				f.add("s", fmt.Sprintf("task-%02d", i))
			}
			if r := f.command("s", "start"); r.Err != nil {
				t.Fatal(r.Err)
			}
			req := 0
			ask := func(e hook.Event, prompt string, active bool) hook.Output {
				t.Helper()
				req++
				in := tc.in
				in.SessionID, in.Prompt, in.StopHookActive = "s", prompt, active
				r := f.ask("s", &HandleHook{RequestID: strconv.Itoa(req), Event: e, Input: in}).(*HookResult)
				if r.Err != nil {
					t.Fatalf("%s %d: %v", e, req, r.Err)
				}
				return r.Output
			}
			check := func(round string) {
				t.Helper()
				for i := 1; i <= hook.BlockCap+2; i++ {
					// As Claude Code and Codex say it: false at the first
					// Stop of a run of blocks only.
					out := ask(hook.Stop, "", i > 1)
					if !out.IsBlock() {
						t.Fatalf("%s: Stop %d not blocked: %+v", round, i, out)
					}
					said := strings.Contains(out.SystemMessage, "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0")
					if want := i == tc.noticeAt; said != want {
						t.Errorf("%s: Stop %d: cap notice %v, want %v (systemMessage %q)", round, i, said, want, out.SystemMessage)
					}
				}
			}
			check("first run of blocks")
			ask(hook.UserPromptSubmit, "go on", false)
			check("after the user's prompt")
		})
	}
}
