// Package worktree manages the git work trees drover gives each task of a
// run, and merges the finished branches back into the target branch.
//
// Each task works in <root>/.drover/worktrees/<run-id>/<task-id> on branch
// drover/<run-id>/<task-id>, so tasks of one wave never see each other's
// half-done changes, and a resumed run finds its work where it left it.
// Merging is all or nothing per branch: a conflict is aborted, leaving the
// target exactly as it was before that branch, and reported for review.
//
// Every git command runs through internal/proc's git runner: without a
// shell, with a timeout, in a process group of its own, and with optional
// locks off (GIT_OPTIONAL_LOCKS=0).
package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
)

// Dir is the directory, relative to the repository root, that holds the
// work trees of every run.
const Dir = ".drover/worktrees"

// BranchPrefix starts the name of every branch drover creates for a task.
const BranchPrefix = "drover/"

// Worktree is one task's git work tree.
type Worktree struct {
	// Root is the main work tree of the repository.
	Root string
	// Path is the work tree's directory: Root/.drover/worktrees/<run>/<task>.
	Path string
	// Branch is the short branch name: drover/<run>/<task>.
	Branch string
	// RunID and TaskID are the ids the work tree was created for.
	RunID, TaskID string
	// Base is the commit the caller asked the branch to start from,
	// resolved. A reused branch may have started elsewhere and moved on.
	Base string
	// Reused is true when the branch already existed (a resumed run): its
	// commits are kept and Base was not applied.
	Reused bool
}

// BranchName returns the branch drover uses for a task of a run.
func BranchName(runID, taskID string) string {
	return BranchPrefix + runID + "/" + taskID
}

// PathFor returns the directory of a task's work tree under root.
func PathFor(root, runID, taskID string) string {
	return filepath.Join(root, filepath.FromSlash(Dir), runID, taskID)
}

func checkIDs(runID, taskID string) error {
	if !hook.ValidSessionID(runID) {
		return fmt.Errorf("run id %q is not valid (letters, digits, '-' and '_' only)", clip(runID))
	}
	if !hook.ValidSessionID(taskID) {
		return fmt.Errorf("task id %q is not valid (letters, digits, '-' and '_' only)", clip(taskID))
	}
	return nil
}

