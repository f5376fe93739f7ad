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
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// The plan workflow's reviews and their effects. A review runs in one of
// the engine's work children (spawnWork), the session's one mechanism for
// background work; stopping the child cancels the reviewer, whose process
// group is killed. Its answer comes back as a workDone message and goes
// through two decisions of internal/workflow/plan, each committed before
// its effects run: plan.ReviewAnswered records the answer and asks for the
// review file, and the write's outcome comes back as a reviewFiled message
// for plan.ReviewFiled, which applies the answer (a file that could not be
// written makes the run a failed one) and asks for the run log lines.

// RunsFile is the name of the reviewer run log in a plan folder.
const RunsFile = plan.RunsFile

// reviewRun is the reviewer child at work for the review in flight.
type reviewRun struct {
	planID    string
	kind      plan.Kind
	iteration int
	started   time.Time
	pid       *actor.PID
}

// reviewResult is what a review child's job returns: the reviewer's answer
// and the log of the run.
type reviewResult struct {
	res reviewer.Result
	// reviewers is how many reviewers ran at once (0 or 1: one), and
	// passVotes how many said PASS.
	reviewers, passVotes int
	// runs are the results of each reviewer of a parallel review, in the
	// order of the job's specs; res combines them. A single review has
	// none: res is its one run.
	runs    []reviewer.Result
	logPath string
}

// reviewFiled is the outcome of a WriteReview effect: the event of the
// second decision on a reviewer's answer.
type reviewFiled struct {
	planID string
	filing plan.Filing
}

// reviewJob is what a review child runs: one spec, or several at once under
// a quorum (review.strategy parallel). id numbers it in the log.
type reviewJob struct {
	id     uint64
	specs  []reviewer.Spec
	quorum reviewer.Quorum
}

// runJob runs job and returns its answer, with the votes of a parallel
// review.
func runJob(ctx context.Context, job reviewJob) *reviewResult {
	if len(job.specs) == 1 {
		return &reviewResult{res: reviewer.Run(ctx, job.specs[0])}
	}
	c, runs := reviewer.RunParallel(ctx, job.specs, len(job.specs), job.quorum)
	return &reviewResult{res: c.Result, reviewers: len(job.specs), passVotes: c.PassVotes, runs: runs}
}

// reviewRunning reports whether the review in flight in s is running here.
func (a *sessionActor) reviewRunning(s plan.State) bool {
	r := a.plan.run
	return r != nil && s.Review != nil && r.planID == s.PlanID && r.kind == s.Review.Kind && r.iteration == s.Review.Iteration
}

