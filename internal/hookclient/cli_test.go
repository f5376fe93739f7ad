package hookclient

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/project"
)

// The hook forwards each CLI's Stop as drover's event (with the facts
// about the CLI) and prints the supervisor's decision as that CLI reads
// it: Codex gets only {"decision","reason"}, the warning that came with
// the block is dropped for it.
func TestRunNormalizesAndRendersPerCLI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cli     hook.CLI
		env     []string
		payload string
		want    hook.Input // the facts the supervisor must get
		stdout  string
	}{
		{"codex", hook.Codex, nil,
			`{"session_id":"s1","turn_id":"t","transcript_path":null,"hook_event_name":"Stop","model":"m","stop_hook_active":false,"last_assistant_message":"ok"}`,
			hook.Input{TranscriptFormat: hook.TranscriptCodex, Uncapped: true},
			`{"decision":"block","reason":"next"}` + "\n"},
		{"gemini detected", "", nil,
			`{"session_id":"s1","hook_event_name":"AfterAgent","timestamp":"x","prompt":"p","prompt_response":"a","stop_hook_active":false}`,
			hook.Input{TranscriptFormat: hook.TranscriptGemini, Uncapped: true, ReentryUntrusted: true},
			`{"decision":"block","reason":"next","systemMessage":"careful"}` + "\n"},
		{"claude with the cap off", hook.Claude, []string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0"},
			`{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":true}`,
			hook.Input{TranscriptFormat: hook.TranscriptClaude, Uncapped: true},
			`{"decision":"block","reason":"next","systemMessage":"careful"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, o := setup(t, tc.env...)
			p, err := project.PathsFor(root, o.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan hook.Input, 1)
			serveStops(t, root, p, func(w http.ResponseWriter, r *http.Request) {
				var req api.HookRequest
				_ = json.NewDecoder(r.Body).Decode(&req)
				got <- req.Input
				_ = json.NewEncoder(w).Encode(api.HookResponse{Output: hook.Output{Decision: "block", Reason: "next", SystemMessage: "careful"}})
			})
			o.CLI = tc.cli
			o.Stdin = strings.NewReader(tc.payload)
			o.Spawn = func(string, project.Paths) error { t.Error("spawned"); return nil }
			r := Run(context.Background(), o)
			if r.Stdout != tc.stdout || r.Problem != "" {
				t.Errorf("stdout %q (problem %q), want %q", r.Stdout, r.Problem, tc.stdout)
			}
			in := <-got
			if in.TranscriptFormat != tc.want.TranscriptFormat || in.Uncapped != tc.want.Uncapped || in.ReentryUntrusted != tc.want.ReentryUntrusted {
				t.Errorf("the supervisor got facts %q %v %v, want %+v", in.TranscriptFormat, in.Uncapped, in.ReentryUntrusted, tc.want)
			}
		})
	}
}
