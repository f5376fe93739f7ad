// Package transcript reads Claude Code session transcripts (JSONL, one entry
// per line) as a stream of typed events, in bounded memory, however large the
// file.
//
// The entry format is internal to Claude Code and changes between releases,
// so the reader is tolerant: unknown entry types and fields are skipped, a
// line that is not a JSON object is counted and skipped (a half-written last
// line is normal while the agent runs), a line longer than the limit is
// skipped without being held in memory, and the repeats Claude Code writes
// (one content block per line under a repeated message id, whole lines
// repeated on resume) are reported once.
//
// Nothing here opens files: callers hand in an io.Reader.
package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxLine is the longest line Scan decodes. Longer lines (a huge tool
// result inlined in the transcript) are skipped and counted in
// Stats.TooLong; the reader never holds more than this much of one line.
const DefaultMaxLine = 16 << 20

// StopFeedbackPrefix starts the user entry Claude Code writes when a Stop hook
// blocks with a reason: the reason follows on the next line.
const StopFeedbackPrefix = "Stop hook feedback:"

// ErrStop may be returned by a Scan callback to end the scan early; Scan
// then returns nil.
var ErrStop = errors.New("transcript: stop scanning")

// Kind says what an Event is.
type Kind uint8

// The event kinds. The zero Kind is not an event; Iteration.StartedBy uses it
// for "the start of the transcript".
const (
	// AssistantText is one text block of an assistant message.
	AssistantText Kind = iota + 1
	// ToolUse is one tool_use block of an assistant message.
	ToolUse
	// ToolResult is one tool_result block of a user entry.
	ToolResult
	// UserPrompt is a prompt a person (or a slash command they typed) sent:
	// not a tool result, not a system-injected (isMeta) message, not the
	// post-compaction summary, not local command output, not Stop-hook
	// feedback.
	UserPrompt
	// StopFeedback is the user entry Claude Code writes when a Stop hook
	// blocked the stop; Event.Text is the hook's reason without the prefix.
	StopFeedback
	// CompactBoundary is the system entry that marks a compaction.
	CompactBoundary
)

var kindNames = [...]string{"", "assistant_text", "tool_use", "tool_result", "user_prompt", "stop_feedback", "compact_boundary"}

// String returns the kind's snake_case name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one thing that happened in a transcript. Which fields are set
// depends on Kind; the rest are zero.
type Event struct {
	Kind Kind
	// Line is the 1-based line number of the entry in the input, and
	// Offset the byte offset where the line starts, both counted from
	// where the reader began: a caller that remembers an iteration's
	// boundary can seek there next time instead of rereading the file.
	Line   int
	Offset int64
	// UUID is the entry's uuid, when it has one.
	UUID string
	// Sidechain is true for entries of a subagent mixed into the main file
	// (older Claude Code versions did that).
	Sidechain bool

	// MessageID is the API message id (AssistantText, ToolUse). Claude Code
	// writes each content block of a message on its own line under the
	// same id.
	MessageID string

	// Text is the text of an AssistantText, UserPrompt or StopFeedback
	// event, or the flattened text content of a ToolResult.
	Text string

	// ToolUseID is the tool call id of a ToolUse, or the call a ToolResult
	// answers.
	ToolUseID string
	// ToolName is the tool of a ToolUse ("Bash", "Write", ...).
	ToolName string
	// Input is the raw JSON input of a ToolUse (a copy, safe to keep).
	Input json.RawMessage
	// Command is input.command of a Bash ToolUse.
	Command string
	// FilePath is input.file_path (or notebook_path) of a ToolUse, when
	// present.
	FilePath string
	// OutputHint is input.output_hint of a ToolUse: not a field Claude
	// Code writes, but where seed 004's test runner puts a call's output in
	// the transcripts it writes, with no tool_result after the call.
	OutputHint string
	// IsError is the is_error flag of a ToolResult.
	IsError bool
}

// Stats counts what a scan read and what it skipped.
type Stats struct {
	// Lines is the number of non-blank lines read.
	Lines int
	// Events is the number of events delivered.
	Events int
	// Malformed counts lines that are not a JSON object (a half-written
	// last line, corruption).
	Malformed int
	// TooLong counts lines over the line limit, skipped unread.
	TooLong int
	// Duplicates counts lines and blocks skipped because they were already
	// reported (same entry uuid, tool call id, or message id and text).
	Duplicates int
	// Skipped counts well-formed entries with nothing to report: other
	// entry types, system-injected messages, thinking blocks.
	Skipped int
}

// Scanner reads transcripts. The zero value is ready to use.
type Scanner struct {
	// MaxLine is the longest line decoded; zero means DefaultMaxLine.
	MaxLine int
}

// Scan reads the transcript from r with a zero Scanner.
func Scan(ctx context.Context, r io.Reader, fn func(Event) error) (Stats, error) {
	return Scanner{}.Scan(ctx, r, fn)
}

// Scan reads JSONL entries from r and calls fn for each event, in order.
// It stops at the end of r, when ctx is done, when reading fails, or when
// fn returns an error (returned wrapped, except ErrStop, which ends the scan
// with a nil error). The Stats are valid in every case.
func (s Scanner) Scan(ctx context.Context, r io.Reader, fn func(Event) error) (Stats, error) {
	maxLine := s.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	lr := lineReader{br: bufio.NewReaderSize(r, readBuffer), max: maxLine}
	d := newDeduper(dedupeWindow)
	var st Stats
	var emitErr error
	emit := func(ev Event) bool {
		st.Events++
		if err := fn(ev); err != nil {
			emitErr = err
			return false
		}
		return true
	}
	for lineNo := 1; ; lineNo++ {
		if lineNo%64 == 0 {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("reading transcript at line %d: %w", lineNo, err)
			}
		}
		line, offset, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("reading transcript line %d: %w", lineNo, err)
		}
		switch {
		case tooLong:
			st.Lines++
			st.TooLong++
		default:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				break
			}
			st.Lines++
			if !decodeLine(line, lineNo, offset, &st, d, emit, nil) {
				if errors.Is(emitErr, ErrStop) {
					return st, nil
				}
				return st, fmt.Errorf("handling transcript line %d: %w", lineNo, emitErr)
			}
		}
		if err != nil { // io.EOF, after the last (possibly unterminated) line
			return st, nil
		}
	}
}

