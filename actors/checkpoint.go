package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// A loop checkpoint is a parallel review by every configured model of the
// loop's work so far, started every --checkpoint-every iterations. It runs
// in a child actor, outside the session's mailbox; its consensus is saved
// with the session and goes into the next block reason.

// checkpointRun is the checkpoint review running for a session.
type checkpointRun struct {
	iteration int
	cancel    context.CancelFunc
}

// checkpointDone is what the checkpoint child sends its parent.
type checkpointDone struct {
	iteration int
	child     *actor.PID
	combined  reviewer.Combined
	results   []reviewer.Result
}

// checkpointActor runs one checkpoint review; stopping it cancels the run
// and waits until the reviewers' process groups are gone.
type checkpointActor struct {
	iteration int
	specs     []reviewer.Spec
	quorum    reviewer.Quorum
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
}

// Receive implements actor.Actor.
func (c *checkpointActor) Receive(actx actor.Context) {
	switch actx.Message().(type) {
	case *actor.Started:
		if c.done != nil {
			return
		}
		c.done = make(chan struct{})
		system, self, parent := actx.ActorSystem(), actx.Self(), actx.Parent()
		go func() {
			defer close(c.done)
			combined, results := reviewer.RunParallel(c.ctx, c.specs, len(c.specs), c.quorum)
			system.Root.Send(parent, &checkpointDone{iteration: c.iteration, child: self, combined: combined, results: results})
		}()
	case *actor.Stopping:
		c.cancel()
		if c.done != nil {
			<-c.done
		}
	}
}

// startCheckpoint starts the checkpoint review of s's work so far.
func (a *sessionActor) startCheckpoint(actx actor.Context, s loop.State, status, reason string) error {
	cfg := a.env.Config()
	tmpl, err := a.env.Templates()
	if err != nil {
		return err
	}
	prompt, err := tmpl.Render(templates.LoopCheckpointReview, map[string]string{
		"prompt": s.Prompt, "iteration": strconv.Itoa(s.Iteration - 1), "status": orUnknown(status), "status_reason": orUnknown(reason),
	})
	if err != nil {
		return err
	}
	base := reviewer.Spec{CLI: cfg.Review.CLI, Prompt: prompt, Timeout: cfg.Review.Timeout, Dir: a.env.Root, Limiter: a.env.Reviewers, OwnerTag: a.env.ChildTag,
		LogPath: fmt.Sprintf("%s/checkpoint-%d.log", a.sessionDir(), s.Iteration-1)}
	if cfg.Review.CLI == reviewer.CLICustom {
		if base.Command, err = argsplit.Split(cfg.Review.Command); err != nil {
			return fmt.Errorf("review.command: %w", err)
		}
	}
	if cfg.Review.BudgetUSD != "" {
		if base.BudgetUSD, err = strconv.ParseFloat(cfg.Review.BudgetUSD, 64); err != nil {
			return fmt.Errorf("review.budget_usd: %w", err)
		}
	}
	var specs []reviewer.Spec
	for _, m := range cfg.ReviewModels() {
		sp := base
		sp.Model = m
		sp.LogPath = strings.TrimSuffix(base.LogPath, ".log") + "-" + m + ".log"
		specs = append(specs, sp)
	}
	quorum := reviewer.All
	if cfg.Review.Quorum == "majority" {
		quorum = reviewer.Majority
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.loop.checkpoint = &checkpointRun{iteration: s.Iteration - 1, cancel: cancel}
	iteration := s.Iteration - 1
	actx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &checkpointActor{iteration: iteration, specs: specs, quorum: quorum, ctx: ctx, cancel: cancel}
	}), "checkpoint")
	a.log.Info("loop checkpoint started", zap.Int("after_iteration", iteration), zap.Int("reviewers", len(specs)))
	return nil
}

func (a *sessionActor) stopCheckpoint() {
	if a.loop.checkpoint != nil {
		a.loop.checkpoint.cancel()
		a.loop.checkpoint = nil
	}
}

// checkpointFinished saves the consensus of a finished checkpoint for the
// next block reason.
func (a *sessionActor) checkpointFinished(actx actor.Context, m *checkpointDone) {
	if m.child != nil {
		actx.Stop(m.child)
	}
	run := a.loop.checkpoint
	if run == nil || run.iteration != m.iteration || errors.Is(m.combined.Result.Err, context.Canceled) {
		return
	}
	a.loop.checkpoint = nil
	if !a.rec.Loop.Active {
		return
	}
	rec := a.rec
	rec.LoopCheckpoint = consensusText(m.iteration, m.combined, m.results)
	rec.LoopFindings = rec.LoopCheckpoint
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := a.commitEvent(ctx, rec); err != nil {
		a.log.Error("saving checkpoint consensus", zap.Error(err))
	}
	a.log.Info("loop checkpoint done", zap.Int("after_iteration", m.iteration), zap.Int("pass", m.combined.PassVotes), zap.Int("fail", m.combined.FailVotes), zap.Int("failed_runs", m.combined.FailedRuns))
}

// consensusText says, in a few lines, what the reviewers agreed on.
func consensusText(iteration int, c reviewer.Combined, results []reviewer.Result) string {
	var b strings.Builder
	if c.PassVotes+c.FailVotes == 0 {
		// Not one reviewer ran to a verdict (no CLI, no network, ...): a
		// FAIL here would send the agent hunting for problems nobody
		// found.
		reason := "no reviewer ran"
		for _, r := range results {
			if r.Err != nil {
				reason = fmt.Sprintf("first error (%s): %s", r.Model, clipLine(r.Err.Error(), 200))
				break
			}
		}
		fmt.Fprintf(&b, "After iteration %d: no review: all %d reviewer run(s) failed, so nobody judged the work (%s). Go on with the task; tell the user that the checkpoint reviewers do not run.", iteration, c.FailedRuns, reason)
		return b.String()
	}
	verdict := "FAIL"
	if c.Result.Outcome == reviewer.Pass {
		verdict = "PASS"
	}
	fmt.Fprintf(&b, "After iteration %d: %s (%d pass, %d fail, %d reviewer run(s) failed).\n", iteration, verdict, c.PassVotes, c.FailVotes, c.FailedRuns)
	seen := map[string]bool{}
	n := 0
	for _, r := range results {
		for _, f := range r.Findings {
			if !f.Blocking() {
				continue
			}
			key := f.File + "\x00" + strings.ToLower(strings.TrimSpace(f.Summary))
			if seen[key] || n >= 10 {
				continue
			}
			seen[key] = true
			n++
			loc := f.File
			if f.Line > 0 {
				loc += ":" + strconv.Itoa(f.Line)
			}
			fmt.Fprintf(&b, "- %s (%s): %s\n", loc, r.Model, f.Summary)
		}
	}
	if n == 0 {
		b.WriteString("No blocking findings.\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// clipLine is the first line of s, at most n bytes of it (cut on a rune
// boundary).
func clipLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
