// Package hook holds the wire types of Claude Code hook events: the JSON a
// hook command reads on stdin and the decision JSON it prints on stdout,
// the event names, and the check of a session id (CheckSessionID), which
// every layer that keys, stores or names a file by a session id applies.
//
// Everything here parses untrusted input, so it is strict about size and
// lenient about shape: unknown fields are ignored, missing ones are zero.
package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Event is the name drover uses for a hook event on its command line
// (`drover hook stop`) and in its API paths.
type Event string

// The hook events drover handles.
const (
	SessionStart     Event = "session-start"
	UserPromptSubmit Event = "user-prompt-submit"
	Stop             Event = "stop"
	SubagentStop     Event = "subagent-stop"
	PreCompact       Event = "pre-compact"
	SessionEnd       Event = "session-end"
)

// Events lists every event drover handles, in the order hooks.json lists them.
var Events = []Event{SessionStart, UserPromptSubmit, Stop, SubagentStop, PreCompact, SessionEnd}

// ParseEvent returns the Event named s, or an error naming s.
func ParseEvent(s string) (Event, error) {
	for _, e := range Events {
		if string(e) == s {
			return e, nil
		}
	}
	return "", fmt.Errorf("unknown hook event %q (want one of session-start, user-prompt-submit, stop, subagent-stop, pre-compact, session-end)", s)
}

// ClaudeName returns the event's name as Claude Code spells it in
// hook_event_name and hookSpecificOutput.hookEventName.
func (e Event) ClaudeName() string {
	switch e {
	case SessionStart:
		return "SessionStart"
	case UserPromptSubmit:
		return "UserPromptSubmit"
	case Stop:
		return "Stop"
	case SubagentStop:
		return "SubagentStop"
	case PreCompact:
		return "PreCompact"
	case SessionEnd:
		return "SessionEnd"
	}
	return string(e)
}

// Resumed reports whether a SessionStart input continues an earlier
// conversation whose context was summarized or reloaded: source compact
// (after a compaction) or resume. It is when every workflow puts its
// context back; a fresh start, a clear or a fork gets none.
func (in Input) Resumed() bool {
	return in.Source == "compact" || in.Source == "resume"
}

// MaxInputBytes caps what a hook reads from stdin. A prompt can be large
// (a pasted log), but nothing legitimate comes near this; past it the hook
// reads no further and lets the agent go on.
const MaxInputBytes = 16 << 20

// Input is the JSON Claude Code writes to a hook's stdin. Only the fields
// drover reads are declared; the rest are ignored.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	PromptID       string `json:"prompt_id,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`

	// Stop and SubagentStop.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// LastAssistantMessage is nil when the CLI did not send the field
	// (before 2.1.47), which is not the same as an empty final message.
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	AgentID              string  `json:"agent_id,omitempty"`
	AgentType            string  `json:"agent_type,omitempty"`

	// UserPromptSubmit.
	Prompt string `json:"prompt,omitempty"`

	// SessionStart: startup, resume, clear, compact or fork.
	Source string `json:"source,omitempty"`
	Model  string `json:"model,omitempty"`

	// PreCompact: manual or auto.
	Trigger            string `json:"trigger,omitempty"`
	CustomInstructions string `json:"custom_instructions,omitempty"`

	// SessionEnd.
	Reason string `json:"reason,omitempty"`

	// Facts about the CLI that sent the event, set by Normalize (never
	// taken from the payload): what the workflows may know of the CLI.
	//
	// TranscriptFormat is the format of TranscriptPath (TranscriptClaude,
	// TranscriptCodex, TranscriptGemini; "" from an older client is
	// Claude's).
	TranscriptFormat string `json:"transcript_format,omitempty"`
	// ReentryUntrusted says StopHookActive cannot be trusted (Gemini's
	// stays false after a turn that used a tool): the session counts its
	// consecutive continuations itself.
	ReentryUntrusted bool `json:"reentry_untrusted,omitempty"`
	// Uncapped says the CLI never ends a run of Stop blocks by itself
	// (Codex, Gemini, Claude Code with its cap off): drover's own limits
	// are the only brake. A capped CLI may end the run after BlockCap
	// blocks in a row.
	Uncapped bool `json:"uncapped,omitempty"`
	// CumulativeMessage says LastAssistantMessage holds every answer
	// since the user's prompt, those to drover's continuations included
	// (Gemini's prompt_response): the session reads only what follows the
	// message of the Stop it last blocked.
	CumulativeMessage bool `json:"cumulative_message,omitempty"`
}

