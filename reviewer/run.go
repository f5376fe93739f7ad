package reviewer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/proctag"
)

// waitDelay is how long Run waits, after the reviewer exited or was killed,
// for its output pipes to drain (proc.Cmd.WaitDelay).
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
// outlives the run. Of output past s.OutputCap only the start and the end
// are kept (a cut stdout fails the run). A
// failed run's log goes to s.LogPath when set. For codex, the schema goes
// to a private temporary file that is removed when Run returns; the output
// is read with Parse for s.CLI.
func Run(ctx context.Context, s Spec) Result {
	res := Result{Model: s.Model, ExitCode: -1}
	s, err := Route(s)
	if err != nil {
		return failed(res, s, nil, err)
	}
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
	pr, runErr := proc.Run(ctx, proc.Cmd{
		Path: name, Args: args, Dir: s.Dir, Env: env,
		// The owner tag is the watchdog's; the reviewer's own tag marks
		// what it starts in sessions of its own (the claude CLI's tool
		// calls), which the group kill misses.
		OwnerTag: s.OwnerTag, TagKey: TagEnv,
		OutputCap: limit, Timeout: timeout, WaitDelay: waitDelay,
	})
	res.Duration = pr.Duration
	res.Stdout, res.StdoutTruncated = pr.Stdout.Bytes(), pr.Stdout.Truncated()
	res.Stderr, res.StderrTruncated = pr.Stderr.Bytes(), pr.Stderr.Truncated()
	if !pr.Started {
		return failed(res, s, args, fmt.Errorf("starting reviewer %q: %w", name, runErr))
	}
	res.ExitCode = pr.ExitCode

	parsed, perr := Parse(s.CLI, res.Stdout)
	res.CostUSD, res.InputTokens, res.OutputTokens = parsed.CostUSD, parsed.InputTokens, parsed.OutputTokens
	res.CachedInputTokens = parsed.CachedInputTokens
	if res.CostUSD == 0 && (s.CLI == CLICodex || s.CLI == CLIGemini) {
		// They report tokens but no cost: priced from the table, so that
		// their reviews count toward the same budgets.
		res.CostUSD = convergence.DefaultPrices().Tokens(cmp.Or(s.Model, s.CLI), res.InputTokens-res.CachedInputTokens, res.CachedInputTokens, res.OutputTokens)
	}
	res.Denials = parsed.Denials
	switch {
	case pr.TimedOut:
		return failed(res, s, args, fmt.Errorf("%w after %s", ErrTimeout, timeout))
	case runErr != nil && ctx.Err() != nil:
		return failed(res, s, args, fmt.Errorf("reviewer cancelled after %s: %w", res.Duration.Round(time.Millisecond), ctx.Err()))
	case runErr != nil:
		err := fmt.Errorf("%w: %v", ErrExit, runErr)
		if errors.Is(perr, ErrIsError) {
			// claude exits 1 after printing an is_error result, codex
			// after a turn.failed event; their message says more than
			// the status does.
			err = fmt.Errorf("%w: %v (%w)", ErrExit, runErr, perr)
		} else if serr := stderrError(s.CLI, res.Stderr); serr != nil {
			// gemini prints its fatal errors as JSON on stderr.
			err = fmt.Errorf("%w: %v (%w)", ErrExit, runErr, serr)
		}
		return failed(res, s, args, err)
	case res.StdoutTruncated:
		return failed(res, s, args, fmt.Errorf("%w (%d bytes kept, %d dropped)", ErrOutputTooLarge, len(res.Stdout), pr.Stdout.Dropped))
	case perr != nil:
		return failed(res, s, args, perr)
	}
	res.Verdict, res.Findings, res.Review = parsed.Verdict, parsed.Findings, parsed.Review
	res.Outcome = Fail
	if parsed.Verdict == VerdictPass {
		res.Outcome = Pass
	}
	return res
}

// TagEnv is set, to a value unique to the run, in the environment of
// every reviewer process.
const TagEnv = proctag.ReviewKey

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

// failed marks res as Failed with err and writes the failure log.
func failed(res Result, s Spec, args []string, err error) Result {
	res.Outcome = Failed
	res.Verdict, res.Findings, res.Review = "", nil, ""
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
	for _, d := range res.Denials {
		fmt.Fprintf(&b, "refused tool call: %s %s\n", d.Tool, strconv.Quote(d.Input))
	}
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
