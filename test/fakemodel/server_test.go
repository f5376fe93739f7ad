package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
)

func start(t *testing.T, sc *Scenario) *Server {
	t.Helper()
	srv, err := Start(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to path and returns the status, content type and body.
func post(t *testing.T, srv *Server, path, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Claude-Code-Session-Id", "sess-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// userBody is a Messages API request whose last user message is text.
func userBody(stream bool, text string) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "claude-opus-4-8",
		"stream":   stream,
		"messages": []any{map[string]any{"role": "user", "content": text}},
		"tools":    []any{map[string]any{"name": "Bash"}},
	})
	return string(b)
}

// toolResultBody is a request whose last user message is a tool_result.
func toolResultBody(output string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-opus-4-8",
		"messages": []any{
			map[string]any{"role": "user", "content": "go"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t", "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t", "content": output}}},
		},
	})
	return string(b)
}

type sse struct {
	Name string
	Data map[string]any
}

// parseSSE splits a server-sent-event stream into events, failing on any
// line that is not "event:", "data:" or the blank separator.
func parseSSE(t *testing.T, body []byte) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
		case line == "":
			if cur.Name == "" || cur.Data == nil {
				t.Fatalf("incomplete event %+v", cur)
			}
			out = append(out, cur)
			cur = sse{}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if cur.Name != "" {
		t.Fatalf("stream ends inside event %+v", cur)
	}
	return out
}

func TestStreamedAnswer(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{
		Name: "work",
		When: Match{LastUserMatches: `work on: (?P<path>\S+)`},
		Answer: Answer{
			Text: "Working on {{path}}.",
			ToolCalls: []ToolCall{
				{Name: "Write", Input: map[string]any{"file_path": "{{path}}", "content": "x\n"}},
				{Name: "Bash", Input: map[string]any{"command": "git add {{path}}", "timeout": 5000, "flags": []any{"{{1}}", true}}},
			},
		},
	}}})
	status, ctype, body := post(t, srv, "/v1/messages?beta=true", userBody(true, "Read and work on: /p/task.md please"))
	if status != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("status %d, content type %q: %s", status, ctype, body)
	}
	evs := parseSSE(t, body)
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
		if e.Data["type"] != e.Name {
			t.Errorf("event %s carries type %v", e.Name, e.Data["type"])
		}
	}
	wantNames := []string{
		"message_start",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("events = %v\nwant %v", names, wantNames)
	}

	// Put the blocks back together as a client would.
	text := ""
	inputs := map[float64]string{}
	toolNames := map[float64]string{}
	for _, e := range evs {
		idx, _ := e.Data["index"].(float64)
		switch e.Name {
		case "content_block_start":
			cb := e.Data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				toolNames[idx] = cb["name"].(string)
				if id, _ := cb["id"].(string); id == "" {
					t.Errorf("tool_use block %v has no id", idx)
				}
			}
		case "content_block_delta":
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				inputs[idx] += d["partial_json"].(string)
			default:
				t.Errorf("unexpected delta %v", d)
			}
		}
	}
	if text != "Working on /p/task.md." {
		t.Errorf("text = %q", text)
	}
	if toolNames[1] != "Write" || toolNames[2] != "Bash" {
		t.Errorf("tool names = %v", toolNames)
	}
	wantInputs := map[float64]map[string]any{
		1: {"file_path": "/p/task.md", "content": "x\n"},
		2: {"command": "git add /p/task.md", "timeout": float64(5000), "flags": []any{"/p/task.md", true}},
	}
	for idx, want := range wantInputs {
		var got map[string]any
		if err := json.Unmarshal([]byte(inputs[idx]), &got); err != nil {
			t.Fatalf("input of block %v = %q: %v", idx, inputs[idx], err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("input of block %v = %v, want %v", idx, got, want)
		}
	}
	md := evs[len(evs)-2].Data["delta"].(map[string]any)
	if md["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v, want tool_use", md["stop_reason"])
	}
	msg := evs[0].Data["message"].(map[string]any)
	if msg["model"] != "claude-opus-4-8" || msg["role"] != "assistant" {
		t.Errorf("message_start message = %v", msg)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Rule != 0 || r.RuleName != "work" || r.SessionID != "sess-1" || !r.Stream || r.Path != "/v1/messages?beta=true" ||
		r.Kind != KindMessages || r.Status != http.StatusOK || !r.HasTool("Bash") {
		t.Errorf("recorded %+v", r)
	}
}

