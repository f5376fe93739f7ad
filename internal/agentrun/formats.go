package agentrun

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Format is the shape of an agent's JSON event stream on stdout.
type Format string

// The formats Run reads.
const (
	// FormatClaude is Claude Code's stream-json (also the zero Format):
	// one line per message, a result line with the cost at the end.
	FormatClaude Format = ""
	// FormatCodex is `codex exec --json`: thread.started, turn.started,
	// item.started / item.completed (agent_message, command_execution,
	// file_change, mcp_tool_call...), turn.completed with the turn's
	// token usage, turn.failed and error.
	FormatCodex Format = "codex"
	// FormatGemini is `gemini --output-format stream-json`: init,
	// message (user, then the assistant's text in deltas), tool_use,
	// tool_result, error and a result line with the run's token stats.
	FormatGemini Format = "gemini"
)

// Pricer prices token usage for a CLI that reports tokens but no cost
// (codex, gemini): the cost of input (not cached), cached input and output
// tokens of model, in dollars.
type Pricer func(model string, input, cached, output int64) float64

// lineParser turns one line of an agent's stdout into an event. Codex and
// Gemini spread what a Claude Code line says over several lines (a tool
// call's start and end, an answer in deltas, usage only at the end), so
// their parsers keep what they have seen.
type lineParser interface {
	parse(line []byte) (Event, bool)
}

type claudeParser struct{}

func (claudeParser) parse(line []byte) (Event, bool) { return ParseLine(line) }

// newParser returns the reader of format f's lines; model names the model
// for a stream that does not (codex's), and price prices its usage.
func newParser(f Format, model string, price Pricer) lineParser {
	switch f {
	case FormatCodex:
		return &codexParser{model: model, price: price, started: map[string]bool{}}
	case FormatGemini:
		return &geminiParser{model: model, price: price}
	}
	return claudeParser{}
}

// jsonObject reads a line that is a JSON object with a non-empty string
// "type".
func jsonObject(line []byte) (map[string]json.RawMessage, string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, "", false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		return nil, "", false
	}
	var typ string
	if !decode(obj["type"], &typ) || typ == "" {
		return nil, "", false
	}
	return obj, typ, true
}

// count reads a token count: a non-negative JSON number below 1e15 (a
// larger or negative one is taken as 0, so that no sum overflows).
func count(raw json.RawMessage) int64 {
	var f float64
	if !decode(raw, &f) || f < 0 || f >= 1e15 {
		return 0
	}
	return int64(f)
}

// codexParser reads `codex exec --json`. The thread id is the session id;
// a command's item.started is its tool call and its item.completed the
// result; turn.completed is a result line whose cost is priced from the
// turn's usage, summed over the turns so far; turn.failed is an error
// result.
type codexParser struct {
	model   string
	price   Pricer
	thread  string
	started map[string]bool
	// lastText is the last agent_message: the run's final answer.
	lastText string
	turns    int
	usage    Usage
	cost     float64
}

