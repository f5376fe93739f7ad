package transcript

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func summarize(t *testing.T, input string, since Since) Iteration {
	t.Helper()
	it, err := Summarize(context.Background(), strings.NewReader(input), since)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	return it
}

// callsBrief renders the kept calls as "Name[cmd|file] -> err/ok/none".
func callsBrief(it Iteration) []string {
	var out []string
	for _, c := range it.Calls {
		s := c.Name
		if c.Command != "" {
			s += " " + c.Command
		}
		if c.FilePath != "" {
			s += " " + c.FilePath
		}
		switch {
		case c.Result == nil:
			s += " -> none"
		case c.Result.IsError:
			s += " -> error"
		default:
			s += " -> ok"
		}
		out = append(out, s)
	}
	return out
}

func TestSummarizeLoopTranscript(t *testing.T) {
	input := readTestdata(t, "loop.jsonl")
	cases := []struct {
		since      Since
		startedBy  Kind
		startLine  int
		prompt     string
		calls      []string
		counts     map[string]int
		toolErrors int
		files      []string
		messages   int
	}{
		{
			since: SinceIteration, startedBy: StopFeedback, startLine: 14,
			prompt:   "# drover loop\nIteration 2 of 10. Keep going.",
			calls:    []string{"Bash go test ./... -> ok"},
			counts:   map[string]int{"Bash": 1},
			messages: 2,
		},
		{
			since: SincePrompt, startedBy: UserPrompt, startLine: 2,
			prompt:     "<command-message>drover:loop</command-message>\n<command-name>/drover:loop</command-name>\n<command-args>fix the calc tests</command-args>",
			calls:      []string{"Bash go test ./... -> error", "Edit /project/calc.go -> ok", "Bash go test ./... -> ok"},
			counts:     map[string]int{"Bash": 2, "Edit": 1},
			toolErrors: 1,
			files:      []string{"/project/calc.go"},
			messages:   5,
		},
		{
			since:      SinceStart,
			calls:      []string{"Bash go test ./... -> error", "Edit /project/calc.go -> ok", "Bash go test ./... -> ok"},
			counts:     map[string]int{"Bash": 2, "Edit": 1},
			toolErrors: 1,
			files:      []string{"/project/calc.go"},
			messages:   5,
		},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.since), func(t *testing.T) {
			it := summarize(t, input, c.since)
			if it.StartedBy != c.startedBy || it.StartLine != c.startLine || it.Prompt != c.prompt {
				t.Errorf("boundary = %s line %d %q", it.StartedBy, it.StartLine, it.Prompt)
			}
			if got := callsBrief(it); !reflect.DeepEqual(got, c.calls) {
				t.Errorf("calls = %q, want %q", got, c.calls)
			}
			if it.ToolCalls != len(c.calls) || !reflect.DeepEqual(it.ToolCounts, c.counts) {
				t.Errorf("ToolCalls = %d, counts %v", it.ToolCalls, it.ToolCounts)
			}
			if it.ToolErrors != c.toolErrors || !reflect.DeepEqual(it.FilesChanged, c.files) {
				t.Errorf("errors %d, files %q", it.ToolErrors, it.FilesChanged)
			}
			if it.LastAssistantText != "All tests pass.\n<promise>DONE</promise>" {
				t.Errorf("last text = %q", it.LastAssistantText)
			}
			if !it.Compacted {
				t.Error("the compaction was missed")
			}
			if it.AssistantMessages != c.messages {
				t.Errorf("AssistantMessages = %d, want %d", it.AssistantMessages, c.messages)
			}
			if it.Stats.Malformed != 2 || it.Stats.Duplicates != 1 {
				t.Errorf("stats = %+v", it.Stats)
			}
		})
	}
}

// TestSummarizeSeedTranscript reads the shape seed 004's runner writes:
// tool_use blocks without ids or message ids, no results, no prompt.
func TestSummarizeSeedTranscript(t *testing.T) {
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"file_path":"/project/filler%d.ts","content":"// filler"}}]}}`+"\n", i)
	}
	b.WriteString(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"bun test auth.test.ts"}}]}}` + "\n")
	b.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":"The task is complete. <promise>DONE</promise>"}]}}` + "\n")
	it := summarize(t, b.String(), SinceIteration)
	if it.StartedBy != 0 || it.ToolCalls != 13 || it.ToolCounts["Write"] != 12 || len(it.FilesChanged) != 12 {
		t.Errorf("iteration = %+v", it)
	}
	if cmds := it.Commands(); !reflect.DeepEqual(cmds, []string{"bun test auth.test.ts"}) {
		t.Errorf("commands = %q", cmds)
	}
	if it.LastAssistantText != "The task is complete. <promise>DONE</promise>" || it.AssistantMessages != 14 {
		t.Errorf("text %q, messages %d", it.LastAssistantText, it.AssistantMessages)
	}
}