// resumePlan executes the effects the stored plan still waits for
// (plan.Pending): a review in flight that nothing runs is started again, an
// answered review's file is written again, the last runs are logged unless
// they are, and state.json is rewritten.
func (a *sessionActor) resumePlan(actx actor.Context) {
	s := a.rec.Plan
	if !s.Active() {
		return
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Warn("loading templates; pending plan effects wait for the next event", zap.Error(err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	running := a.reviewRunning(s)
	var need factsNeed
	if s.Review != nil && s.Review.Answered == nil && !running {
		// A review may start again: its re-check prompt needs git.
		need = needGit
	}
	f, err := a.planFacts(ctx, s, s.PlanID, need)
	if err != nil {
		a.log.Warn("gathering plan facts; pending plan effects wait for the next event", zap.Error(err))
		return
	}
	f.ReviewInFlight = running
	effects, err := plan.Pending(s, f, tmpl)
	if err != nil {
		a.log.Error("deriving pending plan effects", zap.Error(err))
		return
	}
	a.execute(actx, asEffects(effects))
}

// planEffect performs one effect of a committed plan decision. Each checks
// the committed state first where it matters: a review starts only when
// the state still waits for it.
func (a *sessionActor) planEffect(actx actor.Context, e plan.Effect) {
	switch e := e.(type) {
	case plan.StartReview:
		s := a.rec.Plan
		if actx == nil || s.Review == nil || s.Review.Answered != nil || s.Review.Kind != e.Kind || s.Review.Iteration != e.Iteration || a.reviewRunning(s) {
			return
		}
		a.startReview(actx, s, e)
	case plan.WriteReview:
		a.writeReview(actx, e)
	case plan.RecordRuns:
		if err := recordRuns(e.Path, e.Runs, maxRunsRead); err != nil {
			a.log.Warn("recording reviewer runs", zap.String("path", e.Path), zap.Error(err))
		}
	case plan.WriteView:
		a.writePlanView()
	case plan.CancelReview:
		a.cancelReview(actx)
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

// startReview starts the reviewer of the review in flight in s in a work
// child.
func (a *sessionActor) startReview(actx actor.Context, s plan.State, e plan.StartReview) {
	a.cancelReview(actx)
	a.plan.seq++
	logPath := strings.TrimSuffix(e.ReviewFile, ".md") + ".log"
	job, err := a.reviewJob(a.env.Config(), a.plan.seq, e)
	// A configuration that cannot run, or a job that panicked, is a
	// failed run: the rules report it and do not count it.
	failed := func(err error) any {
		return &reviewResult{res: reviewer.Result{Model: e.Model, Outcome: reviewer.Failed, ExitCode: -1, Err: err}, logPath: logPath}
	}
	pid := spawnWork(actx, a.log, a.env.Killed, "review", func(ctx context.Context) any {
		if err != nil {
			return failed(err)
		}
		r := runJob(ctx, job)
		r.logPath = logPath
		return r
	}, failed)
	a.plan.run = &reviewRun{planID: s.PlanID, kind: e.Kind, iteration: e.Iteration, started: a.env.now(), pid: pid}
	a.log.Info("review started", zap.Uint64("job", job.id), zap.String("plan", s.PlanID), zap.String("kind", string(e.Kind)), zap.Int("iteration", e.Iteration), zap.String("model", e.Model))
}

// cancelReview stops the reviewer child running now, if any, which kills
// the reviewer's process group; its answer is never applied.
func (a *sessionActor) cancelReview(actx actor.Context) {
	if r := a.plan.run; r != nil && actx != nil {
		actx.Stop(r.pid)
	}
	a.plan.run = nil
}

// reviewAnswered is the first decision on a reviewer's answer: it is
// recorded in the review in flight and committed, and its review file is
// written after.
func (a *sessionActor) reviewAnswered(actx actor.Context, child *actor.PID, r *reviewResult) {
	run := a.plan.run
	if run == nil || !run.pid.Equal(child) {
		// Cancelled or replaced: nothing to apply.
		return
	}
	a.plan.run = nil
	s := a.rec.Plan
	if s.Review == nil || s.PlanID != run.planID || s.Review.Kind != run.kind || s.Review.Iteration != run.iteration {
		return
	}
	now := a.env.now()
	outcome := plan.OutcomeOf(*s.Review, r.res, r.logPath)
	outcome.Reviewers, outcome.PassVotes = r.reviewers, r.passVotes
	answer := plan.Answered{Outcome: outcome, Run: plan.RunRecord(*s.Review, s.PlanID, a.id, r.res, now)}
	for _, res := range r.runs {
		answer.Runs = append(answer.Runs, plan.RunRecord(*s.Review, s.PlanID, a.id, res, now))
	}
	a.planEvent(actx, "a review's answer", func(f plan.Facts, tmpl templates.Set) (plan.State, []plan.Effect, error) {
		return plan.ReviewAnswered(s, f, tmpl, answer)
	})
}

// writeReview writes the review file of an answered review, and hands how
// that went to the second decision, as a message: the run is applied, or
// counted as failed when the file could not be written.
func (a *sessionActor) writeReview(actx actor.Context, e plan.WriteReview) {
	fl := plan.Filing{Kind: e.Kind, Iteration: e.Iteration, Task: e.Task}
	if e.Path != "" {
		if err := writeFileAtomic(e.Path, e.Data); err != nil {
			a.log.Warn("writing a review file; the review counts as a failed run", zap.Error(err))
			fl.Err = fmt.Errorf("writing review file: %w", err).Error()
		}
	}
	if actx != nil && e.Iteration > 0 {
		actx.Send(actx.Self(), &reviewFiled{planID: a.rec.Plan.PlanID, filing: fl})
	}
}

// reviewFiled is the second decision on a reviewer's answer, once its
// review file was written or could not be.
func (a *sessionActor) reviewFiled(actx actor.Context, m *reviewFiled) {
	s := a.rec.Plan
	if s.PlanID != m.planID || !s.AwaitsFiling(m.filing) {
		return
	}
	a.planEvent(actx, "a review", func(f plan.Facts, tmpl templates.Set) (plan.State, []plan.Effect, error) {
		return plan.ReviewFiled(s, f, tmpl, m.filing)
	})
	if n := a.rec.Plan; n.LastRun != nil && n.Review == nil {
		a.log.Info("review applied", zap.String("plan", n.PlanID), zap.String("kind", n.LastRun.Kind), zap.Int("iteration", n.LastRun.Iteration), zap.String("outcome", n.LastRun.Outcome), zap.String("next_phase", string(n.NextPhase)))
	}
}

// planEvent decides a background event of the session's plan with decide,
// under the facts of its folder, and commits the result, then executes its
// effects. A decision that fails changes nothing: the review in flight
// stays, and the next stop or restart takes it up again.
func (a *sessionActor) planEvent(actx actor.Context, what string, decide func(plan.Facts, templates.Set) (plan.State, []plan.Effect, error)) {
	if a.rec.Workflow != session.Plan {
		return
	}
	s := a.rec.Plan
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; "+what+" waits for the next stop", zap.Error(err))
		return
	}
	f, err := a.planFacts(ctx, s, s.PlanID, 0)
	if err != nil {
		a.log.Error("gathering plan facts; "+what+" waits for the next stop", zap.Error(err))
		return
	}
	next, effects, err := decide(f, tmpl)
	if err != nil {
		a.log.Error("deciding on "+what+"; it waits for the next stop", zap.Error(err))
		return
	}
	rec := a.rec
	rec.Plan = next
	if err := a.commitThen(actx, ctx, rec, asEffects(effects)); err != nil {
		a.log.Error("saving "+what+"; it waits for the next stop", zap.Error(err))
	}
}

// recordRuns appends to the run log at path the runs it does not hold yet
// (plan.RecordRuns), in one write, so that a reader never sees half a
// review. It looks for them in the last readLimit bytes of the log: the
// runs a restart records again are the newest.
func recordRuns(path string, runs []api.PlanReviewRun, readLimit int64) error {
	logged := loggedRuns(path, readLimit)
	var lines []byte
	for _, r := range runs {
		if logged[keyOf(r)] {
			continue
		}
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding a reviewer run: %w", err)
		}
		lines = append(append(lines, line...), '\n')
	}
	if len(lines) == 0 {
		return nil
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening run log %q: %w", path, err)
	}
	_, err = fh.Write(lines)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to run log %q: %w", path, err)
	}
	return nil
}

// runKey identifies a reviewer run in the run log.
type runKey struct {
	time                      time.Time
	session, plan, kind, task string
	iteration                 int
	model                     string
}

func keyOf(r api.PlanReviewRun) runKey {
	return runKey{time: r.Time.UTC(), session: r.Session, plan: r.Plan, kind: r.Kind, task: r.Task, iteration: r.Iteration, model: r.Model}
}

// loggedRuns are the keys of the runs in the last limit bytes of the run
// log at path.
func loggedRuns(path string, limit int64) map[runKey]bool {
	keys := map[runKey]bool{}
	fh, err := os.Open(path)
	if err != nil {
		return keys
	}
	defer fh.Close()
	var r io.Reader = fh
	if fi, err := fh.Stat(); err == nil && fi.Size() > limit {
		// From the byte before the last limit bytes, up to and
		// including the first newline, is a partial line (or that
		// newline alone): it is skipped.
		br := bufio.NewReader(io.NewSectionReader(fh, fi.Size()-limit-1, limit+1))
		for {
			_, err := br.ReadSlice('\n')
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return keys // no whole line in the tail
			}
		}
		r = br
	}
	scanRunLines(r, func(run api.PlanReviewRun) { keys[keyOf(run)] = true })
	return keys
}

// scanRuns calls fn with each run of the run log at path, as far as
// maxRunsRead; a missing or unreadable log has none.
func scanRuns(path string, fn func(api.PlanReviewRun)) {
	fh, err := os.Open(path)
	if err != nil {
		return
	}
	defer fh.Close()
	scanRunLines(io.LimitReader(fh, maxRunsRead), fn)
}

// scanRunLines calls fn with each run of the run log r, one JSON object a
// line; a line that does not parse is skipped.
func scanRunLines(r io.Reader, fn func(api.PlanReviewRun)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var run api.PlanReviewRun
		if json.Unmarshal(sc.Bytes(), &run) == nil {
			fn(run)
		}
	}
}

// ReadPlanTotals sums the reviewer runs recorded in planDir's RunsFile:
// all of them, and those of session sessionID. A missing or unreadable file
// sums to zero (nothing was recorded).
func ReadPlanTotals(planDir, sessionID string) api.PlanTotals {
	var t api.PlanTotals
	scanRuns(filepath.Join(planDir, RunsFile), func(r api.PlanReviewRun) {
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
	})
	return t
}

// PlanReviewRuns returns the reviewer runs recorded in planDir's RunsFile,
// in the order they were recorded (the dashboard's review timeline); a
// missing or unreadable file has none.
func PlanReviewRuns(planDir string) []api.PlanReviewRun {
	var runs []api.PlanReviewRun
	scanRuns(filepath.Join(planDir, RunsFile), func(r api.PlanReviewRun) { runs = append(runs, r) })
	return runs
}
