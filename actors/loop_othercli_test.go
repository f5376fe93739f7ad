package actors

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
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
