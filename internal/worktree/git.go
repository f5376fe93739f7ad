package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// gitTimeout bounds one git command. Adding a work tree checks out the
	// whole tree and a merge runs the repository's hooks, so this is
	// generous; it is there so that a wedged git cannot wedge a run.
	gitTimeout = 5 * time.Minute
	// cleanupTimeout bounds the git commands that restore the target branch
	// after a failed merge. They run even when the caller's context is done.
	cleanupTimeout = time.Minute
	// waitDelay is how long Wait waits for git's pipes after a kill.
	waitDelay = 2 * time.Second
	// maxOutput bounds what is kept of one git command's stdout or stderr.
	maxOutput = 1 << 20
)

// gitError is a git command that failed: its arguments, exit status and
// what it said on stderr.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.args, " "), e.err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, msg)
}

func (e *gitError) Unwrap() error { return e.err }

// git runs one git command in dir, without a shell, and returns its stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	return runGit(ctx, dir, args...)
}

// gitCleanup is git for the commands that put the target branch back: it
// ignores the caller's cancellation, because leaving a merge half done is
// worse than a short wait, but keeps its own timeout.
func gitCleanup(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return runGit(ctx, dir, args...)
}

func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	// SIGTERM first: git removes its lock files on it, where a SIGKILL
	// would leave index.lock behind and fail every later command. Past
	// WaitDelay it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = waitDelay
	stdout := &capped{max: maxOutput}
	stderr := &capped{max: maxOutput}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		return stdout.String(), &gitError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// gitEnv is env for drover's git commands. Variables that would point git at
// another repository (set when drover runs inside a git hook) are dropped;
// optional locks are off so that drover's reads do not get in the way of
// the agent's git; messages are in English for the logs; and git never
// stops to ask a person anything.
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+5)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
			"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_OPTIONAL_LOCKS", "LC_ALL", "GIT_TERMINAL_PROMPT", "GIT_MERGE_AUTOEDIT", "GIT_EDITOR":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_MERGE_AUTOEDIT=no", "GIT_EDITOR=true")
}

// capped is a writer that keeps the first max bytes written to it and
// drops the rest, so that a command's output costs bounded memory.
type capped struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) String() string { return c.buf.String() }
