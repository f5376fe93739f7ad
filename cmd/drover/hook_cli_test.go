package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// payload returns the real payload shape cli sends for the hook in file
// (internal/hook/testdata/payloads, taken from the CLIs' references), with
// the session id and cwd of this test.
func payload(t *testing.T, file, id, cwd string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "hook", "testdata", "payloads", file+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["session_id"], m["cwd"] = id, cwd
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each CLI's Stop payload, piped into the built binary as the hook that
// drover init --cli installs runs it, gets a block in that CLI's format
// with exit 0: for Codex exactly {"decision","reason"}, for Gemini the
// same keys read as AfterAgent's decision. The session is found inside
// the CLI without --session (CODEX_THREAD_ID, GEMINI_SESSION_ID), and a
// payload without --cli is told apart by its shape.
func TestHookPerCLIThroughTheBinary(t *testing.T) {
	for _, tc := range []struct {
		cli, stop, prompt, envVar string
		// promptContext is the hookEventName the CLI reads context under.
		promptContext string
		args          []string
	}{
		{"codex", "codex_stop", "codex_user-prompt-submit", "CODEX_THREAD_ID", "UserPromptSubmit", []string{"hook", "stop", "--cli", "codex"}},
		{"gemini", "gemini_stop", "gemini_user-prompt-submit", "GEMINI_SESSION_ID", "BeforeAgent", []string{"hook", "stop", "--cli=gemini"}},
		{"gemini-detected", "gemini_stop_reentry", "gemini_user-prompt-submit", "GEMINI_SESSION_ID", "BeforeAgent", []string{"hook", "stop"}},
		{"claude", "claude_stop", "claude_user-prompt-submit", "CLAUDE_CODE_SESSION_ID", "UserPromptSubmit", []string{"hook", "stop", "--cli", "claude"}},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			p := newProj(t)
			id := "01a213ac-a5ed-7660-9e60-d944744e8ec0"
			inside := *p
			inside.env = append(append([]string(nil), p.env...), tc.envVar+"="+id)
			inside.must("", "add", "first task")
			inside.must("", "add", "second task")
			inside.must("", "start")

			r := p.drover(payload(t, tc.stop, id, p.root), tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var got struct{ Decision, Reason string }
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout %q: %v", r.stdout, err)
			}
			want, _ := json.Marshal(map[string]string{"decision": "block", "reason": got.Reason})
			if got.Decision != "block" || !strings.Contains(got.Reason, "Next task: "+p.root) || r.stdout != string(want)+"\n" {
				t.Errorf("stdout %q, want exactly {\"decision\":\"block\",\"reason\":R} naming the next task", r.stdout)
			}

			r = p.drover(payload(t, tc.prompt, id, p.root), "hook", "user-prompt-submit", "--cli", strings.TrimSuffix(tc.cli, "-detected"))
			var ctx struct {
				HookSpecificOutput struct{ HookEventName, AdditionalContext string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &ctx); r.code != 0 || err != nil || ctx.HookSpecificOutput.HookEventName != tc.promptContext || ctx.HookSpecificOutput.AdditionalContext == "" {
				t.Errorf("prompt hook: exit %d, stdout %q (%v); want context under %s", r.code, r.stdout, err, tc.promptContext)
			}

			inside.must("", "stop")
			r = p.drover(payload(t, tc.stop, id, p.root), tc.args...)
			if r.code != 0 || r.stdout != "" {
				t.Errorf("after drover stop: exit %d, stdout %q; want exit 0 and nothing", r.code, r.stdout)
			}
		})
	}
}

// A wrong --cli never blocks: the CLI is told from the payload instead.
func TestHookUnknownCLIFallsBackToThePayload(t *testing.T) {
	p := newProj(t)
	r := p.drover(payload(t, "codex_stop", "s1", p.root), "hook", "stop", "--cli", "opencode")
	if r.code != 0 || !strings.Contains(r.stderr, `unknown agent CLI "opencode"`) || strings.Contains(r.stdout, "block") {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestFastHookForms(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		event, cli string
		ok         bool
	}{
		{[]string{"hook", "stop"}, "stop", "", true},
		{[]string{"hook", "stop", "--cli", "codex"}, "stop", "codex", true},
		{[]string{"hook", "stop", "--cli=gemini"}, "stop", "gemini", true},
		{[]string{"hook", "--help"}, "", "", false},
		{[]string{"hook", "stop", "--cli"}, "", "", false},
		{[]string{"hook", "stop", "--cli", "--project"}, "", "", false},
		{[]string{"hook", "stop", "--project", "x"}, "", "", false},
		{[]string{"status"}, "", "", false},
	} {
		event, cli, ok := fastHook(tc.args)
		if event != tc.event || cli != tc.cli || ok != tc.ok {
			t.Errorf("fastHook(%q) = %q %q %v, want %q %q %v", tc.args, event, cli, ok, tc.event, tc.cli, tc.ok)
		}
	}
}
