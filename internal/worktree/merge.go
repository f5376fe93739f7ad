package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MaxConflictDiff bounds the conflict text kept for one branch: enough for
// a person or an agent to see what clashed, small enough for a report.
const MaxConflictDiff = 64 << 10

// maxConflictFiles bounds the conflicting file names kept for one branch.
const maxConflictFiles = 100

// Status is what happened to one branch in MergeInOrder.
type Status string

// The outcomes of merging one branch.
const (
	// Merged: a merge commit for the branch is on the target.
	Merged Status = "merged"
	// UpToDate: the target already had everything on the branch (a
	// resumed run merging again); nothing was committed.
	UpToDate Status = "up-to-date"
	// NeedsReview: the branch conflicts with the target. The merge was
	// aborted and the target left as it was; the conflict is in the result.
	NeedsReview Status = "needs-review"
	// Failed: the merge failed for another reason (no such branch, a hook
	// refused it, a timeout). The target was left as it was, and
	// MergeInOrder stopped with an error.
	Failed Status = "failed"
	// Skipped: not tried, because MergeInOrder stopped before it.
	Skipped Status = "skipped"
)

// OnConflict says what MergeInOrder does after a branch conflicts.
type OnConflict int

const (
	// StopOnConflict leaves the branches after a conflicting one Skipped.
	StopOnConflict OnConflict = iota
	// ContinueOnConflict goes on with the next branch. Tasks of one wave do
	// not depend on each other, so the others can still be merged.
	ContinueOnConflict
)

// BranchResult is the outcome of merging one branch.
type BranchResult struct {
	// Branch is the branch as passed to MergeInOrder.
	Branch string
	// Status is what happened.
	Status Status
	// Commit is the target's commit after this branch: the merge commit
	// when Merged, the unchanged head otherwise ("" when Skipped).
	Commit string
	// ConflictFiles are the paths, relative to the root, that conflicted
	// (NeedsReview only; at most 100).
	ConflictFiles []string
	// ConflictDiff is `git diff` of the conflicted tree before the merge
	// was aborted, with the conflict markers (NeedsReview only; at most
	// MaxConflictDiff bytes, cut at a line, with a note when cut).
	ConflictDiff string
	// Error says why a Failed merge failed.
	Error string
}

// MergeReport is the outcome of MergeInOrder.
type MergeReport struct {
	// Target is the branch merged into.
	Target string
	// Before and After are the target's commits before the first merge and
	// after the last.
	Before, After string
	// Branches has one result per branch passed, in order.
	Branches []BranchResult
}

// NeedsReview returns the results of the branches that conflicted.
func (r MergeReport) NeedsReview() []BranchResult {
	var out []BranchResult
	for _, b := range r.Branches {
		if b.Status == NeedsReview {
			out = append(out, b)
		}
	}
	return out
}

// OK reports whether every branch is on the target (merged or already
// there).
func (r MergeReport) OK() bool {
	for _, b := range r.Branches {
		if b.Status != Merged && b.Status != UpToDate {
			return false
		}
	}
	return true
}

// ErrNotOnTarget is wrapped by MergeInOrder when the main work tree does not
// have the target branch checked out. drover does not switch the branch of
// a person's work tree behind their back.
var ErrNotOnTarget = errors.New("the main work tree is not on the target branch")

// ErrDirty is wrapped by MergeInOrder when the main work tree has changes to
// tracked files, or a merge in progress: aborting a conflicting merge could
// not promise to give those back.
var ErrDirty = errors.New("the main work tree has uncommitted changes")