// readBuffer is the size of a scan's read buffer: most lines fit whole,
// and are decoded in place without a copy.
const readBuffer = 256 << 10

// lineReader splits a stream into lines without a cap on what it reads and a
// cap on what it keeps.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
	off int64 // where the next line starts
	// last holds the last bytes read (up to tailLen), for Cursor's check
	// that the file it resumes is still the one it read.
	last []byte
}

// tailLen is how many bytes before its offset a Cursor keeps, to tell
// whether the file still holds them when it resumes.
const tailLen = 64

// keep appends chunk to lr.last, keeping the last tailLen bytes.
func (lr *lineReader) keep(chunk []byte) {
	if len(chunk) >= tailLen {
		lr.last = append(lr.last[:0], chunk[len(chunk)-tailLen:]...)
		return
	}
	if over := len(lr.last) + len(chunk) - tailLen; over > 0 {
		lr.last = append(lr.last[:0], lr.last[over:]...)
	}
	lr.last = append(lr.last, chunk...)
}

// next returns the next line without its newline, and its offset. The
// slice is valid until the next call. A line longer than max comes back as
// tooLong with no bytes. At the end of input err is io.EOF, possibly with a
// last unterminated line.
func (lr *lineReader) next() (line []byte, offset int64, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	offset = lr.off
	first := true
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.off += int64(len(chunk))
		if lr.last != nil {
			lr.keep(chunk)
		}
		if !tooLong {
			n := len(chunk)
			if n > 0 && chunk[n-1] == '\n' {
				n--
			}
			switch {
			case len(lr.buf)+n > lr.max:
				tooLong = true
				lr.buf = lr.buf[:0]
			case first && !errors.Is(err, bufio.ErrBufferFull):
				// The whole line is in the reader's buffer: no copy.
				return chunk[:n], offset, false, err
			default:
				lr.buf = append(lr.buf, chunk[:n]...)
			}
		}
		first = false
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, offset, true, err
		}
		return lr.buf, offset, false, err
	}
}

