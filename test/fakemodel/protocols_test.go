package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sseData returns the JSON data of each server-sent event in body, in
// order, and the event names ("" where a frame has none).
func sseData(t *testing.T, body []byte) ([]map[string]any, []string) {
	t.Helper()
	var datas []map[string]any
	var names []string
	for frame := range strings.SplitSeq(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(frame) == "" {
			continue
		}
		name := ""
		for line := range strings.Lines(frame) {
			line = strings.TrimRight(line, "\n")
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(v), &m); err != nil {
					t.Fatalf("event data %q: %v", v, err)
				}
				datas = append(datas, m)
				names = append(names, name)
			}
		}
	}
	return datas, names
}

// protocolScenario answers a prompt with text and a shell call, and a tool
// result with text and scripted usage.
func protocolScenario(tool, arg string) *Scenario {
	no, yes := false, true
	return &Scenario{Rules: []Rule{
		{Name: "call", When: Match{LastUserMatches: `run (?P<cmd>\w+)`, LastIsToolResult: &no, SystemContains: "BASE"},
			Answer: Answer{Text: "Running.", ToolCalls: []ToolCall{{Name: tool, Input: map[string]any{arg: "{{cmd}}"}}}}},
		{Name: "done", When: Match{LastUserContains: "tool-ran-ok", LastIsToolResult: &yes},
			Answer: Answer{Text: "Done.", Usage: &Usage{InputTokens: 10, CacheReadInputTokens: 5, OutputTokens: 2}}},
		{Name: "limit", When: Match{LastUserContains: "overload"},
			Answer: Answer{Error: &APIError{Status: 429, Type: "rate_limit_error", Message: "slow down"}}},
	}}
}

// TestResponsesProtocol drives the Responses API endpoint the way Codex
// 0.169 does: developer messages as the base prompt, a prompt, then the
// function_call_output of the call the server scripted.
func TestResponsesProtocol(t *testing.T) {
	srv := start(t, protocolScenario("exec_command", "cmd"))
	first := `{"model":"gpt-5.5","stream":true,"tools":[{"type":"function","name":"exec_command"},{"type":"web_search"}],"input":[
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"BASE PROMPT"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"please run ls"}]}]}`
	status, ctype, body := post(t, srv, "/v1/responses", first)
	if status != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("status %d, content type %q: %s", status, ctype, body)
	}
	datas, names := sseData(t, body)
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %q, want response.created first and response.completed last", names)
	}
	for i, d := range datas {
		if d["type"] != names[i] {
			t.Errorf("event %d is named %q but its data says %q", i, names[i], d["type"])
		}
	}
	completed := datas[len(datas)-1]["response"].(map[string]any)
	out := completed["output"].([]any)
	if len(out) != 2 {
		t.Fatalf("output %v, want a message and a function_call", out)
	}
	msg, call := out[0].(map[string]any), out[1].(map[string]any)
	if msg["type"] != "message" || msg["content"].([]any)[0].(map[string]any)["text"] != "Running." {
		t.Errorf("output[0] = %v, want the text message", msg)
	}
	if call["type"] != "function_call" || call["name"] != "exec_command" || call["arguments"] != `{"cmd":"ls"}` || call["call_id"] == "" {
		t.Errorf("output[1] = %v, want exec_command with the captured cmd", call)
	}

	second := `{"model":"gpt-5.5","stream":true,"input":[
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"BASE PROMPT"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"please run ls"}]},
		{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"},
		{"type":"function_call_output","call_id":"c1","output":"Output:\ntool-ran-ok\n"}]}`
	_, _, body = post(t, srv, "/v1/responses", second)
	datas, _ = sseData(t, body)
	usage := datas[len(datas)-1]["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 15.0 || usage["output_tokens"] != 2.0 || usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 5.0 {
		t.Errorf("usage %v, want 15 input (5 cached) and 2 output", usage)
	}

	status, _, body = post(t, srv, "/v1/responses", `{"model":"gpt-5.5","stream":true,"input":"overload"}`)
	var e struct {
		Error struct{ Type, Message string }
	}
	if status != 429 || json.Unmarshal(body, &e) != nil || e.Error.Message != "slow down" {
		t.Errorf("scripted error: status %d, body %s; want 429 in the OpenAI error shape", status, body)
	}

	reqs := srv.Turns()
	if len(reqs) != 3 || reqs[0].Kind != KindResponses || reqs[0].System != "BASE PROMPT" || reqs[0].LastUserText != "please run ls" ||
		!reqs[1].LastIsToolResult || !strings.Contains(reqs[1].LastUserText, "tool-ran-ok") || !reqs[0].HasTool("web_search") {
		t.Errorf("recorded requests %+v", reqs)
	}
	if u := srv.Unmatched(); len(u) != 0 {
		t.Errorf("unmatched: %v", u)
	}
}

