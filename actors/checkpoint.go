package actors

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/reviewconf"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// A loop checkpoint is a parallel review by every configured model of the
// loop's work so far, started every --checkpoint-every iterations. It runs
// in a work child, outside the session's mailbox; its consensus is saved
// with the session and goes into the next block reason.

// checkpointResult is what the checkpoint's work child returns.
type checkpointResult struct {
	iteration int
	combined  reviewer.Combined
	results   []reviewer.Result
	// notRun is a checkpoint where no reviewer ran (its job panicked).
	notRun bool
}

// startCheckpoint starts the checkpoint review after e.Iteration, unless it
// already runs. A review that cannot start (a bad review.command) ends the
// state's wait for it, so that the loop does not wait for nothing.
func (a *sessionActor) startCheckpoint(actx actor.Context, e loop.StartCheckpoint) {
	if actx == nil || (a.loop.checkpoint != nil && a.loop.checkpoint.iteration == e.Iteration) {
		return
	}
	a.stopWork(actx, &a.loop.checkpoint)
	specs, quorum, err := a.checkpointSpecs(e)
	if err != nil {
		a.log.Warn("loop checkpoint not started", zap.Error(err))
		a.loopEvent(actx, "checkpoint not started", func(s loop.Session) (loop.Session, bool, error) {
			next, ok := loop.CheckpointDone(s, e.Iteration, "")
			return next, ok, nil
		})
		return
	}
	iteration := e.Iteration
	pid := spawnWork(actx, a.log, a.env.Killed, "checkpoint", func(ctx context.Context) any {
		combined, results := reviewer.RunParallel(ctx, specs, len(specs), quorum)
		return &checkpointResult{iteration: iteration, combined: combined, results: results}
	}, func(error) any {
		// As a review that could not start: no consensus, the wait ends.
		return &checkpointResult{iteration: iteration, notRun: true}
	})
	a.loop.checkpoint = &workRun{iteration: iteration, pid: pid}
	a.log.Info("loop checkpoint started", zap.Int("after_iteration", iteration), zap.Int("reviewers", len(specs)))
}

// checkpointSpecs builds one reviewer spec per configured model for the
// checkpoint e, and the quorum that combines them.
func (a *sessionActor) checkpointSpecs(e loop.StartCheckpoint) ([]reviewer.Spec, reviewer.Quorum, error) {
	cfg := a.env.Config()
	base, err := reviewconf.Spec(cfg.Review)
	if err != nil {
		return nil, 0, err
	}
	base.Prompt, base.Dir = e.Prompt, a.env.Root
	base.LogPath = fmt.Sprintf("%s/checkpoint-%d.log", a.sessionDir(), e.Iteration)
	base.Limiter, base.OwnerTag = a.env.Reviewers, a.env.ChildTag
	if tmpl, err := a.env.Templates(); err == nil {
		// A broken override leaves the built-in texts (the zero Set).
		base.Templates = tmpl
	}
	return reviewconf.PerModel(base, cfg.ReviewModels()), reviewconf.Quorum(cfg.Review), nil
}

// checkpointFinished saves the consensus of a finished checkpoint for the
// next block reason.
func (a *sessionActor) checkpointFinished(actx actor.Context, m *checkpointResult) {
	if m.notRun {
		a.loopEvent(actx, "checkpoint not run", func(s loop.Session) (loop.Session, bool, error) {
			next, ok := loop.CheckpointDone(s, m.iteration, "")
			return next, ok, nil
		})
		return
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; checkpoint consensus dropped", zap.Error(err))
		return
	}
	consensus := consensusText(tmpl, m.iteration, m.combined, m.results)
	a.loopEvent(actx, "checkpoint consensus", func(s loop.Session) (loop.Session, bool, error) {
		next, ok := loop.CheckpointDone(s, m.iteration, consensus)
		return next, ok, nil
	})
	a.log.Info("loop checkpoint done", zap.Int("after_iteration", m.iteration), zap.Int("pass", m.combined.PassVotes), zap.Int("fail", m.combined.FailVotes), zap.Int("failed_runs", m.combined.FailedRuns))
}

// consensusText says, in a few lines, what the reviewers agreed on (see
// loop.Consensus).
func consensusText(t templates.Set, iteration int, c reviewer.Combined, results []reviewer.Result) string {
	r := loop.CheckpointReport{
		Iteration: iteration, Passed: c.Result.Outcome == reviewer.Pass,
		PassVotes: c.PassVotes, FailVotes: c.FailVotes, FailedRuns: c.FailedRuns,
	}
	for _, res := range results {
		if res.Err != nil && r.FirstError == "" {
			r.FirstErrorModel, r.FirstError = res.Model, res.Err.Error()
		}
		for _, f := range res.Findings {
			if f.Blocking() {
				r.Findings = append(r.Findings, loop.Finding{Model: res.Model, File: f.File, Line: f.Line, Summary: f.Summary})
			}
		}
	}
	text, err := loop.Consensus(r, t)
	if err != nil {
		// Only an unknown template name fails: a project's broken
		// override must not lose the consensus.
		text, _ = loop.Consensus(r, templates.Defaults())
	}
	if note := deniedText(t, results); note != "" {
		text = strings.TrimRight(text, "\n") + "\n" + note
	}
	return text
}

// deniedText says which tool calls the reviewers' CLIs refused them (the
// tests, say), so that the agent does not take the consensus for checks
// nobody made; "" when none was refused.
func deniedText(t templates.Set, results []reviewer.Result) string {
	var list []string
	for _, res := range results {
		for _, d := range res.Denials {
			list = append(list, fmt.Sprintf("%s (%s)", d.Markdown(), res.Model))
		}
	}
	if len(list) == 0 {
		return ""
	}
	v := map[string]string{"denials": strings.Join(list, "; "), "denial_count": strconv.Itoa(len(list))}
	text, err := t.Render(templates.LoopCheckpointDenied, v)
	if err != nil {
		text, _ = templates.Defaults().Render(templates.LoopCheckpointDenied, v)
	}
	return strings.TrimRight(text, "\n")
}
