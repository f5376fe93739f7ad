package hook

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/drover-dev/drover/internal/transcript"
)

// CLI names the agent CLI whose hook ran. It is known only to the hook
// client: past Normalize, drover sees the facts Input carries about the
// CLI (TranscriptFormat, ReentryUntrusted, Uncapped), never its name.
type CLI string

// The agent CLIs whose hook events drover reads.
const (
	Claude CLI = "claude"
	Codex  CLI = "codex"
	Gemini CLI = "gemini"
)

// CLIs lists every CLI drover reads, in the order its help names them.
var CLIs = []CLI{Claude, Codex, Gemini}

// ParseCLI returns the CLI named s ("" is unknown, to be detected from the
// payload), or an error naming s.
func ParseCLI(s string) (CLI, error) {
	if s == "" {
		return "", nil
	}
	for _, c := range CLIs {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown agent CLI %q (want claude, codex or gemini)", s)
}

// The transcript formats Input.TranscriptFormat names: Claude Code's
// session JSONL, Codex's rollout JSONL, Gemini CLI's chat JSONL. The last
// two are the formats transcript.ScanUsage reads, which the supervisor
// hands them to.
const (
	TranscriptClaude = "claude"
	TranscriptCodex  = transcript.FormatCodex
	TranscriptGemini = transcript.FormatGemini
)

// EventName returns the event's name as cli spells it in hook_event_name
// and in its hook configuration, or "" when cli has no such event (Gemini
// CLI has no SubagentStop).
func (e Event) EventName(cli CLI) string {
	switch cli {
	case Gemini:
		switch e {
		case SessionStart, SessionEnd:
			return e.ClaudeName()
		case UserPromptSubmit:
			return "BeforeAgent"
		case Stop:
			return "AfterAgent"
		case PreCompact:
			return "PreCompress"
		}
		return ""
	case Codex:
		switch e {
		case SessionStart, UserPromptSubmit, Stop, SubagentStop, PreCompact, SessionEnd:
			return e.ClaudeName()
		}
		return ""
	}
	return e.ClaudeName()
}

// wire is every field any of the CLIs sends that drover reads: Input's
// fields plus Gemini's prompt_response and the fields that tell the CLIs
// apart.
type wire struct {
	Input
	PromptResponse *string `json:"prompt_response"`
	Timestamp      present `json:"timestamp"`
	TurnID         present `json:"turn_id"`
}

// present records that a field was sent, whatever its value, without
// keeping (allocating) the value: only its presence tells the CLIs apart.
type present bool

// UnmarshalJSON marks the field present (null included).
func (p *present) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}

// cli names the CLI that wrote w: Gemini sends a timestamp on every
// event and names its own events (AfterAgent, BeforeAgent, PreCompress);
// Codex sends a turn_id on its turn events; anything else is read as
// Claude Code's.
func (w *wire) cli() CLI {
	switch w.HookEventName {
	case "AfterAgent", "BeforeAgent", "PreCompress":
		return Gemini
	}
	switch {
	case w.PromptResponse != nil || bool(w.Timestamp):
		return Gemini
	case bool(w.TurnID):
		return Codex
	}
	return Claude
}

// ReadFrom reads one hook payload of event e from r (at most max bytes, as
// Read) and normalizes it as cli wrote it (detected when cli is ""). The
// payload is decoded once, for both: this is the hook's own time.
func ReadFrom(r io.Reader, max int64, cli CLI, e Event) (Input, CLI, error) {
	data, err := readLimited(r, max)
	if err != nil {
		return Input{}, cli, err
	}
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		if cli == "" {
			cli = Claude
		}
		return Input{}, cli, fmt.Errorf("decoding hook input JSON: %w", err)
	}
	if cli == "" {
		cli = w.cli()
	}
	return w.normalize(cli, e), cli, nil
}

