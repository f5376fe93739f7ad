package actors

// A run of a plan's tasks (`drover run --plan`) marks each task done in the
// plan's tasks.md once its branch is on the target, so that the next
// `drover run --plan` and the plan workflow skip it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-dev/drover/internal/rungraph"
)

// planTasksFile is tasks.md of plan id, relative to the project's root.
func planTasksFile(id string) string {
	return filepath.Join(planDirAt("", id), "tasks.md")
}

// markPlanDone marks the tasks ids done in plan planID's tasks.md in the
// main work tree at root (rungraph.MarkDone). When git tracks the file the
// change is committed on the branch checked out there, the run's target,
// which the wave's merges left clean: a change left uncommitted would stop
// the next wave's merge (worktree.ErrDirty). A commit that fails puts the
// file back as it was. It is idempotent: tasks already done are left, and
// nothing is written when none changes. marked are the ids it changed.
func markPlanDone(ctx context.Context, root, planID, runID string, ids []string) (marked []string, err error) {
	if planID == "" || len(ids) == 0 {
		return nil, nil
	}
	rel := planTasksFile(planID)
	path := filepath.Join(root, rel)
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plan tasks %q: %w", rel, err)
	}
	text, marked := rungraph.MarkDone(string(old), ids)
	if len(marked) == 0 {
		return nil, nil
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return nil, err
	}
	if _, err := gitOut(ctx, root, "ls-files", "--error-unmatch", "--", rel); err != nil {
		// Not tracked (or .drover/ is ignored): the file is all there is.
		return marked, nil
	}
	msg := fmt.Sprintf("drover: plan %s: task %s done (run %s)", planID, strings.Join(marked, ", "), runID)
	if _, err := gitOut(ctx, root, "commit", "--quiet", "--no-verify", "-m", msg, "--", rel); err != nil {
		if werr := writeFileAtomic(path, old); werr != nil {
			err = errors.Join(err, werr)
		}
		return nil, fmt.Errorf("committing plan tasks %q: %w", rel, err)
	}
	return marked, nil
}
