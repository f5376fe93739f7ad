package actors

import (
	"context"
	"strings"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/reviewconf"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
)

// What the plan workflow starts: its reviewers (built by
// internal/reviewconf from the configuration) and the git commands that
// read the work it reviews (through internal/proc).

// reviewJob builds the reviewer invocations of e from the configuration:
// one reviewer, or one per configured model under review.quorum when
// reviews run in parallel.
func (a *sessionActor) reviewJob(cfg config.Config, id uint64, e plan.StartReview) (reviewJob, error) {
	base, err := reviewconf.Spec(cfg.Review)
	if err != nil {
		return reviewJob{}, err
	}
	base.Model, base.Prompt, base.Dir = e.Model, e.Prompt, a.env.Root
	base.LogPath = strings.TrimSuffix(e.ReviewFile, ".md") + ".log"
	base.Limiter, base.OwnerTag = a.env.Reviewers, a.env.ChildTag
	if tmpl, err := a.env.Templates(); err == nil {
		// A broken override leaves the built-in texts (the zero Set).
		base.Templates = tmpl
	}
	if !cfg.ParallelReview() {
		return reviewJob{id: id, specs: []reviewer.Spec{base}}, nil
	}
	return reviewJob{id: id, specs: reviewconf.PerModel(base, cfg.ReviewModels()), quorum: reviewconf.Quorum(cfg.Review)}, nil
}

// reviewerMissing says whether the configured reviewer CLI cannot be
// started, for a decision that may start a review: nil when it can.
func (a *sessionActor) reviewerMissing() *plan.MissingReviewer {
	command, key, reason := reviewconf.Missing(a.env.Config().Review, a.env.Root)
	if reason == "" {
		return nil
	}
	return &plan.MissingReviewer{Command: command, Key: key, Reason: reason}
}

// gitOutput runs git in dir (proc.GitCmd) and returns its stdout, at most
// about limit bytes of it: past limit its middle is cut, with a line that
// says so. It returns nothing when git failed.
func gitOutput(ctx context.Context, dir string, limit int, args ...string) (string, error) {
	c := proc.GitCmd(dir, args...)
	c.OutputCap = limit
	res, err := proc.Run(ctx, c)
	if err != nil {
		return "", &proc.GitError{Args: args, Err: err, Stderr: res.Stderr.String()}
	}
	return res.Stdout.String(), nil
}
