// Package proc runs the child processes drover starts and waits for:
// reviewers, agents, test and suite commands, loop checks, metric commands
// and git. Every such process is bounded the same way here, so that no
// caller has to get it right again:
//
//   - context first, and a timeout of its own (Cmd.Timeout);
//   - a process group of its own, killed whole on cancellation or timeout
//     (SIGKILL, or SIGTERM first for git, which removes its lock files on
//     it), and killed again once the process has exited, so nothing it
//     left running in the background outlives it;
//   - optionally a tag of its own in its environment (internal/proctag),
//     which finds what it started in sessions of their own, where the
//     group kill does not reach; and the supervisor's tag, by which the
//     watchdog ends everything if the supervisor dies, given per command
//     (Cmd.OwnerTag) or for all the work under a context (WithTags);
//   - stdin from /dev/null; stdout and stderr either captured with a cap
//     that keeps the head and the tail and says how much was cut, or
//     streamed to a writer (LineWriter splits records as they come).
//
// Commands that users write as one string, in config or a flag, run
// through `sh -c` (Shell), so that they mean what they would in a
// terminal. Everything else runs without a shell. Git has its runner here
// too (Git, GitCmd), with an environment that keeps it on the repository
// it was pointed at.
//
// Long-lived children that are not waited for (the watchdog, a supervisor
// started on demand) are not this package's: they have no timeout and no
// captured output.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/proctag"
)

// Defaults for the zero values of Cmd's fields.
const (
	// DefaultTimeout bounds a process whose Cmd has no Timeout.
	DefaultTimeout = 10 * time.Minute
	// DefaultWaitDelay is how long Run waits, once the process exited or
	// was told to stop, before it kills it and closes its output.
	DefaultWaitDelay = 2 * time.Second
	// DefaultOutputCap is how many bytes of each captured stream are kept.
	DefaultOutputCap = 1 << 20
)

// ErrTimeout is wrapped by Run's error when the process was stopped for
// running past Cmd.Timeout (not when ctx ended).
var ErrTimeout = errors.New("process timed out")

// Cmd says how to run one process.
type Cmd struct {
	// Path is the program: a name looked up in PATH, or a path.
	Path string
	// Args are its arguments, without the program's name.
	Args []string
	// Dir is its working directory; empty means this process's.
	Dir string
	// Env is its environment; nil means this process's (os.Environ).
	// When a key appears twice the last entry wins.
	Env []string
	// OwnerTag, when set, is one more "KEY=VALUE" entry for the
	// environment: the supervisor's tag, by which its watchdog ends the
	// process and all it started if the supervisor dies first.
	OwnerTag string
	// TagKey, when set, gives the process a tag of its own under this key
	// (a proctag key such as proctag.AgentKey). Once the process has
	// exited, everything that still carries the tag is killed: what it
	// started in sessions of their own, which the group kill misses.
	// Finding them reads /proc, so leave it empty for short commands
	// that start no such thing (git).
	TagKey string
	// Stdin is the process's input; nil means /dev/null.
	Stdin io.Reader
	// Stdout, when set, receives the process's standard output as it is
	// written, and nothing of it is captured. It is written from one
	// goroutine and never after Run returns. When it returns an error,
	// the process is stopped and Run's error wraps that error.
	Stdout io.Writer
	// Stderr is Stdout for the standard error. It is ignored when
	// Combined is set.
	Stderr io.Writer
	// Combined sends standard error where standard output goes, in the
	// order they were written: Result.Stdout (or Stdout) gets both.
	Combined bool
	// OutputCap is how many bytes of each captured stream are kept: the
	// first quarter and the last three quarters; the middle is counted
	// and dropped. Zero means DefaultOutputCap. Output is always read to
	// its end, so the process never blocks on a full pipe.
	OutputCap int
	// Timeout bounds the run; zero means DefaultTimeout. Past it the
	// process group is stopped as on cancellation.
	Timeout time.Duration
	// WaitDelay is how long Run waits, after the process was told to stop
	// or after it exited, for the process and for its output to close,
	// before it kills the process and closes the output under whatever
	// still holds it. Zero means DefaultWaitDelay.
	WaitDelay time.Duration
	// Graceful sends SIGTERM to the group on cancellation or timeout, and
	// SIGKILL only past WaitDelay, for programs that clean up on SIGTERM
	// (git removes its index.lock). By default the group gets SIGKILL.
	Graceful bool
}

// Result is how a run ended.
type Result struct {
	// Started reports whether the process was started at all; when it is
	// false, Run's error says why not.
	Started bool
	// ExitCode is the exit status; -1 when the process was killed by a
	// signal or never started.
	ExitCode int
	// Stdout and Stderr are what was kept of the captured output (empty
	// when it went to Cmd.Stdout or Cmd.Stderr). With Cmd.Combined, Stdout
	// holds both.
	Stdout, Stderr Output
	// Duration is the wall time from start to exit.
	Duration time.Duration
	// TimedOut reports that the process was stopped for running past
	// Cmd.Timeout.
	TimedOut bool
}

