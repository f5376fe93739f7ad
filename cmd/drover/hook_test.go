package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/hookclient"
)

// A panic in the hook command exits 0 with a fail-open systemMessage: an
// uncaught panic exits 2, and exit 2 blocks Stop in Claude Code.
func TestHookCommandPanicFailsOpen(t *testing.T) {
	for _, event := range []string{"stop", "session-start"} {
		t.Run(event, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{
				stdin: strings.NewReader(`{"session_id":"s1"}`), stdout: &stdout, stderr: &stderr,
				hookRun: func(context.Context, hookclient.Options) hookclient.Result { panic("injected") },
			}
			if code := a.execute(context.Background(), []string{"hook", event}); code != 0 {
				t.Fatalf("exit %d, want 0; stderr %s", code, stderr.String())
			}
			var out hook.Output
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("stdout %q is not JSON: %v", stdout.String(), err)
			}
			if out.IsBlock() || !strings.Contains(out.SystemMessage, "panic: injected") || !strings.Contains(out.SystemMessage, event) {
				t.Errorf("want a fail-open message naming the panic and the event, got %+v", out)
			}
			if !strings.Contains(stderr.String(), "panic: injected") {
				t.Errorf("stderr %q does not report the panic", stderr.String())
			}
		})
	}
}
