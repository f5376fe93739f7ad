package proc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	// GitTimeout bounds one git command started by GitCmd. Adding a work
	// tree checks out the whole tree and a merge runs the repository's
	// hooks, so it is generous; it is there so that a wedged git cannot
	// wedge drover. Callers that wait on git for an answer (a hook) bound
	// ctx more tightly.
	GitTimeout = 5 * time.Minute
	// GitOutputCap is how much of git's stdout, and of its stderr, GitCmd
	// keeps.
	GitOutputCap = 1 << 20
)

// GitCmd returns the Cmd that runs git with args in dir, without a shell:
// GitEnv over this process's environment, SIGTERM first on cancellation
// (git removes its lock files on it, where a SIGKILL would leave
// index.lock behind and fail every later command), GitTimeout and
// GitOutputCap. Adjust it (Stdout to stream, OutputCap) and pass it to
// Run; Git does that for the common case.
func GitCmd(dir string, args ...string) Cmd {
	return Cmd{
		Path:      "git",
		Args:      args,
		Dir:       dir,
		Env:       GitEnv(os.Environ()),
		Graceful:  true,
		Timeout:   GitTimeout,
		OutputCap: GitOutputCap,
	}
}

// Git runs git with args in dir (see GitCmd) and returns its stdout
// (Output.String: past GitOutputCap, its middle is cut with a line that
// says so). On failure it still returns the stdout it got, and a
// *GitError with git's stderr.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	res, err := Run(ctx, GitCmd(dir, args...))
	out := res.Stdout.String()
	if err != nil {
		return out, &GitError{Args: args, Err: err, Stderr: res.Stderr.String()}
	}
	return out, nil
}

// GitError is a git command that failed: its arguments, why (Run's error),
// and what git said on stderr.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// GitEnv is env for drover's git commands. Variables that would point git
// at another repository (set when drover runs inside a git hook) are
// dropped; optional locks are off, so that drover's reads (git status)
// neither write the index nor fail the agent's own git commands running
// at the same moment; messages are untranslated, for the logs and so that
// "not a git repository" can be recognised; and git never stops to ask a
// person anything.
func GitEnv(env []string) []string {
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
