package hook

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Detect names the CLI that wrote payload data, as ReadFrom does for a
// hook installed without --cli; data that is not JSON is Claude Code's.
func Detect(data []byte) CLI {
	var w wire
	if json.Unmarshal(data, &w) != nil {
		return Claude
	}
	return w.cli()
}

// decisions are the answers every payload is rendered with: what the
// workflows answer (a block, context, a warning, PreCompact's text).
var decisions = []struct {
	name string
	out  Output
	text string
}{
	{"allow", Output{}, ""},
	{"block", Block("Next task: <write the tests> & commit"), ""},
	{"block_with_warning", Output{Decision: "block", Reason: "go on", SystemMessage: "drover: a warning"}, ""},
	{"block_without_reason", Output{Decision: "block"}, ""},
	{"warning", Output{SystemMessage: "drover: a warning"}, ""},
	{"context", Output{HookSpecificOutput: &Specific{HookEventName: "SessionStart", AdditionalContext: "queue: 2 tasks left"}}, ""},
	{"text", Output{}, "Keep the plan.\nQueue: 2 tasks left."},
}

// TestNormalizeAndRender reads each CLI's payload of each event (the
// shapes of the CLIs' references; the Stop ones verbatim) into drover's
// event and renders every kind of decision as that CLI reads it. The
// golden file holds both, so a change to either is a diff to review.
func TestNormalizeAndRender(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "payloads", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			cliName, rest, _ := strings.Cut(name, "_")
			eventName, _, _ := strings.Cut(rest, "_")
			cli, err := ParseCLI(cliName)
			if err != nil {
				t.Fatal(err)
			}
			e, err := ParseEvent(eventName)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, got, err := ReadFrom(bytes.NewReader(data), 0, cli, e)
			if err != nil || got != cli {
				t.Fatalf("ReadFrom = %v, %v", got, err)
			}
			var b bytes.Buffer
			norm, err := json.MarshalIndent(in, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "# %s %s (%s) normalized\n%s\n", cli, e, e.EventName(cli), norm)
			for _, d := range decisions {
				fmt.Fprintf(&b, "# %s\n%s", d.name, orNothing(Render(cli, e, d.out, d.text)))
			}
			goldenfile.Check(t, filepath.Join("testdata", "golden", name+".golden"), b.Bytes(), *update)
		})
	}
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)\n"
	}
	return s
}

// TestCodexBlockHasOnlyItsKeys pins what Codex accepts: a Stop block is
// exactly {"decision","reason"}, whatever else the decision carries (any
// other key makes Codex fail the hook and let the agent stop).
func TestCodexBlockHasOnlyItsKeys(t *testing.T) {
	for _, out := range []Output{
		Block("r"),
		{Decision: "block", Reason: "r", SystemMessage: "w"},
		{Decision: "block", Reason: "r", HookSpecificOutput: &Specific{HookEventName: "Stop", AdditionalContext: "c"}},
	} {
		got := Render(Codex, Stop, out, "")
		if got != `{"decision":"block","reason":"r"}`+"\n" {
			t.Errorf("Render(codex, %+v) = %q", out, got)
		}
	}
	if got := Render(Codex, Stop, Output{HookSpecificOutput: &Specific{HookEventName: "Stop", AdditionalContext: "c"}}, ""); got != "" {
		t.Errorf("a Stop allow with context gives Codex %q, want nothing", got)
	}
}

