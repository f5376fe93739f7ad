// Package agentrun runs one headless coding agent process (Claude Code in
// print mode with stream-json output, or another CLI that speaks it; Codex
// CLI's `exec --json`; Gemini CLI's stream-json: see Format) and reports
// what it does as it does it: each tool call, each tool result, the final
// cost (priced from the tokens of a CLI that reports none) and outcome.
//
// A run is bounded: no shell, stdin from /dev/null, a timeout, a process
// group of its own that is killed as a whole on timeout or cancellation
// and once the agent has exited (so tools it left running in the
// background do not outlive it), and capped memory for its output. The
// process itself is run by internal/proc; this package owns the agent's
// command line and the reading of its stream-json output.
package agentrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/proctag"
)

// Defaults for the zero values of Spec's fields.
const (
	// DefaultTimeout bounds a run whose Spec has no Timeout. One task's
	// iteration is minutes of work; an hour means something is stuck.
	DefaultTimeout = time.Hour
	// DefaultOutputCap is the longest stdout line parsed, and the most of
	// stderr kept, when Spec.OutputCap is zero. A stream-json line holds
	// one message, tool results included.
	DefaultOutputCap = 4 << 20
	// DefaultWaitDelay is how long Run waits, once the agent has exited or
	// been killed, for whatever still holds its output open.
	DefaultWaitDelay = 5 * time.Second
)

// MaxPromptArg is the longest prompt Run passes as an argument: Linux
// refuses a single argument of 128 KiB or more.
const MaxPromptArg = 128<<10 - 1

// ClaudeArgs returns the arguments for a headless Claude Code run whose
// output Run parses: print mode with stream-json, which needs --verbose.
// extra (a model, --max-turns, permission flags...) follows them.
func ClaudeArgs(extra ...string) []string {
	return append([]string{"--print", "--output-format", "stream-json", "--verbose"}, extra...)
}

// Spec says how to start one agent run.
type Spec struct {
	// Bin is the agent CLI, a name looked up in PATH or a path ("claude").
	Bin string
	// Args are the arguments before the prompt (see ClaudeArgs).
	Args []string
	// Prompt is passed as the last argument when it is not empty. One that
	// starts with '-' gets a leading space, so that no CLI takes it for a
	// flag. It must be shorter than MaxPromptArg.
	Prompt string
	// Dir is the agent's working directory (the task's work tree); empty
	// means the supervisor's.
	Dir string
	// Env holds KEY=VALUE entries added to the supervisor's environment;
	// they win over it.
	Env []string
	// Timeout bounds the run; zero means DefaultTimeout.
	Timeout time.Duration
	// OutputCap is the longest stdout line parsed (a longer one is skipped
	// and counted in Result.Skipped) and the most of stderr kept; zero
	// means DefaultOutputCap.
	OutputCap int
	// WaitDelay is how long to wait for the agent's output to close after
	// it exited or was killed; zero means DefaultWaitDelay.
	WaitDelay time.Duration
	// Format is the shape of the agent's stdout (FormatClaude when zero).
	Format Format
	// Model is the agent's model, for a format whose stream does not name
	// it (codex's), to price its usage; empty: the CLI's default.
	Model string
	// Price prices the token usage of a CLI that reports no cost (codex,
	// gemini); nil leaves their CostUSD 0.
	Price Pricer
}

// Result is what a run did.
type Result struct {
	// ExitCode is the agent's exit status; -1 when it was killed by a
	// signal (a timeout, a cancellation) or never started.
	ExitCode int
	// CostUSD, Turns, IsError and FinalText come from the result line:
	// total_cost_usd, num_turns, is_error and result. They are zero when
	// there was none.
	CostUSD   float64
	Turns     int
	IsError   bool
	FinalText string
	// Subtype is the result line's subtype ("success", "error_max_turns"...).
	Subtype string
	// SessionID is the agent's session id, for resuming it.
	SessionID string
	// SawResult is true when the output had a result line.
	SawResult bool
	// ToolCalls counts the tool calls the agent made.
	ToolCalls int
	// Events counts the lines parsed; Skipped counts the lines that were
	// not stream-json or were longer than the output cap.
	Events, Skipped int
	// Stderr is the agent's stderr, at most the output cap of it: past
	// that its start and its end, with a line where the middle was cut.
	Stderr string
	// Duration is the wall time from start to exit.
	Duration time.Duration
	// TimedOut is true when the run was killed for running past Timeout.
	TimedOut bool
	// APIErrorStatus is the result line's api_error_status (0: none).
	APIErrorStatus int
	// Limit is set when the run failed on a usage or rate limit (Err is
	// set too): the task can go on once the limit resets.
	Limit *Limit
	// apiError is the last assistant message's "error".
	apiError string
	// Err is nil when the agent exited with status 0 after a result line
	// that is not an error. Otherwise it says why not, and wraps
	// ErrTimeout, the context's error, ErrNoResult or ErrAgentError, or is
	// (wrapping) an *exec.ExitError.
	Err error
}

// Errors a Result.Err wraps.
var (
	// ErrTimeout: the run was killed for running past its timeout.
	ErrTimeout = errors.New("agent run timed out")
	// ErrNoResult: the agent exited with status 0 but printed no result
	// line, so its outcome is unknown.
	ErrNoResult = errors.New("agent printed no result")
	// ErrAgentError: the result line says is_error.
	ErrAgentError = errors.New("agent reported an error")
)

