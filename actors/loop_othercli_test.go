package actors

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

// A loop whose agent is Codex or Gemini counts the spend its transcript
// reports, priced, toward the loop's budget.
func TestLoopCountsOtherCLITranscriptCost(t *testing.T) {
	ts := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		format, transcript string
		want               float64
	}{
		{hook.TranscriptCodex, `{"timestamp":"` + ts(-time.Hour) + `","type":"turn_context","payload":{"model":"gpt-5-codex"}}
{"timestamp":"` + ts(-time.Hour) + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":0}}}}
{"timestamp":"` + ts(time.Second) + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1200000,"cached_input_tokens":100000,"output_tokens":10000}}}}
`, (100000*1.25 + 100000*0.125 + 10000*10) / 1e6},
		{hook.TranscriptGemini, `{"sessionId":"s","startTime":"` + ts(0) + `","kind":"main"}
{"id":"g1","timestamp":"` + ts(time.Second) + `","type":"gemini","content":"ok","tokens":{"input":200000,"output":1000,"cached":100000,"thoughts":1000},"model":"gemini-2.5-pro"}
`, (100000*1.25 + 100000*0.125 + 2000*10) / 1e6},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f := newCrashFixture(t, func(*config.Config, string) {})
			f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
			path := filepath.Join(t.TempDir(), "transcript.jsonl")
			if err := os.WriteFile(path, []byte(tc.transcript), 0o644); err != nil {
				t.Fatal(err)
			}
			msg := "working"
			r := f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, TranscriptFormat: tc.format, LastAssistantMessage: &msg}}).(*HookResult)
			if r.Err != nil || !r.Output.IsBlock() {
				t.Fatalf("stop: %+v", r)
			}
			if st := f.loop("s1", "status", nil); math.Abs(st.CostUSD-tc.want) > 1e-9 {
				t.Errorf("loop cost $%v, want $%v (the usage before the loop not counted)", st.CostUSD, tc.want)
			}
		})
	}
}

// A loop reads a Codex rollout on from where the last Stop stopped, as it
// does a Claude Code transcript: the cursor is kept with the record, and
// a change to the lines already read (same size, same last line) is not
// read again; what the CLI appended is.
func TestLoopReadsCodexRolloutOnFromTheLastStop(t *testing.T) {
	ts := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }
	before := `{"timestamp":"` + ts(-time.Hour) + `","type":"turn_context","payload":{"model":"gpt-5-codex"}}
{"timestamp":"` + ts(-time.Hour) + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":0}}}}
`
	iter1 := `{"timestamp":"` + ts(time.Second) + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1200000,"cached_input_tokens":100000,"output_tokens":10000}}}}
`
	iter2 := `{"timestamp":"` + ts(2*time.Second) + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1300000,"cached_input_tokens":100000,"output_tokens":20000}}}}
`
	f := newCrashFixture(t, func(*config.Config, string) {})
	f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(path, []byte(before+iter1), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := "working"
	stop := func(id string) {
		t.Helper()
		r := f.ask("s1", &HandleHook{RequestID: id, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, TranscriptFormat: hook.TranscriptCodex, LastAssistantMessage: &msg}}).(*HookResult)
		if r.Err != nil || !r.Output.IsBlock() {
			t.Fatalf("stop %s: %+v", id, r)
		}
	}
	stop("a")
	// 200,000 input (100,000 of them cached) and 10,000 output tokens.
	want := (100000*1.25 + 100000*0.125 + 10000*10) / 1e6
	if st := f.loop("s1", "status", nil); math.Abs(st.CostUSD-want) > 1e-9 {
		t.Fatalf("after stop 1: loop cost $%v, want $%v", st.CostUSD, want)
	}
	if lt := f.record().LoopTranscript; lt == nil || lt.Codex == nil || lt.Codex.Offset != int64(len(before+iter1)) {
		t.Fatalf("after stop 1: the record keeps the reading %+v; want a Codex cursor at %d", lt, len(before+iter1))
	}
	// Read again from the start, the edited total would make the first
	// iteration's growth 100,000 tokens (all cached) rather than 200,000.
	edited := strings.Replace(before, "1000000", "1100000", 1)
	if err := os.WriteFile(path, []byte(edited+iter1+iter2), 0o644); err != nil {
		t.Fatal(err)
	}
	stop("b")
	// Iteration 2: 100,000 input and 10,000 output tokens more.
	want += (100000*1.25 + 10000*10) / 1e6
	if st := f.loop("s1", "status", nil); math.Abs(st.CostUSD-want) > 1e-9 {
		t.Errorf("after stop 2: loop cost $%v, want $%v (read on from stop 1)", st.CostUSD, want)
	}
}

// Gemini CLI's AfterAgent gives every answer since the user's prompt,
// continuations included (hook.Input.CumulativeMessage): a completion
// claimed at one Stop is still in the message of the next. The loop reads
// only what is new since the last blocked Stop, so the agent's later
// answers are not taken for the same claim again.
func TestLoopReadsOnlyTheNewPartOfACumulativeMessage(t *testing.T) {
	f := newCrashFixture(t, func(c *config.Config, _ string) { c.Loop.CheckCommand = "exit 1" })
	f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, RequireChecks: true, CompletionPromise: "DONE"})
	stop := func(id, msg string) hook.Output {
		t.Helper()
		r := f.ask("s1", &HandleHook{RequestID: id, Event: hook.Stop, Input: hook.Input{SessionID: "s1", LastAssistantMessage: &msg,
			TranscriptFormat: hook.TranscriptGemini, ReentryUntrusted: true, Uncapped: true, CumulativeMessage: true}}).(*HookResult)
		if r.Err != nil || !r.Output.IsBlock() {
			t.Fatalf("stop %s: %+v", id, r)
		}
		return r.Output
	}
	claim := "The parser is done.\n<promise>DONE</promise>"
	if out := stop("a", claim); !strings.Contains(out.Reason, "Completion claimed") {
		t.Fatalf("the claim got %q; want the checks started", out.Reason)
	}
	if !eventually.Holds(testTimeout, func() bool { c := f.record().Loop.Checks; return c != nil && !c.Running }) {
		t.Fatalf("the checks never ended: %+v", f.record().Loop.Checks)
	}
	later := claim + "\nStill fixing the last parser case."
	if out := stop("b", later); strings.Contains(out.Reason, "Completion claimed") || strings.Contains(out.Reason, "signalled completion") || !strings.Contains(out.Reason, "iteration 2 of 10") {
		t.Errorf("an answer after the claim got %q; want iteration 2, no claim", out.Reason)
	}
	if out := stop("c", later+"\nFixed it, no promise yet."); strings.Contains(out.Reason, "Completion claimed") || !strings.Contains(out.Reason, "iteration 3 of 10") {
		t.Errorf("the next answer got %q; want iteration 3, no claim", out.Reason)
	}
}

// A Codex Stop may give last_assistant_message null: the session reads
// the last assistant message from the rollout the payload names, so a
// completion promise said there still ends the loop. A message the
// payload gives wins over the rollout's.
func TestCodexNullLastMessageIsReadFromTheRollout(t *testing.T) {
	rollout := func(last string) string {
		return `{"timestamp":"2026-11-25T17:06:51.120Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}
{"timestamp":"2026-11-25T17:06:51.130Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"build the parser <promise>DONE</promise>"}]}}
{"timestamp":"2026-11-25T17:06:52.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Starting on the parser."}]}}
{"timestamp":"2026-11-25T17:06:53.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + last + `"}]}}
`
	}
	for _, tc := range []struct {
		name, message, last string
		ended               bool
	}{
		{"null, the rollout claims", "null", `The parser is done.\n<promise>DONE</promise>`, true},
		{"null, the rollout does not claim", "null", "Still on the parser.", false},
		{"given, the rollout claims", `"Still on the parser."`, `<promise>DONE</promise>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCrashFixture(t, func(*config.Config, string) {})
			f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, CompletionPromise: "DONE"})
			path := filepath.Join(t.TempDir(), "rollout.jsonl")
			if err := os.WriteFile(path, []byte(rollout(tc.last)), 0o644); err != nil {
				t.Fatal(err)
			}
			payload, _ := json.Marshal(map[string]any{"session_id": "s1", "turn_id": "t1", "transcript_path": path,
				"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": json.RawMessage(tc.message)})
			in, err := hook.Normalize(hook.Codex, hook.Stop, payload)
			if err != nil {
				t.Fatal(err)
			}
			r := f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: in}).(*HookResult)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			st := f.loop("s1", "status", nil)
			if r.Output.IsBlock() == tc.ended || st.Active == tc.ended {
				t.Errorf("blocked %v, loop active %v (reason %q); want the loop ended %v", r.Output.IsBlock(), st.Active, r.Output.Reason, tc.ended)
			}
		})
	}
}
