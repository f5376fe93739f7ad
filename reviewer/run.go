package reviewer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/proctag"
)

// waitDelay is how long Run waits, after the reviewer exited or was killed,
// for its output pipes to drain. Only a process that escaped the group (a
// daemon that called setsid) can hold them open longer; past this the pipes
// are closed under it.
const waitDelay = 2 * time.Second

// logTailBytes is how much of stderr (and of stdout) a failure log keeps.
const logTailBytes = 8 << 10

// Run runs one reviewer and returns its Result; it never panics on a bad
// Spec or a misbehaving CLI, and it returns only once the process and its
// whole process group are gone.
//
// The process gets /dev/null as stdin and its own process group. When
// s.Timeout (DefaultTimeout if zero) expires or ctx is done, the group is
// sent SIGKILL, so grandchildren (tools the CLI started) die with it; the
// group is also killed after a normal exit, so nothing it left behind
// outlives the run. Output past s.OutputCap is drained and dropped. A
// failed run's log goes to s.LogPath when set. For codex, the schema goes
// to a private temporary file that is removed when Run returns; the output
// is read with Parse for s.CLI.
func Run(ctx context.Context, s Spec) Result {
	res := Result{Model: s.Model, ExitCode: -1}
	if s.CLI == CLICodex && s.SchemaFile == "" {
		path, err := writeSchemaFile(s.Schema)
		if err != nil {
			return failed(res, s, nil, err)
		}
		defer os.Remove(path)
		s.SchemaFile = path
	}
	name, args, env, err := BuildCommand(s)
	if err != nil {
		return failed(res, s, nil, err)
	}
	if err := ctx.Err(); err != nil {
		return failed(res, s, args, fmt.Errorf("reviewer cancelled before it started: %w", err))
	}
	if err := s.Limiter.Acquire(ctx); err != nil {
		return failed(res, s, args, fmt.Errorf("waiting for a reviewer slot: %w", err))
	}
	defer s.Limiter.Release()

	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := s.OutputCap
	if limit <= 0 {
		limit = DefaultOutputCap
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout, stderr := &capBuffer{limit: limit}, &capBuffer{limit: limit}
	start := time.Now()
	if s.OwnerTag != "" {
		if env == nil {
			env = os.Environ()
		}
		env = append(slices.Clip(env), s.OwnerTag)
	}
	state, waitErr, startErr := execute(tctx, name, args, env, s.Dir, stdout, stderr)
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.buf, stdout.dropped > 0
	res.Stderr, res.StderrTruncated = stderr.buf, stderr.dropped > 0
	if startErr != nil {
		return failed(res, s, args, fmt.Errorf("starting reviewer %q: %w", name, startErr))
	}
	if state != nil {
		res.ExitCode = state.ExitCode()
	}

	parsed, perr := Parse(s.CLI, res.Stdout)
	res.CostUSD, res.InputTokens, res.OutputTokens = parsed.CostUSD, parsed.InputTokens, parsed.OutputTokens
	switch {
	case waitErr != nil && tctx.Err() != nil:
		if ctx.Err() != nil {
			return failed(res, s, args, fmt.Errorf("reviewer cancelled after %s: %w", res.Duration.Round(time.Millisecond), ctx.Err()))
		}
		return failed(res, s, args, fmt.Errorf("%w after %s", ErrTimeout, timeout))
	case waitErr != nil:
		err := fmt.Errorf("%w: %v", ErrExit, waitErr)
		if errors.Is(perr, ErrIsError) {
			// claude exits 1 after printing an is_error result, codex
			// after a turn.failed event; their message says more than
			// the status does.
			err = fmt.Errorf("%w: %v (%w)", ErrExit, waitErr, perr)
		} else if serr := stderrError(s.CLI, res.Stderr); serr != nil {
			// gemini prints its fatal errors as JSON on stderr.
			err = fmt.Errorf("%w: %v (%w)", ErrExit, waitErr, serr)
		}
		return failed(res, s, args, err)
	case res.StdoutTruncated:
		return failed(res, s, args, fmt.Errorf("%w (%d bytes kept, %d dropped)", ErrOutputTooLarge, len(res.Stdout), stdout.dropped))
	case perr != nil:
		return failed(res, s, args, perr)
	}
	res.Verdict, res.Findings = parsed.Verdict, parsed.Findings
	res.Outcome = Fail
	if parsed.Verdict == VerdictPass {
		res.Outcome = Pass
	}
	return res
}

// TagEnv is set, to a value unique to the run, in the environment of
// every reviewer process.
const TagEnv = proctag.ReviewKey

// execute starts the process, waits for it, kills its group and drains its
// output. Pipes are made here rather than by os/exec so that Wait returns
// when the reviewer itself exits: a grandchild that still holds stdout is
// killed with the group instead of stalling Wait.
func execute(ctx context.Context, name string, args, env []string, dir string, stdout, stderr io.Writer) (*os.ProcessState, error, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	// The tag marks what the reviewer starts in sessions of its own (the
	// claude CLI's tool calls), which the group kill misses.
	tag, err := proctag.New(TagEnv)
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, nil, err
	}
	if env == nil {
		env = os.Environ()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(env), tag)
	cmd.Stdin = nil // the null device
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = waitDelay

	startErr := cmd.Start()
	// The child has its copies; ours must go or the readers never see EOF.
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		return nil, nil, startErr
	}
	var wg sync.WaitGroup
	drain := func(r *os.File, w io.Writer) {
		defer wg.Done()
		_, _ = io.Copy(w, r)
	}
	wg.Add(2)
	go drain(outR, stdout)
	go drain(errR, stderr)

	waitErr := cmd.Wait()
	_ = killGroup(cmd.Process)
	_, _ = proctag.Kill(tag)

	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(waitDelay):
		// Closing the read ends unblocks the copies.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	return cmd.ProcessState, waitErr, nil
}