// TestGeminiProtocol drives the Gemini API endpoints the way the Gemini CLI
// 0.61 does: streamGenerateContent for the chat, generateContent for a
// JSON helper call, countTokens.
func TestGeminiProtocol(t *testing.T) {
	srv := start(t, protocolScenario("run_shell_command", "command"))
	first := `{"systemInstruction":{"parts":[{"text":"BASE PROMPT"}]},"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],
		"contents":[{"role":"user","parts":[{"text":"<session_context/>"},{"text":"please run ls"}]}]}`
	status, ctype, body := post(t, srv, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", first)
	if status != http.StatusOK || ctype != "text/event-stream" || !strings.HasSuffix(string(body), "\r\n\r\n") {
		t.Fatalf("status %d, content type %q: %q", status, ctype, body)
	}
	datas, names := sseData(t, body)
	if len(datas) != 1 || names[0] != "" {
		t.Fatalf("frames %v (names %q), want one data-only frame", datas, names)
	}
	parts := datas[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
	fc, _ := parts[1].(map[string]any)["functionCall"].(map[string]any)
	if parts[0].(map[string]any)["text"] != "Running." || fc["name"] != "run_shell_command" || fc["args"].(map[string]any)["command"] != "ls" {
		t.Errorf("parts %v, want the text and the shell call", parts)
	}

	second := `{"contents":[{"role":"user","parts":[{"text":"please run ls"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"Output: tool-ran-ok"}}}]}],
		"generationConfig":{"responseMimeType":"application/json"}}`
	status, ctype, body = post(t, srv, "/v1beta/models/gemini-2.5-flash:generateContent", second)
	var resp struct {
		UsageMetadata map[string]int `json:"usageMetadata"`
	}
	if status != http.StatusOK || ctype != "application/json" || json.Unmarshal(body, &resp) != nil ||
		resp.UsageMetadata["promptTokenCount"] != 15 || resp.UsageMetadata["candidatesTokenCount"] != 2 || resp.UsageMetadata["cachedContentTokenCount"] != 5 {
		t.Errorf("generateContent: status %d, %q, %s; want JSON with the scripted usage", status, ctype, body)
	}

	status, _, body = post(t, srv, "/v1beta/models/gemini-2.5-flash:countTokens", `{}`)
	if status != http.StatusOK || !strings.Contains(string(body), `"totalTokens"`) {
		t.Errorf("countTokens: %d %s", status, body)
	}
	status, _, body = post(t, srv, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"no rule for this"}]}]}`)
	var e struct {
		Error struct {
			Code    int
			Message string
		}
	}
	if status != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error.Code != 400 || !strings.Contains(e.Error.Message, "no rule matched") {
		t.Errorf("unmatched request: status %d, body %s; want 400 in the Gemini error shape", status, body)
	}

	reqs := srv.Turns()
	if len(reqs) != 3 || reqs[0].Model != "gemini-2.5-flash" || !reqs[0].Stream || reqs[0].System != "BASE PROMPT" ||
		reqs[0].LastUserText != "<session_context/>\nplease run ls" || reqs[1].Stream || !reqs[1].JSONMode || !reqs[1].LastIsToolResult ||
		reqs[1].Messages[1].Role != "assistant" {
		t.Errorf("recorded requests %+v", reqs)
	}
	if u := srv.Unmatched(); len(u) != 1 {
		t.Errorf("unmatched %d, want the one request no rule answered", len(u))
	}
}

// FuzzParseOtherProtocols checks that the Responses API and Gemini API
// readers never panic, whatever the body.
func FuzzParseOtherProtocols(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":[{"type":"function_call_output","output":[{"type":"input_text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"m","input":"hi","instructions":"base"}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":null}}]},{"role":"user","parts":[{"functionResponse":{"response":"x"}}]}]}`))
	f.Add([]byte(`{"input":{"type":1},"contents":[{"parts":[{"text":1}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r1, r2 Request
		_ = parseResponsesRequest(body, &r1)
		_ = parseGeminiRequest(body, "m", &r2)
	})
}