// dedupeWindow is how many recent ids the reader remembers. Repeats are
// written close together (one message's blocks, a resumed session's copy of
// recent lines), and a fixed window keeps memory flat on huge files.
const dedupeWindow = 4096

// deduper remembers the last n keys it was shown. Keys are 64-bit hashes
// (see key): hashing needs no allocation per line, and the window is a
// fixed array of numbers that a Cursor can keep between reads.
type deduper struct {
	seen map[uint64]struct{}
	ring []uint64
	next int
}

func newDeduper(n int) *deduper {
	return &deduper{seen: make(map[uint64]struct{}, n), ring: make([]uint64, n)}
}

// repeat reports whether key was seen recently, and remembers it. The zero
// key is never a repeat: entries without ids cannot be told apart.
func (d *deduper) repeat(key uint64) bool {
	if key == 0 {
		return false
	}
	if _, ok := d.seen[key]; ok {
		return true
	}
	if old := d.ring[d.next]; old != 0 {
		delete(d.seen, old)
	}
	d.ring[d.next] = key
	d.next = (d.next + 1) % len(d.ring)
	d.seen[key] = struct{}{}
	return false
}

// clone returns an independent copy of d.
func (d *deduper) clone() *deduper {
	c := &deduper{seen: make(map[uint64]struct{}, len(d.ring)), ring: slices.Clone(d.ring), next: d.next}
	for _, k := range c.ring {
		if k != 0 {
			c.seen[k] = struct{}{}
		}
	}
	return c
}

// FNV-1a, 64 bits, inlined so that hashing a key allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// key is the dedupe key of id under prefix (one kind of id: line uuids,
// tool call ids, ...), or zero for an empty id. Two ids colliding in a
// window of dedupeWindow keys has odds of about 2^-41.
func key(prefix byte, id string) uint64 {
	if id == "" {
		return 0
	}
	h := fnvAdd(fnvByte(fnvOffset, prefix), id)
	if h == 0 {
		h = 1
	}
	return h
}

// textKey is the dedupe key of a text block of message id.
func textKey(id, text string) uint64 {
	if id == "" {
		return 0
	}
	h := fnvByte(fnvAdd(fnvByte(fnvOffset, 't'), id), 0)
	h = fnvAdd(h, text)
	h = fnvByte(h, byte(len(text)))
	if h == 0 {
		h = 1
	}
	return h
}

// entry is the part of a transcript line the reader looks at.
type entry struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	Timestamp        string          `json:"timestamp"`
	UUID             string          `json:"uuid"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Message          *message        `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
}

type message struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Usage   *usageCounts `json:"usage"`
	Content content      `json:"content"`
}

// usageCounts is the API's usage object of an assistant message.
type usageCounts struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   content         `json:"content"`
	IsError   bool            `json:"is_error"`
}

// content is a message or tool-result content: either a string (one text
// block) or an array of blocks. Any other shape decodes as empty.
type content []block

// UnmarshalJSON accepts both shapes and never fails, so that an odd content
// does not cost the rest of the entry.
func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if json.Unmarshal(b, &s) == nil {
			*c = content{{Type: "text", Text: s}}
		}
	case '[':
		var bs []block
		_ = json.Unmarshal(b, &bs) // type errors leave the rest decoded
		*c = bs
	}
	return nil
}

// text joins the text blocks, and says whether any block was an image (a
// prompt can be an image alone).
func (c content) text() (string, bool) {
	var parts []string
	image := false
	for _, b := range c {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image", "document":
			image = true
		}
	}
	return strings.Join(parts, "\n"), image
}