// Run starts c, waits for it to exit, kills what is left of its process
// group (and of its tag), and returns once its output is read.
//
// The error is nil when the process exited with status 0 and every write
// to Cmd.Stdout and Cmd.Stderr succeeded; a process that exits 0 just as
// it is cancelled still succeeded. Otherwise it wraps, in this order of
// precedence: the start error (Result.Started is false; a ctx that was
// already done gives ctx.Err()), a write error of Cmd.Stdout or
// Cmd.Stderr, ErrTimeout, ctx.Err(), or the *exec.ExitError of the exit.
// It never names the program: the caller knows what it ran.
func Run(ctx context.Context, c Cmd) (Result, error) {
	res := Result{ExitCode: -1}
	if c.Path == "" {
		return res, errors.New("no program to run")
	}
	timeout := orDefault(c.Timeout, DefaultTimeout)
	waitDelay := orDefault(c.WaitDelay, DefaultWaitDelay)
	limit := orDefault(c.OutputCap, DefaultOutputCap)

	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	env = slices.Clip(env)
	if c.OwnerTag != "" {
		env = append(env, c.OwnerTag)
	}
	env = append(env, Tags(ctx)...)
	var tag string
	if c.TagKey != "" {
		var err error
		if tag, err = proctag.New(c.TagKey); err != nil {
			return res, err
		}
		env = append(env, tag)
	}

	timed, cancelTimeout := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancelTimeout()
	runCtx, stop := context.WithCancelCause(timed)
	defer stop(nil)

	streams, err := newStreams(c, limit, stop)
	if err != nil {
		return res, err
	}
	defer streams.closeRead()

	sig := stopSignal(c.Graceful)
	cmd := exec.CommandContext(runCtx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = env
	cmd.Stdin = c.Stdin
	cmd.Stdout, cmd.Stderr = streams.outW, streams.errW
	cmd.SysProcAttr = groupAttr(sig)
	cmd.Cancel = func() error { return signalGroup(cmd.Process, sig) }
	cmd.WaitDelay = waitDelay

	start := time.Now()
	startErr := cmd.Start()
	// The child has its copies of the write ends; ours must go or the
	// readers never see EOF.
	streams.closeWrite()
	if startErr != nil {
		return res, startErr
	}
	res.Started = true
	streams.drain()

	// Wait returns when the process itself exits: the pipes are ours, so
	// a grandchild that still holds them does not stall it.
	waitErr := cmd.Wait()
	res.Duration = time.Since(start)
	_ = signalGroup(cmd.Process, sigKill)
	if tag != "" {
		_, _ = proctag.Kill(tag)
	}
	streams.wait(waitDelay)

	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	res.Stdout, res.Stderr = streams.outputs()
	if werr := streams.writeErr(); werr != nil {
		return res, fmt.Errorf("handing on the output: %w", werr)
	}
	// ErrWaitDelay alone means the process exited 0 but its stdin copy
	// did not finish: the process succeeded.
	if waitErr == nil || (res.ExitCode == 0 && errors.Is(waitErr, exec.ErrWaitDelay)) {
		return res, nil
	}
	if errors.Is(context.Cause(timed), ErrTimeout) {
		res.TimedOut = true
		timeoutKilled(ctx)
		return res, fmt.Errorf("%w after %s", ErrTimeout, timeout)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("stopped: %w", err)
	}
	return res, waitErr
}

// streams holds the pipes of one run and the goroutines that read them.
type streams struct {
	outR, outW, errR, errW *os.File
	outCap, errCap         *capture
	outDst, errDst         *guarded
	wg                     sync.WaitGroup
}

// newStreams makes the pipes for c: one for stdout and, unless Combined,
// one for stderr. A write error of a caller's writer calls stop.
func newStreams(c Cmd, limit int, stop context.CancelCauseFunc) (*streams, error) {
	s := &streams{}
	var err error
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("creating a stdout pipe: %w", err)
	}
	s.outDst = s.sink(c.Stdout, &s.outCap, limit, stop)
	if c.Combined {
		s.errW = s.outW
		return s, nil
	}
	if s.errR, s.errW, err = os.Pipe(); err != nil {
		s.closeWrite()
		s.closeRead()
		return nil, fmt.Errorf("creating a stderr pipe: %w", err)
	}
	s.errDst = s.sink(c.Stderr, &s.errCap, limit, stop)
	return s, nil
}

// sink returns where one stream goes: w, or a new capture stored in *capp.
func (s *streams) sink(w io.Writer, capp **capture, limit int, stop context.CancelCauseFunc) *guarded {
	if w == nil {
		*capp = newCapture(limit)
		w = *capp
	}
	return &guarded{w: w, stop: stop}
}

func (s *streams) closeWrite() {
	for _, f := range []*os.File{s.outW, s.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (s *streams) closeRead() {
	for _, f := range []*os.File{s.outR, s.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// drain starts the goroutines that read the pipes.
func (s *streams) drain() {
	read := func(r *os.File, w io.Writer) {
		defer s.wg.Done()
		// A read error is the pipe closed under a straggler by wait.
		_, _ = io.Copy(w, r)
	}
	s.wg.Add(1)
	go read(s.outR, s.outDst)
	if s.errR != nil {
		s.wg.Add(1)
		go read(s.errR, s.errDst)
	}
}

// wait waits for the readers to reach the end of the output. Only a
// process that escaped the group and the tag can hold the pipes open past
// delay; then they are closed under it.
func (s *streams) wait(delay time.Duration) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.closeRead()
		<-done
	}
}

func (s *streams) outputs() (out, errOut Output) {
	if s.outCap != nil {
		out = s.outCap.output()
	}
	if s.errCap != nil {
		errOut = s.errCap.output()
	}
	return out, errOut
}

func (s *streams) writeErr() error {
	for _, g := range []*guarded{s.outDst, s.errDst} {
		if g != nil && g.err != nil {
			return g.err
		}
	}
	return nil
}

// guarded passes writes on to w until w fails, then stops the process and
// drops the rest, so that the process never blocks on a pipe nobody reads.
type guarded struct {
	w    io.Writer
	stop context.CancelCauseFunc
	err  error
}

func (g *guarded) Write(p []byte) (int, error) {
	if g.err != nil {
		return len(p), nil
	}
	n, err := g.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		g.err = err
		g.stop(err)
	}
	return len(p), nil
}

// orDefault is def for a zero or negative v.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
