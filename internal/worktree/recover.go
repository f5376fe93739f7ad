package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MergeMarker is the file, in the main work tree's git directory, that
// MergeInOrder writes before each `git merge` and removes once the target
// is merged or put back. Found at the start of a MergeInOrder, it means
// the process that wrote it died in between (a kill -9 of the supervisor):
// its git may have left lock files, a merge in progress, or a work tree
// half checked out, which the new MergeInOrder cleans up before merging
// again. It holds the branch's ref and the target's commit before it.
const MergeMarker = "DROVER_MERGE"

// lockFiles are the lock files, relative to the git directory, that a git
// merge killed mid-way leaves behind (each fails every later git command
// that needs it). removeStaleLocks adds the branch's ref lock.
var lockFiles = []string{"index.lock", "HEAD.lock", "ORIG_HEAD.lock", "MERGE_HEAD.lock", "AUTO_MERGE.lock"}

// markMerge writes the marker of a merge of ref into the target, whose
// head is pre, and returns what removes it.
func markMerge(ctx context.Context, root, ref, pre string) (func(), error) {
	gitDir, err := absGitDir(ctx, root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(gitDir, MergeMarker)
	if err := os.WriteFile(path, []byte(ref+"\n"+pre+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("marking the merge of %s: %w", ref, err)
	}
	return func() { _ = os.Remove(path) }, nil
}

// recoverMerge cleans up after a merge of MergeInOrder into target whose
// process died before it ended, when MergeMarker says there was one. Its
// git is dead too (callers serialize MergeInOrder on a repository, and a
// resumed run first ends what its last supervisor left running), so the
// locks are stale and removed; a merge in progress is aborted; and a
// target still at the commit before that merge gets back the files the
// merge could have written (restoreTree). A merge that made its commit had
// written the work tree in full before it: a change there now is a
// person's. MergeInOrder then merges again whatever is not on the target
// yet; checkClean refuses a work tree a person changed. Without a marker
// nothing is touched: a lock or a merge that is not drover's is a person's.
func recoverMerge(ctx context.Context, root, target string) error {
	gitDir, err := absGitDir(ctx, root)
	if err != nil {
		return err
	}
	marker := filepath.Join(gitDir, MergeMarker)
	data, err := os.ReadFile(marker)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", marker, err)
	}
	ref, pre, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if err := removeStaleLocks(ctx, root, gitDir, target); err != nil {
		return fmt.Errorf("cleaning up the merge of %s left half done: %w", ref, err)
	}
	if mergeInProgress(ctx, root) {
		// Judged by the checks below and by checkClean.
		_, _ = gitCleanup(ctx, root, "merge", "--abort")
	}
	head, err := gitCleanup(ctx, root, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return fmt.Errorf("cleaning up the merge of %s left half done: %w", ref, err)
	}
	if strings.TrimSpace(head) == pre {
		if err := restoreTree(ctx, root, ref, pre); err != nil {
			return fmt.Errorf("cleaning up the merge of %s left half done: %w", ref, err)
		}
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", marker, err)
	}
	return nil
}

// restoreTree puts back the files a merge of ref into pre, cut short
// before its commit, could have written: those that differ between pre and
// ref. Their changes, staged or not, are undone (the work tree was clean
// before the merge: MergeInOrder checked it); of those the merge added,
// one left untracked is removed when it holds what ref has (a merge killed
// while it checked them out, before it wrote the index). Any other change,
// and anything else untracked, is a person's and stays, for checkClean to
// refuse. Without ref, nothing is put back: which files the merge wrote is
// not known, and checkClean refuses the work tree until a person looks.
func restoreTree(ctx context.Context, root, ref, pre string) error {
	if pre == "" || ref == "" {
		return nil
	}
	touched, err := gitCleanup(ctx, root, "diff", "--name-only", "-z", "--no-renames", pre, ref, "--")
	if err != nil {
		return nil // the branch is gone: the merge cannot be redone either
	}
	changed := map[string]bool{}
	out, err := gitCleanup(ctx, root, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=no")
	if err != nil {
		return err
	}
	for _, e := range strings.Split(out, "\x00") {
		if len(e) > 3 {
			changed[e[3:]] = true // "XY path"
		}
	}
	var restore []string
	for _, f := range strings.Split(touched, "\x00") {
		if f != "" && changed[f] {
			restore = append(restore, ":(literal)"+f)
		}
	}
	if len(restore) > 0 {
		// A file the merge added and staged is not in HEAD: restore
		// removes it from the index and the work tree.
		args := append([]string{"restore", "--quiet", "--source=HEAD", "--staged", "--worktree", "--"}, restore...)
		if _, err := gitCleanup(ctx, root, args...); err != nil {
			return err
		}
	}
	added, err := gitCleanup(ctx, root, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", pre, ref, "--")
	if err != nil {
		return nil
	}
	for _, f := range strings.Split(added, "\x00") {
		if f == "" {
			continue
		}
		if _, err := gitCleanup(ctx, root, "ls-files", "--error-unmatch", "--", f); err == nil {
			continue // tracked: the head has it
		}
		path := filepath.Join(root, filepath.FromSlash(f))
		if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
			continue
		}
		have, err1 := gitCleanup(ctx, root, "hash-object", "--", f)
		want, err2 := gitCleanup(ctx, root, "rev-parse", "--verify", "--quiet", ref+":"+f)
		if err1 == nil && err2 == nil && strings.TrimSpace(have) == strings.TrimSpace(want) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("removing %s, left by the merge: %w", f, err)
			}
		}
	}
	return nil
}

// removeStaleLocks removes the lock files a git killed in the work tree
// at dir, whose git directory is gitDir, leaves behind: lockFiles, and the
// ref lock of branch, which lives in the repository's common directory.
// Callers know that no git of theirs still runs there.
func removeStaleLocks(ctx context.Context, dir, gitDir, branch string) error {
	commonDir, err := gitCleanup(ctx, dir, "rev-parse", "--git-common-dir")
	if err != nil {
		return err
	}
	if commonDir = strings.TrimSpace(commonDir); !filepath.IsAbs(commonDir) {
		// Older git prints it relative to dir.
		commonDir = filepath.Join(dir, commonDir)
	}
	locks := make([]string, 0, len(lockFiles)+1)
	for _, l := range lockFiles {
		locks = append(locks, filepath.Join(gitDir, l))
	}
	locks = append(locks, filepath.Join(commonDir, "refs", "heads", filepath.FromSlash(branch)+".lock"))
	for _, l := range locks {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing a stale lock: %w", err)
		}
	}
	return nil
}

// absGitDir is the git directory of the work tree at root.
func absGitDir(ctx context.Context, root string) (string, error) {
	out, err := git(ctx, root, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("finding the git directory of %s: %w", root, err)
	}
	return strings.TrimSpace(out), nil
}