func TestSummarizeResultsWithoutIDs(t *testing.T) {
	input := `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"bun test"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","content":"Cannot find module 'foo'","is_error":true}]}}
{"type":"user","message":{"content":[{"type":"tool_result","content":"orphan"}]}}`
	it := summarize(t, input, SinceIteration)
	if got := callsBrief(it); !reflect.DeepEqual(got, []string{"Bash bun test -> error"}) || it.Calls[0].Result.Text != "Cannot find module 'foo'" {
		t.Errorf("calls = %q", got)
	}
	if it.ToolErrors != 1 {
		t.Errorf("ToolErrors = %d", it.ToolErrors)
	}
}

func TestSummarizeBoundsMemory(t *testing.T) {
	const n = 1000
	var b strings.Builder
	b.WriteString(`{"type":"user","message":{"content":"go"}}` + "\n")
	bigOut := strings.Repeat("line of output\n", 10000) + "=== 3 passed in 0.1s ==="
	for i := range n {
		fmt.Fprintf(&b, `{"type":"assistant","uuid":"a%d","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"step %d"}}]}}`+"\n", i, i, i, i)
		out := "small"
		if i == n-1 {
			out = bigOut
		}
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","message":{"content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}}`+"\n", i, i, out)
		fmt.Fprintf(&b, `{"type":"assistant","uuid":"w%d","message":{"id":"mw%d","content":[{"type":"tool_use","id":"w%d","name":"Write","input":{"file_path":"/p/f%d"}}]}}`+"\n", i, i, i, i)
	}
	it := summarize(t, b.String(), SinceIteration)
	if it.ToolCalls != 2*n || it.ToolCounts["Bash"] != n || it.ToolCounts["Write"] != n {
		t.Errorf("counts: %d %v", it.ToolCalls, it.ToolCounts)
	}
	if len(it.Calls) != MaxCalls || it.OmittedCalls != 2*n-MaxCalls {
		t.Errorf("kept %d calls, omitted %d", len(it.Calls), it.OmittedCalls)
	}
	if len(it.FilesChanged) != MaxFiles || it.FilesChanged[0] != "/p/f0" {
		t.Errorf("files: %d, first %q", len(it.FilesChanged), it.FilesChanged[0])
	}
	last := it.Calls[len(it.Calls)-2]
	if last.Command != fmt.Sprintf("step %d", n-1) || last.Result == nil {
		t.Fatalf("last bash call = %+v", last)
	}
	r := last.Result
	if !r.Clipped || len(r.Text) > MaxBashResult+100 || !strings.HasSuffix(r.Text, "=== 3 passed in 0.1s ===") || !strings.HasPrefix(r.Text, "line of output") {
		t.Errorf("clipped result: clipped=%v len=%d", r.Clipped, len(r.Text))
	}
	for i, c := range it.Calls {
		if c.Name == "Bash" && c.Result == nil {
			t.Errorf("call %d (%s) lost its result", i, c.Command)
		}
	}
}

func TestSummarizeResetsAtEachBoundary(t *testing.T) {
	input := `{"type":"user","message":{"content":"first"}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]}}
{"type":"user","isMeta":true,"message":{"content":"Stop hook feedback:\nagain"}}
{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"nothing to do"}]}}
{"type":"user","isMeta":true,"message":{"content":"Stop hook feedback:\nonce more"}}`
	it := summarize(t, input, SinceIteration)
	if it.StartedBy != StopFeedback || it.Prompt != "once more" || it.ToolCalls != 0 || it.LastAssistantText != "" || len(it.Calls) != 0 {
		t.Errorf("after the last feedback: %+v", it)
	}
	it = summarize(t, input, SincePrompt)
	if it.Prompt != "first" || it.ToolCalls != 1 || it.LastAssistantText != "nothing to do" {
		t.Errorf("since the prompt: %+v", it)
	}
}

// TestSummarizeEndsOnText: only a part whose last text, call or result is
// assistant text ended on its final message.
func TestSummarizeEndsOnText(t *testing.T) {
	const (
		prompt = `{"type":"user","message":{"content":"go"}}` + "\n"
		text   = `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Done.\n<promise>DONE</promise>"}]}}` + "\n"
		call   = `{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}` + "\n"
		result = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}` + "\n"
		both   = `{"type":"assistant","message":{"id":"m3","content":[{"type":"text","text":"Running the tests."},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"go test"}}]}}` + "\n"
	)
	tests := []struct {
		name  string
		input string
		want  bool
	}{
		{"nothing yet", prompt, false},
		{"final text", prompt + call + result + text, true},
		{"text then a call", prompt + text + call, false},
		{"text then a result", prompt + text + call + result, false},
		{"text and a call in one message", prompt + both, false},
		{"a call with no text", prompt + call, false},
	}
	for _, tt := range tests {
		if got := summarize(t, tt.input, SinceIteration).EndsOnText; got != tt.want {
			t.Errorf("%s: EndsOnText = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSummarizeResumesFromOffset: reading from the boundary's offset gives
// the same iteration as reading the whole file, so a caller can skip what
// it has read before.
func TestSummarizeResumesFromOffset(t *testing.T) {
	input := readTestdata(t, "loop.jsonl")
	whole := summarize(t, input, SinceIteration)
	if whole.StartLine != 14 || !strings.HasPrefix(input[whole.StartOffset:], `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"Stop hook feedback:`) {
		t.Fatalf("boundary at line %d, offset %d", whole.StartLine, whole.StartOffset)
	}
	part := summarize(t, input[whole.StartOffset:], SinceIteration)
	if part.StartLine != 1 || part.StartOffset != 0 || part.StartedBy != StopFeedback || part.Prompt != whole.Prompt {
		t.Errorf("resumed boundary: %s line %d offset %d", part.StartedBy, part.StartLine, part.StartOffset)
	}
	if !reflect.DeepEqual(callsBrief(part), callsBrief(whole)) || part.LastAssistantText != whole.LastAssistantText || part.ToolCalls != whole.ToolCalls {
		t.Errorf("resumed iteration differs:\n%+v\n%+v", part, whole)
	}
}