// Create returns the work tree of a task, making it when needed: a new
// branch drover/<run>/<task> from base ("" means HEAD) checked out at
// Root/.drover/worktrees/<run>/<task>. It is idempotent: when that branch
// is already checked out there, the work tree is returned as it is; when
// the branch exists without a work tree (it was removed, or lost with its
// directory), a work tree is made for it again, keeping its commits.
//
// It is an error when the branch is checked out somewhere else, or the
// directory holds anything but this branch's work tree.
//
// Callers serialize Create and Remove for one repository: git reads
// .git/worktrees while another `git worktree add` is still filling it in,
// and fails ("failed to read .git/worktrees/c/commondir").
func Create(ctx context.Context, root, runID, taskID, base string) (Worktree, error) {
	if err := checkIDs(runID, taskID); err != nil {
		return Worktree{}, fmt.Errorf("creating work tree: %w", err)
	}
	if base == "" {
		base = "HEAD"
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return Worktree{}, fmt.Errorf("creating work tree: %w", err)
	}
	if strings.HasPrefix(base, "-") {
		return Worktree{}, fmt.Errorf("creating work tree: base %q is not a revision", clip(base))
	}
	wt := Worktree{
		Root:   root,
		Path:   PathFor(root, runID, taskID),
		Branch: BranchName(runID, taskID),
		RunID:  runID,
		TaskID: taskID,
	}
	fail := func(err error) (Worktree, error) {
		return Worktree{}, fmt.Errorf("creating work tree %s for task %q: %w", wt.Branch, taskID, err)
	}

	baseCommit, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "--end-of-options", base+"^{commit}")
	if err != nil {
		return fail(fmt.Errorf("base %q is not a commit: %w", base, err))
	}
	wt.Base = strings.TrimSpace(baseCommit)

	if err := ignoreWorktrees(root); err != nil {
		return fail(err)
	}

	list, err := listWorktrees(ctx, root)
	if err != nil {
		return fail(err)
	}
	ref := "refs/heads/" + wt.Branch
	for _, e := range list {
		same := samePath(e.Path, wt.Path)
		switch {
		case e.Branch == ref && same && e.Prunable:
			// Registered, but its directory is gone: forget it and make
			// it again below.
			if _, err := git(ctx, root, "worktree", "prune"); err != nil {
				return fail(err)
			}
		case e.Branch == ref && same:
			wt.Reused = true
			return wt, nil
		case e.Branch == ref:
			return fail(fmt.Errorf("branch is already checked out at %s", e.Path))
		case same && !e.Prunable:
			what := "a detached HEAD"
			if e.Branch != "" {
				what = "branch " + strings.TrimPrefix(e.Branch, "refs/heads/")
			}
			return fail(fmt.Errorf("%s is a work tree on %s, not on %s", wt.Path, what, wt.Branch))
		}
	}

	if _, err := os.Lstat(wt.Path); err == nil {
		// An empty folder is what a `git worktree add` killed before it
		// registered the work tree leaves: made again below.
		if rerr := os.Remove(wt.Path); rerr != nil {
			return fail(fmt.Errorf("%s exists and is not a work tree of this repository", wt.Path))
		}
	}
	if err := os.MkdirAll(filepath.Dir(wt.Path), 0o755); err != nil {
		return fail(err)
	}
	if _, err := git(ctx, root, "rev-parse", "--verify", "--quiet", ref); err == nil {
		wt.Reused = true
		_, err = git(ctx, root, "worktree", "add", "--end-of-options", wt.Path, wt.Branch)
		if err != nil {
			return fail(err)
		}
		return wt, nil
	}
	if _, err := git(ctx, root, "worktree", "add", "-b", wt.Branch, "--end-of-options", wt.Path, wt.Base); err != nil {
		return fail(err)
	}
	return wt, nil
}

// Remove deletes a task's work tree, including any changes in it that are
// not committed, and keeps its branch: the branch is what gets merged. A
// work tree that is already gone is not an error. Like Create, it must not
// run at once with another Create or Remove in the same repository.
func Remove(ctx context.Context, wt Worktree) error {
	if err := checkIDs(wt.RunID, wt.TaskID); err != nil {
		return fmt.Errorf("removing work tree: %w", err)
	}
	root, err := filepath.Abs(wt.Root)
	if err != nil {
		return fmt.Errorf("removing work tree: %w", err)
	}
	// Only ever remove the path drover made, whatever wt.Path says.
	path := PathFor(root, wt.RunID, wt.TaskID)
	list, err := listWorktrees(ctx, root)
	if err != nil {
		return fmt.Errorf("removing work tree %s: %w", path, err)
	}
	registered := false
	for _, e := range list {
		if samePath(e.Path, path) && !e.Prunable {
			registered = true
		}
	}
	if registered {
		// Twice forced removes a locked work tree as well.
		if _, err := git(ctx, root, "worktree", "remove", "--force", "--force", "--end-of-options", path); err != nil {
			return fmt.Errorf("removing work tree %s: %w", path, err)
		}
	} else if _, err := git(ctx, root, "worktree", "prune"); err != nil {
		return fmt.Errorf("removing work tree %s: %w", path, err)
	}
	// The run's directory goes when its last task's does; an error means
	// it is not empty yet.
	_ = os.Remove(filepath.Dir(path))
	return nil
}

