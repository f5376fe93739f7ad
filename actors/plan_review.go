package actors

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
)

// The plan workflow's reviews: each runs in a reviewActor child, the one
// background mechanism of the plan; its answer comes back to the session
// actor as a reviewDone message and is applied through plan.Stop.

// RunsFile is the name of the reviewer run log in a plan folder.
const RunsFile = "reviews.jsonl"

// reviewRun is a reviewer child at work.
type reviewRun struct {
	id        uint64
	planID    string
	kind      plan.Kind
	iteration int
	model     string
	task      string
	logPath   string
	started   time.Time
	cancel    context.CancelFunc
}

// reviewDone is what a review child sends its parent when the reviewer is
// done (or was cancelled).
type reviewDone struct {
	id    uint64
	child *actor.PID
	res   reviewer.Result
	// reviewers is how many reviewers ran at once (0 or 1: one), and
	// passVotes how many said PASS.
	reviewers, passVotes int
	// runs are the results of each reviewer of a parallel review, in the
	// order of the job's specs; res combines them. A single review has
	// none: res is its one run.
	runs []reviewer.Result
}

// reviewJob is what a review child runs: one spec, or several at once under
// a quorum (review.strategy parallel).
type reviewJob struct {
	id     uint64
	specs  []reviewer.Spec
	quorum reviewer.Quorum
}

// reviewActor runs one review outside its parent's mailbox. Stopping it
// cancels the run and waits until the reviewer's process group is gone.
type reviewActor struct {
	job    reviewJob
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// Receive implements actor.Actor.
func (r *reviewActor) Receive(actx actor.Context) {
	switch actx.Message().(type) {
	case *actor.Started:
		if r.done != nil {
			return
		}
		r.done = make(chan struct{})
		system, self, parent := actx.ActorSystem(), actx.Self(), actx.Parent()
		job, ctx, done := r.job, r.ctx, r.done
		go func() {
			defer close(done)
			answer := runJob(ctx, job)
			answer.child = self
			system.Root.Send(parent, answer)
		}()
	case *actor.Stopping:
		r.cancel()
		if r.done != nil {
			<-r.done
		}
	}
}

// runJob runs job and returns its answer, with the votes of a parallel
// review.
func runJob(ctx context.Context, job reviewJob) *reviewDone {
	if len(job.specs) == 1 {
		return &reviewDone{id: job.id, res: reviewer.Run(ctx, job.specs[0])}
	}
	c, runs := reviewer.RunParallel(ctx, job.specs, len(job.specs), job.quorum)
	return &reviewDone{id: job.id, res: c.Result, reviewers: len(job.specs), passVotes: c.PassVotes, runs: runs}
}

// reviewRunning reports whether the review in flight in s is running here.
func (a *sessionActor) reviewRunning(s plan.State) bool {
	r := a.plan.run
	return r != nil && s.Review != nil && r.planID == s.PlanID && r.kind == s.Review.Kind && r.iteration == s.Review.Iteration
}

// ensureReview starts the saved review in flight when nothing runs it (the
// supervisor or the actor restarted since it was started).
func (a *sessionActor) ensureReview(actx actor.Context, ctx context.Context) {
	s := a.rec.Plan
	if actx == nil || s.Review == nil || a.reviewRunning(s) {
		return
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates", zap.Error(err))
		return
	}
	f, err := a.planFacts(ctx, s, s.PlanID, needGit)
	if err != nil {
		a.log.Error("gathering plan facts", zap.Error(err))
		return
	}
	// With no answer and nothing running, the rules restart the review
	// and leave the state as it is.
	_, _, effects, err := plan.Stop(s, f, tmpl)
	if err != nil {
		a.log.Error("restarting a review", zap.Error(err))
		return
	}
	a.applyPlanEffects(actx, effects)
}

// applyPlanEffects performs the effects of a decision whose state is saved.
// Each checks the saved state first: a decision whose save failed must not
// start its review or write its files.
func (a *sessionActor) applyPlanEffects(actx actor.Context, effects []plan.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case plan.StartReview:
			s := a.rec.Plan
			if actx == nil || s.Review == nil || s.Review.Kind != e.Kind || s.Review.Iteration != e.Iteration || a.reviewRunning(s) {
				continue
			}
			a.startReview(actx, s, e)
		case plan.WriteReview:
			if err := writeFileAtomic(e.Path, e.Data); err != nil {
				a.log.Error("writing review file", zap.String("path", e.Path), zap.Error(err))
			}
		case plan.WriteView:
			a.writePlanView()
		case plan.CancelReview:
			a.cancelReview()
		case plan.MakeFolder:
			// The plan folder of a plan that was just started; the view
			// written next needs it.
			_, err := tasks.EnsureDroverDir(a.env.Root)
			if err == nil {
				err = os.MkdirAll(e.Path, 0o755)
			}
			if err != nil {
				a.log.Error("creating plan folder", zap.String("path", e.Path), zap.Error(err))
			}
		}
	}
}

