package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Transcript formats other than Claude Code's, for the usage readers.
const (
	// FormatCodex is a Codex CLI rollout file
	// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl): one
	// {"timestamp","type","payload"} object a line, of types session_meta,
	// turn_context (the model), response_item and event_msg, whose
	// token_count payloads carry the session's token totals.
	FormatCodex = "codex"
	// FormatGemini is a Gemini CLI chat file
	// (~/.gemini/tmp/<project>/chats/session-*.jsonl): a header line, then
	// message records or {"$set":{"messages":[...]}} lines that replace
	// the list; older versions wrote one JSON object with "messages".
	// Each model message ("type":"gemini") has its "tokens" and "model".
	FormatGemini = "gemini"
)

// maxOtherLine bounds one line of a Codex or Gemini transcript: a Gemini
// $set line holds the whole conversation. A longer line is skipped.
const maxOtherLine = 64 << 20

// ScanUsage calls fn with the usage of each model call that the transcript
// r of format (FormatCodex or FormatGemini) reports, as Cursor.Read gives
// Claude Code's: InputTokens without the cached input, which is
// CacheReadInputTokens; OutputTokens with the reasoning (thought) tokens,
// which both APIs bill as output. Lines that are not JSON or not of the
// format are skipped: the file is the CLI's and may be half written. fn's
// error ends the scan and is returned.
func ScanUsage(ctx context.Context, format string, r io.Reader, fn func(Usage) error) error {
	switch format {
	case FormatCodex:
		return scanCodex(ctx, r, fn)
	case FormatGemini:
		return scanGemini(ctx, r, fn)
	}
	return fmt.Errorf("reading usage: unknown transcript format %q", format)
}

// eachLine calls fn with each non-blank line of r up to maxOtherLine
// bytes (a longer one is skipped), checking ctx between lines. The line
// is valid only until fn returns.
func eachLine(ctx context.Context, r io.Reader, fn func([]byte) error) error {
	lr := lineReader{br: bufio.NewReaderSize(r, readBuffer), max: maxOtherLine}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, _, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading transcript: %w", err)
		}
		if !tooLong && len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if err != nil { // io.EOF, after the last (possibly unterminated) line
			return nil
		}
	}
}

// codexTokens is a Codex TokenUsage: input counts the cached input, and
// output the reasoning.
type codexTokens struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

func (t codexTokens) valid() bool {
	const top = 1e15
	return t.Input >= 0 && t.Cached >= 0 && t.Output >= 0 && t.Input < top && t.Cached < top && t.Output < top
}

// scanCodex reports one Usage per token_count event that adds tokens (see
// codexScan.line).
func scanCodex(ctx context.Context, r io.Reader, fn func(Usage) error) error {
	var sc codexScan
	return eachLine(ctx, r, func(line []byte) error { return sc.line(line, fn) })
}

// codexScan is what reading a Codex rollout carries from line to line:
// the model of the last turn_context and the last token totals.
type codexScan struct {
	Model string      `json:"model,omitempty"`
	Total codexTokens `json:"total"`
}

