package run

import "github.com/drover-dev/drover/internal/api"

// The decisions the shell meets while it works an iteration or checks a
// wave in the background: it gathers each fact (git, the reviewer) and
// asks here what follows, so that the order of the steps is the core's.

// OffBranch reports whether the agent left its work tree's HEAD off the
// task's branch: head is the branch HEAD is on, empty when it is detached
// (or git could not say). Only the task's branch is merged, so commits
// elsewhere would be reported done and never merged: the shell names
// where HEAD is (IterationDone.OffBranch, a detached HEAD by its commit)
// and switches the work tree back to branch, so that the next iteration
// can merge them and reuse the work tree.
func OffBranch(head, branch string) bool { return head != branch }

// Reviews reports whether the reviewer reviews iteration m: only one that
// is otherwise done, in a run that has a reviewer. A review of work that
// failed its tests would only repeat what the tests said.
func Reviews(m IterationDone, hasReviewer bool) bool {
	return hasReviewer && m.Review == nil && Done(m)
}

// RemovesWorkTree reports whether the task's work tree goes once iteration
// m ends: when it finished its task (review included), since what is
// merged is the branch. A task not done keeps its work tree for the next
// iteration.
func RemovesWorkTree(m IterationDone) bool { return Done(m) }

// MergedBranch is what the shell learnt of merging one branch of a wave.
type MergedBranch struct {
	Branch string
	// OnTarget: the branch was merged, or was on the target already.
	OnTarget bool
	// Conflict: the branch conflicts with the target (its merge was
	// aborted); Files and Diff say where and how.
	Conflict bool
	Files    []string
	Diff     string
}

// WaveMerged decides what follows the merge of a wave's branches (mergeErr
// is a merge that could not be tried or finished): the WaveChecked event
// so far, and the suite command to run in the main work tree, empty when
// the suite does not run. It runs only when every branch is on the
// target: a suite run on half a wave says nothing about the wave.
func WaveMerged(wave int, o api.RunOptions, mergeErr error, branches []MergedBranch) (WaveChecked, string) {
	out := WaveChecked{Wave: wave, MergeErr: mergeErr}
	all := true
	for _, b := range branches {
		if b.Conflict {
			out.Conflicts = append(out.Conflicts, Conflict{Branch: b.Branch, Files: b.Files, Diff: b.Diff})
		}
		all = all && b.OnTarget
	}
	if mergeErr != nil || !all {
		return out, ""
	}
	suite, err := SuiteCommand(o)
	if err != nil {
		out.MergeErr = err
		return out, ""
	}
	return out, suite
}