type toolInput struct {
	Command      string `json:"command"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	OutputHint   string `json:"output_hint"`
}

// decodeLine turns one line into events. It returns false when emit
// refused an event. usage, when not nil, is shown every assistant entry
// with a usage object that decoded cleanly, before its events.
func decodeLine(line []byte, lineNo int, offset int64, st *Stats, d *deduper, emit func(Event) bool, usage func(*entry)) bool {
	if line[0] != '{' {
		st.Malformed++
		return true
	}
	var e entry
	// A type mismatch in some field leaves the others decoded: keep
	// going, the format drifts between releases.
	ok, clean := decodeEntry(line, &e)
	if !ok {
		st.Malformed++
		return true
	}
	if d.repeat(key('l', e.UUID)) {
		st.Duplicates++
		return true
	}
	if usage != nil && clean && e.Type == "assistant" && e.Message != nil && e.Message.Usage != nil {
		usage(&e)
	}
	base := Event{Line: lineNo, Offset: offset, UUID: e.UUID, Sidechain: e.IsSidechain}
	switch e.Type {
	case "assistant":
		if e.Message == nil {
			st.Skipped++
			return true
		}
		return assistantEvents(base, e.Message, st, d, emit)
	case "user":
		if e.Message == nil {
			st.Skipped++
			return true
		}
		return userEvents(base, &e, st, d, emit)
	case "system":
		if e.Subtype == "compact_boundary" {
			ev := base
			ev.Kind = CompactBoundary
			return emit(ev)
		}
	}
	st.Skipped++
	return true
}

func assistantEvents(base Event, m *message, st *Stats, d *deduper, emit func(Event) bool) bool {
	base.MessageID = m.ID
	for _, b := range m.Content {
		ev := base
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				st.Skipped++
				continue
			}
			if d.repeat(textKey(m.ID, b.Text)) {
				st.Duplicates++
				continue
			}
			ev.Kind = AssistantText
			ev.Text = b.Text
		case "tool_use":
			if d.repeat(key('u', b.ID)) {
				st.Duplicates++
				continue
			}
			ev.Kind = ToolUse
			ev.ToolUseID = b.ID
			ev.ToolName = b.Name
			ev.Input = b.Input
			if len(b.Input) > 0 {
				var in toolInput
				decodeToolInput(b.Input, &in) // a missing or odd field just stays empty
				if b.Name == "Bash" {
					ev.Command = in.Command
				}
				ev.FilePath = in.FilePath
				if ev.FilePath == "" {
					ev.FilePath = in.NotebookPath
				}
				ev.OutputHint = in.OutputHint
			}
		default:
			st.Skipped++
			continue
		}
		if !emit(ev) {
			return false
		}
	}
	return true
}

func userEvents(base Event, e *entry, st *Stats, d *deduper, emit func(Event) bool) bool {
	results := false
	for _, b := range e.Message.Content {
		if b.Type != "tool_result" {
			continue
		}
		results = true
		if d.repeat(key('r', b.ToolUseID)) {
			st.Duplicates++
			continue
		}
		ev := base
		ev.Kind = ToolResult
		ev.ToolUseID = b.ToolUseID
		ev.IsError = b.IsError
		ev.Text, _ = b.Content.text()
		if ev.Text == "" {
			ev.Text = toolUseResultText(e.ToolUseResult)
		}
		if !emit(ev) {
			return false
		}
	}
	if results {
		return true
	}
	text, image := e.Message.Content.text()
	trimmed := strings.TrimLeft(text, " \t\r\n")
	ev := base
	switch {
	case strings.HasPrefix(trimmed, StopFeedbackPrefix):
		// Claude Code marks it isMeta; it is still the loop's turn marker.
		ev.Kind = StopFeedback
		ev.Text = strings.TrimLeft(strings.TrimPrefix(trimmed, StopFeedbackPrefix), " \t\r\n")
	case e.IsMeta, e.IsCompactSummary,
		strings.HasPrefix(trimmed, "<local-command-"),
		strings.HasPrefix(trimmed, "[Request interrupted"),
		trimmed == "" && !image:
		st.Skipped++
		return true
	default:
		ev.Kind = UserPrompt
		ev.Text = text
	}
	return emit(ev)
}

// toolUseResultText reads the entry-level toolUseResult when the tool_result
// block had no text: a string on errors, or an object with stdout/stderr
// (Bash) or content.
func toolUseResultText(raw json.RawMessage) string {
	s, fields := decodeToolUseResult(raw)
	if s != "" {
		return s
	}
	parts := make([]string, 0, 3)
	for _, p := range fields {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n")
}
