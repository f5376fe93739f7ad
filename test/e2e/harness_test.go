// Package e2e drives the real, pinned Claude Code CLI against the scripted
// model server of test/fakemodel. The tests need the CLI installed in
// tools/claude (`make claude`); without it they fail, except under -short,
// which skips them. The TestAgent* tests drive the pinned Codex and Gemini
// CLIs the same way (test/othercli; `make codex gemini`).
package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// claudeBin returns the pinned CLI, skips under -short, and fails with the
// install instruction when the CLI is missing: an end-to-end suite that
// silently skips on CI proves nothing.
func claudeBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping tests that run the real Claude Code CLI")
	}
	bin, err := claudecli.Find()
	if err != nil {
		t.Fatalf("%v\n(run `go test -short` to skip the end-to-end tests)", err)
	}
	return bin
}

// startModel serves sc for the test's lifetime and fails the test at the
// end if any model request matched no rule.
func startModel(t *testing.T, sc *fakemodel.Scenario) *fakemodel.Server {
	t.Helper()
	srv, err := fakemodel.Start(t.Context(), sc, fakemodel.WithLogf(t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		for _, r := range srv.Unmatched() {
			t.Errorf("fake model: unanswered request: %s", r.Error)
		}
	})
	return srv
}

// gitProject makes a scratch git project for one test.
func gitProject(t *testing.T) string {
	t.Helper()
	// Resolved, because the CLI and its hooks report the real path (on macOS
	// the temporary directory is behind a symlink).
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "project")
	if err := claudecli.GitProject(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPinnedVersion checks that the installed CLI is the one
// tools/claude/package.json pins: the facts these tests rely on were
// observed on that version.
func TestPinnedVersion(t *testing.T) {
	bin := claudeBin(t)
	root, err := claudecli.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "tools", "claude", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatalf("tools/claude/package.json: %v", err)
	}
	want := pkg.Dependencies["@anthropic-ai/claude-code"]
	got, err := claudecli.Version(t.Context(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s is Claude Code %s; tools/claude pins %s: run `make claude`", bin, got, want)
	}
}

// TestHarness proves the harness with the probe plugin: a plugin slash
// command whose shell line runs, real tool calls (Write, then Bash
// `git commit`) in a scratch repository, and a Stop hook whose block
// reason reaches the model.
func TestHarness(t *testing.T) {
	bin := claudeBin(t)
	sc, err := fakemodel.LoadScenario(filepath.Join("testdata", "harness.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, sc)
	proj := gitProject(t)
	plugin, err := filepath.Abs(filepath.Join("testdata", "probe-plugin"))
	if err != nil {
		t.Fatal(err)
	}

	res, err := claudecli.Run{
		Bin:       bin,
		Dir:       proj,
		Home:      t.TempDir(),
		BaseURL:   srv.URL(),
		PluginDir: plugin,
		Args:      []string{"--dangerously-skip-permissions", "/probe:hello world 42"},
	}.Exec(t.Context())
	t.Logf("claude ran %s, exit %d\nstdout:\n%s\nstderr:\n%s", res.Duration, res.ExitCode, res.Stdout, res.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("claude exited %d", res.ExitCode)
	}
	if !strings.Contains(res.Stdout, "The magic word.") {
		t.Errorf("stdout lacks the final answer %q", "The magic word.")
	}

	msgs := srv.Messages()
	if len(msgs) == 0 {
		t.Fatal("the model server saw no Messages API request")
	}
	for i, n := range srv.Used() {
		if n != 1 {
			t.Errorf("rule %d (%s) answered %d times, want 1", i, sc.Rules[i].Name, n)
		}
	}

	// The slash command's shell line ran with $ARGUMENTS and the session id,
	// and its output replaced the line in the prompt.
	first := msgs[0]
	sid := first.SessionID
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(sid) {
		t.Errorf("X-Claude-Code-Session-Id = %q, want a UUID", sid)
	}
	wantLine := "probe-args=[world 42] probe-session=[" + sid + "] probe-cwd=[" + proj + "]"
	if !strings.Contains(first.LastUserText, wantLine) {
		t.Errorf("first prompt lacks the expanded command line %q:\n%s", wantLine, first.LastUserText)
	}
	if strings.Contains(first.LastUserText, "!`echo") {
		t.Errorf("first prompt still holds the unexpanded shell line:\n%s", first.LastUserText)
	}

	// The Write and the Bash `git commit` really happened.
	subject, err := claudecli.Git(t.Context(), proj, "log", "-1", "--format=%s")
	if err != nil {
		t.Fatal(err)
	}
	if subject != "probe: add probe.txt" {
		t.Errorf("last commit is %q, want %q", subject, "probe: add probe.txt")
	}
	content, err := claudecli.Git(t.Context(), proj, "show", "HEAD:probe.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := "args=world 42 session=" + sid; content != want {
		t.Errorf("committed probe.txt = %q, want %q", content, want)
	}

	// The Stop hook's block reason came back to the model.
	var sawReason bool
	for _, r := range msgs {
		if r.RuleName == "stop-block" {
			sawReason = true
			if !strings.Contains(r.LastUserText, "Stop hook feedback") {
				t.Errorf("block reason arrived without the CLI's %q prefix: %q", "Stop hook feedback", r.LastUserText)
			}
			if r.LastIsToolResult {
				t.Error("block reason arrived as a tool_result")
			}
		}
	}
	if !sawReason {
		t.Error("no request carried the Stop hook's block reason")
	}

	// The hook saw two Stops: the blocked one, then the allowed one.
	stops := readStopInputs(t, filepath.Join(proj, ".git", "probe-stop-inputs.jsonl"))
	if len(stops) != 2 {
		t.Fatalf("Stop hook ran %d times, want 2", len(stops))
	}
	for i, want := range []struct {
		active bool
		last   string
	}{{false, "Committed probe.txt."}, {true, "The magic word."}} {
		s := stops[i]
		if s.SessionID != sid || s.HookEventName != "Stop" || s.StopHookActive != want.active || s.LastAssistantMessage != want.last {
			t.Errorf("Stop %d input = %+v, want session %s, stop_hook_active %t, last_assistant_message %q",
				i, s, sid, want.active, want.last)
		}
	}
}

// stopInput is the part of the Stop hook's stdin the test checks.
type stopInput struct {
	SessionID            string `json:"session_id"`
	HookEventName        string `json:"hook_event_name"`
	StopHookActive       bool   `json:"stop_hook_active"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

func readStopInputs(t *testing.T, path string) []stopInput {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the probe Stop hook's log: %v", err)
	}
	var out []stopInput
	for line := range strings.Lines(string(data)) {
		var s stopInput
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("probe Stop hook log line %q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// TestHarnessStructuredOutput proves the reviewer path: --json-schema gives
// the model a StructuredOutput tool, and the verdict arrives in
// .structured_output of the JSON result.
func TestHarnessStructuredOutput(t *testing.T) {
	bin := claudeBin(t)
	no := false
	srv := startModel(t, &fakemodel.Scenario{Rules: []fakemodel.Rule{{
		Name:  "verdict",
		When:  fakemodel.Match{HasTool: "StructuredOutput", ModelContains: "sonnet", LastIsToolResult: &no},
		Times: 1,
		Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
			Name:  "StructuredOutput",
			Input: map[string]any{"verdict": "PASS", "notes": "looks fine"},
		}}},
	}}})
	schema := `{"type":"object","properties":{"verdict":{"type":"string","enum":["PASS","FAIL"]},"notes":{"type":"string"}},"required":["verdict"]}`
	res, err := claudecli.Run{
		Bin:     bin,
		Dir:     gitProject(t),
		BaseURL: srv.URL(),
		Args:    []string{"--model", "sonnet", "--output-format", "json", "--json-schema", schema, "Review the change."},
	}.Exec(t.Context())
	t.Logf("claude ran %s, exit %d\nstdout:\n%s\nstderr:\n%s", res.Duration, res.ExitCode, res.Stdout, res.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Type             string `json:"type"`
		IsError          bool   `json:"is_error"`
		Result           string `json:"result"`
		StructuredOutput struct {
			Verdict string `json:"verdict"`
			Notes   string `json:"notes"`
		} `json:"structured_output"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("stdout is not one JSON object: %v", err)
	}
	if out.Type != "result" || out.IsError || out.StructuredOutput.Verdict != "PASS" || out.StructuredOutput.Notes != "looks fine" {
		t.Errorf("result = %+v, want a successful result with verdict PASS", out)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Errorf("model saw %d requests, want 1 (the CLI ends the run on StructuredOutput)", len(msgs))
	}
	if len(msgs) > 0 && !strings.Contains(msgs[0].Model, "sonnet") {
		t.Errorf("model = %q, want a sonnet model", msgs[0].Model)
	}
}
