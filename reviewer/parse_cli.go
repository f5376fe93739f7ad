package reviewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// codexEvent is the part of one `codex exec --json` line that drover reads
// (openai/codex codex-rs/exec/src/exec_events.rs, ThreadEvent). Unknown
// event and item types are ignored, as the CLI adds them over time.
type codexEvent struct {
	Type string `json:"type"`
	// Message is an "error" event's text.
	Message string `json:"message"`
	// Error is a "turn.failed" event's error.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	// Item is an "item.*" event's item; the answer is the text of an
	// "agent_message" item.
	Item *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
	// Usage is a "turn.completed" event's token usage (codexUsage), kept
	// raw so that an odd usage does not make the turn itself unreadable.
	Usage json.RawMessage `json:"usage"`
}

// codexUsage counts tokens as the OpenAI API does: cached_input_tokens is
// part of input_tokens.
type codexUsage struct {
	InputTokens       float64 `json:"input_tokens"`
	CachedInputTokens float64 `json:"cached_input_tokens"`
	OutputTokens      float64 `json:"output_tokens"`
}

// ParseCodexOutput reads the stdout of `codex exec --json --output-schema
// FILE`: JSON Lines events. It is pure.
//
// A run succeeded when its last turn ended with "turn.completed"; its answer
// is the text of the last "agent_message" item, a JSON string matching the
// schema (a JSON object inside prose or a code fence is accepted too). A
// "turn.failed" event, or "error" events with no completed turn after them,
// is ErrIsError with the CLI's message. Tokens come from the turn.completed
// usage; codex reports no cost, so CostUSD is 0. Lines that are not JSON
// events are skipped. The error wraps ErrUnparsable, ErrIsError,
// ErrNoStructuredOutput or ErrBadVerdict.
func ParseCodexOutput(stdout []byte) (Parsed, error) {
	var (
		p                              Parsed
		events                         int
		completed, failed, haveMessage bool
		message, failure, lastError    string
	)
	for line := range bytes.Lines(stdout) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			continue
		}
		events++
		switch ev.Type {
		case "turn.started":
			// Only the last turn's outcome counts; exec runs one.
			completed, failed, haveMessage = false, false, false
		case "item.completed":
			if ev.Item != nil && ev.Item.Type == "agent_message" {
				message, haveMessage = ev.Item.Text, true
			}
		case "turn.completed":
			completed = true
			var u codexUsage
			if json.Unmarshal(ev.Usage, &u) == nil {
				p.InputTokens, p.OutputTokens = tokens(u.InputTokens), tokens(u.OutputTokens)
				p.CachedInputTokens = min(tokens(u.CachedInputTokens), p.InputTokens)
			}
		case "turn.failed":
			failed, failure = true, "turn failed"
			if ev.Error != nil && strings.TrimSpace(ev.Error.Message) != "" {
				failure = ev.Error.Message
			}
		case "error":
			lastError = ev.Message
		}
	}
	switch {
	case events == 0:
		return p, fmt.Errorf("%w: no codex JSON event in %q", ErrUnparsable, cut(string(bytes.TrimSpace(stdout)), 80))
	case failed:
		return p, fmt.Errorf("%w: turn.failed: %s", ErrIsError, strconv.Quote(cut(failure, maxErrorTextBytes)))
	case !completed && lastError != "":
		return p, fmt.Errorf("%w: error: %s", ErrIsError, strconv.Quote(cut(lastError, maxErrorTextBytes)))
	case !completed:
		return p, fmt.Errorf("%w: no turn.completed event", ErrNoStructuredOutput)
	case !haveMessage:
		return p, fmt.Errorf("%w: the turn completed with no agent_message", ErrNoStructuredOutput)
	}
	obj, err := answerJSON(message)
	if err != nil {
		return p, err
	}
	return p, decodeAnswer(obj, &p)
}

