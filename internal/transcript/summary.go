package transcript

import (
	"context"
	"io"
	"strconv"
	"unicode/utf8"
)

// Since says where the part of the transcript that Summarize looks at
// begins. In each case it is the part after the LAST such boundary in the
// file: the reader keeps one iteration's worth of state and starts over at
// every boundary, so memory does not grow with the file.
type Since uint8

const (
	// SinceIteration starts after the last StopFeedback or UserPrompt event:
	// the work the agent did since it was last sent back to work by a Stop
	// hook, or since the person's last prompt if no Stop hook blocked since.
	// At a Stop hook this is the iteration that just ended.
	SinceIteration Since = iota
	// SincePrompt starts after the last UserPrompt event: the whole turn,
	// across every Stop-hook iteration in it.
	SincePrompt
	// SinceStart reads the whole transcript.
	SinceStart
)

// String names the boundary.
func (s Since) String() string {
	switch s {
	case SinceIteration:
		return "iteration"
	case SincePrompt:
		return "prompt"
	case SinceStart:
		return "start"
	}
	return "since(" + strconv.Itoa(int(s)) + ")"
}

// Caps on what an Iteration keeps. Counts are never capped.
const (
	// MaxCalls is how many tool calls an Iteration keeps (the most recent).
	MaxCalls = 256
	// MaxFiles is how many changed file paths an Iteration keeps.
	MaxFiles = 200
	// MaxBashResult is how much of a Bash result's text is kept: the start
	// (where the first failure usually is) and the longer end (where test
	// runners print their summary).
	MaxBashResult = 32 << 10
	// MaxOtherResult is how much of any other tool's result is kept (the
	// content of a Read is of no use to metrics).
	MaxOtherResult = 1 << 10
	// MaxText is how much of the last assistant text and of the boundary
	// prompt is kept: the start and the end.
	MaxText = 16 << 10
)

// Iteration is what the agent did in one part of a transcript (see Since).
// Sidechain (subagent) entries are left out.
type Iteration struct {
	// StartedBy is the kind of the boundary event (UserPrompt or
	// StopFeedback), or zero when the part starts at the top of the file.
	StartedBy Kind
	// StartLine is the line of the boundary event, or zero; StartOffset
	// is that line's byte offset. Both count from where the reader began:
	// for a Cursor, the start of the file, however many Reads it took.
	StartLine   int
	StartOffset int64
	// Prompt is the boundary event's text (clipped to MaxText).
	Prompt string

	// ToolCalls counts every tool call; ToolCounts counts them by tool.
	ToolCalls  int
	ToolCounts map[string]int
	// Calls are the last MaxCalls tool calls, in order, with their results.
	// OmittedCalls is how many earlier ones were dropped.
	Calls        []ToolCall
	OmittedCalls int
	// ToolErrors counts tool results flagged is_error.
	ToolErrors int

	// FilesChanged are the distinct paths given to Write, Edit, MultiEdit
	// and NotebookEdit, in the order first touched, at most MaxFiles.
	FilesChanged []string

	// LastAssistantText is the text of the last assistant message that had
	// text (its text blocks joined; clipped to MaxText). The file can lag
	// behind the agent: at a Stop hook prefer the hook input's
	// last_assistant_message.
	LastAssistantText string
	// AssistantMessages counts distinct assistant messages with text or tool
	// calls.
	AssistantMessages int
	// EndsOnText is true when the part's last assistant text, tool call or
	// tool result is assistant text: the turn ended on words, with no tool
	// call after them. A transcript the CLI has not finished writing ends
	// on a call or a result (or on nothing), and its LastAssistantText is
	// not the turn's final message.
	EndsOnText bool

	// Compacted is true when a compaction happened inside this part.
	Compacted bool

	// Stats are for the whole scan, not just this part.
	Stats Stats
}

// ToolCall is one tool call and, once it arrived, its result.
type ToolCall struct {
	ID   string
	Name string
	// Command is the command of a Bash call.
	Command string
	// FilePath is the input's file_path or notebook_path, when present.
	FilePath string
	Line     int
	// Result is nil until the call's result is in the transcript. A call
	// that never got one but carries input.output_hint (seed 004's test
	// transcripts) has that text as its result, marked FromHint.
	Result *Result

	hint string // input.output_hint, until a result arrives
}

// Result is the result of a tool call.
type Result struct {
	// Text is the flattened text content, clipped to MaxBashResult or
	// MaxOtherResult; Clipped says whether anything was cut out.
	Text    string
	Clipped bool
	IsError bool
	// FromHint is true when Text is the call's input.output_hint, as seed
	// 004's test runner writes a call's output, and no tool_result was in
	// the transcript: there is no exit status, so IsError is false and
	// the text alone says whether the command failed.
	FromHint bool
}

// Commands returns the Bash commands of the kept calls, in order.
func (it Iteration) Commands() []string {
	var cmds []string
	for _, c := range it.Calls {
		if c.Command != "" {
			cmds = append(cmds, c.Command)
		}
	}
	return cmds
}

// Summarize reads the transcript from r and describes the part of it that
// since selects. See Scan for how r is read and what ends the scan, and
// Cursor for reading a growing transcript a part at a time.
func Summarize(ctx context.Context, r io.Reader, since Since) (Iteration, error) {
	p, err := NewCursor(since).Read(ctx, r, nil)
	return p.Iteration, err
}

func isBoundary(k Kind, since Since) bool {
	switch since {
	case SinceIteration:
		return k == UserPrompt || k == StopFeedback
	case SincePrompt:
		return k == UserPrompt
	}
	return false
}