// codexItem is a thread item of codex exec's events, with the fields of
// every kind drover reads.
type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *float64        `json:"exit_code"`
	Status           string          `json:"status"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Changes          json.RawMessage `json:"changes"`
	Error            json.RawMessage `json:"error"`
}

func (p *codexParser) parse(line []byte) (Event, bool) {
	obj, typ, ok := jsonObject(line)
	if !ok {
		return Event{}, false
	}
	ev := Event{Type: typ, SessionID: p.thread, Model: p.model}
	switch typ {
	case "thread.started":
		decode(obj["thread_id"], &p.thread)
		ev.Type, ev.Subtype, ev.SessionID = TypeSystem, "init", p.thread
	case "item.started", "item.completed":
		var it codexItem
		if !decode(obj["item"], &it) {
			break
		}
		p.item(&ev, typ == "item.completed", it)
	case "turn.completed":
		var u struct {
			Input  json.RawMessage `json:"input_tokens"`
			Cached json.RawMessage `json:"cached_input_tokens"`
			Output json.RawMessage `json:"output_tokens"`
		}
		decode(obj["usage"], &u)
		p.turns++
		// Without -m codex runs its configured default, which the stream
		// does not name: priced as codex's family.
		p.cost += addTokens(&p.usage, p.price, cmp.Or(p.model, AgentCodex), count(u.Input), count(u.Cached), count(u.Output))
		p.result(&ev, "success", false, p.lastText)
	case "turn.failed":
		p.result(&ev, typ, true, errorMessage(obj))
	case "error":
		// An error the CLI reports; turn.failed follows when it ends the
		// run. Kept as Claude Code's API error, for limit detection.
		ev.Type = TypeAssistant
		decode(obj["message"], &ev.Error)
	}
	return ev, true
}

func (p *codexParser) result(ev *Event, subtype string, isErr bool, text string) {
	u := p.usage
	ev.Type, ev.Subtype, ev.IsError, ev.Text = TypeResult, subtype, isErr, text
	ev.Usage, ev.CostUSD, ev.Turns = &u, p.cost, p.turns
}

// item folds a thread item into ev: a tool call when it starts (or when it
// completes unseen), its result when it completes, the text of an agent
// message.
func (p *codexParser) item(ev *Event, completed bool, it codexItem) {
	var call *ToolCall
	switch it.Type {
	case "agent_message":
		if completed {
			ev.Type, ev.Text = TypeAssistant, it.Text
			p.lastText = it.Text
		}
		return
	case "command_execution":
		call = &ToolCall{ID: it.ID, Name: "command_execution", Command: it.Command}
	case "file_change":
		call = &ToolCall{ID: it.ID, Name: "file_change", Path: firstChangePath(it.Changes)}
	case "mcp_tool_call":
		call = &ToolCall{ID: it.ID, Name: "mcp:" + it.Server + "/" + it.Tool}
	case "web_search":
		call = &ToolCall{ID: it.ID, Name: "web_search"}
	default:
		return
	}
	if !completed || !p.started[it.ID] || it.ID == "" {
		if !completed {
			p.started[it.ID] = true
		}
		ev.Type = TypeAssistant
		ev.ToolCalls = []ToolCall{*call}
	}
	if completed {
		delete(p.started, it.ID)
		isErr := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0) || len(it.Error) > 0 && string(it.Error) != "null"
		ev.Type = TypeUser
		ev.ToolResults = []ToolResult{{ToolUseID: it.ID, IsError: isErr, Text: clipText(it.AggregatedOutput, MaxToolResultText)}}
	}
}

func firstChangePath(raw json.RawMessage) string {
	var changes []struct {
		Path string `json:"path"`
	}
	if decode(raw, &changes) && len(changes) > 0 {
		return changes[0].Path
	}
	return ""
}

// errorMessage reads {"error":{"message":...}} or {"error":"..."}.
func errorMessage(obj map[string]json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if decode(obj["error"], &e) {
		return e.Message
	}
	var s string
	decode(obj["error"], &s)
	return s
}

// geminiParser reads `gemini --output-format stream-json`. The assistant's
// answer comes in deltas, joined into the result's text; the result line's
// stats give the tokens, per model when it lists them.
type geminiParser struct {
	model string
	price Pricer
	text  strings.Builder
}

func (p *geminiParser) parse(line []byte) (Event, bool) {
	obj, typ, ok := jsonObject(line)
	if !ok {
		return Event{}, false
	}
	ev := Event{Type: typ}
	decode(obj["session_id"], &ev.SessionID)
	switch typ {
	case "init":
		if decode(obj["model"], &ev.Model) && ev.Model != "" {
			p.model = ev.Model
		}
		ev.Type, ev.Subtype = TypeSystem, "init"
	case "message":
		var role, content string
		decode(obj["role"], &role)
		decode(obj["content"], &content)
		if role != "assistant" {
			ev.Type, ev.Text = TypeUser, content
			break
		}
		ev.Type, ev.Text, ev.Model = TypeAssistant, content, p.model
		if p.text.Len() < MaxToolResultText*4 {
			p.text.WriteString(content)
		}
	case "tool_use":
		var name, id string
		decode(obj["tool_name"], &name)
		decode(obj["tool_id"], &id)
		var in struct {
			Command  any `json:"command"`
			FilePath any `json:"file_path"`
			Path     any `json:"path"`
			DirPath  any `json:"dir_path"`
		}
		decode(obj["parameters"], &in)
		str := func(v any) string { s, _ := v.(string); return s }
		c := ToolCall{ID: id, Name: name}
		if name == "run_shell_command" {
			c.Command = str(in.Command)
		}
		for _, v := range []any{in.FilePath, in.Path, in.DirPath} {
			if s := str(v); s != "" {
				c.Path = s
				break
			}
		}
		ev.Type, ev.ToolCalls = TypeAssistant, []ToolCall{c}
	case "tool_result":
		var id, status, output string
		decode(obj["tool_id"], &id)
		decode(obj["status"], &status)
		decode(obj["output"], &output)
		if output == "" {
			output = errorMessage(obj)
		}
		ev.Type = TypeUser
		ev.ToolResults = []ToolResult{{ToolUseID: id, IsError: status != "success", Text: clipText(output, MaxToolResultText)}}
	case "result":
		var status string
		decode(obj["status"], &status)
		ev.Type, ev.Subtype, ev.Turns = TypeResult, status, 1
		ev.IsError = status != "success"
		ev.Text = p.text.String()
		if ev.IsError {
			if msg := errorMessage(obj); msg != "" {
				ev.Text = msg
			}
		}
		ev.Usage, ev.CostUSD = p.stats(obj["stats"])
	}
	return ev, true
}

// geminiTokens is the token part of stream-json stats, in total and per
// model. input_tokens counts the cached input too.
type geminiTokens struct {
	Input  json.RawMessage `json:"input_tokens"`
	Output json.RawMessage `json:"output_tokens"`
	Cached json.RawMessage `json:"cached"`
}

// stats reads a result line's stats: the summed usage and its price, each
// model's tokens at that model's price.
func (p *geminiParser) stats(raw json.RawMessage) (*Usage, float64) {
	var st struct {
		geminiTokens
		Models map[string]geminiTokens `json:"models"`
	}
	if !decode(raw, &st) {
		return nil, 0
	}
	byModel := st.Models
	if len(byModel) == 0 {
		byModel = map[string]geminiTokens{cmp.Or(p.model, AgentGemini): st.geminiTokens}
	}
	var u Usage
	var cost float64
	// In order: a float sum must not depend on map order.
	for _, model := range slices.Sorted(maps.Keys(byModel)) {
		t := byModel[model]
		cost += addTokens(&u, p.price, model, count(t.Input), count(t.Cached), count(t.Output))
	}
	return &u, cost
}

// addTokens adds to u the tokens of a Codex or Gemini call, counted as
// OpenAI and Google count them (the input holds the cached input, which u
// keeps apart), and returns their price at model's (0 without price).
func addTokens(u *Usage, price Pricer, model string, in, cached, out int64) float64 {
	cached = min(cached, in)
	u.InputTokens += in - cached
	u.CacheReadInputTokens += cached
	u.OutputTokens += out
	if price == nil {
		return 0
	}
	return price(model, in-cached, cached, out)
}