// line reads one line of a rollout and reports the Usage of a token_count
// event that adds tokens: the growth of its total_token_usage since the
// last one (Codex repeats a token_count when only its rate limits
// changed), or its last_token_usage when the total went down (a resumed or
// compacted session). The model is the last turn_context's.
func (sc *codexScan) line(line []byte, fn func(Usage) error) error {
	var rec struct {
		Timestamp string          `json:"timestamp"`
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(line, &rec) != nil {
		return nil
	}
	switch rec.Type {
	case "turn_context":
		var tc struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(rec.Payload, &tc) == nil && tc.Model != "" {
			sc.Model = tc.Model
		}
	case "event_msg":
		var ev struct {
			Type string `json:"type"`
			Info *struct {
				Total *codexTokens `json:"total_token_usage"`
				Last  *codexTokens `json:"last_token_usage"`
			} `json:"info"`
		}
		if json.Unmarshal(rec.Payload, &ev) != nil || ev.Type != "token_count" || ev.Info == nil {
			return nil
		}
		var d codexTokens
		switch t, l := ev.Info.Total, ev.Info.Last; {
		case t != nil && t.valid() && t.Input >= sc.Total.Input && t.Cached >= sc.Total.Cached && t.Output >= sc.Total.Output:
			d = codexTokens{t.Input - sc.Total.Input, t.Cached - sc.Total.Cached, t.Output - sc.Total.Output}
			sc.Total = *t
		case l != nil && l.valid():
			d = *l
			if t != nil && t.valid() {
				sc.Total = *t
			}
		default:
			return nil
		}
		if d == (codexTokens{}) {
			return nil
		}
		cached := min(d.Cached, d.Input)
		ts, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
		return fn(Usage{Model: sc.Model, Timestamp: ts, InputTokens: d.Input - cached, CacheReadInputTokens: cached, OutputTokens: d.Output})
	}
	return nil
}

// CodexCursor is where an incremental reading of a Codex rollout stopped:
// the offset after the last complete line read, the end of that line (to
// tell a file rewritten under it), and the model and token totals read so
// far. A rollout is append-only (a resumed session appends to its file),
// so the next read takes up at the offset and costs what the new lines
// cost. (Gemini CLI rewrites its chat file as a message grows: it has no
// such cursor.) The zero CodexCursor reads from the start; it encodes as
// JSON, to be kept with the session's state.
type CodexCursor struct {
	Offset int64     `json:"offset"`
	Tail   []byte    `json:"tail,omitempty"`
	Scan   codexScan `json:"scan"`
}

// Resumable reports whether the rollout r, of size bytes, may be read on
// from c: not shorter than what was read, and with the end of the last
// line read still just before the offset. Else read it from the start.
func (c CodexCursor) Resumable(r io.ReaderAt, size int64) bool {
	return resumable(r, size, c.Offset, c.Tail)
}

// ReadCodex reads a Codex rollout from r, which starts at c.Offset, to its
// end, calls fn with the usage of each complete line (as ScanUsage), and
// returns the cursor after the last complete line and the usage of an
// unterminated last line, which the CLI may still be writing: it is read
// again by the next ReadCodex. fn's error ends the reading; fn may be nil.
func ReadCodex(ctx context.Context, c CodexCursor, r io.Reader, fn func(Usage) error) (CodexCursor, []Usage, error) {
	if fn == nil {
		fn = func(Usage) error { return nil }
	}
	n := CodexCursor{Offset: c.Offset, Tail: bytes.Clone(c.Tail), Scan: c.Scan}
	lr := lineReader{br: bufio.NewReaderSize(r, readBuffer), max: maxOtherLine, off: c.Offset, last: append(make([]byte, 0, 2*tailLen), c.Tail...)}
	for lines := 1; ; lines++ {
		if lines%64 == 0 {
			if err := ctx.Err(); err != nil {
				return c, nil, err
			}
		}
		line, _, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return c, nil, fmt.Errorf("reading transcript: %w", err)
		}
		blank := tooLong || len(bytes.TrimSpace(line)) == 0
		if err != nil {
			// The end. An unterminated last line is read, but on a copy
			// of the scan: the CLI may still be writing it.
			var pending []Usage
			if !blank {
				sc := n.Scan
				_ = sc.line(line, func(u Usage) error { pending = append(pending, u); return nil })
			}
			return n, pending, nil
		}
		if !blank {
			if ferr := n.Scan.line(line, fn); ferr != nil {
				return c, nil, ferr
			}
		}
		n.Offset = lr.off
		n.Tail = append(n.Tail[:0], lr.last...)
	}
}