// BlockCap is how many Stop blocks in a row a capped CLI (Input.Uncapped
// false: Claude Code unless CLAUDE_CODE_STOP_HOOK_BLOCK_CAP is 0) honours
// while its model answers with text only: it ends the run at the next
// Stop, whatever the hook says. Tool use resets the CLI's count, which
// the hook does not see, so past it drover only knows the run may end.
const BlockCap = 8

// ErrTooLarge is returned by Read when stdin holds more than MaxInputBytes.
var ErrTooLarge = errors.New("hook: input larger than the size cap")

// Read decodes one hook payload from r, reading at most max bytes
// (MaxInputBytes when max <= 0).
func Read(r io.Reader, max int64) (Input, error) {
	data, err := readLimited(r, max)
	if err != nil {
		return Input{}, err
	}
	return Parse(data)
}

// readLimited reads all of r, at most max bytes (MaxInputBytes when max
// is not positive): more is ErrTooLarge.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = MaxInputBytes
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading hook input: %w", err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("reading hook input: %w (%d bytes)", ErrTooLarge, max)
	}
	return data, nil
}

// Parse decodes a hook payload.
func Parse(data []byte) (Input, error) {
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		return Input{}, fmt.Errorf("decoding hook input JSON: %w", err)
	}
	return in, nil
}

// ValidSessionID reports whether id is safe to use as a directory name and
// store key: letters, digits, '-' and '_', at most 128 bytes, starting with a
// letter or digit. Claude Code's ids are UUIDs; anything path-like such as
// "../x" is refused so that nothing escapes .drover/.
//
// It is a loop rather than a regexp because it runs in every hook process,
// where compiling a pattern at start-up costs more than the whole check.
func ValidSessionID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// CheckSessionID returns nil for a valid id, or an error that says what is
// wrong with it.
func CheckSessionID(id string) error {
	switch {
	case id == "":
		return errors.New("session_id is missing or empty")
	case !ValidSessionID(id):
		return fmt.Errorf("session_id %q is not a valid session id (letters, digits, '-' and '_' only, at most 128)", truncate(id, 64))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Output is the decision JSON a hook prints on stdout. The zero value allows
// whatever the event was about.
type Output struct {
	// Decision is "block" or empty (allow).
	Decision string `json:"decision,omitempty"`
	// Reason is what the agent is told when Decision is "block".
	Reason string `json:"reason,omitempty"`
	// SystemMessage is a warning shown to the user.
	SystemMessage      string    `json:"systemMessage,omitempty"`
	HookSpecificOutput *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is the hookSpecificOutput object.
type Specific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Block returns an Output that blocks with reason.
func Block(reason string) Output { return Output{Decision: "block", Reason: reason} }

// Context returns an Output that adds context for the model on event e.
func Context(e Event, text string) Output {
	return Output{HookSpecificOutput: &Specific{HookEventName: e.ClaudeName(), AdditionalContext: text}}
}

// IsBlock reports whether o blocks.
func (o Output) IsBlock() bool { return o.Decision == "block" }

// Kind names the decision for logs and tests: "block", "context" or "allow".
func (o Output) Kind() string {
	switch {
	case o.IsBlock():
		return "block"
	case o.HookSpecificOutput != nil && o.HookSpecificOutput.AdditionalContext != "":
		return "context"
	}
	return "allow"
}
