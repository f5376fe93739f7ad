package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says which endpoint a request went to.
type Kind string

// The endpoints the server tells apart. Messages, Responses and Generate
// are model turns in the three wire protocols (Claude Code, Codex, Gemini
// CLI); the same scenario rules answer each.
const (
	KindMessages    Kind = "messages"     // POST /v1/messages
	KindCountTokens Kind = "count_tokens" // POST /v1/messages/count_tokens, or Gemini's :countTokens
	KindResponses   Kind = "responses"    // POST /v1/responses (OpenAI Responses API)
	KindGenerate    Kind = "generate"     // POST /v1beta/models/M:streamGenerateContent or :generateContent
	KindOther       Kind = "other"        // anything else; answered 404
)

// Turn reports whether k is a model turn of one of the wire protocols.
func (k Kind) Turn() bool {
	return k == KindMessages || k == KindResponses || k == KindGenerate
}

// Request is one recorded request and how it was answered.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq  int
	Time time.Time
	Kind Kind
	// Method and Path are as received; Path includes the query.
	Method, Path string
	Header       http.Header
	// Body is the raw request body.
	Body []byte

	// SessionID is the CLI's session as its requests carry it: Claude
	// Code's X-Claude-Code-Session-Id header, Codex's session-id header (its
	// thread id, the Stop hook's session_id); empty for the Gemini CLI,
	// whose requests carry none.
	SessionID string
	// Model, Stream, System and Tools come from the Messages API body.
	Model  string
	Stream bool
	// System is the text of the system prompt's blocks, joined by newlines.
	System string
	// Messages is the conversation, each message reduced to its text.
	Messages []Message
	// Tools are the names in the request's tools list, in order.
	Tools []string
	// LastUserText is the text of the last user message: see Message.Text.
	LastUserText string
	// LastIsToolResult says whether the last user message carries a
	// tool_result block, i.e. the CLI is reporting a tool it ran.
	LastIsToolResult bool
	// JSONMode says whether a Gemini request asked for a JSON answer
	// (responseMimeType application/json): the CLI's own helper calls, such
	// as its router and loop checks, not the agent's turn.
	JSONMode bool

	// Rule is the index of the rule that answered, or -1.
	Rule int
	// RuleName is the answering rule's name, if it has one.
	RuleName string
	// Status is the HTTP status of the answer.
	Status int
	// Error describes why the request was not answered normally: no rule
	// matched, the body was not a Messages API request, or an unknown path.
	Error string
}

// Message is one message of a request, reduced to text.
type Message struct {
	// Role is "user", "assistant", or another role the CLI sends (2.1.197
	// also sends "system" messages between the turns).
	Role string
	// Text joins, with newlines, the message's text blocks, the contents of
	// its tool_result blocks and, for tool_use blocks, "tool_use NAME INPUT".
	Text string
	// ToolResult says whether the message carries a tool_result block.
	ToolResult bool
}

// Matched reports whether a rule answered r.
func (r Request) Matched() bool { return r.Rule >= 0 }

// Summary is a one-line description of r for errors and logs.
func (r Request) Summary() string {
	if !r.Kind.Turn() {
		return fmt.Sprintf("#%d %s %s", r.Seq, r.Method, r.Path)
	}
	return fmt.Sprintf("#%d model=%s kind=%s tools=%d messages=%d tool_result=%t last_user=%q",
		r.Seq, r.Model, r.Kind, len(r.Tools), len(r.Messages), r.LastIsToolResult, clip(r.LastUserText, 300))
}

// HasTool reports whether the request offered the tool named name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// clip shortens s to at most n bytes, keeping its end, which in the CLI's
// user messages is the part a script author wrote (reminders come first).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// wireRequest is the part of a Messages API request body the server reads.
// Unknown fields are ignored: the CLI adds fields over time.
type wireRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []wireMessage   `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream    bool `json:"stream"`
	MaxTokens int  `json:"max_tokens"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// wireBlock is a content block of any type; each type fills its own fields.
type wireBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
}

// parseMessagesRequest fills the Messages API fields of r from body.
func parseMessagesRequest(body []byte, r *Request) error {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("decoding Messages API request: %w", err)
	}
	r.Model = w.Model
	r.Stream = w.Stream
	sys, _, err := contentText(w.System, 0)
	if err != nil {
		return fmt.Errorf("decoding system prompt: %w", err)
	}
	r.System = sys
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	r.Messages = make([]Message, 0, len(w.Messages))
	for i, m := range w.Messages {
		text, tr, err := contentText(m.Content, 0)
		if err != nil {
			return fmt.Errorf("decoding messages[%d]: %w", i, err)
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Text: text, ToolResult: tr})
	}
	r.setLastUser()
	return nil
}

// setLastUser sets LastUserText and LastIsToolResult from the last user
// message.
func (r *Request) setLastUser() {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			r.LastUserText = r.Messages[i].Text
			r.LastIsToolResult = r.Messages[i].ToolResult
			return
		}
	}
}

// contentText reduces message content (a string, null, or a list of blocks)
// to text, and says whether it held a tool_result block. depth stops
// tool_result contents from nesting without bound.
func contentText(raw json.RawMessage, depth int) (string, bool, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", false, nil
	}
	if s[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false, err
		}
		return text, false, nil
	}
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", false, err
	}
	var parts []string
	toolResult := false
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			toolResult = true
			if depth > 0 {
				continue
			}
			text, _, err := contentText(b.Content, depth+1)
			if err != nil {
				return "", false, fmt.Errorf("tool_result content: %w", err)
			}
			parts = append(parts, text)
		case "tool_use":
			parts = append(parts, "tool_use "+b.Name+" "+string(b.Input))
		}
	}
	return strings.Join(parts, "\n"), toolResult, nil
}

// anyUserContains reports whether some user message of r holds sub.
func (r Request) anyUserContains(sub string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Text, sub) {
			return true
		}
	}
	return false
}
