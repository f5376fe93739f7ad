package fakemodel

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseMessagesRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Request
		wantErr string
	}{
		{
			name: "string content",
			body: `{"model":"claude-opus-4-8","stream":true,"system":"be brief","messages":[{"role":"user","content":"hello"}],"tools":[{"name":"Bash"},{"name":"Write"}]}`,
			want: Request{
				Model: "claude-opus-4-8", Stream: true, System: "be brief",
				Messages:     []Message{{Role: "user", Text: "hello"}},
				Tools:        []string{"Bash", "Write"},
				LastUserText: "hello",
			},
		},
		{
			// The shape the CLI 2.1.197 sends after a tool ran: a system
			// message after the first prompt, the assistant's tool_use, and
			// the tool_result as the last user message.
			name: "tool round trip",
			body: `{"model":"m","system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"messages":[
				{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"do it","cache_control":{"type":"ephemeral"}}]},
				{"role":"system","content":"agents list"},
				{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"file1"},{"type":"image","source":{}}]},{"type":"text","text":"reminder"}]}]}`,
			want: Request{
				Model: "m", System: "a\nb",
				Messages: []Message{
					{Role: "user", Text: "<system-reminder>r</system-reminder>\ndo it"},
					{Role: "system", Text: "agents list"},
					{Role: "assistant", Text: "ok\ntool_use Bash {\"command\":\"ls\"}"},
					{Role: "user", Text: "file1\nreminder", ToolResult: true},
				},
				LastUserText:     "file1\nreminder",
				LastIsToolResult: true,
			},
		},
		{
			name: "tool_result with string content, last message from assistant",
			body: `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"out"}]},{"role":"assistant","content":"pre"}]}`,
			want: Request{
				Messages:         []Message{{Role: "user", Text: "out", ToolResult: true}, {Role: "assistant", Text: "pre"}},
				LastUserText:     "out",
				LastIsToolResult: true,
			},
		},
		{
			name: "nested tool_result is not followed",
			body: `{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"tool_result","content":"deep"},{"type":"text","text":"top"}]}]}]}`,
			want: Request{
				Messages:         []Message{{Role: "user", Text: "top", ToolResult: true}},
				LastUserText:     "top",
				LastIsToolResult: true,
			},
		},
		{
			name: "null and missing content",
			body: `{"messages":[{"role":"user","content":null},{"role":"user"}]}`,
			want: Request{Messages: []Message{{Role: "user"}, {Role: "user"}}},
		},
		{name: "not json", body: `{`, wantErr: "decoding Messages API request"},
		{name: "content of wrong type", body: `{"messages":[{"role":"user","content":5}]}`, wantErr: "decoding messages[0]"},
		{name: "system of wrong type", body: `{"system":{"a":1}}`, wantErr: "decoding system prompt"},
		{name: "tool_result content of wrong type", body: `{"messages":[{"role":"user","content":[{"type":"tool_result","content":5}]}]}`, wantErr: "tool_result content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Request
			err := parseMessagesRequest([]byte(tt.body), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) == 0 {
				got.Messages = nil
			}
			if len(tt.want.Messages) == 0 {
				tt.want.Messages = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestSummaryClipsFromTheEnd(t *testing.T) {
	r := Request{Seq: 3, Kind: KindMessages, Model: "m", LastUserText: strings.Repeat("é", 400) + "the ask"}
	s := r.Summary()
	if !strings.Contains(s, "the ask") || !strings.Contains(s, "#3 model=m") {
		t.Errorf("Summary() = %q, want the sequence, model and the end of the user text", s)
	}
	if strings.Contains(s, `\x`) {
		t.Errorf("Summary() = %q cut a rune in half", s)
	}
}

// FuzzParseMessagesRequest checks that the extractor never panics on any
// body, and that a plain string as the last user message is taken verbatim.
func FuzzParseMessagesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), "tail")
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"x"}]}]}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, last string) {
		var r Request
		if err := parseMessagesRequest(body, &r); err == nil {
			again := Request{}
			if err := parseMessagesRequest(body, &again); err != nil || !reflect.DeepEqual(r, again) {
				t.Fatalf("parsing is not deterministic: %v", err)
			}
		}
		// Append a user message with string content and check it wins.
		var w map[string]any
		if json.Unmarshal(body, &w) != nil || w == nil || !utf8.ValidString(last) {
			return
		}
		msgs, _ := w["messages"].([]any)
		w["messages"] = append(msgs, map[string]any{"role": "user", "content": last})
		body2, err := json.Marshal(w)
		if err != nil {
			return
		}
		var r2 Request
		if err := parseMessagesRequest(body2, &r2); err != nil {
			return // an earlier message is malformed
		}
		if r2.LastUserText != last || r2.LastIsToolResult {
			t.Errorf("LastUserText = %q (tool_result %t), want %q", r2.LastUserText, r2.LastIsToolResult, last)
		}
	})
}
