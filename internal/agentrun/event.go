package agentrun

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The values of Event.Type that the Claude Code CLI's stream-json output
// uses. Other CLIs and newer versions may add more; ParseLine passes them
// on with only Type, Subtype and SessionID set.
const (
	TypeSystem    = "system"    // Subtype "init" opens the stream
	TypeAssistant = "assistant" // a model message: text and tool calls
	TypeUser      = "user"      // tool results sent back to the model
	TypeResult    = "result"    // the last line: cost, turns, final text
)

// MaxToolResultText bounds ToolResult.Text. Tool results carry whole files
// and command outputs; a report needs the start of them, not all of them.
const MaxToolResultText = 16 << 10

// Event is one line of an agent's stream-json output, reduced to what a
// supervisor acts on.
type Event struct {
	// Type and Subtype are the line's "type" and "subtype".
	Type, Subtype string
	// SessionID is the agent's session id, when the line has one.
	SessionID string
	// Model is the model named by an init line or an assistant message.
	Model string
	// MessageID is the API message id of an assistant message. Claude
	// Code prints each content block of a message on a line of its own,
	// all with the same id and each with the usage known when it was
	// printed.
	MessageID string
	// Usage is the token usage of an assistant message, nil when the line
	// has none. It is what the agent has spent before its result line
	// gives the cost: an agent killed mid-run never prints one.
	Usage *Usage
	// Text is the text of an assistant message (its text blocks joined by
	// newlines), of a user message given as plain text, or the final
	// "result" of a result line.
	Text string
	// ToolCalls are the tool_use blocks of an assistant message, in order.
	ToolCalls []ToolCall
	// ToolResults are the tool_result blocks of a user message, in order.
	ToolResults []ToolResult
	// IsError is a result line's is_error. A result with subtype "success"
	// can still be an error (an API limit, a login problem).
	IsError bool
	// CostUSD and Turns are a result line's total_cost_usd and num_turns.
	CostUSD float64
	Turns   int
	// APIErrorStatus is a result line's api_error_status: the HTTP status
	// of the API error that ended the run (429, 529...), 0 without one.
	APIErrorStatus int
	// Error is the "error" of an assistant message that the CLI made up
	// to report an API error it gave up on ("rate_limit", "overloaded").
	Error string
}

// Usage is the token usage the API reported for one assistant message.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// ToolCall is one tool the model asked to run.
type ToolCall struct {
	// ID pairs the call with its ToolResult.
	ID string
	// Name is the tool's name ("Bash", "Edit", an MCP tool...).
	Name string
	// Command is the shell command of a Bash call.
	Command string
	// Path is the file or directory a file tool works on (file_path,
	// notebook_path or path in its input), when it has one.
	Path string
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	// ToolUseID is the ID of the ToolCall this answers.
	ToolUseID string
	// IsError is set when the tool failed (a command exited non-zero, an
	// edit did not apply, a permission was denied).
	IsError bool
	// Text is the result's text, at most MaxToolResultText bytes.
	Text string
}

// ParseLine reads one line of stream-json output. It returns false for a
// line that is not a JSON object with a string "type": blank lines, stray
// log output, a truncated line. Unknown types, unknown fields and fields
// of an unexpected JSON type are tolerated: what can be read is returned.
func ParseLine(line []byte) (Event, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Event{}, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return Event{}, false
	}
	var ev Event
	if !decode(obj["type"], &ev.Type) || ev.Type == "" {
		return Event{}, false
	}
	decode(obj["subtype"], &ev.Subtype)
	decode(obj["session_id"], &ev.SessionID)

	switch ev.Type {
	case TypeSystem:
		decode(obj["model"], &ev.Model)
	case TypeAssistant, TypeUser:
		var msg map[string]json.RawMessage
		if !decode(obj["message"], &msg) {
			break
		}
		decode(msg["model"], &ev.Model)
		if ev.Type == TypeAssistant {
			decode(obj["error"], &ev.Error)
			decode(msg["id"], &ev.MessageID)
			var u Usage
			if decode(msg["usage"], &u) {
				ev.Usage = &u
			}
		}
		readContent(&ev, msg["content"])
	case TypeResult:
		decode(obj["result"], &ev.Text)
		decode(obj["is_error"], &ev.IsError)
		decode(obj["total_cost_usd"], &ev.CostUSD)
		var turns float64
		if decode(obj["num_turns"], &turns) && turns > 0 && turns < 1e9 {
			ev.Turns = int(turns)
		}
		var status float64
		if decode(obj["api_error_status"], &status) && status > 0 && status < 1000 {
			ev.APIErrorStatus = int(status)
		}
	}
	return ev, true
}

// decode unmarshals raw into v, reporting whether it could. A missing
// field or one of another JSON type leaves v as it was.
func decode(raw json.RawMessage, v any) bool {
	if len(raw) == 0 {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// block is a content block of a message, with the fields of every kind
// drover reads.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// readContent fills ev from a message's content: a plain string, or a list
// of blocks.
func readContent(ev *Event, content json.RawMessage) {
	var s string
	if decode(content, &s) {
		ev.Text = s
		return
	}
	var raws []json.RawMessage
	if !decode(content, &raws) {
		return
	}
	var texts []string
	for _, raw := range raws {
		var b block
		if !decode(raw, &b) {
			// One odd block does not spoil the others.
			continue
		}
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case "tool_use", "server_tool_use":
			ev.ToolCalls = append(ev.ToolCalls, toolCall(b))
		case "tool_result":
			ev.ToolResults = append(ev.ToolResults, ToolResult{
				ToolUseID: b.ToolUseID,
				IsError:   b.IsError,
				Text:      clipText(resultText(b.Content), MaxToolResultText),
			})
		}
	}
	ev.Text = strings.Join(texts, "\n")
}

func toolCall(b block) ToolCall {
	c := ToolCall{ID: b.ID, Name: b.Name}
	var in struct {
		Command      any `json:"command"`
		FilePath     any `json:"file_path"`
		NotebookPath any `json:"notebook_path"`
		Path         any `json:"path"`
	}
	if !decode(b.Input, &in) {
		return c
	}
	str := func(v any) string { s, _ := v.(string); return s }
	if b.Name == "Bash" {
		c.Command = str(in.Command)
	}
	for _, p := range []any{in.FilePath, in.NotebookPath, in.Path} {
		if s := str(p); s != "" {
			c.Path = s
			break
		}
	}
	return c
}

// resultText returns the text of a tool result's content: a string, or
// the text blocks of a list joined by newlines (images are left out).
func resultText(content json.RawMessage) string {
	var s string
	if decode(content, &s) {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if !decode(content, &blocks) {
		// Some shapes fail as a whole; read them one by one.
		var raws []json.RawMessage
		if !decode(content, &raws) {
			return ""
		}
		for _, r := range raws {
			var b struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if decode(r, &b) {
				blocks = append(blocks, b)
			}
		}
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// clipText cuts s to at most max bytes without splitting a UTF-8
// character, marking the cut.
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const note = " [... cut by drover]"
	cut := max - len(note)
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + note
}