// startReview starts the reviewer of the review in flight in s.
func (a *sessionActor) startReview(actx actor.Context, s plan.State, e plan.StartReview) {
	a.cancelReview()
	a.plan.seq++
	run := &reviewRun{id: a.plan.seq, planID: s.PlanID, kind: e.Kind, iteration: e.Iteration, model: e.Model, task: e.Task, started: a.env.now()}
	a.plan.run = run
	if !a.plan.idleOff {
		// An idle passivation would kill the review.
		actx.CancelReceiveTimeout()
		a.plan.idleOff = true
	}
	job, err := a.reviewJob(a.env.Config(), run.id, e)
	run.logPath = strings.TrimSuffix(e.ReviewFile, ".md") + ".log"
	if err != nil {
		// A configuration that cannot run is a failed run: the rules
		// report it and do not count it.
		run.cancel = func() {}
		actx.Send(actx.Self(), &reviewDone{id: run.id, res: reviewer.Result{Model: e.Model, Outcome: reviewer.Failed, ExitCode: -1, Err: err}})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	actx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &reviewActor{job: job, ctx: ctx, cancel: cancel}
	}), "review")
	a.log.Info("review started", zap.String("plan", s.PlanID), zap.String("kind", string(e.Kind)), zap.Int("iteration", e.Iteration), zap.String("model", e.Model))
}

// cancelReview cancels the reviewer running now, if any; its child actor
// is stopped when its (cancelled) answer arrives.
func (a *sessionActor) cancelReview() {
	if r := a.plan.run; r != nil {
		if r.cancel != nil {
			r.cancel()
		}
		a.plan.run = nil
	}
}

// reviewDone applies a reviewer's answer to the review in flight.
func (a *sessionActor) reviewDone(actx actor.Context, m *reviewDone) {
	if m.child != nil {
		actx.Stop(m.child)
	}
	run := a.plan.run
	if run == nil || run.id != m.id {
		// Cancelled or replaced: nothing to apply.
		a.restoreIdle(actx)
		return
	}
	a.plan.run = nil
	a.restoreIdle(actx)
	if errors.Is(m.res.Err, context.Canceled) {
		return
	}
	// The runs are recorded however the answer is applied, after it: a
	// review file drover could not write makes them failed runs.
	res, runs := m.res, m.runs
	defer func() { a.recordRuns(run, res, runs) }()

	s := a.rec.Plan
	if s.Review == nil || s.PlanID != run.planID || s.Review.Kind != run.kind || s.Review.Iteration != run.iteration {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; the review runs again at the next stop", zap.Error(err))
		return
	}
	f, err := a.planFacts(ctx, s, s.PlanID, 0)
	if err != nil {
		a.log.Error("gathering plan facts; the review runs again at the next stop", zap.Error(err))
		return
	}
	outcome := plan.OutcomeOf(*s.Review, m.res, run.logPath)
	outcome.Reviewers, outcome.PassVotes = m.reviewers, m.passVotes
	f.Review = &outcome
	next, out, effects, err := plan.Stop(s, f, tmpl)
	if err != nil {
		a.log.Error("applying a review; it runs again at the next stop", zap.Error(err))
		return
	}
	// The review file is written before the state that sends the agent
	// to it is saved. One that cannot be written makes the run a failed
	// one, as the seed handles a reviewer that wrote none: the user is
	// warned, the iteration is not counted, the review runs again.
	if effects, err = a.writeReviewFiles(effects); err != nil {
		a.log.Warn("writing a review file; the review counts as a failed run", zap.Error(err))
		res = failedRun(res, err)
		for i := range runs {
			runs[i] = failedRun(runs[i], err)
		}
		outcome.Outcome, outcome.Err, outcome.LogPath = reviewer.Failed, err.Error(), ""
		if next, out, effects, err = plan.Stop(s, f, tmpl); err != nil {
			a.log.Error("applying a failed review; it runs again at the next stop", zap.Error(err))
			return
		}
	}
	if out != (hook.Output{}) {
		// Saved, so that the next stop gives it even if this actor is
		// passivated or the supervisor restarts before then.
		next.Answer = &out
	}
	rec := a.rec
	rec.Plan = next
	if err := a.commitEvent(ctx, rec); err != nil {
		a.log.Error("saving a review's answer; the review runs again at the next stop", zap.Error(err))
		return
	}
	a.applyPlanEffects(actx, effects)
	a.writePlanView()
	a.log.Info("review applied", zap.String("plan", s.PlanID), zap.String("kind", string(run.kind)), zap.Int("iteration", run.iteration), zap.String("outcome", string(outcome.Outcome)), zap.String("next_phase", string(next.NextPhase)))
}