// CodexLastMessage returns the text of the last assistant message of the
// Codex rollout r (its output_text parts joined), and false when r has
// none: what a Stop whose payload gives last_assistant_message null
// leaves to the transcript. Lines that are not JSON or not messages are
// skipped, as ScanUsage does.
func CodexLastMessage(ctx context.Context, r io.Reader) (string, bool, error) {
	var last string
	found := false
	err := eachLine(ctx, r, func(line []byte) error {
		if !bytes.Contains(line, []byte(`"assistant"`)) {
			return nil // not a message of the model's: no decoding
		}
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Type != "response_item" || rec.Payload.Type != "message" || rec.Payload.Role != "assistant" {
			return nil
		}
		var b strings.Builder
		for _, c := range rec.Payload.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
		last, found = b.String(), true
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return last, found, nil
}

// lastMessageWindow is how much of a rollout's end CodexLastMessageAt
// reads first: a Stop's last message is at the end, and a rollout grows
// with its session.
const lastMessageWindow = 64 << 10

// CodexLastMessageAt is CodexLastMessage of the rollout r of size bytes,
// read from its end: its last lastMessageWindow bytes, then twice as many
// each time they hold no whole assistant message, so that a Stop of a
// long session reads its end, not the whole rollout. The line a window
// starts inside is skipped: a message after it is the later one.
func CodexLastMessageAt(ctx context.Context, r io.ReaderAt, size int64) (string, bool, error) {
	for w := int64(lastMessageWindow); ; w *= 2 {
		start := max(size-w, 0)
		br := bufio.NewReaderSize(io.NewSectionReader(r, start, size-start), readBuffer)
		if start > 0 {
			if err := skipLine(br); err != nil {
				continue // no line ends in the window
			}
		}
		msg, ok, err := CodexLastMessage(ctx, br)
		if err != nil || ok || start == 0 {
			return msg, ok, err
		}
	}
}

// skipLine reads br past its next newline; io.EOF when there is none.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// geminiMessage is a message of a Gemini chat file, with what the usage
// reader needs.
type geminiMessage struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Model     string `json:"model"`
	Tokens    *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
	} `json:"tokens"`
}

// scanGemini gathers the file's messages (a $set or a whole-file
// "messages" replaces the list; a message record replaces the one of the
// same id, or is added) and reports each model message's tokens once, in
// order, at the end: a message's record is rewritten as it grows.
func scanGemini(ctx context.Context, r io.Reader, fn func(Usage) error) error {
	var order []string
	byID := map[string]geminiMessage{}
	put := func(m geminiMessage) {
		key := m.ID
		if key == "" {
			key = fmt.Sprintf("\x00%d", len(order))
		}
		if _, ok := byID[key]; !ok {
			order = append(order, key)
		}
		byID[key] = m
	}
	setAll := func(raw json.RawMessage) {
		var msgs []json.RawMessage
		if json.Unmarshal(raw, &msgs) != nil {
			return
		}
		order, byID = nil, map[string]geminiMessage{}
		for _, m := range msgs {
			var gm geminiMessage
			if json.Unmarshal(m, &gm) == nil {
				put(gm)
			}
		}
	}
	read := func(line []byte) error {
		var rec struct {
			Set *struct {
				Messages json.RawMessage `json:"messages"`
			} `json:"$set"`
			Messages json.RawMessage `json:"messages"`
			geminiMessage
		}
		if json.Unmarshal(line, &rec) != nil {
			return nil
		}
		switch {
		case rec.Set != nil && len(rec.Set.Messages) > 0:
			setAll(rec.Set.Messages)
		case len(rec.Messages) > 0:
			setAll(rec.Messages)
		case rec.Type != "":
			put(rec.geminiMessage)
		}
		return nil
	}
	// The file is read whole: an older whole-file JSON object spans
	// lines. Past maxOtherLine the rest is not read (its last line, cut,
	// is skipped).
	all, err := io.ReadAll(io.LimitReader(r, maxOtherLine))
	if err != nil {
		return fmt.Errorf("reading transcript: %w", err)
	}
	if json.Valid(all) {
		_ = read(all)
	} else if err := eachLine(ctx, bytes.NewReader(all), read); err != nil {
		return err
	}
	for _, key := range order {
		m := byID[key]
		if m.Type != "gemini" || m.Tokens == nil {
			continue
		}
		t := m.Tokens
		if t.Input < 0 || t.Output < 0 || t.Cached < 0 || t.Thoughts < 0 || t.Input > 1e15 || t.Output > 1e15 || t.Cached > 1e15 || t.Thoughts > 1e15 {
			continue
		}
		cached := min(t.Cached, t.Input)
		ts, _ := time.Parse(time.RFC3339Nano, m.Timestamp)
		if err := fn(Usage{MessageID: m.ID, Model: m.Model, Timestamp: ts, InputTokens: t.Input - cached, CacheReadInputTokens: cached, OutputTokens: t.Output + t.Thoughts}); err != nil {
			return err
		}
	}
	return nil
}