func TestClip(t *testing.T) {
	cases := []struct {
		s          string
		head, tail int
		want       string
		clipped    bool
	}{
		{"abcdef", 3, 3, "abcdef", false},
		{"abcdefg", 2, 2, "ab\n[... 3 bytes omitted ...]\nfg", true},
		{"ééééé", 3, 3, "é\n[... 6 bytes omitted ...]\né", true}, // never splits a rune
	}
	for _, c := range cases {
		got, clipped := clip(c.s, c.head, c.tail)
		if got != c.want || clipped != c.clipped {
			t.Errorf("clip(%q, %d, %d) = %q, %v; want %q", c.s, c.head, c.tail, got, clipped, c.want)
		}
	}
}

// TestSummarizeOutputHint: seed 004's runner writes a Bash call's output
// into its input.output_hint and no tool_result. Where no result answers a
// call, the hint is its result (no exit status: not an error); a real
// result, with an id or without, wins over it.
func TestSummarizeOutputHint(t *testing.T) {
	const hinted = `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"bun test","output_hint":"FAIL src/auth.test.ts > login\nExpected: true"}}]}}` + "\n"
	tests := []struct {
		name  string
		input string
		want  *Result
	}{
		{"seed 004: the hint and no result", hinted,
			&Result{Text: "FAIL src/auth.test.ts > login\nExpected: true", FromHint: true}},
		{"seed 004: later calls do not take the hint",
			hinted + `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read","input":{"file_path":"/project/auth.test.ts"}}]}}` + "\n",
			&Result{Text: "FAIL src/auth.test.ts > login\nExpected: true", FromHint: true}},
		{"a result without an id answers the call",
			hinted + `{"type":"user","message":{"content":[{"type":"tool_result","content":"Exit code 1\nreal output","is_error":true}]}}` + "\n",
			&Result{Text: "Exit code 1\nreal output", IsError: true}},
		{"a result with the call's id answers it",
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"bun test","output_hint":"hint"}}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"real"}]}}` + "\n",
			&Result{Text: "real"}},
		{"no hint and no result", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"bun test"}}]}}` + "\n", nil},
		{"an empty hint is no output", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"bun test","output_hint":""}}]}}` + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := summarize(t, tt.input, SinceIteration)
			if len(it.Calls) == 0 {
				t.Fatal("no calls")
			}
			if got := it.Calls[0].Result; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result = %+v, want %+v", got, tt.want)
			}
			if it.ToolErrors != 0 && tt.want != nil && !tt.want.IsError {
				t.Errorf("tool errors = %d", it.ToolErrors)
			}
		})
	}
}
