package agentrun

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseLine(t *testing.T) {
	long := strings.Repeat("é", MaxToolResultText) // 2 bytes each
	tests := []struct {
		name string
		line string
		want Event
		ok   bool
	}{
		{name: "blank", line: "   ", ok: false},
		{name: "not json", line: "Loading plugins...", ok: false},
		{name: "truncated", line: `{"type":"assistant","message":{"content":[`, ok: false},
		{name: "array", line: `[{"type":"result"}]`, ok: false},
		{name: "no type", line: `{"subtype":"init"}`, ok: false},
		{name: "type not a string", line: `{"type":7}`, ok: false},
		{name: "empty type", line: `{"type":""}`, ok: false},
		{
			name: "init",
			line: `{"type":"system","subtype":"init","cwd":"/w","session_id":"s-1","tools":["Bash"],"model":"claude-sonnet-4-5","permissionMode":"default"}`,
			want: Event{Type: "system", Subtype: "init", SessionID: "s-1", Model: "claude-sonnet-4-5"},
			ok:   true,
		},
		{
			name: "assistant text and tools",
			line: `{"type":"assistant","message":{"id":"m1","model":"claude-opus-4","role":"assistant","content":[` +
				`{"type":"thinking","thinking":"hmm"},` +
				`{"type":"text","text":"Running the tests."},` +
				`{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"go test ./internal/lex/...","description":"tests"}},` +
				`{"type":"text","text":"And reading."},` +
				`{"type":"tool_use","id":"tu2","name":"Read","input":{"file_path":"internal/lex/lexer.go"}},` +
				`{"type":"tool_use","id":"tu3","name":"mcp__x__y","input":{"command":["not","a","string"]}}` +
				`]},"parent_tool_use_id":null,"session_id":"s-1"}`,
			want: Event{
				Type: "assistant", SessionID: "s-1", Model: "claude-opus-4", MessageID: "m1",
				Text: "Running the tests.\nAnd reading.",
				ToolCalls: []ToolCall{
					{ID: "tu1", Name: "Bash", Command: "go test ./internal/lex/..."},
					{ID: "tu2", Name: "Read", Path: "internal/lex/lexer.go"},
					{ID: "tu3", Name: "mcp__x__y"},
				},
			},
			ok: true,
		},
		{
			name: "assistant usage",
			line: `{"type":"assistant","message":{"id":"m2","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],` +
				`"usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":15000,"output_tokens":42,"service_tier":"standard"}}}`,
			want: Event{
				Type: "assistant", Model: "claude-sonnet-4-5", MessageID: "m2", Text: "ok",
				Usage: &Usage{InputTokens: 3, OutputTokens: 42, CacheReadInputTokens: 15000, CacheCreationInputTokens: 1200},
			},
			ok: true,
		},
		{
			name: "usage of another shape is left out",
			line: `{"type":"assistant","message":{"id":"m3","usage":"lots","content":"hi"}}`,
			want: Event{Type: "assistant", MessageID: "m3", Text: "hi"},
			ok:   true,
		},
		{
			name: "tool results",
			line: `{"type":"user","message":{"role":"user","content":[` +
				`{"tool_use_id":"tu1","type":"tool_result","content":"FAIL\tinternal/lex","is_error":true},` +
				`{"tool_use_id":"tu2","type":"tool_result","content":[{"type":"text","text":"package lex"},{"type":"image","source":{}},{"type":"text","text":"func X()"}]},` +
				`{"tool_use_id":"tu3","type":"tool_result"}` +
				`]},"session_id":"s-1"}`,
			want: Event{
				Type: "user", SessionID: "s-1",
				ToolResults: []ToolResult{
					{ToolUseID: "tu1", IsError: true, Text: "FAIL\tinternal/lex"},
					{ToolUseID: "tu2", Text: "package lex\nfunc X()"},
					{ToolUseID: "tu3"},
				},
			},
			ok: true,
		},
		{
			name: "user plain text",
			line: `{"type":"user","message":{"role":"user","content":"Fix the lexer."}}`,
			want: Event{Type: "user", Text: "Fix the lexer."},
			ok:   true,
		},
		{
			name: "long tool result is cut",
			line: `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"` + long + `"}]}}`,
			want: Event{Type: "user", ToolResults: []ToolResult{{ToolUseID: "t", Text: clipText(long, MaxToolResultText)}}},
			ok:   true,
		},
		{
			name: "result success",
			line: `{"type":"result","subtype":"success","is_error":false,"duration_ms":12135,"num_turns":7,"result":"Done: identifiers accept Unicode.","session_id":"s-1","total_cost_usd":0.1509,"usage":{"input_tokens":3}}`,
			want: Event{Type: "result", Subtype: "success", SessionID: "s-1", Text: "Done: identifiers accept Unicode.", Turns: 7, CostUSD: 0.1509},
			ok:   true,
		},
		{
			name: "result error with success subtype",
			line: `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit","num_turns":1,"total_cost_usd":0}`,
			want: Event{Type: "result", Subtype: "success", IsError: true, Text: "You've hit your session limit", Turns: 1, APIErrorStatus: 429},
			ok:   true,
		},
		{
			name: "result max turns without text",
			line: `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"stop_reason":"tool_use"}`,
			want: Event{Type: "result", Subtype: "error_max_turns", IsError: true, Turns: 2},
			ok:   true,
		},
		{
			name: "fields of odd types are skipped",
			line: `{"type":"result","subtype":3,"is_error":"yes","num_turns":-4,"total_cost_usd":"1","result":{"x":1},"session_id":null}`,
			want: Event{Type: "result"},
			ok:   true,
		},
		{
			name: "odd message",
			line: `{"type":"assistant","message":{"model":5,"content":[1,"x",{"type":"text","text":7},{"type":"text","text":"ok"},{"type":"tool_use","name":"Bash","input":"ls"}]}}`,
			want: Event{Type: "assistant", Text: "ok", ToolCalls: []ToolCall{{Name: "Bash"}}},
			ok:   true,
		},
		{
			name: "unknown type",
			line: `{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"s"}`,
			want: Event{Type: "stream_event", SessionID: "s"},
			ok:   true,
		},
		{
			name: "surrounding space and CR",
			line: " {\"type\":\"system\",\"subtype\":\"hook_response\"}\r",
			want: Event{Type: "system", Subtype: "hook_response"},
			ok:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseLine([]byte(tt.line))
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLine = %+v, %v\nwant %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestClipText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{in: "short", max: 100, want: "short"},
		{in: strings.Repeat("a", 30), max: 25, want: "aaaaa [... cut by drover]"},
		{in: strings.Repeat("é", 30), max: 25, want: "éé [... cut by drover]"},
	} {
		if got := clipText(tt.in, tt.max); got != tt.want || len(got) > max(tt.max, len(tt.in)) {
			t.Errorf("clipText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"type":"system","subtype":"init","session_id":"s","model":"m"}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"1","name":"Bash","input":{"command":"ls"}}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"1","is_error":true,"content":[{"type":"text","text":"x"}]}]}}`))
	f.Add([]byte(`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"num_turns":3,"result":"done"}`))
	f.Add([]byte(line429Assistant))
	f.Add([]byte(line429Result))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, ok := ParseLine(line)
		again, ok2 := ParseLine(line)
		if ok != ok2 || !reflect.DeepEqual(ev, again) {
			t.Fatal("ParseLine is not deterministic")
		}
		if !ok {
			if !reflect.DeepEqual(ev, Event{}) {
				t.Fatalf("rejected line gave event %+v", ev)
			}
			return
		}
		if ev.Type == "" || !json.Valid(line) {
			t.Fatalf("accepted %q as %+v", line, ev)
		}
		if ev.APIErrorStatus < 0 || ev.APIErrorStatus >= 1000 || ev.Type != TypeResult && ev.APIErrorStatus != 0 || ev.Type != TypeAssistant && ev.Error != "" {
			t.Fatalf("API error %d %q on a %q line", ev.APIErrorStatus, ev.Error, ev.Type)
		}
		if ev.Turns < 0 {
			t.Fatalf("negative turns %d", ev.Turns)
		}
		for _, r := range ev.ToolResults {
			if len(r.Text) > MaxToolResultText {
				t.Fatalf("tool result text of %d bytes", len(r.Text))
			}
			if !utf8.ValidString(r.Text) {
				t.Fatalf("cut tool result text is not valid UTF-8: %q", r.Text)
			}
		}
		if ev.Type != TypeAssistant && len(ev.ToolCalls) > 0 || ev.Type != TypeUser && len(ev.ToolResults) > 0 {
			t.Fatalf("tool calls or results on a %q line", ev.Type)
		}
	})
}