// geminiOutput is gemini's --output-format json result
// (google-gemini/gemini-cli packages/core/src/output/types.ts, JsonOutput).
type geminiOutput struct {
	Response *string         `json:"response"`
	Stats    json.RawMessage `json:"stats"`
	Error    *struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// geminiStats is the part of SessionMetrics (packages/core/src/telemetry/
// uiTelemetry.ts) with token counts: per model, prompt tokens (cached ones
// included) and candidates (the output).
type geminiStats struct {
	Models map[string]struct {
		Tokens struct {
			Prompt     float64 `json:"prompt"`
			Candidates float64 `json:"candidates"`
			Cached     float64 `json:"cached"`
		} `json:"tokens"`
	} `json:"models"`
}

// ParseGeminiOutput reads the stdout of `gemini --output-format json`: one
// JSON object (pretty-printed) with "response", "stats" and, on failure,
// "error". It is pure.
//
// An "error" object is ErrIsError with its type and message. Otherwise the
// verdict is the JSON object in "response", the model's final text: gemini
// has no response schema flag, so the object may come bare, inside a
// Markdown code fence, or amid prose (the last fenced block that holds one
// wins, then the span from the first '{' to the last '}'). Tokens are summed
// over stats.models; gemini reports no cost, so CostUSD is 0. The error
// wraps ErrUnparsable, ErrIsError, ErrNoStructuredOutput or ErrBadVerdict.
func ParseGeminiOutput(stdout []byte) (Parsed, error) {
	var p Parsed
	doc, err := lastJSON(stdout)
	if err != nil {
		return p, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(doc, &fields) != nil {
		return p, fmt.Errorf("%w: gemini's result is not a JSON object", ErrUnparsable)
	}
	_, hasResponse := fields["response"]
	_, hasError := fields["error"]
	_, hasStats := fields["stats"]
	if !hasResponse && !hasError && !hasStats {
		return p, fmt.Errorf("%w: an object with none of \"response\", \"error\", \"stats\"", ErrUnparsable)
	}
	var out geminiOutput
	if err := json.Unmarshal(doc, &out); err != nil {
		return p, fmt.Errorf("%w: decoding gemini's result: %v", ErrUnparsable, err)
	}
	var st geminiStats
	if json.Unmarshal(out.Stats, &st) == nil {
		for _, m := range st.Models {
			in := tokens(m.Tokens.Prompt)
			p.InputTokens += in
			p.OutputTokens += tokens(m.Tokens.Candidates)
			p.CachedInputTokens += min(tokens(m.Tokens.Cached), in)
		}
	}
	if out.Error != nil && (out.Error.Type != "" || out.Error.Message != "") {
		return p, fmt.Errorf("%w: %s", ErrIsError, describeGeminiError(out))
	}
	if out.Response == nil {
		return p, fmt.Errorf("%w: gemini's result has no response", ErrNoStructuredOutput)
	}
	obj, err := answerJSON(*out.Response)
	if err != nil {
		return p, err
	}
	return p, decodeAnswer(obj, &p)
}

func describeGeminiError(out geminiOutput) string {
	e := out.Error
	s := strconv.Quote(cut(e.Message, maxErrorTextBytes))
	if e.Type != "" {
		s = cut(e.Type, 60) + " " + s
	}
	if c := bytes.TrimSpace(e.Code); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		s += " (code " + cut(string(c), 20) + ")"
	}
	return s
}

// stderrError returns what a failed run's stderr says about why, for the
// CLIs that print a structured error there: gemini writes its JSON error
// object to stderr on a fatal error. It is nil when stderr says nothing
// drover can read.
func stderrError(cli string, stderr []byte) error {
	if cli != CLIGemini {
		return nil
	}
	if _, err := ParseGeminiOutput(stderr); err != nil && errors.Is(err, ErrIsError) {
		return err
	}
	return nil
}

// answerJSON finds the verdict object in a model's final text. A strict
// schema makes it the whole text; a model told the schema only in its
// prompt may wrap it in a code fence or a sentence. The search is linear:
// at most maxCandidates fenced blocks are tried.
func answerJSON(text string) ([]byte, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("%w: the answer is empty", ErrNoStructuredOutput)
	}
	if isObject(t) {
		return []byte(t), nil
	}
	var found string
	rest := t
	for range maxCandidates {
		open := strings.Index(rest, "```")
		if open < 0 {
			break
		}
		body := rest[open+3:]
		// The opening fence's line may name a language ("```json").
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			break
		}
		body = body[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			break
		}
		if c := strings.TrimSpace(body[:end]); isObject(c) {
			found = c
		}
		rest = body[end+3:]
	}
	if found != "" {
		return []byte(found), nil
	}
	if i, j := strings.IndexByte(t, '{'), strings.LastIndexByte(t, '}'); i >= 0 && j > i && isObject(t[i:j+1]) {
		return []byte(t[i : j+1]), nil
	}
	return nil, fmt.Errorf("%w: the answer holds no JSON object: %q", ErrNoStructuredOutput, cut(t, 80))
}

func isObject(s string) bool {
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}