// accumulator builds an Iteration from events in bounded memory.
type accumulator struct {
	it        Iteration
	dropped   int            // calls trimmed off the front of it.Calls
	pending   map[string]int // tool call id -> ordinal, for calls without a result
	files     map[string]struct{}
	textMsgID string // message of it.LastAssistantText
	lastMsgID string // message of the last text or tool call, to count messages
}

func newAccumulator(k Kind, line int, prompt string) *accumulator {
	p, _ := clip(prompt, MaxText/4, MaxText-MaxText/4)
	return &accumulator{
		it:      Iteration{StartedBy: k, StartLine: line, Prompt: p, ToolCounts: map[string]int{}},
		pending: map[string]int{},
		files:   map[string]struct{}{},
	}
}

func (a *accumulator) add(ev Event) {
	if ev.Kind == AssistantText || ev.Kind == ToolUse {
		if ev.MessageID == "" || ev.MessageID != a.lastMsgID {
			a.it.AssistantMessages++
		}
		a.lastMsgID = ev.MessageID
	}
	switch ev.Kind {
	case AssistantText:
		a.it.EndsOnText = true
		if ev.MessageID != "" && ev.MessageID == a.textMsgID {
			a.it.LastAssistantText += "\n" + ev.Text
		} else {
			a.it.LastAssistantText = ev.Text
		}
		a.it.LastAssistantText, _ = clip(a.it.LastAssistantText, MaxText/4, MaxText-MaxText/4)
		a.textMsgID = ev.MessageID
	case ToolUse:
		a.it.EndsOnText = false
		a.addCall(ev)
	case ToolResult:
		a.it.EndsOnText = false
		a.addResult(ev)
	case CompactBoundary:
		a.it.Compacted = true
	}
}

func (a *accumulator) addCall(ev Event) {
	a.it.ToolCalls++
	a.it.ToolCounts[toolName(ev)]++
	if ev.ToolUseID != "" {
		a.pending[ev.ToolUseID] = a.dropped + len(a.it.Calls)
	}
	a.it.Calls = append(a.it.Calls, ToolCall{
		ID: ev.ToolUseID, Name: ev.ToolName, Command: ev.Command, FilePath: ev.FilePath, Line: ev.Line,
		hint: ev.OutputHint,
	})
	if changesFile(ev.ToolName) && ev.FilePath != "" {
		if _, ok := a.files[ev.FilePath]; !ok && len(a.files) < MaxFiles {
			a.files[ev.FilePath] = struct{}{}
			a.it.FilesChanged = append(a.it.FilesChanged, ev.FilePath)
		}
	}
	if len(a.it.Calls) >= 2*MaxCalls {
		a.trim()
	}
}

func (a *accumulator) addResult(ev Event) {
	if ev.IsError {
		a.it.ToolErrors++
	}
	idx := -1
	if ord, ok := a.pending[ev.ToolUseID]; ok && ev.ToolUseID != "" {
		delete(a.pending, ev.ToolUseID)
		idx = ord - a.dropped
	} else if ev.ToolUseID == "" && len(a.it.Calls) > 0 && a.it.Calls[len(a.it.Calls)-1].Result == nil {
		// Without ids (hand-written transcripts), a result answers the
		// call just before it.
		idx = len(a.it.Calls) - 1
	}
	if idx < 0 || idx >= len(a.it.Calls) {
		return
	}
	c := &a.it.Calls[idx]
	text, clipped := clipResult(c.Name, ev.Text)
	c.Result = &Result{Text: text, Clipped: clipped, IsError: ev.IsError}
	c.hint = ""
}

// clipResult clips the result text of a call to tool.
func clipResult(tool, text string) (string, bool) {
	limit := MaxOtherResult
	if tool == "Bash" {
		limit = MaxBashResult
	}
	return clip(text, limit/4, limit-limit/4)
}

// trim drops the oldest calls beyond MaxCalls. It runs once per MaxCalls
// calls, so the copying is amortized.
func (a *accumulator) trim() {
	n := len(a.it.Calls) - MaxCalls
	if n <= 0 {
		return
	}
	a.dropped += n
	a.it.OmittedCalls += n
	kept := make([]ToolCall, MaxCalls, 2*MaxCalls)
	copy(kept, a.it.Calls[n:])
	a.it.Calls = kept
	for id, ord := range a.pending {
		if ord < a.dropped {
			delete(a.pending, id)
		}
	}
}

func (a *accumulator) finish() Iteration {
	a.trim()
	// Only now is it sure that no tool_result answers a call: a result
	// without an id answers the call just before it, which a hint taken
	// as its result at once would have shut out.
	for i := range a.it.Calls {
		c := &a.it.Calls[i]
		if c.Result == nil && c.hint != "" {
			text, clipped := clipResult(c.Name, c.hint)
			c.Result = &Result{Text: text, Clipped: clipped, FromHint: true}
		}
		c.hint = ""
	}
	return a.it
}

// toolName is the tool name of a ToolUse, or "unknown" when the entry had
// none.
func toolName(ev Event) string {
	if ev.ToolName == "" {
		return "unknown"
	}
	return ev.ToolName
}

func changesFile(tool string) bool {
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// clip keeps the first head and the last tail bytes of s (on rune
// boundaries) with a note of what was cut between them.
func clip(s string, head, tail int) (string, bool) {
	if len(s) <= head+tail {
		return s, false
	}
	h := head
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h] + "\n[... " + strconv.Itoa(t-h) + " bytes omitted ...]\n" + s[t:], true
}