// MergeInOrder merges each branch, in the order given, into target, which
// must be the branch checked out in the main work tree at root, with
// `git merge --no-ff`. Callers pass the branches in dependency order.
//
// A branch that conflicts is never left half merged: the conflicting files
// and the conflict text are recorded, `git merge --abort` puts the target
// back exactly as it was before that branch, the branch is marked
// NeedsReview, and onConflict says whether to go on. A conflict is an
// outcome, not an error: see MergeReport.NeedsReview.
//
// The error is for what is not a conflict: a precondition (ErrNotOnTarget,
// ErrDirty), or a branch that failed to merge for another reason, in which
// case the target is put back as it was before that branch, the branch is
// Failed, the rest Skipped, and the report so far is returned with the
// error. If the target cannot be put back, the error says so.
//
// MergeInOrder must not run twice at once on one repository, nor while
// someone else works in its main work tree.
func MergeInOrder(ctx context.Context, root, target string, branches []string, onConflict OnConflict) (MergeReport, error) {
	target = strings.TrimPrefix(target, "refs/heads/")
	rep := MergeReport{Target: target}
	if target == "" || strings.HasPrefix(target, "-") {
		return rep, fmt.Errorf("merging into %q: not a branch name", target)
	}
	head, err := git(ctx, root, "symbolic-ref", "--quiet", "--short", "HEAD")
	if head = strings.TrimSpace(head); err != nil || head != target {
		if head == "" {
			head = "a detached HEAD"
		}
		return rep, fmt.Errorf("merging into %s in %s: %w (it is on %s)", target, root, ErrNotOnTarget, head)
	}
	if err := recoverMerge(ctx, root, target); err != nil {
		return rep, fmt.Errorf("merging into %s in %s: %w", target, root, err)
	}
	if err := checkClean(ctx, root); err != nil {
		return rep, fmt.Errorf("merging into %s in %s: %w", target, root, err)
	}
	before, err := revParse(ctx, root, "HEAD")
	if err != nil {
		return rep, fmt.Errorf("merging into %s: %w", target, err)
	}
	rep.Before, rep.After = before, before

	for i, b := range branches {
		res, err := mergeOne(ctx, root, b, rep.After)
		rep.Branches = append(rep.Branches, res)
		if res.Commit != "" {
			rep.After = res.Commit
		}
		stop := err != nil || (res.Status == NeedsReview && onConflict == StopOnConflict)
		if stop {
			for _, rest := range branches[i+1:] {
				rep.Branches = append(rep.Branches, BranchResult{Branch: rest, Status: Skipped})
			}
		}
		if err != nil {
			return rep, fmt.Errorf("merging %s into %s: %w", b, target, err)
		}
		if stop {
			break
		}
	}
	return rep, nil
}

// mergeOne merges one branch into the checked-out target, whose head is
// pre. A non-nil error means MergeInOrder stops.
func mergeOne(ctx context.Context, root, branch, pre string) (BranchResult, error) {
	res := BranchResult{Branch: branch, Commit: pre}
	failed := func(err error) (BranchResult, error) {
		res.Status = Failed
		res.Error = err.Error()
		return res, err
	}
	if branch == "" || strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, " \t\n\x00") {
		return failed(fmt.Errorf("%q is not a branch name", clip(branch)))
	}
	ref := "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
	if _, err := revParse(ctx, root, ref); err != nil {
		return failed(fmt.Errorf("no branch %s: %w", branch, err))
	}

	// The marker says, should this process die before the merge ends,
	// that the next MergeInOrder has a merge of its own to clean up.
	done, err := markMerge(ctx, root, ref, pre)
	if err != nil {
		return failed(err)
	}
	defer done()
	_, mergeErr := git(ctx, root, "merge", "--no-ff", "--no-edit", "--end-of-options", ref)
	if mergeErr == nil {
		post, err := revParse(ctx, root, "HEAD")
		if err != nil {
			return failed(err)
		}
		res.Commit = post
		res.Status = Merged
		if post == pre {
			res.Status = UpToDate
		}
		return res, nil
	}

	// The merge failed. Whatever happens below, the target is put back
	// to pre before this returns, or the error says it could not be.
	inMerge := mergeInProgress(ctx, root)
	var files []string
	if inMerge && ctx.Err() == nil {
		files = conflictFiles(ctx, root)
	}
	if len(files) > 0 {
		res.Status = NeedsReview
		res.ConflictFiles = files
		if diff, err := gitCleanup(ctx, root, "diff", "--no-color", "--no-ext-diff"); err == nil || diff != "" {
			res.ConflictDiff = clipDiff(diff, MaxConflictDiff)
		}
	}
	if err := restore(ctx, root, pre, inMerge); err != nil {
		if res.Status == NeedsReview {
			return failed(fmt.Errorf("conflict in %s, and %w", strings.Join(files, ", "), err))
		}
		return failed(fmt.Errorf("%w, and %w", mergeErr, err))
	}
	if res.Status == NeedsReview {
		return res, nil
	}
	return failed(mergeErr)
}