// Normalize decodes the payload cli wrote for event e into drover's own
// event: the fields every workflow reads, named as Claude Code names
// them, plus the facts about the CLI that change how they are read.
//
//   - Claude Code: the payload as it is; its transcript is Claude's JSONL.
//   - Codex: the same fields (Stop adds turn_id and model, ignored); the
//     transcript is Codex's rollout; no block cap.
//   - Gemini: AfterAgent's prompt_response becomes the last assistant
//     message (it is cumulative over the continuations of one prompt);
//     BeforeAgent's prompt is the prompt; stop_hook_active is not trusted
//     (it stays false after a turn that used a tool), so drover counts
//     the continuations itself; no block cap.
func Normalize(cli CLI, e Event, data []byte) (Input, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return Input{}, fmt.Errorf("decoding hook input JSON: %w", err)
	}
	return w.normalize(cli, e), nil
}

// normalize is Normalize of the decoded payload w.
func (w *wire) normalize(cli CLI, e Event) Input {
	in := w.Input
	// These are drover's facts, never the payload's.
	in.TranscriptFormat, in.ReentryUntrusted, in.Uncapped, in.CumulativeMessage = "", false, false, false
	switch cli {
	case Codex:
		in.TranscriptFormat = TranscriptCodex
		in.Uncapped = true
	case Gemini:
		in.TranscriptFormat = TranscriptGemini
		// No AfterAgent cap is known: the reference measured 150 blocks
		// in a row all honoured (its loop detector and maxSessionTurns
		// stop model calls, not the hook). Treated as uncapped until a
		// version is measured with one.
		in.Uncapped = true
		in.ReentryUntrusted = true
		if e == Stop {
			// AfterAgent's prompt is the original prompt, not one the
			// user just sent.
			in.Prompt = ""
			if w.PromptResponse != nil {
				msg := *w.PromptResponse
				in.LastAssistantMessage = &msg
				in.CumulativeMessage = true
			}
		}
	default:
		// Claude Code decides its own block cap and the hook's payload
		// does not say it; the hook client fills Uncapped from the
		// environment.
		in.TranscriptFormat = TranscriptClaude
	}
	return in
}

// Render returns what the hook prints for cli on event e: out as that
// CLI's decision JSON, or text where the event takes plain text (Claude
// Code's PreCompact). Every CLI reads exit 0 with this stdout, and an
// empty stdout as "allow".
//
//   - Codex refuses a Stop decision with any key beyond its schema's, and a
//     block without a reason: a block is exactly {"decision","reason"}.
//   - Gemini names its events differently in hookSpecificOutput, and
//     treats its PreCompress as advisory (no text is given).
func Render(cli CLI, e Event, out Output, text string) string {
	if text != "" && out == (Output{}) {
		if cli != Claude && cli != "" {
			// Neither Codex's PreCompact nor Gemini's PreCompress takes
			// compaction instructions; the context comes back at the next
			// SessionStart or prompt.
			return ""
		}
		return text
	}
	if out.IsBlock() && out.Reason == "" {
		// No workflow blocks without saying why; were one to, Codex would
		// fail the hook and Gemini continue with "No reason provided".
		out.Decision = ""
	}
	switch cli {
	case Codex:
		if out.IsBlock() {
			return encode(codexBlock{Decision: out.Decision, Reason: out.Reason})
		}
		if e == Stop {
			out.HookSpecificOutput = nil
		}
	case Gemini:
		if s := out.HookSpecificOutput; s != nil {
			name := e.EventName(Gemini)
			if name == "" {
				out.HookSpecificOutput = nil
			} else {
				s2 := *s
				s2.HookEventName = name
				out.HookSpecificOutput = &s2
			}
		}
	}
	return encode(out)
}

// codexBlock is the only block Codex accepts on Stop.
type codexBlock struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// encode is v as one line of JSON; the empty Output is "" (a silent
// allow).
func encode(v any) string {
	if o, ok := v.(Output); ok && o == (Output{}) {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b) + "\n"
}

// ClaudeTranscript returns TranscriptPath when it is in Claude Code's
// format (the one internal/transcript reads), else "": another CLI's
// transcript must not be read as Claude's, where it would look like a
// transcript that never catches up.
func (in Input) ClaudeTranscript() string {
	if in.TranscriptFormat == "" || in.TranscriptFormat == TranscriptClaude {
		return in.TranscriptPath
	}
	return ""
}