func TestJSONAnswer(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{Answer: Answer{Text: "hello"}}}})
	status, ctype, body := post(t, srv, "/v1/messages", userBody(false, "hi"))
	if status != http.StatusOK || ctype != "application/json" {
		t.Fatalf("status %d, content type %q", status, ctype)
	}
	var msg struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text string
		} `json:"content"`
		Usage struct {
			InputTokens, OutputTokens int
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.StopReason != "end_turn" ||
		len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != "hello" {
		t.Errorf("message = %+v", msg)
	}
}

// TestScriptedUsage: an answer with usage reports exactly those counts, in
// a JSON reply and across the events of a stream (message_start carries
// the input counts, message_delta the output total); without it the
// server's estimate stands.
func TestScriptedUsage(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{
		{When: Match{LastUserContains: "scripted"}, Answer: Answer{Text: "hello", Usage: &Usage{
			InputTokens: 100000, OutputTokens: 250, CacheCreationInputTokens: 30, CacheReadInputTokens: 40,
		}}},
		{When: Match{LastUserContains: "no output"}, Answer: Answer{Text: "hello", Usage: &Usage{InputTokens: 7}}},
		{Answer: Answer{Text: "hello"}},
	}})
	type usage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	// streamed returns message_start's usage and message_delta's output
	// tokens.
	streamed := func(prompt string) (usage, int) {
		t.Helper()
		_, _, body := post(t, srv, "/v1/messages", userBody(true, prompt))
		var start usage
		delta := -1
		for _, e := range parseSSE(t, body) {
			switch e.Name {
			case "message_start":
				b, _ := json.Marshal(e.Data["message"].(map[string]any)["usage"])
				if err := json.Unmarshal(b, &start); err != nil {
					t.Fatal(err)
				}
			case "message_delta":
				delta = int(e.Data["usage"].(map[string]any)["output_tokens"].(float64))
			}
		}
		return start, delta
	}
	jsonUsage := func(prompt string) usage {
		t.Helper()
		_, _, body := post(t, srv, "/v1/messages", userBody(false, prompt))
		var msg struct {
			Usage usage `json:"usage"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatal(err)
		}
		return msg.Usage
	}

	want := usage{InputTokens: 100000, OutputTokens: 250, CacheCreationInputTokens: 30, CacheReadInputTokens: 40}
	if got := jsonUsage("scripted please"); got != want {
		t.Errorf("JSON usage = %+v, want %+v", got, want)
	}
	start, delta := streamed("scripted please")
	if wantStart := (usage{InputTokens: 100000, OutputTokens: 1, CacheCreationInputTokens: 30, CacheReadInputTokens: 40}); start != wantStart || delta != 250 {
		t.Errorf("stream usage: message_start %+v, message_delta output %d; want %+v and 250", start, delta, wantStart)
	}
	if start, delta := streamed("no output please"); start != (usage{InputTokens: 7}) || delta != 0 {
		t.Errorf("stream usage without output: message_start %+v, message_delta output %d; want 7 input tokens and no output", start, delta)
	}
	body := userBody(false, "estimate please")
	if got := jsonUsage("estimate please"); got.InputTokens != len(body)/4+1 || got.OutputTokens != len("hello")/4+1 {
		t.Errorf("estimated usage = %+v, want %d input and %d output tokens", got, len(body)/4+1, len("hello")/4+1)
	}
}

func TestRuleOrderTimesAndUnmatched(t *testing.T) {
	yes := true
	srv := start(t, &Scenario{Rules: []Rule{
		{Name: "first", When: Match{LastUserContains: "task"}, Times: 1, Answer: Answer{Text: "1"}},
		{Name: "second", When: Match{LastUserContains: "task", NotContains: "final"}, Answer: Answer{Text: "2"}},
		{Name: "after-tool", When: Match{LastIsToolResult: &yes}, Times: 2, Answer: Answer{Text: "3"}},
	}})
	steps := []struct {
		body     string
		wantRule string // empty: unmatched
	}{
		{userBody(false, "a task"), "first"},
		{userBody(false, "a task"), "second"},
		{toolResultBody("done"), "after-tool"},
		{userBody(false, "the final task"), ""},
		{toolResultBody("done"), "after-tool"},
		{toolResultBody("done"), ""},
	}
	for i, s := range steps {
		status, _, body := post(t, srv, "/v1/messages", s.body)
		if s.wantRule == "" {
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if status != http.StatusBadRequest || e.Type != "error" || e.Error.Type != "invalid_request_error" ||
				!strings.HasPrefix(e.Error.Message, "fakemodel: no rule matched: #") {
				t.Errorf("step %d: status %d, body %s; want the no-rule error", i, status, body)
			}
			continue
		}
		if status != http.StatusOK {
			t.Errorf("step %d: status %d: %s", i, status, body)
		}
	}
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.RuleName)
	}
	if want := []string{"first", "second", "after-tool", "", "after-tool", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("answering rules = %q, want %q", got, want)
	}
	un := srv.Unmatched()
	if len(un) != 2 || un[0].Seq != 4 || un[1].Seq != 6 || un[0].LastUserText != "the final task" || !strings.Contains(un[0].Error, "no rule matched") {
		t.Errorf("Unmatched() = %+v", un)
	}
	if used := srv.Used(); !reflect.DeepEqual(used, []int{1, 1, 2}) {
		t.Errorf("Used() = %v", used)
	}
}

func TestMatchConditions(t *testing.T) {
	yes, no := true, false
	req := Request{
		Kind:  KindMessages,
		Model: "claude-sonnet-5", System: "You are a reviewer.",
		Tools: []string{"Bash", "StructuredOutput"},
		Messages: []Message{
			{Role: "user", Text: "first ask"},
			{Role: "assistant", Text: "ok"},
			{Role: "user", Text: "second ask: file=a.go", ToolResult: false},
		},
		LastUserText: "second ask: file=a.go",
	}
	tests := []struct {
		name  string
		when  Match
		match bool
	}{
		{"empty", Match{}, true},
		{"last contains", Match{LastUserContains: "second"}, true},
		{"last lacks", Match{LastUserContains: "first"}, false},
		{"any user", Match{AnyUserContains: "first ask"}, true},
		{"any user ignores assistant", Match{AnyUserContains: "ok"}, false},
		{"not contains holds", Match{NotContains: "zzz"}, true},
		{"not contains fails", Match{NotContains: "ask"}, false},
		{"tool result false", Match{LastIsToolResult: &no}, true},
		{"tool result true", Match{LastIsToolResult: &yes}, false},
		{"has tool", Match{HasTool: "StructuredOutput"}, true},
		{"lacks tool", Match{HasTool: "Write"}, false},
		{"model", Match{ModelContains: "sonnet"}, true},
		{"other model", Match{ModelContains: "opus"}, false},
		{"system", Match{SystemContains: "reviewer"}, true},
		{"system lacks", Match{SystemContains: "coder"}, false},
		{"regexp", Match{LastUserMatches: `file=(\S+)`}, true},
		{"regexp fails", Match{LastUserMatches: `^first`}, false},
		{"all hold", Match{LastUserContains: "ask", HasTool: "Bash", ModelContains: "sonnet", LastUserMatches: "a.go$"}, true},
		{"one fails", Match{LastUserContains: "ask", HasTool: "Bash", ModelContains: "opus"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := (&Scenario{Rules: []Rule{{When: tt.when, Answer: Answer{Text: "x"}}}}).compile()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rules[0].match(&req); ok != tt.match {
				t.Errorf("match = %t, want %t", ok, tt.match)
			}
		})
	}
	other := req
	other.Kind = KindCountTokens
	rules, _ := (&Scenario{Rules: []Rule{{Answer: Answer{Text: "x"}}}}).compile()
	if _, ok := rules[0].match(&other); ok {
		t.Error("a rule matched a count_tokens request")
	}
}

func TestOtherEndpoints(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{Answer: Answer{Text: "x"}}}})
	status, _, body := post(t, srv, "/v1/messages/count_tokens?beta=true", userBody(false, strings.Repeat("word ", 100)))
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(body, &ct); err != nil || status != http.StatusOK || ct.InputTokens <= 0 {
		t.Errorf("count_tokens: status %d, body %s, err %v", status, body, err)
	}
	status, _, body = post(t, srv, "/v1/complete", "{}")
	if status != http.StatusNotFound || !strings.Contains(string(body), `"not_found_error"`) {
		t.Errorf("unknown path: status %d, body %s", status, body)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, srv.URL()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status, _, body = post(t, srv, "/v1/messages", "not json")
	if status != http.StatusBadRequest || !strings.Contains(string(body), "decoding Messages API request") {
		t.Errorf("bad body: status %d, body %s", status, body)
	}

	var kinds []string
	for _, r := range srv.Requests() {
		kinds = append(kinds, fmt.Sprintf("%s %s %s %d", r.Kind, r.Method, r.Path, r.Status))
	}
	want := []string{
		"count_tokens POST /v1/messages/count_tokens?beta=true 200",
		"other POST /v1/complete 404",
		"other HEAD / 404",
		"messages POST /v1/messages 400",
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("recorded %q\nwant %q", kinds, want)
	}
	if n := len(srv.Unknown()); n != 2 {
		t.Errorf("Unknown() has %d requests, want 2", n)
	}
	if un := srv.Unmatched(); len(un) != 1 || un[0].Path != "/v1/messages" {
		t.Errorf("Unmatched() = %+v, want the unparsable request only", un)
	}
}

func TestScriptedError(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{Answer: Answer{Error: &APIError{Status: 529, Type: "overloaded_error"}}}}})
	status, _, body := post(t, srv, "/v1/messages", userBody(true, "hi"))
	if status != 529 || !strings.Contains(string(body), `"overloaded_error"`) {
		t.Errorf("status %d, body %s", status, body)
	}
	if r := srv.Requests()[0]; !r.Matched() || r.Status != 529 {
		t.Errorf("recorded %+v", r)
	}
	if n := len(srv.Unmatched()); n != 0 {
		t.Errorf("a scripted error counted as unmatched")
	}
}

// A scripted error carries its headers, as a rate limit's retry-after.
func TestScriptedErrorHeaders(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{Answer: Answer{Error: &APIError{Status: 429, Type: "rate_limit_error", Headers: map[string]string{"retry-after": "7"}}}}}})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(userBody(true, "hi")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status %d, retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestConcurrentRequests checks that Times holds under concurrent requests
// and that the record stays in arrival order.
func TestConcurrentRequests(t *testing.T) {
	srv := start(t, &Scenario{Rules: []Rule{{Times: 10, Answer: Answer{Text: "x"}}}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 20 {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(userBody(true, "hi")))
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[http.StatusOK] != 10 || codes[http.StatusBadRequest] != 10 {
		t.Errorf("status counts = %v, want 10 answered and 10 unmatched", codes)
	}
	reqs := srv.Requests()
	for i, r := range reqs {
		if r.Seq != i+1 {
			t.Fatalf("request %d has Seq %d", i, r.Seq)
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(t.Context(), &Scenario{Rules: []Rule{{}}}); err == nil || !strings.Contains(err.Error(), "rule 0: answer") {
		t.Errorf("Start with an invalid rule: %v", err)
	}
	if _, err := Start(t.Context(), nil); err == nil {
		t.Error("Start with a nil scenario succeeded")
	}
	if _, err := Start(t.Context(), &Scenario{}, WithAddr("256.0.0.1:0")); err == nil {
		t.Error("Start on a bad address succeeded")
	}
}

func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var logged []string
	var mu sync.Mutex
	srv, err := Start(ctx, &Scenario{Rules: []Rule{{Answer: Answer{Text: "x"}}}}, WithLogf(func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(f, a...))
	}))
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _ := post(t, srv, "/v1/messages", userBody(false, "hi")); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], "-> 200 rule 0") {
		t.Errorf("log = %q", logged)
	}
	mu.Unlock()
	cancel()
	// Close runs asynchronously after the cancel; wait for the listener to
	// go away (bounded, so a broken Close fails instead of hanging).
	client := &http.Client{Timeout: time.Second}
	eventually.True(t, 2*time.Second, "the server to stop answering after its context ended", func() bool {
		resp, err := client.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(userBody(false, "hi")))
		if err != nil {
			return true
		}
		resp.Body.Close()
		return false
	})
	srv.Close() // a second Close is harmless
}
