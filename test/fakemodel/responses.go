package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API, as the Codex CLI 0.169 speaks it: one endpoint,
// POST {base_url}/responses, streamed as server-sent events. Point Codex at
// the server with a model provider whose base_url is ResponsesURL().

// responsesRequest is the part of a Responses API request body the server
// reads. The base prompt comes as developer messages in input, not as
// instructions; both are read.
type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Stream       bool            `json:"stream"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// responsesItem is one input item of any type; each type fills its own
// fields.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// parseResponsesRequest fills r from a Responses API body. Input items
// become Messages: a message keeps its role (developer messages also go to
// System), a function_call is an assistant message "tool_use NAME ARGS",
// and consecutive function_call_output items are one user message with
// ToolResult set, so that LastIsToolResult means what it means for the
// Messages API.
func parseResponsesRequest(body []byte, r *Request) error {
	var w responsesRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("decoding Responses API request: %w", err)
	}
	r.Model = w.Model
	r.Stream = w.Stream
	for _, t := range w.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		r.Tools = append(r.Tools, name)
	}
	var items []responsesItem
	if s := strings.TrimSpace(string(w.Input)); strings.HasPrefix(s, `"`) {
		var text string
		if err := json.Unmarshal(w.Input, &text); err != nil {
			return fmt.Errorf("decoding input: %w", err)
		}
		items = []responsesItem{{Type: "message", Role: "user", Content: w.Input}}
	} else if s != "" && s != "null" {
		if err := json.Unmarshal(w.Input, &items); err != nil {
			return fmt.Errorf("decoding input: %w", err)
		}
	}
	system := []string{}
	if w.Instructions != "" {
		system = append(system, w.Instructions)
	}
	for i, it := range items {
		switch it.Type {
		case "message", "":
			text, err := responsesContentText(it.Content)
			if err != nil {
				return fmt.Errorf("decoding input[%d]: %w", i, err)
			}
			if it.Role == "developer" || it.Role == "system" {
				system = append(system, text)
			}
			r.Messages = append(r.Messages, Message{Role: it.Role, Text: text})
		case "function_call":
			r.Messages = append(r.Messages, Message{Role: "assistant", Text: "tool_use " + it.Name + " " + it.Arguments})
		case "function_call_output":
			out, err := responsesContentText(it.Output)
			if err != nil {
				return fmt.Errorf("decoding input[%d] output: %w", i, err)
			}
			if n := len(r.Messages); n > 0 && r.Messages[n-1].ToolResult {
				r.Messages[n-1].Text += "\n" + out
				continue
			}
			r.Messages = append(r.Messages, Message{Role: "user", Text: out, ToolResult: true})
		}
	}
	r.System = strings.Join(system, "\n")
	r.setLastUser()
	return nil
}

// responsesContentText reduces a content value (a string or a list of
// input_text/output_text parts) to text.
func responsesContentText(raw json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", nil
	}
	if s[0] == '"' {
		var text string
		err := json.Unmarshal(raw, &text)
		return text, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n"), nil
}

// responsesOutput renders a reply as the Responses API's output items: an
// assistant message with the text, then one function_call per tool call.
func (rp reply) responsesOutput(seq int) []map[string]any {
	var out []map[string]any
	for i, b := range rp.msg.Content {
		switch b.Type {
		case "text":
			out = append(out, map[string]any{
				"type": "message", "role": "assistant", "status": "completed",
				"id":      fmt.Sprintf("msg_fake_%06d_%d", seq, i),
				"content": []map[string]any{{"type": "output_text", "text": *b.Text, "annotations": []any{}}},
			})
		case "tool_use":
			out = append(out, map[string]any{
				"type": "function_call", "status": "completed",
				"id":        fmt.Sprintf("fc_fake_%06d_%d", seq, i),
				"call_id":   b.ID,
				"name":      b.Name,
				"arguments": string(b.Input),
			})
		}
	}
	return out
}

// responsesUsage is the reply's usage in the Responses API's shape, where
// input_tokens includes the cached ones.
func (rp reply) responsesUsage() map[string]any {
	u := rp.msg.Usage
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadInputTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          in + u.OutputTokens,
	}
}

// responsesObject is the whole response object, as response.completed
// carries it and as a request without stream gets it.
func (rp reply) responsesObject(seq int, status string, output []map[string]any, usage map[string]any) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	obj := map[string]any{
		"id": fmt.Sprintf("resp_fake_%06d", seq), "object": "response",
		"model": rp.msg.Model, "status": status, "output": output,
	}
	if usage != nil {
		obj["usage"] = usage
	}
	return obj
}

// responsesEvents returns the event stream of a reply: response.created,
// then output_item.added, the deltas and output_item.done for each item,
// then response.completed with the output and the usage. Function call
// arguments are sent in two deltas, as real servers split them.
func (rp reply) responsesEvents(seq int) []event {
	output := rp.responsesOutput(seq)
	evs := []event{
		{"response.created", map[string]any{"type": "response.created", "response": rp.responsesObject(seq, "in_progress", nil, nil)}},
		{"response.in_progress", map[string]any{"type": "response.in_progress", "response": rp.responsesObject(seq, "in_progress", nil, nil)}},
	}
	for i, item := range output {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			added["status"] = "in_progress"
			text := item["content"].([]map[string]any)[0]["text"].(string)
			id := item["id"]
			evs = append(evs,
				event{"response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added}},
				event{"response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": 0,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}},
				event{"response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": 0, "delta": text}},
				event{"response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": text}},
				event{"response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0,
					"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
		case "function_call":
			added["arguments"] = ""
			args := item["arguments"].(string)
			half := len(args) / 2
			id := item["id"]
			evs = append(evs, event{"response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added}})
			for _, part := range []string{args[:half], args[half:]} {
				evs = append(evs, event{"response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": part}})
			}
			evs = append(evs, event{"response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": args}})
		}
		evs = append(evs, event{"response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": item}})
	}
	evs = append(evs, event{"response.completed", map[string]any{"type": "response.completed",
		"response": rp.responsesObject(seq, "completed", output, rp.responsesUsage())}})
	// The Responses API numbers its events.
	for i := range evs {
		evs[i].data.(map[string]any)["sequence_number"] = i
	}
	return evs
}

// responsesError is the OpenAI error shape.
func responsesError(status int, typ, message string) []byte {
	b, _ := json.Marshal(map[string]any{
		"error": map[string]any{"type": typ, "message": message, "code": typ, "param": nil},
	})
	return b
}

// writeResponses sends a rendered reply for a Responses API request.
func writeResponses(w http.ResponseWriter, rp reply, r *Request) {
	if !r.Stream {
		b, err := json.Marshal(rp.responsesObject(r.Seq, "completed", rp.responsesOutput(r.Seq), rp.responsesUsage()))
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, responsesError(http.StatusInternalServerError, "server_error", "fakemodel: "+err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = writeEvents(w, rp.responsesEvents(r.Seq))
}
