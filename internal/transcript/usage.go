package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Usage is the token usage the API reported for one assistant message.
type Usage struct {
	// MessageID is the API message id; Model the model that answered.
	MessageID string
	Model     string
	// Timestamp is when the entry was written (zero when the entry has
	// none or it does not parse).
	Timestamp time.Time
	// Token counts, as in the API's usage object.
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// Grow takes in one more report of the message's usage: the lines of one
// message repeat its id, each with the counts known then, so the largest
// count of each kind is the message's.
func (u *Usage) Grow(input, output, cacheRead, cacheCreation int64) {
	u.InputTokens = max(u.InputTokens, input)
	u.OutputTokens = max(u.OutputTokens, output)
	u.CacheReadInputTokens = max(u.CacheReadInputTokens, cacheRead)
	u.CacheCreationInputTokens = max(u.CacheCreationInputTokens, cacheCreation)
}

type usageEntry struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Message   *struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// ScanUsage reads JSONL entries from r and calls fn once per assistant
// message that reports usage. Claude Code writes each content block of a
// message on its own line, all under the same message id and each with the
// usage known when it was written, so the lines of one message are merged
// (the largest count of each kind wins) and reported once; a message id
// seen again later (lines repeated on resume) is not reported twice. Like
// Scan it reads in bounded memory and skips what it cannot decode; fn
// returning ErrStop ends the scan with a nil error.
func ScanUsage(ctx context.Context, r io.Reader, fn func(Usage) error) error {
	lr := lineReader{br: bufio.NewReaderSize(r, 64<<10), max: DefaultMaxLine}
	d := newDeduper(dedupeWindow)
	var pending *Usage
	flush := func() error {
		if pending == nil {
			return nil
		}
		u := *pending
		pending = nil
		if err := fn(u); err != nil {
			return err
		}
		return nil
	}
	finish := func(err error) error {
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("handling transcript usage: %w", err)
		}
		return nil
	}
	for lineNo := 1; ; lineNo++ {
		if lineNo%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("reading transcript at line %d: %w", lineNo, err)
			}
		}
		line, _, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading transcript line %d: %w", lineNo, err)
		}
		line = bytes.TrimSpace(line)
		if !tooLong && len(line) > 0 && line[0] == '{' {
			var e usageEntry
			if json.Unmarshal(line, &e) == nil && e.Type == "assistant" && e.Message != nil && e.Message.Usage != nil {
				m, u := e.Message, e.Message.Usage
				if pending != nil && (m.ID == "" || m.ID != pending.MessageID) {
					if ferr := flush(); ferr != nil {
						return finish(ferr)
					}
				}
				if m.ID == "" || !d.repeat(idKey("m", m.ID)) || (pending != nil && pending.MessageID == m.ID) {
					if pending == nil {
						ts, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
						pending = &Usage{MessageID: m.ID, Model: m.Model, Timestamp: ts}
					}
					pending.Grow(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
					if m.ID == "" {
						if ferr := flush(); ferr != nil {
							return finish(ferr)
						}
					}
				}
			}
		}
		if err != nil { // io.EOF, after the last (possibly unterminated) line
			return finish(flush())
		}
	}
}
