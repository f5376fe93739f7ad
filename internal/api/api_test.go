package api

import (
	"testing"

	"github.com/drover-dev/drover/internal/hook"
)

func TestHookResponseKind(t *testing.T) {
	tests := []struct {
		name string
		resp HookResponse
		want string
	}{
		{"silent allow", HookResponse{}, "allow"},
		{"allow with a warning", HookResponse{Output: hook.Output{SystemMessage: "drover: slow"}}, "allow"},
		{"block", HookResponse{Output: hook.Block("next task")}, "block"},
		{"context", HookResponse{Output: hook.Context(hook.UserPromptSubmit, "[drover] State: on")}, "context"},
		// PreCompact answers with plain text: the agent was told something.
		{"pre-compact text", HookResponse{Text: "[drover] Active session: s1"}, "context"},
		{"replayed block", HookResponse{Output: hook.Block("next task"), Replayed: true}, "block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.resp.Kind(); got != tt.want {
				t.Errorf("Kind() = %q, want %q", got, tt.want)
			}
		})
	}
}