// restore puts the checked-out target back to pre after a failed merge:
// `git merge --abort` when a merge is in progress, and then, if the head or
// the tracked files still differ, `git reset --hard pre`, which loses
// nothing because the work tree was clean before the merge. It runs even
// when ctx is done.
func restore(ctx context.Context, root, pre string, inMerge bool) error {
	if inMerge {
		// An error here is judged by the checks below.
		_, _ = gitCleanup(ctx, root, "merge", "--abort")
	}
	if restored(ctx, root, pre) == nil {
		return nil
	}
	if _, err := gitCleanup(ctx, root, "reset", "--hard", "--quiet", pre); err != nil {
		return fmt.Errorf("could not put the target back to %s: %w", pre, err)
	}
	if err := restored(ctx, root, pre); err != nil {
		return fmt.Errorf("could not put the target back to %s: %w", pre, err)
	}
	return nil
}

// restored checks that the head is pre, no merge is in progress and no
// tracked file differs from it.
func restored(ctx context.Context, root, pre string) error {
	head, err := gitCleanup(ctx, root, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return err
	}
	if head = strings.TrimSpace(head); head != pre {
		return fmt.Errorf("the head is %s, not %s", head, pre)
	}
	if mergeInProgress(ctx, root) {
		return errors.New("a merge is still in progress")
	}
	out, err := gitCleanup(ctx, root, "status", "--porcelain=v1", "--untracked-files=no")
	if err != nil {
		return err
	}
	if out = strings.TrimSpace(out); out != "" {
		return fmt.Errorf("tracked files differ: %s", clip(out))
	}
	return nil
}

// checkClean returns an error wrapping ErrDirty when tracked files have
// changes or a merge is in progress. Untracked files are allowed: a merge
// that would overwrite one refuses before it starts.
func checkClean(ctx context.Context, root string) error {
	if mergeInProgress(ctx, root) {
		return fmt.Errorf("%w: a merge is in progress", ErrDirty)
	}
	out, err := git(ctx, root, "status", "--porcelain=v1", "--untracked-files=no")
	if err != nil {
		return err
	}
	if out = strings.TrimSpace(out); out != "" {
		return fmt.Errorf("%w:\n%s", ErrDirty, clipDiff(out, 2048))
	}
	return nil
}

func mergeInProgress(ctx context.Context, root string) bool {
	_, err := gitCleanup(ctx, root, "rev-parse", "--quiet", "--verify", "MERGE_HEAD")
	return err == nil
}

func conflictFiles(ctx context.Context, root string) []string {
	out, err := gitCleanup(ctx, root, "diff", "--name-only", "--diff-filter=U", "-z")
	if err != nil {
		return nil
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" && len(files) < maxConflictFiles {
			files = append(files, f)
		}
	}
	return files
}

func revParse(ctx context.Context, root, rev string) (string, error) {
	out, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// clipDiff cuts s to at most max bytes at a line boundary, noting the cut.
func clipDiff(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const note = "\n[... cut by drover ...]\n"
	cut := s[:max-len(note)]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + note
}