// TestGeminiReentryIsCounted: whatever Gemini's stop_hook_active says,
// the normalized event says drover must count continuations itself, and
// AfterAgent's cumulative response is the last assistant message.
func TestGeminiReentryIsCounted(t *testing.T) {
	for _, tc := range []struct {
		cli       CLI
		untrusted bool
		format    string
		uncapped  bool
	}{
		{Claude, false, TranscriptClaude, false},
		{Codex, false, TranscriptCodex, true},
		{Gemini, true, TranscriptGemini, true},
	} {
		payload := `{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":false,"prompt":"p","prompt_response":"a\nb","last_assistant_message":"m","reentry_untrusted":true,"uncapped":true,"transcript_format":"x"}`
		in, err := Normalize(tc.cli, Stop, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		if in.ReentryUntrusted != tc.untrusted || in.TranscriptFormat != tc.format || in.Uncapped != tc.uncapped {
			t.Errorf("%s: facts %v %q %v, want %v %q %v", tc.cli, in.ReentryUntrusted, in.TranscriptFormat, in.Uncapped, tc.untrusted, tc.format, tc.uncapped)
		}
		want := "m"
		if tc.cli == Gemini {
			want = "a\nb"
		}
		if in.LastAssistantMessage == nil || *in.LastAssistantMessage != want {
			t.Errorf("%s: last message %v, want %q", tc.cli, in.LastAssistantMessage, want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		file string
		want CLI
	}{
		{"claude_stop", Claude},
		{"claude_session-start", Claude},
		{"codex_stop", Codex},
		{"codex_user-prompt-submit", Codex},
		{"gemini_stop", Gemini},
		{"gemini_session-start", Gemini},
		{"gemini_user-prompt-submit", Gemini},
		{"gemini_pre-compact", Gemini},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "payloads", tc.file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(data); got != tc.want {
			t.Errorf("Detect(%s) = %q, want %q", tc.file, got, tc.want)
		}
	}
	if got := Detect([]byte("not json")); got != Claude {
		t.Errorf("Detect(garbage) = %q", got)
	}
}

func TestParseCLI(t *testing.T) {
	for _, s := range []string{"claude", "codex", "gemini", ""} {
		if got, err := ParseCLI(s); err != nil || string(got) != s {
			t.Errorf("ParseCLI(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseCLI("opencode"); err == nil || !strings.Contains(err.Error(), "opencode") {
		t.Errorf("ParseCLI(opencode) error %v", err)
	}
}

// FuzzNormalize reads arbitrary bytes as each CLI's payload of each event:
// the result never carries facts from the payload itself, what Render
// gives Codex on Stop is empty or one JSON object of Codex's keys, and a
// block rendered for any CLI always has a reason.
func FuzzNormalize(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "payloads", "*.json"))
	for i, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), data, "reason")
	}
	f.Add(uint8(0), []byte(`{"prompt_response":null,"timestamp":1,"turn_id":{}}`), "")
	f.Add(uint8(1), []byte(`{"hook_event_name":"AfterAgent","stop_hook_active":"yes"}`), "r")
	f.Fuzz(func(t *testing.T, sel uint8, data []byte, reason string) {
		cli := CLIs[int(sel)%len(CLIs)]
		e := Events[int(sel/3)%len(Events)]
		in, got, err := ReadFrom(bytes.NewReader(data), 1<<16, "", e)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "decoding hook input JSON") && !strings.HasPrefix(err.Error(), "reading hook input") {
				t.Fatalf("error %q does not say it is the hook input", err)
			}
			return
		}
		if got != Detect(data) {
			t.Fatalf("ReadFrom detected %q, Detect %q", got, Detect(data))
		}
		in, err = Normalize(cli, e, data)
		if err != nil {
			t.Fatalf("Normalize refused what ReadFrom read: %v", err)
		}
		if in.TranscriptFormat != string(cli) || in.ReentryUntrusted != (cli == Gemini) || in.Uncapped != (cli != Claude) {
			t.Fatalf("%s facts %q %v %v", cli, in.TranscriptFormat, in.ReentryUntrusted, in.Uncapped)
		}
		for _, c := range CLIs {
			out := Render(c, e, Output{Decision: "block", Reason: reason, SystemMessage: in.Prompt}, "")
			if out == "" {
				if reason != "" {
					t.Fatalf("%s: a block with a reason rendered as nothing", c)
				}
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("%s: render %q is not JSON: %v", c, out, err)
			}
			if m["decision"] == "block" && m["reason"] == "" || m["decision"] == "block" && reason == "" {
				t.Fatalf("%s: block without a reason: %s", c, out)
			}
			if c == Codex && e == Stop {
				for k := range m {
					if k != "decision" && k != "reason" && k != "systemMessage" {
						t.Fatalf("codex Stop output has key %q: %s", k, out)
					}
				}
				if m["decision"] == "block" && len(m) != 2 {
					t.Fatalf("codex Stop block has more than its two keys: %s", out)
				}
			}
		}
	})
}