// ignoreWorktrees makes git in the main work tree ignore everything under
// .drover/worktrees, so the work trees never show up as untracked files
// there (nor get added by a `git add -A`). The file ignores itself too.
func ignoreWorktrees(root string) error {
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.WriteFile(p, []byte("# Written by drover: task work trees are not part of the repository.\n*\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// entry is one work tree in `git worktree list --porcelain`.
type entry struct {
	Path     string
	Head     string
	Branch   string // full ref, or "" when detached
	Bare     bool
	Prunable bool
}

func listWorktrees(ctx context.Context, root string) ([]entry, error) {
	out, err := git(ctx, root, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	list := parseWorktreeList(out)
	for i := range list {
		// Older git does not say "prunable"; a missing directory is.
		if _, err := os.Stat(list[i].Path); err != nil {
			list[i].Prunable = true
		}
	}
	return list, nil
}

// parseWorktreeList reads the output of `git worktree list --porcelain`:
// records of "key value" lines separated by blank lines. Unknown keys are
// skipped, as git's documentation asks.
func parseWorktreeList(out string) []entry {
	var list []entry
	var cur *entry
	for _, line := range strings.Split(out, "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch {
		case line == "":
			cur = nil
		case key == "worktree":
			list = append(list, entry{Path: val})
			cur = &list[len(list)-1]
		case cur == nil:
		case key == "HEAD":
			cur.Head = val
		case key == "branch":
			cur.Branch = val
		case key == "bare":
			cur.Bare = true
		case key == "prunable":
			cur.Prunable = true
		}
	}
	return list
}

// samePath reports whether a and b name the same directory, allowing for
// symbolic links (git prints resolved paths; t.TempDir on macOS is under a
// link) and for a directory that no longer exists.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	return resolve(a) == resolve(b)
}

// resolve returns p with symbolic links resolved as far up as they can be:
// a missing tail is kept as it is.
func resolve(p string) string {
	p = filepath.Clean(p)
	var tail []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, tail...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, tail...)...)
		}
		tail = append([]string{filepath.Base(p)}, tail...)
		p = parent
	}
}

func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

// Reset puts a task's work tree back to the last commit of its branch: a
// rebase or merge under way is dropped, HEAD goes back to the branch,
// changes to tracked files are undone and files neither tracked nor
// ignored are removed (ignored ones, such as build caches, stay). Lock
// files left by a git killed in it are removed first: Reset is for a work
// tree whose agent is dead, before another starts in it, and nothing else
// may be working there. The branch and its commits are kept. A path that
// is not a work tree of its own is refused, untouched. Like Create,
// it must not run at once with another Create or Remove in the same
// repository.
func Reset(ctx context.Context, wt Worktree) error {
	if err := checkIDs(wt.RunID, wt.TaskID); err != nil {
		return fmt.Errorf("resetting work tree: %w", err)
	}
	root, err := filepath.Abs(wt.Root)
	if err != nil {
		return fmt.Errorf("resetting work tree: %w", err)
	}
	// Only ever the path drover made, on the branch drover made.
	path, branch := PathFor(root, wt.RunID, wt.TaskID), BranchName(wt.RunID, wt.TaskID)
	fail := func(err error) error {
		return fmt.Errorf("resetting work tree %s of task %q: %w", path, wt.TaskID, err)
	}
	// A folder at path that is not a work tree of its own lies inside the
	// main work tree, where git finds the main repository: the commands
	// below would check the task's branch out over a person's checkout.
	top, err := git(ctx, path, "rev-parse", "--show-toplevel")
	if err != nil {
		return fail(err)
	}
	if top = strings.TrimSpace(top); !samePath(top, path) {
		return fail(fmt.Errorf("it is not a work tree of its own (git finds the one at %s there): nothing was reset", top))
	}
	gitDir, err := absGitDir(ctx, path)
	if err != nil {
		return fail(err)
	}
	if err := removeStaleLocks(ctx, path, gitDir, branch); err != nil {
		return fail(err)
	}
	// Each may have nothing to drop: their errors say so, and the
	// commands below do the rest.
	_, _ = git(ctx, path, "rebase", "--quit")
	_, _ = git(ctx, path, "merge", "--abort")
	for _, args := range [][]string{
		{"checkout", "--quiet", "--force", branch, "--"},
		{"reset", "--hard", "--quiet", "refs/heads/" + branch},
		{"clean", "-ffdq"},
	} {
		if _, err := git(ctx, path, args...); err != nil {
			return fail(err)
		}
	}
	return nil
}
