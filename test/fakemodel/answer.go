package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// match reports whether rule cr accepts request r and, if it does, returns
// the groups of its regexp (nil without one). Times is checked by the
// server, which owns the counts.
func (cr compiledRule) match(r *Request) ([]string, bool) {
	w := cr.When
	if !r.Kind.Turn() {
		return nil, false
	}
	if w.JSONMode != nil && *w.JSONMode != r.JSONMode {
		return nil, false
	}
	if w.LastUserContains != "" && !strings.Contains(r.LastUserText, w.LastUserContains) {
		return nil, false
	}
	if w.NotContains != "" && strings.Contains(r.LastUserText, w.NotContains) {
		return nil, false
	}
	if w.AnyUserContains != "" && !r.anyUserContains(w.AnyUserContains) {
		return nil, false
	}
	if w.LastIsToolResult != nil && *w.LastIsToolResult != r.LastIsToolResult {
		return nil, false
	}
	if w.HasTool != "" && !r.HasTool(w.HasTool) {
		return nil, false
	}
	if w.ModelContains != "" && !strings.Contains(r.Model, w.ModelContains) {
		return nil, false
	}
	if w.SystemContains != "" && !strings.Contains(r.System, w.SystemContains) {
		return nil, false
	}
	if cr.re == nil {
		return nil, true
	}
	groups := cr.re.FindStringSubmatch(r.LastUserText)
	if groups == nil {
		return nil, false
	}
	return groups, true
}

// wireResponse is a Messages API response message.
type wireResponse struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []wireOutBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        wireUsage      `json:"usage"`
}

type wireOutBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// reply is a rendered answer: the full response message, ready to be sent
// as JSON or as an event stream.
type reply struct {
	msg wireResponse
}

// render builds the response of rule cr to request r, filling captures
// from groups.
func render(cr compiledRule, groups []string, r *Request) (reply, error) {
	a := cr.Answer
	sub := func(s string) string { return expand(s, cr.re, groups) }
	msg := wireResponse{
		ID:      fmt.Sprintf("msg_fake_%06d", r.Seq),
		Type:    "message",
		Role:    "assistant",
		Model:   r.Model,
		Content: []wireOutBlock{},
		Usage:   wireUsage{InputTokens: estimateTokens(len(r.Body))},
	}
	out := 0
	if a.Text != "" {
		text := sub(a.Text)
		msg.Content = append(msg.Content, wireOutBlock{Type: "text", Text: &text})
		out += len(text)
	}
	for i, tc := range a.ToolCalls {
		input, err := json.Marshal(walkStrings(tc.Input, sub))
		if err != nil {
			return reply{}, fmt.Errorf("encoding input of tool call %d (%s): %w", i, tc.Name, err)
		}
		msg.Content = append(msg.Content, wireOutBlock{
			Type:  "tool_use",
			ID:    fmt.Sprintf("toolu_fake_%06d_%d", r.Seq, i),
			Name:  tc.Name,
			Input: input,
		})
		out += len(input)
	}
	stop := "end_turn"
	if len(a.ToolCalls) > 0 {
		stop = "tool_use"
	}
	msg.StopReason = &stop
	msg.Usage.OutputTokens = estimateTokens(out)
	if u := a.Usage; u != nil {
		msg.Usage = wireUsage{
			InputTokens:              u.InputTokens,
			OutputTokens:             u.OutputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens:     u.CacheReadInputTokens,
		}
	}
	return reply{msg: msg}, nil
}

// estimateTokens turns a byte count into a plausible token count (about
// four bytes a token, at least one).
func estimateTokens(n int) int {
	return n/4 + 1
}

// event is one server-sent event.
type event struct {
	name string
	data any
}

// events returns the event stream that carries the reply: message_start,
// then start/delta/stop for each content block, message_delta and
// message_stop. Tool inputs are sent in two input_json_delta pieces, as
// real servers split them, so that clients must join them.
func (rp reply) events() []event {
	start := rp.msg
	start.Content = []wireOutBlock{}
	start.StopReason = nil
	// The API's message_start reports the output so far, a token or so;
	// never more than the scripted total.
	start.Usage.OutputTokens = min(1, rp.msg.Usage.OutputTokens)
	evs := []event{{"message_start", map[string]any{"type": "message_start", "message": start}}}
	for i, b := range rp.msg.Content {
		switch b.Type {
		case "text":
			empty := ""
			evs = append(evs,
				event{"content_block_start", map[string]any{"type": "content_block_start", "index": i,
					"content_block": wireOutBlock{Type: "text", Text: &empty}}},
				event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": *b.Text}}})
		case "tool_use":
			evs = append(evs, event{"content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": wireOutBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage(`{}`)}}})
			js := string(b.Input)
			half := len(js) / 2
			for _, part := range []string{js[:half], js[half:]} {
				evs = append(evs, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}}})
			}
		}
		evs = append(evs, event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	evs = append(evs,
		event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": *rp.msg.StopReason, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": rp.msg.Usage.OutputTokens}}},
		event{"message_stop", map[string]any{"type": "message_stop"}})
	return evs
}

// writeEvents writes evs in server-sent-event framing: an "event:" line, a
// "data:" line with the JSON, and a blank line.
func writeEvents(w io.Writer, evs []event) error {
	for _, e := range evs {
		data, err := json.Marshal(e.data)
		if err != nil {
			return fmt.Errorf("encoding %s event: %w", e.name, err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, data); err != nil {
			return fmt.Errorf("writing %s event: %w", e.name, err)
		}
	}
	return nil
}

// errorBody is the Messages API error shape.
func errorBody(typ, message string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": message},
	})
	return b
}