// Run starts the agent, calls onEvent (when not nil) for each stream-json
// line as it arrives, and returns when the agent has exited and its process
// group is killed.
//
// The error is for a run that could not start: an invalid Spec, a missing
// binary. A run that started always returns a nil error; how it ended is
// in the Result, whose Err is nil only for a clean finish.
//
// onEvent is called from one goroutine at a time, in output order, and
// never after Run returns. While it runs the agent's output is not read,
// so it should be quick (send on a buffered channel, tell an actor).
func Run(ctx context.Context, spec Spec, onEvent func(Event)) (Result, error) {
	if spec.Bin == "" {
		return Result{ExitCode: -1}, errors.New("running agent: no binary given")
	}
	if len(spec.Prompt) > MaxPromptArg {
		return Result{ExitCode: -1}, fmt.Errorf("running agent %s: prompt is %d bytes, more than the %d an argument may have", spec.Bin, len(spec.Prompt), MaxPromptArg)
	}
	timeout := orDefault(spec.Timeout, DefaultTimeout)
	outputCap := orDefault(spec.OutputCap, DefaultOutputCap)

	args := slices.Clone(spec.Args)
	if p := spec.Prompt; p != "" {
		if strings.HasPrefix(p, "-") {
			p = " " + p
		}
		args = append(args, p)
	}

	var res Result
	lines := res.stream(outputCap, newParser(spec.Format, spec.Model, spec.Price), onEvent)
	pr, err := proc.Run(ctx, proc.Cmd{
		Path: spec.Bin, Args: args, Dir: spec.Dir,
		Env: append(os.Environ(), spec.Env...),
		// The tag marks what the agent starts in sessions of its own (the
		// CLI's Bash tool calls), which the group kill misses.
		TagKey:    TagEnv,
		Stdout:    lines,
		OutputCap: outputCap,
		Timeout:   timeout,
		WaitDelay: orDefault(spec.WaitDelay, DefaultWaitDelay),
	})
	if !pr.Started {
		return Result{ExitCode: -1}, fmt.Errorf("starting agent %s: %w", spec.Bin, err)
	}
	res.Duration = pr.Duration
	// Run has returned, so the goroutine that fed lines is done.
	res.endStream(lines)
	res.Stderr = pr.Stderr.String()
	res.ExitCode = pr.ExitCode
	res.Err = outcome(pr, err, &res)
	if res.Err != nil && !res.TimedOut && ctx.Err() == nil {
		res.Limit = detectLimit(&res, time.Now())
	}
	return res, nil
}

// TagEnv is set, to a value unique to the run, in the environment of
// every agent process, which all its descendants inherit: what the agent
// left running in sessions of its own is found by it.
const TagEnv = proctag.AgentKey

// stream returns the writer an agent's stdout goes to: it splits it into
// lines of at most outputCap bytes, folds each line p reads into r and
// hands it to onEvent (when not nil). endStream ends it.
func (r *Result) stream(outputCap int, p lineParser, onEvent func(Event)) *proc.LineWriter {
	return &proc.LineWriter{Sep: '\n', Max: outputCap, Fn: func(line []byte) {
		ev, ok := p.parse(line)
		if !ok {
			if len(bytes.TrimSpace(line)) > 0 {
				r.Skipped++
			}
			return
		}
		r.add(ev)
		if onEvent != nil {
			onEvent(ev)
		}
	}}
}

// endStream takes the last line of a stream that ended without a newline,
// and counts the lines too long to read as skipped.
func (r *Result) endStream(lines *proc.LineWriter) {
	lines.Flush()
	r.Skipped += lines.Skipped()
}

// add folds one event into the result.
func (r *Result) add(ev Event) {
	r.Events++
	r.ToolCalls += len(ev.ToolCalls)
	if ev.SessionID != "" {
		r.SessionID = ev.SessionID
	}
	if ev.Type == TypeAssistant && ev.Error != "" {
		r.apiError = ev.Error
	}
	if ev.Type == TypeResult {
		r.SawResult = true
		r.APIErrorStatus = ev.APIErrorStatus
		r.CostUSD = ev.CostUSD
		r.Turns = ev.Turns
		r.IsError = ev.IsError
		r.FinalText = ev.Text
		r.Subtype = ev.Subtype
	}
}

// outcome decides Result.Err from how the process ended; runErr is
// proc.Run's error.
func outcome(pr proc.Result, runErr error, res *Result) error {
	switch {
	case pr.TimedOut:
		res.TimedOut = true
		return fmt.Errorf("%w after %s", ErrTimeout, res.Duration.Round(time.Millisecond))
	case errors.Is(runErr, context.Canceled), errors.Is(runErr, context.DeadlineExceeded):
		return fmt.Errorf("agent run %w", runErr)
	case runErr != nil:
		if msg := lastLine(res.Stderr); msg != "" {
			return fmt.Errorf("agent %w: %s", runErr, msg)
		}
		return fmt.Errorf("agent %w", runErr)
	case !res.SawResult:
		return ErrNoResult
	case res.IsError:
		return fmt.Errorf("%w (%s): %s", ErrAgentError, res.Subtype, clipText(res.FinalText, 512))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clipText(s, 512)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