// writeSchemaFile writes the schema codex reads from --output-schema to a
// new private temporary file and returns its path; the caller removes it.
// An empty sch means StrictSchema().
func writeSchemaFile(sch []byte) (string, error) {
	if len(sch) == 0 {
		sch = StrictSchema()
	}
	f, err := os.CreateTemp("", "drover-review-schema-*.json")
	if err != nil {
		return "", fmt.Errorf("creating the reviewer's schema file: %w", err)
	}
	if _, err := f.Write(sch); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("writing the reviewer's schema file %q: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("closing the reviewer's schema file %q: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// capBuffer keeps the first limit bytes written to it and counts the rest.
// It never fails a write, so the process writing into the pipe never
// blocks on a reader that stopped reading.
type capBuffer struct {
	limit   int
	buf     []byte
	dropped int64
}

func (b *capBuffer) Write(p []byte) (int, error) {
	room := b.limit - len(b.buf)
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.dropped += int64(len(p) - room)
	return len(p), nil
}

// failed marks res as Failed with err and writes the failure log.
func failed(res Result, s Spec, args []string, err error) Result {
	res.Outcome = Failed
	res.Verdict, res.Findings = "", nil
	res.Err = err
	if s.LogPath != "" {
		if lerr := writeLog(s, args, res); lerr != nil {
			res.Err = errors.Join(err, lerr)
		}
	}
	return res
}

// writeLog writes what a person needs to see why a run failed. The prompt
// and the schema are shortened: they are long and known.
func writeLog(s Spec, args []string, res Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "drover reviewer run failed at %s\n", time.Now().UTC().Format(time.RFC3339))
	name := executable(s.Path, s.CLI)
	switch s.CLI {
	case CLICustom:
		if len(s.Command) > 0 {
			name = s.Command[0]
		}
	case "":
		name = executable(s.Path, CLIClaude)
	}
	fmt.Fprintf(&b, "command: %s", strconv.Quote(name))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(logArg(a))
	}
	b.WriteByte('\n')
	if s.Dir != "" {
		fmt.Fprintf(&b, "dir: %s\n", s.Dir)
	}
	fmt.Fprintf(&b, "model: %s\nexit code: %d\nduration: %s\nerror: %v\n", s.Model, res.ExitCode, res.Duration.Round(time.Millisecond), res.Err)
	fmt.Fprintf(&b, "--- stderr (last %d bytes of %d kept%s) ---\n%s\n", min(len(res.Stderr), logTailBytes), len(res.Stderr), truncNote(res.StderrTruncated), tail(res.Stderr, logTailBytes))
	fmt.Fprintf(&b, "--- stdout (last %d bytes of %d kept%s) ---\n%s\n", min(len(res.Stdout), logTailBytes), len(res.Stdout), truncNote(res.StdoutTruncated), tail(res.Stdout, logTailBytes))

	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o700); err != nil {
		return fmt.Errorf("creating reviewer log directory for %q: %w", s.LogPath, err)
	}
	if err := os.WriteFile(s.LogPath, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing reviewer log %q: %w", s.LogPath, err)
	}
	return nil
}

// logArg quotes an argument, shortening a long one (the prompt, the schema)
// to its start and its size.
func logArg(a string) string {
	const max = 200
	if len(a) <= max {
		return strconv.Quote(a)
	}
	return fmt.Sprintf("%s<%d bytes>", strconv.Quote(cut(a, 80)), len(a))
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

func truncNote(t bool) string {
	if t {
		return ", more was dropped at the cap"
	}
	return ""
}
