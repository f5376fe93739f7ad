// Package agentrun runs one headless coding agent process (Claude Code in
// print mode with stream-json output, or another CLI that speaks it) and
// reports what it does as it does it: each tool call, each tool result,
// the final cost and outcome.
//
// A run is bounded: no shell, stdin from /dev/null, a timeout, a process
// group of its own that is killed as a whole on timeout or cancellation
// and once the agent has exited (so tools it left running in the
// background do not outlive it), and capped memory for its output.
package agentrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

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
	// Stderr is the end of the agent's stderr, at most the output cap.
	Stderr string
	// Duration is the wall time from start to exit.
	Duration time.Duration
	// TimedOut is true when the run was killed for running past Timeout.
	TimedOut bool
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

	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel()

	args := slices.Clone(spec.Args)
	if p := spec.Prompt; p != "" {
		if strings.HasPrefix(p, "-") {
			p = " " + p
		}
		args = append(args, p)
	}
	cmd := exec.CommandContext(runCtx, spec.Bin, args...)
	cmd.Dir = spec.Dir
	tag, err := proctag.New(TagEnv)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	cmd.Env = append(append(os.Environ(), spec.Env...), tag)
	cmd.Stdin = nil // /dev/null: a headless agent must never wait on input
	cmd.WaitDelay = orDefault(spec.WaitDelay, DefaultWaitDelay)
	setProcessGroup(cmd)

	var res Result
	lines := &lineWriter{max: outputCap, fn: func(line []byte) {
		ev, ok := ParseLine(line)
		if !ok {
			if len(bytes.TrimSpace(line)) > 0 {
				res.Skipped++
			}
			return
		}
		res.add(ev)
		if onEvent != nil {
			onEvent(ev)
		}
	}}
	stderr := &tail{max: outputCap}
	cmd.Stdout = lines
	cmd.Stderr = stderr

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("starting agent %s: %w", spec.Bin, err)
	}
	waitErr := cmd.Wait()
	// The agent is gone; whatever it started in its group goes too, and
	// what it started in sessions of its own (the CLI's Bash tool calls).
	killProcessGroup(cmd)
	_, _ = proctag.Kill(tag)
	res.Duration = time.Since(start)
	// Wait has returned, so the goroutine that fed lines is done.
	lines.flush()
	res.Skipped += lines.oversize
	res.Stderr = stderr.String()
	res.ExitCode = -1
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	res.Err = outcome(runCtx, waitErr, &res)
	return res, nil
}

// TagEnv is set, to a value unique to the run, in the environment of
// every agent process, which all its descendants inherit: what the agent
// left running in sessions of its own is found by it.
const TagEnv = proctag.AgentKey

// add folds one event into the result.
func (r *Result) add(ev Event) {
	r.Events++
	r.ToolCalls += len(ev.ToolCalls)
	if ev.SessionID != "" {
		r.SessionID = ev.SessionID
	}
	if ev.Type == TypeResult {
		r.SawResult = true
		r.CostUSD = ev.CostUSD
		r.Turns = ev.Turns
		r.IsError = ev.IsError
		r.FinalText = ev.Text
		r.Subtype = ev.Subtype
	}
}

// outcome decides Result.Err from how the process ended.
func outcome(runCtx context.Context, waitErr error, res *Result) error {
	// A run that exited 0 just as its time ran out still finished.
	if runCtx.Err() != nil && res.ExitCode != 0 {
		if cause := context.Cause(runCtx); errors.Is(cause, ErrTimeout) {
			res.TimedOut = true
			return fmt.Errorf("%w after %s", ErrTimeout, res.Duration.Round(time.Millisecond))
		}
		return fmt.Errorf("agent run stopped: %w", runCtx.Err())
	}
	// ErrWaitDelay alone means the agent exited cleanly but something it
	// started held its output open; that something is killed by now.
	if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		if msg := lastLine(res.Stderr); msg != "" {
			return fmt.Errorf("agent %w: %s", waitErr, msg)
		}
		return fmt.Errorf("agent %w", waitErr)
	}
	switch {
	case res.ExitCode != 0:
		return fmt.Errorf("agent exited with status %d", res.ExitCode)
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

// lineWriter splits what is written to it into lines and calls fn with
// each, without its newline. A line longer than max is dropped whole and
// counted, so that memory stays bounded whatever the agent prints.
type lineWriter struct {
	max      int
	fn       func([]byte)
	buf      []byte
	skipping bool
	oversize int
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skipping {
			if len(w.buf)+len(chunk) > w.max {
				w.skipping = true
				w.oversize++
				w.buf = w.buf[:0]
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !w.skipping {
			w.fn(w.buf)
		}
		w.buf = w.buf[:0]
		w.skipping = false
		p = p[i+1:]
	}
	return n, nil
}

// flush hands on a last line that had no newline.
func (w *lineWriter) flush() {
	if !w.skipping && len(w.buf) > 0 {
		w.fn(w.buf)
	}
	w.buf = w.buf[:0]
	w.skipping = false
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	// Trim only now and then, so that many small writes stay cheap.
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}
