package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/atomicfile"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// The plan workflow's files: the facts read from a plan folder, the
// state.json view and the review files written to it.

// Bounds on what the actor reads from a plan folder and from git.
const (
	maxPlanFiles    = 2000
	maxPlanFileRead = 1 << 20
	maxRunsRead     = 4 << 20
	maxDiffBytes    = 256 << 10
)

func (a *sessionActor) plansDir() string {
	return filepath.Join(a.env.Root, filepath.FromSlash(plan.PlansDir))
}

// planDir is the folder of plan id; id must be a valid plan id.
func (a *sessionActor) planDir(id string) string { return planDirAt(a.env.Root, id) }

// planDirAt is the folder of plan id in the project at root (relative
// when root is ""); id must be a valid plan id.
func planDirAt(root, id string) string {
	return filepath.Join(root, filepath.FromSlash(plan.PlansDir), id)
}

// factsNeed says what a decision needs read besides the plan folder's
// listing, tasks.md and state.json.
type factsNeed uint8

const (
	// needGit: the git HEAD and the diff since the cycle's last review,
	// when a review may start.
	needGit factsNeed = 1 << iota
	// needWork: plan.md and the current task's file, which only continue
	// reads (plan.Next judges from them whether the work was cut off).
	needWork
	// needSpent: what the plan's reviewer runs cost, even without a
	// budget (set budget_usd says it).
	needSpent
)

// configFacts are the facts of plan id that come from the configuration
// and the session, without reading anything.
func (a *sessionActor) configFacts(id string) plan.Facts {
	cfg := a.env.Config()
	return plan.Facts{
		PlanID: id, PlanDir: a.planDir(id), SessionID: a.id,
		Models: cfg.ReviewModels(), CleanStreak: cfg.Review.CleanStreak, StrictReviews: cfg.Review.CountMinor,
		Parallel: cfg.ParallelReview(), DefaultMaxReviews: cfg.Review.MaxReviews,
	}
}

// planFacts reads the folder of plan id (a valid plan id, or "" for none:
// then nothing is read) for a decision on state s, and what need asks for.
func (a *sessionActor) planFacts(ctx context.Context, s plan.State, id string, need factsNeed) (plan.Facts, error) {
	f := a.configFacts(id)
	if !plan.ValidPlanID(id) {
		return f, nil
	}
	dir := f.PlanDir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("reading plan folder %q: %w", dir, err)
	case !fi.IsDir():
		return f, nil
	}
	f.DirExists = true
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if len(f.Files) >= maxPlanFiles {
			return fs.SkipAll
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f.Files = append(f.Files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("listing plan folder %q: %w", dir, err)
	}
	tasksMD, _, err := readCapped(filepath.Join(dir, "tasks.md"), maxPlanFileRead)
	if err != nil {
		return f, err
	}
	f.TasksMD = string(tasksMD)
	view, ok, err := readCapped(filepath.Join(dir, plan.ViewFile), maxPlanFileRead)
	if err != nil {
		return f, err
	}
	if ok {
		f.View = view
	}
	if s.BudgetUSD > 0 || need&needSpent != 0 {
		f.SpentUSD = ReadPlanTotals(dir, a.id).CostUSD
	}
	if need&needWork != 0 {
		planMD, _, err := readCapped(filepath.Join(dir, "plan.md"), maxPlanFileRead)
		if err != nil {
			return f, err
		}
		f.PlanMD = string(planMD)
		if plan.ValidTaskID(s.CurrentTask) {
			taskMD, _, err := readCapped(filepath.Join(dir, "task-"+s.CurrentTask+".md"), maxPlanFileRead)
			if err != nil {
				return f, err
			}
			f.TaskMD = string(taskMD)
		}
	}
	kind, review := s.NextPhase.ReviewKind()
	if s.Review != nil {
		kind, review = s.Review.Kind, true
	}
	if need&needGit != 0 && review {
		// Outside git (or with git failing) both stay empty: the review
		// then reads the work as it is.
		f.Head, _ = gitOutput(ctx, a.env.Root, 256, "rev-parse", "--verify", "--quiet", "HEAD")
		f.Head = strings.TrimSpace(f.Head)
		if s.ReviewHead != "" && s.Iteration >= 1 {
			// Only what is under review: drover's bookkeeping (state.json,
			// the run log, review files) and other plans are noise to a
			// reviewer, and would crowd the work out of a capped diff.
			args := append([]string{"diff", "--no-color", "--no-ext-diff", s.ReviewHead, "--"}, plan.DiffPathspecs(kind, id)...)
			f.DiffSinceReview, _ = gitOutput(ctx, a.env.Root, maxDiffBytes, args...)
		}
	}
	if need&needGit != 0 {
		// A review may start: say so if its reviewer cannot.
		f.ReviewerMissing = a.reviewerMissing()
	}
	return f, nil
}

// readCapped reads at most limit bytes of path; ok is false when it does
// not exist.
func readCapped(path string, limit int64) ([]byte, bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening %q: %w", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit))
	if err != nil {
		return nil, false, fmt.Errorf("reading %q: %w", path, err)
	}
	return data, true, nil
}

// writePlanView writes state.json from the saved state, when the plan
// folder exists and the file differs.
//
// The bytes written are kept in the state (plan.Wrote), in memory until
// the next commit saves them, so that a later stop tells a hand edit from
// drover's own file. A plan another session took over is that session's:
// nothing is written.
func (a *sessionActor) writePlanView() {
	s := a.rec.Plan
	if s.PlanID == "" || s.TakenBy != "" {
		return
	}
	dir := a.planDir(s.PlanID)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	path := filepath.Join(dir, plan.ViewFile)
	data := plan.View(s, a.env.Config().ReviewModels())
	if old, ok, _ := readCapped(path, maxPlanFileRead); ok && bytes.Equal(old, data) {
		a.rec.Plan = plan.Wrote(s, data)
		return
	}
	if err := writeFileAtomic(path, data); err != nil {
		a.log.Error("writing plan view", zap.String("path", path), zap.Error(err))
		return
	}
	a.rec.Plan = plan.Wrote(s, data)
}

// writeFileAtomic writes data to path, mode 0644, so that a reader sees
// the old file or the new one, never a part (atomicfile.Write).
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// newestPlan returns the plan folder whose state.json changed last, or "".
func newestPlan(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading plans folder %q: %w", dir, err)
	}
	var (
		best string
		when time.Time
	)
	for _, e := range ents {
		if !e.IsDir() || !plan.ValidPlanID(e.Name()) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name(), plan.ViewFile))
		if err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(when) {
			best, when = e.Name(), fi.ModTime()
		}
	}
	return best, nil
}
