package reviewer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReviewerInvocation runs the fake CLI as each named CLI and pins, in a
// golden file, the argv it received: what the reviewer may do (read and
// run commands, not edit) is decided there. For claude it also parses the
// argv as the CLI's option parser does, where --allowedTools and
// --disallowedTools take every word up to the next flag: each list must
// stay one argument and the prompt must stay the prompt.
func TestReviewerInvocation(t *testing.T) {
	for _, cli := range []string{CLIClaude, CLICodex, CLIGemini} {
		t.Run(cli, func(t *testing.T) {
			argsFile := filepath.Join(t.TempDir(), "args.json")
			s := fake("FAKE_ARGS_FILE="+argsFile, "FAKE_CLI="+cli)
			s.CLI = cli
			s.Model = map[string]string{CLIClaude: "opus", CLICodex: "gpt-5-codex", CLIGemini: "gemini-2.5-pro"}[cli]
			r := Run(context.Background(), s)
			if r.Outcome != Pass {
				t.Fatalf("outcome %s: %v; stderr %q", r.Outcome, r.Err, r.Stderr)
			}
			var rec struct{ Args []string }
			data, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, a := range rec.Args {
				if i > 0 && rec.Args[i-1] == "--output-schema" {
					a = "<schema file>" // a temporary file of its own
				}
				fmt.Fprintln(&b, strconv.Quote(a))
			}
			golden(t, b.String())

			if cli != CLIClaude {
				return
			}
			opts, positional := parseVariadic(rec.Args, "--allowedTools", "--disallowedTools")
			if got := opts["--allowedTools"]; !slices.Equal(got, []string{ClaudeAllowedTools}) {
				t.Errorf("--allowedTools takes %q, want only %q", got, ClaudeAllowedTools)
			}
			if got := opts["--disallowedTools"]; !slices.Equal(got, []string{ClaudeDisallowedTools}) {
				t.Errorf("--disallowedTools takes %q, want only %q", got, ClaudeDisallowedTools)
			}
			if !slices.Equal(positional, []string{s.Prompt}) {
				t.Errorf("positional arguments %q, want the prompt alone", positional)
			}
			for _, tool := range []string{"Bash", "Read"} {
				if !slices.Contains(strings.Split(ClaudeAllowedTools, ","), tool) {
					t.Errorf("%s is not allowed: the reviewer cannot run the tests or read", tool)
				}
			}
			for _, tool := range []string{"Edit", "Write", "NotebookEdit"} {
				if !slices.Contains(strings.Split(ClaudeDisallowedTools, ","), tool) {
					t.Errorf("%s is not disallowed: the reviewer could edit", tool)
				}
			}
		})
	}
}

// parseVariadic reads argv as the claude CLI's option parser (commander)
// does for the variadic options named: each takes the arguments after it up
// to the next one that starts with '-'. The flags that take one value are
// the ones BuildCommand passes. It returns the variadic options' values and
// the positional arguments.
func parseVariadic(argv []string, variadic ...string) (map[string][]string, []string) {
	takesValue := []string{"--model", "--output-format", "--json-schema", "--settings", "--max-budget-usd"}
	opts := map[string][]string{}
	var positional []string
	active := ""
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case active != "" && !strings.HasPrefix(a, "-"):
			opts[active] = append(opts[active], a)
			continue
		case slices.Contains(variadic, a):
			active = a
			opts[a] = nil
			continue
		}
		active = ""
		switch {
		case slices.Contains(takesValue, a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			positional = append(positional, a)
		}
	}
	return opts, positional
}

