package worktree

import (
	"context"
	"time"

	"github.com/drover-dev/drover/internal/proc"
)

const (
	// gitTimeout bounds one git command. Adding a work tree checks out the
	// whole tree and a merge runs the repository's hooks, so this is
	// generous; it is there so that a wedged git cannot wedge a run.
	gitTimeout = proc.GitTimeout
	// cleanupTimeout bounds the git commands that restore the target branch
	// after a failed merge. They run even when the caller's context is done.
	cleanupTimeout = time.Minute
)

// git runs one git command in dir, without a shell, and returns its stdout
// (proc.Git: SIGTERM first on cancellation, so git removes its locks).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	return proc.Git(ctx, dir, args...)
}

// gitCleanup is git for the commands that put the target branch back: it
// ignores the caller's cancellation, because leaving a merge half done is
// worse than a short wait, but keeps its own timeout.
func gitCleanup(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return proc.Git(ctx, dir, args...)
}