// writeReviewFiles performs the WriteReview effects of effects and returns
// the others; it stops at the first file it cannot write.
func (a *sessionActor) writeReviewFiles(effects []plan.Effect) ([]plan.Effect, error) {
	rest := effects[:0:0]
	for _, e := range effects {
		w, ok := e.(plan.WriteReview)
		if !ok {
			rest = append(rest, e)
			continue
		}
		if err := writeFileAtomic(w.Path, w.Data); err != nil {
			return nil, fmt.Errorf("writing review file: %w", err)
		}
	}
	return rest, nil
}

// failedRun is res made a failed run by err, keeping what the reviewer
// said for the record.
func failedRun(res reviewer.Result, err error) reviewer.Result {
	res.Outcome = reviewer.Failed
	res.Err = errors.Join(res.Err, err)
	return res
}

// restoreIdle turns the receive timeout back on once no review runs.
func (a *sessionActor) restoreIdle(actx actor.Context) {
	if a.plan.run != nil || !a.plan.idleOff {
		return
	}
	a.plan.idleOff = false
	if a.idle > 0 {
		actx.SetReceiveTimeout(a.idle)
	}
}

// recordRuns appends a finished review's reviewer runs to the plan's
// reviews.jsonl: each of runs when the review ran several reviewers at once
// (their models, times and costs would be lost in the combined result),
// else the one run res. The status's last review is res either way.
func (a *sessionActor) recordRuns(run *reviewRun, res reviewer.Result, runs []reviewer.Result) {
	last := a.runRecord(run, res)
	a.plan.last = &last
	records := []api.PlanReviewRun{last}
	if len(runs) > 0 {
		records = records[:0]
		for _, r := range runs {
			records = append(records, a.runRecord(run, r))
		}
	}
	var lines []byte
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			a.log.Warn("encoding a reviewer run", zap.Error(err))
			continue
		}
		lines = append(append(lines, line...), '\n')
	}
	if len(lines) == 0 {
		return
	}
	path := filepath.Join(a.planDir(run.planID), RunsFile)
	// One write for all the lines, so a reader never sees half a review.
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fh.Write(lines)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		a.log.Warn("recording reviewer runs", zap.String("path", path), zap.Error(err))
	}
}

// runRecord is the reviews.jsonl line of one reviewer run of run.
func (a *sessionActor) runRecord(run *reviewRun, res reviewer.Result) api.PlanReviewRun {
	r := api.PlanReviewRun{
		Time: a.env.now().UTC(), Session: a.id, Plan: run.planID, Kind: string(run.kind), Task: run.task,
		Iteration: run.iteration, Model: run.model, Outcome: string(res.Outcome), Verdict: res.Verdict,
		ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Findings: len(res.Findings), CostUSD: res.CostUSD,
	}
	if res.Model != "" {
		r.Model = res.Model
	}
	for _, f := range res.Findings {
		if f.Blocking() {
			r.Blocking++
		}
	}
	if res.Err != nil {
		r.Error = res.Err.Error()
	}
	return r
}

// ReadPlanTotals sums the reviewer runs recorded in planDir's RunsFile:
// all of them, and those of session sessionID. A missing or unreadable file
// sums to zero (nothing was recorded).
func ReadPlanTotals(planDir, sessionID string) api.PlanTotals {
	var t api.PlanTotals
	fh, err := os.Open(filepath.Join(planDir, RunsFile))
	if err != nil {
		return t
	}
	defer fh.Close()
	sc := bufio.NewScanner(io.LimitReader(fh, maxRunsRead))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var r api.PlanReviewRun
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		t.Runs++
		if r.Outcome == string(reviewer.Failed) {
			t.FailedRuns++
		}
		t.Seconds += float64(r.DurationMS) / 1000
		t.CostUSD += r.CostUSD
		if r.Session == sessionID {
			t.SessionRuns++
			t.SessionCostUSD += r.CostUSD
		}
	}
	return t
}