// TestRunReportsDenials has the fake claude list refused tool calls in its
// result, as the real CLI does in permission_denials, and pins what Run
// reports of them: the tool and what the call asked for, also beside a run
// that gave no verdict.
func TestRunReportsDenials(t *testing.T) {
	const goTest = `[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"go test ./...","description":"Run the tests"}}]`
	many := make([]string, MaxDenials+5)
	for i := range many {
		many[i] = fmt.Sprintf(`{"tool_name":"Bash","tool_use_id":"t%d","tool_input":{"command":"make check-%d"}}`, i, i)
	}
	tests := []struct {
		name string
		kv   []string
	}{
		{"none", nil},
		{"a refused test run", []string{"FAKE_DENIALS=" + goTest}},
		{"each kind of input", []string{"FAKE_VERDICT=FAIL", `FAKE_DENIALS=[` +
			`{"tool_name":"Bash","tool_use_id":"a","tool_input":{"command":"cd /tmp &&\n  go vet ./...","description":"vet"}},` +
			`{"tool_name":"Write","tool_use_id":"b","tool_input":{"file_path":"/work/x.go","content":"package x"}},` +
			`{"tool_name":"WebFetch","tool_use_id":"c","tool_input":{"prompt":"read","url":"https://example.com/doc"}},` +
			`{"tool_name":"mcp__db__query","tool_use_id":"d","tool_input":{"sql":"select 1"}},` +
			`{"tool_name":"","tool_use_id":"e","tool_input":{}},` +
			`"not an object"]`}},
		{"more than the cap", []string{"FAKE_DENIALS=[" + strings.Join(many, ",") + "]"}},
		{"kept beside an error", []string{"FAKE_IS_ERROR=1", "FAKE_DENIALS=" + goTest}},
		{"not a list", []string{`FAKE_DENIALS={"tool_name":"Bash"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run(context.Background(), fake(tt.kv...))
			var b strings.Builder
			fmt.Fprintf(&b, "outcome: %s\n", r.Outcome)
			if r.Err != nil {
				fmt.Fprintf(&b, "error: %v\n", r.Err)
			}
			fmt.Fprintf(&b, "denials: %d\n", len(r.Denials))
			for _, d := range r.Denials {
				fmt.Fprintf(&b, "- %s %s\n", d.Tool, strconv.Quote(d.Input))
			}
			golden(t, b.String())
		})
	}
}

// TestRunDenialsInTheLog: a failed run's log names the refused calls, which
// may be why it failed.
func TestRunDenialsInTheLog(t *testing.T) {
	s := fake("FAKE_IS_ERROR=1", `FAKE_DENIALS=[{"tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"go test ./..."}}]`)
	s.LogPath = filepath.Join(t.TempDir(), "review.log")
	if r := Run(context.Background(), s); r.Outcome != Failed {
		t.Fatalf("outcome %s, want failed", r.Outcome)
	}
	data, err := os.ReadFile(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `refused tool call: Bash "go test ./..."`) {
		t.Errorf("the log does not name the refused call:\n%s", data)
	}
}

// TestRunKeepsTheReview: the reviewer's own write-up comes back with the
// verdict from each CLI's output, trimmed and bounded; an answer without
// one, or with one that is not text, still counts.
func TestRunKeepsTheReview(t *testing.T) {
	const text = "## What I checked\n\nI read config.go and ran `go test ./...`: it passes.\n\nThe error from Open is ignored at line 42."
	tests := []struct {
		name string
		cli  string
		kv   []string
		want string
	}{
		{"claude", CLIClaude, []string{"FAKE_REVIEW=\n" + text + "\n\n"}, text},
		{"codex", CLICodex, []string{"FAKE_CLI=codex", "FAKE_REVIEW=" + text}, text},
		{"gemini", CLIGemini, []string{"FAKE_CLI=gemini", "FAKE_REVIEW=" + text}, text},
		{"none", CLIClaude, nil, ""},
		{"too long", CLIClaude, []string{"FAKE_REVIEW=" + strings.Repeat("a", MaxReviewBytes+10)}, strings.Repeat("a", MaxReviewBytes) + "..."},
		{"not text", CLIClaude, []string{"FAKE_STDOUT=" + `{"type":"result","subtype":"success","is_error":false,"structured_output":{"review":["a"],"verdict":"PASS","findings":[]}}`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fake(tt.kv...)
			s.CLI = tt.cli
			if tt.cli != CLIClaude {
				// fake's opus would run on claude (Route).
				s.Model = ""
			}
			r := Run(context.Background(), s)
			if r.Outcome != Pass {
				t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
			}
			if r.Review != tt.want {
				t.Errorf("review = %q, want %q", cut(r.Review, 200), cut(tt.want, 200))
			}
		})
	}
}

// TestCombineJoinsReviewsAndDenials: a parallel review's write-up is each
// answering reviewer's under its model, and its denials are all of theirs.
func TestCombineJoinsReviewsAndDenials(t *testing.T) {
	c := Combine([]Result{
		{Model: "opus", Outcome: Pass, Verdict: VerdictPass, Review: "Looks right.", Denials: []Denial{{Tool: "Bash", Input: "go test ./..."}}},
		{Model: "sonnet", Outcome: Fail, Verdict: VerdictFail, Review: "Line 3 is wrong."},
		{Model: "haiku", Outcome: Failed, Denials: []Denial{{Tool: "Bash", Input: "make"}}},
		{Model: "gpt", Outcome: Pass, Verdict: VerdictPass},
	}, All)
	if want := "### opus\n\nLooks right.\n\n### sonnet\n\nLine 3 is wrong."; c.Review != want {
		t.Errorf("review = %q, want %q", c.Review, want)
	}
	if want := []Denial{{Tool: "Bash", Input: "go test ./..."}, {Tool: "Bash", Input: "make"}}; !slices.Equal(c.Denials, want) {
		t.Errorf("denials = %+v, want %+v", c.Denials, want)
	}
}
