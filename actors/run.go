package actors

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/proctag"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/worktree"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// RunsActorName is the name of the top-level actor that owns the runs.
const RunsActorName = "runs"

// commandTimeout bounds one test or suite command.
const commandTimeout = 30 * time.Minute

// progressSaveEvery bounds how often an agent's progress (its tool calls
// and running cost) is saved: an agent makes several tool calls a second,
// and each save is a write to the store.
const progressSaveEvery = time.Second

// heartbeatEvery is how often a run whose agents work is saved even when
// nothing changed, unless RunsEnv.Heartbeat says otherwise: the time
// worked since the last save is lost to the budgets when the supervisor
// dies.
const heartbeatEvery = 15 * time.Second

// maxTestOutput is how much of a test command's output (its end) is kept
// in the run's state and fed back to the agent.
const maxTestOutput = 4000

// RunStore is what the run actors need of the store.
type RunStore interface {
	SaveRun(ctx context.Context, run api.Run) error
	LoadRun(ctx context.Context, id string) (api.Run, bool, error)
}

// RunsEnv is what the run actors read from the world. Store and Root are
// required.
type RunsEnv struct {
	Store RunStore
	// Root is the project's main work tree: waves are merged there and
	// the suite runs there.
	Root string
	Log  *zap.Logger
	Now  func() time.Time
	// Templates gives the prompts (the project's overrides included); nil
	// means the built-in ones. It is read at each iteration.
	Templates func() (templates.Set, error)
	// Config gives the current configuration (it changes on reload); nil
	// means the defaults. A run reads it when it starts or resumes: the
	// run.* defaults of its options, the loop's routing rules and
	// convergence thresholds, and the reviewer (review.*).
	Config func() config.Config
	// Reviewers caps reviewer processes, shared with the sessions' plan
	// and loop reviews (nil: no cap).
	Reviewers *reviewer.Limiter
	// Heartbeat is how often a run whose agents work is saved even when
	// nothing changed (zero: heartbeatEvery).
	Heartbeat time.Duration
	// ChildTag is one more "KEY=VALUE" entry for the environment of every
	// agent, reviewer and test command of the runs, for the supervisor's
	// watchdog to end them, and the tool calls agents run in sessions of
	// their own, when the supervisor dies without doing so (empty: none).
	ChildTag string

	// worktrees serializes the work tree changes of every run of the
	// project (see worktree.Create); NewRunsProps sets it.
	worktrees *sync.Mutex
}

func (e RunsEnv) config() config.Config {
	if e.Config == nil {
		return config.Defaults()
	}
	return e.Config()
}

func (e RunsEnv) templates() (templates.Set, error) {
	if e.Templates == nil {
		return templates.Defaults(), nil
	}
	return e.Templates()
}

func (e RunsEnv) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// StartRun starts a run of a task graph; answered with *RunReply.
type StartRun struct {
	Request api.StartRunRequest
}

// ResumeRun goes on with a stored run that is not being worked (the
// supervisor died, or the run failed and its cause was fixed); answered
// with *RunReply.
type ResumeRun struct {
	ID string
}

// CancelRun stops a run being worked: its agents are killed, a wave
// checkpoint under way finishes, and the run ends failed, to be resumed
// later if wanted; answered with *RunReply.
type CancelRun struct {
	ID string
}

// cancelReason is what a cancelled run's report and failed tasks say.
const cancelReason = "cancelled (drover run cancel)"

// RunReply is the answer to StartRun, ResumeRun and CancelRun: the run as
// saved.
type RunReply struct {
	Run api.Run
	Err error
}

// LiveRuns asks which runs a run actor works now; answered with
// *LiveRunsReply.
type LiveRuns struct{}

// LiveRunsReply is the answer to LiveRuns.
type LiveRunsReply struct {
	IDs map[string]bool
}

// NewRunsProps returns the props of the runs actor, the parent of one run
// actor per run being worked. A run actor that fails is stopped, not
// restarted: its run stays in the store, and `drover run resume` goes on.
func NewRunsProps(env RunsEnv) *actor.Props {
	log := env.Log
	if log == nil {
		log = zap.NewNop()
	}
	env.Log = log
	env.worktrees = &sync.Mutex{}
	strategy := actor.NewOneForOneStrategy(0, time.Minute, func(reason any) actor.Directive {
		log.Error("run actor failed; stopping it (resume the run to go on)", zap.Any("reason", reason))
		return actor.StopDirective
	})
	return actor.PropsFromProducer(func() actor.Actor {
		return &runsActor{env: env, live: map[string]*actor.PID{}, byPID: map[string]string{}}
	}, actor.WithSupervisor(strategy))
}

type runsActor struct {
	env   RunsEnv
	live  map[string]*actor.PID
	byPID map[string]string
}

// Receive implements actor.Actor.
func (r *runsActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *StartRun:
		ctx.Respond(r.start(ctx, msg.Request))
	case *ResumeRun:
		ctx.Respond(r.resume(ctx, msg.ID))
	case *CancelRun:
		pid, ok := r.live[msg.ID]
		if !ok {
			ctx.Respond(&RunReply{Err: fmt.Errorf("%w: run %s is not being worked", ErrBadRequest, msg.ID)})
			return
		}
		// The run actor answers the asker itself.
		ctx.Forward(pid)
	case *LiveRuns:
		ids := make(map[string]bool, len(r.live))
		for id := range r.live {
			ids[id] = true
		}
		ctx.Respond(&LiveRunsReply{IDs: ids})
	case *actor.Terminated:
		if id, ok := r.byPID[msg.Who.Id]; ok {
			delete(r.byPID, msg.Who.Id)
			delete(r.live, id)
		}
	}
}

func (r *runsActor) busy() error {
	for id := range r.live {
		return fmt.Errorf("%w: run %s is being worked; one run at a time merges into the main work tree", ErrBadRequest, id)
	}
	return nil
}

func (r *runsActor) start(ctx actor.Context, req api.StartRunRequest) *RunReply {
	if err := r.busy(); err != nil {
		return &RunReply{Err: err}
	}
	g, err := rungraph.Parse([]byte(req.Graph), req.File)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	cfg := r.env.config()
	opts, err := runOptions(req.Options, cfg.Run)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	set, err := newRunSettings(cfg, opts, r.env.Reviewers, r.env.ChildTag)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	ioctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	target, err := gitOut(ioctx, r.env.Root, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || target == "" {
		return &RunReply{Err: fmt.Errorf("%w: the main work tree %s is not on a branch to merge into", ErrBadRequest, r.env.Root)}
	}
	id, err := newRunID(r.env.now())
	if err != nil {
		return &RunReply{Err: err}
	}
	now := r.env.now()
	rec := newRun(id, req.File, req.Graph, opts, target, g, now)
	rec.Reviewer = set.describeReviewer()
	if err := r.env.Store.SaveRun(ioctx, rec); err != nil {
		return &RunReply{Err: err}
	}
	return r.spawn(ctx, rec, g, set)
}

func (r *runsActor) resume(ctx actor.Context, id string) *RunReply {
	if _, ok := r.live[id]; ok {
		return &RunReply{Err: fmt.Errorf("%w: run %s is already being worked", ErrBadRequest, id)}
	}
	if err := r.busy(); err != nil {
		return &RunReply{Err: err}
	}
	ioctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	rec, found, err := r.env.Store.LoadRun(ioctx, id)
	if err != nil {
		return &RunReply{Err: err}
	}
	if !found {
		return &RunReply{Err: fmt.Errorf("%w: no run %s", ErrBadRequest, id)}
	}
	if rec.State == api.RunDone {
		return &RunReply{Err: fmt.Errorf("%w: run %s is done", ErrBadRequest, id)}
	}
	g, err := rungraph.Parse([]byte(rec.Graph), rec.File)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("run %s: its stored graph: %w", id, err)}
	}
	// The options are the run's; the rest of the configuration is read
	// anew, so that a fixed review.command or loop.routes applies.
	set, err := newRunSettings(r.env.config(), rec.Options, r.env.Reviewers, r.env.ChildTag)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("%w: run %s: %w", ErrBadRequest, id, err)}
	}
	// A supervisor that died (kill -9) took its agents with it, and its
	// watchdog the tool calls they ran in sessions of their own; without
	// a watchdog (it failed to start) those would go on in the run's work
	// trees next to the new agents.
	if n, err := proctag.Kill("DROVER_RUN_ID=" + id); err != nil || n > 0 {
		r.env.Log.Warn("killed processes left by the run's last supervisor", zap.String("run", id), zap.Int("count", n), zap.Error(err))
	}
	rec = resumeRun(rec, r.env.now())
	rec.Reviewer = set.describeReviewer()
	if err := r.env.Store.SaveRun(ioctx, rec); err != nil {
		return &RunReply{Err: err}
	}
	return r.spawn(ctx, rec, g, set)
}

func (r *runsActor) spawn(ctx actor.Context, rec api.Run, g rungraph.Graph, set runSettings) *RunReply {
	env := r.env
	props := actor.PropsFromProducer(func() actor.Actor { return newRunActor(env, rec, g, set) })
	pid, err := ctx.SpawnNamed(props, "run-"+rec.ID)
	if err != nil {
		return &RunReply{Err: fmt.Errorf("spawning the actor of run %s: %w", rec.ID, err)}
	}
	r.live[rec.ID] = pid
	r.byPID[pid.Id] = rec.ID
	rec.Active = true
	return &RunReply{Run: rec}
}

// runOptions fills in the defaults from the run.* configuration and checks
// the command templates.
func runOptions(o api.RunOptions, c config.Run) (api.RunOptions, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = max(c.Concurrency, 1)
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = max(c.MaxIterations, 1)
	}
	if strings.TrimSpace(o.Agent) == "" {
		o.Agent = strings.TrimSpace(c.Agent)
	}
	if strings.TrimSpace(o.TestCommand) == "" {
		o.TestCommand = c.TestCommand
	}
	if strings.TrimSpace(o.SuiteCommand) == "" {
		o.SuiteCommand = c.SuiteCommand
	}
	if o.IterationTimeout <= 0 {
		o.IterationTimeout = c.IterationTimeout
	}
	if b := strings.TrimSpace(c.TaskMaxUSD); o.TaskMaxUSD <= 0 && b != "" {
		v, err := strconv.ParseFloat(b, 64)
		if err != nil {
			return o, fmt.Errorf("run.task_max_usd %q is not a number of dollars", b)
		}
		o.TaskMaxUSD = v
	}
	if !c.Review && strings.TrimSpace(o.Reviewer) == "" {
		o.NoReview = true
	}
	if o.NoReview && strings.TrimSpace(o.Reviewer) != "" {
		return o, errors.New("a reviewer command and no review at once: choose one")
	}
	for _, b := range []struct {
		name string
		v    float64
	}{{"task max minutes", o.TaskMaxMinutes}, {"task max usd", o.TaskMaxUSD}, {"max minutes", o.MaxMinutes}, {"max usd", o.MaxUSD}} {
		if b.v < 0 || b.v != b.v {
			return o, fmt.Errorf("%s %v is not a budget (0 for none)", b.name, b.v)
		}
	}
	checks := []struct {
		name, tmpl string
		known      []string
	}{
		{"agent", o.Agent, agentPlaceholders},
		{"test command", o.TestCommand, []string{"packages"}},
		{"suite command", o.SuiteCommand, nil},
	}
	if _, err := reviewerCommand(o.Reviewer); err != nil {
		return o, err
	}
	for _, c := range checks {
		if c.tmpl == "" {
			continue
		}
		if _, err := expand(c.tmpl, placeholderValues(c.known), nil); err != nil {
			return o, fmt.Errorf("%s %q: %w", c.name, c.tmpl, err)
		}
	}
	return o, nil
}

var agentPlaceholders = []string{"prompt", "task", "iteration", "run", "worktree"}

func placeholderValues(keys []string) map[string][]string {
	m := make(map[string][]string, len(keys))
	for _, k := range keys {
		m[k] = []string{"x"}
	}
	return m
}

// newRunID returns a fresh run id: sortable by time, unique by chance.
func newRunID(now time.Time) (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a run id: %w", err)
	}
	return "run-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// newRun is the state of a run before anything ran.
func newRun(id, file, graph string, opts api.RunOptions, target string, g rungraph.Graph, now time.Time) api.Run {
	rec := api.Run{ID: id, File: file, Graph: graph, Options: opts, Target: target, State: api.RunRunning, CreatedAt: now, UpdatedAt: now, ResumedAt: now}
	waves := g.Waves()
	rec.Waves = len(waves)
	for i, w := range waves {
		for _, t := range w {
			rec.Tasks = append(rec.Tasks, api.RunTask{ID: t.ID, Wave: i + 1, State: api.TaskPending, Branch: worktree.BranchName(id, t.ID)})
		}
	}
	return rec
}

// resumeRun is the state a run goes on from. Done tasks stay done. A task
// its supervisor's end cut short (a crash) goes on where it was: its
// iteration is worked again under the same number and role, and what it
// spent of its budgets (dollars, including an estimate of its killed
// agent's, and time worked) still counts. A failed task starts over with
// fresh budgets (its branch keeps its commits): a person resumed it after
// fixing the cause. A conflicting branch is merged again (a person may
// have resolved it). The run's own budgets likewise go on after a crash
// and begin again after a failure.
func resumeRun(rec api.Run, now time.Time) api.Run {
	// The stored run was last known worked at its last save: the time
	// from then to now, when no supervisor worked it, is no one's budget.
	last, since := rec.UpdatedAt, rec.ResumedAt
	if since.IsZero() {
		since = rec.CreatedAt
	}
	failed := rec.State == api.RunFailed
	if last.After(since) {
		rec.WorkedBefore += last.Sub(since)
	}
	if failed {
		rec.WorkedBefore, rec.BudgetFromUSD = 0, rec.CostUSD
	}
	rec.State = api.RunRunning
	rec.Report = ""
	rec.Suite = nil
	rec.UpdatedAt, rec.ResumedAt = now, now
	rec.Tasks = append([]api.RunTask(nil), rec.Tasks...)
	for i := range rec.Tasks {
		t := &rec.Tasks[i]
		if !t.StartedAt.IsZero() && t.State != api.TaskDone {
			from, to := laterOf(t.StartedAt, since), last
			if t.State == api.TaskFailed && !t.EndedAt.IsZero() && t.EndedAt.Before(to) {
				to = t.EndedAt
			}
			if to.After(from) {
				t.WorkedBefore += to.Sub(from)
			}
		}
		switch t.State {
		case api.TaskRunning:
			t.State, t.Interrupted = api.TaskPending, true
		case api.TaskFailed:
			// Fresh budgets: iterations, minutes, dollars and
			// convergence history start over.
			t.State, t.Iteration, t.Error, t.Interrupted, t.Feedback = api.TaskPending, 0, "", false, ""
			t.StartedAt, t.EndedAt, t.Role, t.Status, t.StatusReason = time.Time{}, time.Time{}, "", "", ""
			t.WorkedBefore, t.BudgetFromUSD = 0, t.CostUSD
		case api.TaskNeedsReview:
			t.State, t.Error, t.Conflict = api.TaskDone, "", nil
		}
	}
	return rec
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// taskClock is when a task's time budget would have begun had its
// supervisors worked it without a break: its minutes count from there.
// resumedAt is when the run's current supervisor began working it. It is
// zero for a task not started yet.
func taskClock(t api.RunTask, resumedAt time.Time) time.Time {
	if t.StartedAt.IsZero() {
		return time.Time{}
	}
	return laterOf(t.StartedAt, resumedAt).Add(-t.WorkedBefore)
}

// runClock is taskClock for the run's own time budget.
func runClock(r api.Run) time.Time {
	return r.ResumedAt.Add(-r.WorkedBefore)
}

// runActor works one run: it starts the tasks of the current wave, at
// most Concurrency at once, each iteration in a goroutine whose result
// comes back as a message; once the wave is done it merges its branches
// and runs the suite, also in a goroutine. Every change is saved before
// the next step, so a resumed run goes on from the last one.
type runActor struct {
	env   RunsEnv
	log   *zap.Logger
	rec   api.Run
	graph rungraph.Graph

	ctx    context.Context
	cancel context.CancelFunc
	// iterCtx is the parent of every iteration: the run's budgets cancel
	// it to end running agents, not the merge of a wave.
	iterCtx    context.Context
	iterCancel context.CancelFunc
	wg         sync.WaitGroup
	inflight   int
	merging    bool
	// history holds the convergence metrics of each task's iterations
	// since it (re)started, oldest first; a resumed run knows only the
	// last one, from the task's last test.
	history map[string][]convergence.Metrics
	// live is what the running iteration of each task has added to its
	// cost and tool calls so far, from its agent's progress; the
	// iteration's end adds the rest.
	live map[string]agentProgress
	// endIteration cancels the running iteration of each task: its dollar
	// budget, spent while its agent works, ends it.
	endIteration map[string]context.CancelFunc
	// savedAt is when the run was last saved, and flush the timer of a
	// progress save put off until progressSaveEvery has passed.
	savedAt time.Time
	flush   *time.Timer
	// beat is the timer of the next heartbeat.
	beat *time.Timer
	// stop says which run budget ended the run; no iteration starts once
	// it is set.
	stop string
	// set is what the run read of the configuration when it started.
	set runSettings
}

func newRunActor(env RunsEnv, rec api.Run, g rungraph.Graph, set runSettings) *runActor {
	if env.worktrees == nil {
		env.worktrees = &sync.Mutex{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	iterCtx, iterCancel := context.WithCancel(ctx)
	if rec.ResumedAt.IsZero() {
		rec.ResumedAt = env.now()
	}
	history := map[string][]convergence.Metrics{}
	for _, t := range rec.Tasks {
		// The routing of a resumed task's next iteration goes by how its
		// last tests went.
		if t.State != api.TaskDone && t.Iteration > 0 && t.LastTest != nil {
			n := t.Iteration
			if t.Interrupted {
				n--
			}
			history[t.ID] = []convergence.Metrics{iterationMetrics(n, t.LastTest)}
		}
	}
	return &runActor{
		env: env, log: env.Log.With(zap.String("run", rec.ID)), rec: rec, graph: g, set: set,
		ctx: ctx, cancel: cancel, iterCtx: iterCtx, iterCancel: iterCancel,
		history: history, live: map[string]agentProgress{}, endIteration: map[string]context.CancelFunc{},
	}
}

// agentProgress is what an agent has cost (its result line's total, or
// until then an estimate from its token usage) and the tool calls it made.
type agentProgress struct {
	costUSD   float64
	toolCalls int
	// finished is set once the agent printed its result line.
	finished bool
}

// taskProgress is what an iteration's goroutine reports as its agent
// works: the agent's progress so far.
type taskProgress struct {
	task      string
	iteration int
	agentProgress
}

// progressFlush saves progress whose save was put off.
type progressFlush struct{}

// heartbeat saves a run whose agents work, so that its stored UpdatedAt,
// which a resume takes as the last time the run was worked, stays recent
// while the agents run quiet tools.
type heartbeat struct{}

// iterationDone is what one iteration's goroutine reports.
type iterationDone struct {
	task      string
	iteration int
	base      string
	agent     agentrun.Result
	// progress is what the agent cost and did in all, including what an
	// agent killed before its result line had spent.
	progress  agentProgress
	test      *api.TestResult
	committed bool
	// offBranch is the branch (or, detached, the commit) the agent left
	// the work tree's HEAD on when that is not the task's branch (branch),
	// which is what gets merged.
	offBranch, branch string
	// dirty is `git status --short` of the work tree after the tests:
	// changes not committed, and files neither added nor ignored. A
	// done task's work tree is removed, so what is not committed is lost.
	dirty string
	// review is the reviewer's result, when the iteration was otherwise
	// done and the run has a reviewer.
	review *reviewer.Result
	err    error
}

// waveChecked is what the merge and suite goroutine reports.
type waveChecked struct {
	wave     int
	merge    worktree.MergeReport
	mergeErr error
	suite    *api.TestResult
}

// Receive implements actor.Actor.
func (a *runActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.log.Info("run started", zap.Int("tasks", len(a.rec.Tasks)), zap.Int("waves", a.rec.Waves))
		a.armHeartbeat(ctx)
		a.advance(ctx)
	case *heartbeat:
		// A save within the last half beat (progress, a finished
		// iteration) already keeps the stored run recent.
		if (a.inflight > 0 || a.merging) && time.Since(a.savedAt) >= a.heartbeatEvery()/2 {
			a.save()
		}
		if a.rec.State == api.RunRunning {
			a.armHeartbeat(ctx)
		}
	case *iterationDone:
		a.inflight--
		a.iterationDone(msg)
		a.advance(ctx)
	case *waveChecked:
		a.merging = false
		a.waveChecked(msg)
		a.advance(ctx)
	case *CancelRun:
		if a.stop == "" {
			a.stop = cancelReason
			a.iterCancel()
			a.log.Warn("run cancelled")
		}
		a.advance(ctx)
		rec := a.rec
		rec.Active = a.rec.State == api.RunRunning
		ctx.Respond(&RunReply{Run: rec})
	case *taskProgress:
		a.progress(msg)
		a.saveProgress(ctx)
	case *progressFlush:
		// A save since the timer was armed has cancelled it.
		if a.flush != nil {
			a.save()
		}
	case *actor.Stopping:
		if a.flush != nil {
			a.flush.Stop()
		}
		if a.beat != nil {
			a.beat.Stop()
		}
		a.cancel()
		a.wg.Wait()
	}
}

// progress counts what a running agent has spent and done so far, and
// ends the run's agents at once when that spends the run's budget.
func (a *runActor) progress(m *taskProgress) {
	t := a.task(m.task)
	if t == nil || t.State != api.TaskRunning || t.Iteration != m.iteration {
		return
	}
	a.count(t, m.agentProgress)
	if m.finished {
		// The agent is done: its iteration goes on to its tests, and
		// iterationDone checks the budgets, a finished task first.
		return
	}
	if a.stop == "" {
		a.checkRunBudget()
	}
	// The task's dollars, unlike its minutes, have no deadline to end the
	// iteration with; iterationDone fails the task and says why.
	if end := a.endIteration[t.ID]; end != nil && taskBudgetSpent(a.rec.Options, time.Time{}, a.env.now(), t.CostUSD-t.BudgetFromUSD) != "" {
		a.log.Warn("task budget spent; ending its agent", zap.String("task", t.ID), zap.Float64("cost_usd", t.CostUSD))
		end()
		delete(a.endIteration, t.ID)
	}
}

// count adds to task t and the run what the agent's progress p adds to
// what was counted of it before, keeps p as counted, and returns the cost
// it added.
func (a *runActor) count(t *api.RunTask, p agentProgress) float64 {
	before := a.live[t.ID]
	cost := p.costUSD - before.costUSD
	t.CostUSD += cost
	a.rec.CostUSD += cost
	t.ToolCalls += p.toolCalls - before.toolCalls
	a.live[t.ID] = p
	return cost
}

// armHeartbeat sets the timer of the next heartbeat.
func (a *runActor) armHeartbeat(ctx actor.Context) {
	system, self := ctx.ActorSystem(), ctx.Self()
	a.beat = time.AfterFunc(a.heartbeatEvery(), func() { system.Root.Send(self, &heartbeat{}) })
}

// heartbeatEvery is RunsEnv.Heartbeat, or its default.
func (a *runActor) heartbeatEvery() time.Duration {
	if a.env.Heartbeat > 0 {
		return a.env.Heartbeat
	}
	return heartbeatEvery
}

// saveProgress saves the run after progress, or when it was saved less
// than progressSaveEvery ago, once that has passed.
func (a *runActor) saveProgress(ctx actor.Context) {
	if a.flush != nil {
		return // a save is due already
	}
	if wait := progressSaveEvery - time.Since(a.savedAt); wait > 0 && a.stop == "" {
		system, self := ctx.ActorSystem(), ctx.Self()
		a.flush = time.AfterFunc(wait, func() { system.Root.Send(self, &progressFlush{}) })
		return
	}
	a.save()
}

func (a *runActor) save() {
	// This save holds whatever progress a pending flush was for.
	if a.flush != nil {
		a.flush.Stop()
		a.flush = nil
	}
	a.savedAt = time.Now()
	a.rec.UpdatedAt = a.env.now()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := a.env.Store.SaveRun(ctx, a.rec); err != nil {
		a.log.Error("saving run", zap.Error(err))
	}
}

func (a *runActor) task(id string) *api.RunTask {
	for i := range a.rec.Tasks {
		if a.rec.Tasks[i].ID == id {
			return &a.rec.Tasks[i]
		}
	}
	return nil
}

// advance starts what can start now, and ends the run when nothing is
// left to do. It saves the run once, with whatever the message before it
// changed, and before it starts any process: the store never says less
// than what has begun.
func (a *runActor) advance(ctx actor.Context) {
	var launch []func()
	defer func() {
		a.save()
		for _, start := range launch {
			start()
		}
		if a.rec.State != api.RunRunning && a.inflight == 0 && !a.merging {
			ctx.Stop(ctx.Self())
		}
	}()
	if a.rec.State != api.RunRunning || a.merging {
		return
	}
	wave := a.rec.Merged + 1
	if wave > a.rec.Waves {
		a.rec.State = api.RunDone
		a.rec.Report = fmt.Sprintf("all %d tasks done in %d waves and merged into %s; cost $%.2f", len(a.rec.Tasks), a.rec.Waves, a.rec.Target, a.rec.CostUSD)
		a.log.Info("run done")
		return
	}
	if a.stop == "" {
		a.checkRunBudget()
	}
	if a.stop != "" {
		// Let what runs end (its agents were killed), then stop.
		if a.inflight == 0 {
			a.fail(a.stopReport())
		}
		return
	}
	var pending, failed []*api.RunTask
	allDone := true
	for i := range a.rec.Tasks {
		t := &a.rec.Tasks[i]
		if t.Wave != wave {
			continue
		}
		switch t.State {
		case api.TaskPending:
			pending = append(pending, t)
		case api.TaskFailed, api.TaskNeedsReview:
			failed = append(failed, t)
		}
		allDone = allDone && t.State == api.TaskDone
	}
	if len(failed) > 0 {
		// The wave cannot be merged; let what runs finish, then stop.
		if a.inflight == 0 {
			a.fail(failureReport(wave, failed))
		}
		return
	}
	for _, t := range pending {
		if a.inflight >= a.rec.Options.Concurrency {
			break
		}
		launch = append(launch, a.startIteration(ctx, t))
	}
	if allDone && a.inflight == 0 {
		launch = append(launch, a.startCheckpoint(ctx, wave))
	}
}

// fail ends the run with report; the caller saves it.
func (a *runActor) fail(report string) {
	a.rec.State = api.RunFailed
	a.rec.Report = report
	a.log.Warn("run failed", zap.String("report", report))
}

// checkRunBudget sets a.stop, and ends the running agents, when a run
// budget is spent.
func (a *runActor) checkRunBudget() {
	o := a.rec.Options
	why := runBudgetSpent(o, a.env.now().Sub(runClock(a.rec)), a.rec.CostUSD-a.rec.BudgetFromUSD)
	if why == "" {
		return
	}
	a.stop = why
	a.iterCancel()
	a.log.Warn("run budget spent", zap.String("budget", why))
}

// runBudgetSpent names the run budget that elapsed and cost have reached,
// or returns "".
func runBudgetSpent(o api.RunOptions, elapsed time.Duration, cost float64) string {
	switch {
	case o.MaxUSD > 0 && cost >= o.MaxUSD:
		return fmt.Sprintf("the run budget of $%s (--max-usd) is spent: the agents cost $%.2f", budgetUSD(o.MaxUSD), cost)
	case o.MaxMinutes > 0 && elapsed.Minutes() >= o.MaxMinutes:
		return fmt.Sprintf("the run budget of %g minutes (--max-minutes) is spent: %s elapsed", o.MaxMinutes, elapsed.Round(time.Second))
	}
	return ""
}

// budgetUSD writes a dollar budget in cents, or as given when cents would
// change it: a budget of $0.015 reported as $0.01 names one the user did
// not set.
func budgetUSD(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == v {
		return s
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// taskBudgetSpent says whether a task that started at start, and has cost
// cost since, has spent its dollar or time budget by now, in words.
func taskBudgetSpent(o api.RunOptions, start, now time.Time, cost float64) string {
	if o.TaskMaxUSD > 0 && cost >= o.TaskMaxUSD {
		return fmt.Sprintf("the task budget of $%s (--task-max-usd) is spent: its agents cost $%.2f", budgetUSD(o.TaskMaxUSD), cost)
	}
	if o.TaskMaxMinutes <= 0 || start.IsZero() {
		return ""
	}
	if el := now.Sub(start); el.Minutes() >= o.TaskMaxMinutes {
		return fmt.Sprintf("the task budget of %g minutes (--task-max-minutes) is spent: %s elapsed", o.TaskMaxMinutes, el.Round(time.Second))
	}
	return ""
}

// stopReport is the report of a run a budget stopped.
func (a *runActor) stopReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run stopped: %s", a.stop)
	for _, t := range a.rec.Tasks {
		if t.State == api.TaskFailed && t.Error != "" {
			fmt.Fprintf(&b, "\n- task %s is %s: %s", t.ID, t.State, t.Error)
		}
	}
	return b.String()
}

func failureReport(wave int, failed []*api.RunTask) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wave %d cannot be merged:", wave)
	for _, t := range failed {
		fmt.Fprintf(&b, "\n- task %s is %s", t.ID, t.State)
		if t.Error != "" {
			fmt.Fprintf(&b, ": %s", t.Error)
		}
	}
	return b.String()
}

// startIteration marks the next iteration of t as started and returns
// what runs it in a goroutine: its work tree, the agent, the targeted
// tests, the commit check and the review.
func (a *runActor) startIteration(ctx actor.Context, t *api.RunTask) func() {
	gt, _ := a.graph.Task(t.ID)
	now := a.env.now()
	t.State = api.TaskRunning
	t.Runs++
	if t.StartedAt.IsZero() {
		t.StartedAt = now
	}
	// An iteration a crash cut short is worked again as it was: its
	// number and role.
	if !t.Interrupted || t.Iteration == 0 {
		t.Iteration++
	}
	if !t.Interrupted || t.Role == "" {
		t.Role = string(routeIteration(a.set.rules, t.Iteration, a.history[t.ID], t.Status))
	}
	t.Interrupted = false
	a.inflight++
	job := iterationJob{
		root: a.env.Root, runID: a.rec.ID, task: gt, iteration: t.Iteration, base: t.Base,
		opts: a.rec.Options, deadline: iterationDeadline(a.rec.Options, taskClock(*t, a.rec.ResumedAt), runClock(a.rec)),
		worktrees: a.env.worktrees, childTag: a.env.ChildTag,
	}
	tmpl, err := a.env.templates()
	if err == nil {
		job.prompt, err = taskPrompt(tmpl, gt, t.Branch, rungraph.TargetedTests(gt, goTestTree(a.rec.Options, a.env.Root)), t.Iteration, a.rec.Options.MaxIterations, router.Role(t.Role), t.Feedback)
	}
	if err == nil && a.set.review != nil {
		// The base is known only once the work tree is; the job fills it in.
		job.reviewPrompt, err = tmpl.Render(templates.RunReview, map[string]string{
			"task_id": strconv.Quote(t.ID), "description": gt.Description, "branch": t.Branch,
		})
		spec := *a.set.review
		spec.Model = reviewer.NextModel(a.set.models, t.Reviews)
		job.review = &spec
	}
	if err != nil {
		job.err = fmt.Errorf("the prompt of task %s: %w", t.ID, err)
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	runCtx, end := context.WithCancel(a.iterCtx)
	a.endIteration[t.ID] = end
	id, role := t.ID, t.Role
	iteration := t.Iteration
	job.report = func(p agentProgress) {
		// Send does not wait: the mailbox is unbounded.
		system.Root.Send(self, &taskProgress{task: id, iteration: iteration, agentProgress: p})
	}
	return func() {
		a.log.Info("task iteration started", zap.String("task", id), zap.Int("iteration", job.iteration), zap.String("role", role))
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer end()
			system.Root.Send(self, job.run(runCtx))
		}()
	}
}

// iterationDone applies one iteration's outcome to its task.
func (a *runActor) iterationDone(m *iterationDone) {
	t := a.task(m.task)
	if t == nil || t.State != api.TaskRunning || t.Iteration != m.iteration {
		return
	}
	if t.Base == "" {
		t.Base = m.base
	}
	// The agent's progress is counted already, up to its last report.
	cost := a.count(t, m.progress)
	delete(a.live, t.ID)
	delete(a.endIteration, t.ID)
	if m.review != nil {
		cost += m.review.CostUSD
		t.CostUSD += m.review.CostUSD
		a.rec.CostUSD += m.review.CostUSD
	}
	if m.test != nil {
		t.LastTest = m.test
	}
	if m.review != nil {
		t.Reviews++
		t.LastReview = taskReview(*m.review, m.iteration, a.env.now())
	}
	done, feedback := judgeIteration(m)
	metrics := iterationMetrics(m.iteration, m.test)
	a.history[t.ID] = append(a.history[t.ID], metrics)
	status, reason := convergence.Classify(a.history[t.ID], convergence.Budget{}, a.set.thresholds)
	t.Status, t.StatusReason = string(status), reason
	if a.stop == "" {
		a.checkRunBudget()
	}
	taskBudget := taskBudgetSpent(a.rec.Options, taskClock(*t, a.rec.ResumedAt), a.env.now(), t.CostUSD-t.BudgetFromUSD)
	switch {
	case done:
		t.State, t.Error, t.EndedAt, t.Feedback = api.TaskDone, "", a.env.now(), ""
	case a.stop != "":
		t.State, t.EndedAt = api.TaskFailed, a.env.now()
		t.Error = "stopped with the run: " + a.stop
	case taskBudget != "":
		t.State, t.EndedAt = api.TaskFailed, a.env.now()
		t.Error = fmt.Sprintf("%s after %d iterations; the last: %s", taskBudget, t.Iteration, firstLine(feedback))
	case m.err != nil:
		// drover's own trouble (no work tree, no agent binary): more
		// iterations would meet it again.
		t.State, t.Error, t.EndedAt = api.TaskFailed, m.err.Error(), a.env.now()
	case status == convergence.StuckPlateau || status == convergence.Thrashing:
		// More iterations of the same will not finish it.
		t.State, t.EndedAt = api.TaskFailed, a.env.now()
		t.Error = fmt.Sprintf("%s after %d iterations: %s", status, t.Iteration, reason)
	case t.Iteration >= a.rec.Options.MaxIterations:
		t.State, t.EndedAt = api.TaskFailed, a.env.now()
		t.Error = fmt.Sprintf("not done after %d iterations: %s", t.Iteration, firstLine(feedback))
	default:
		t.State, t.Feedback = api.TaskPending, feedback
	}
	fields := []zap.Field{zap.String("task", t.ID), zap.Int("iteration", m.iteration), zap.String("state", string(t.State)), zap.String("status", t.Status), zap.Float64("cost_usd", cost)}
	if r := t.LastReview; m.review != nil && r != nil {
		fields = append(fields, zap.String("review", r.Outcome), zap.String("review_model", r.Model))
	}
	a.log.Info("task iteration done", fields...)
}

// taskReview is what the run keeps of one review.
func taskReview(r reviewer.Result, iteration int, at time.Time) *api.TaskReview {
	out := &api.TaskReview{Model: r.Model, CostUSD: r.CostUSD, Iteration: iteration, At: at}
	switch r.Outcome {
	case reviewer.Pass:
		out.Outcome = api.ReviewPass
	case reviewer.Fail:
		out.Outcome = api.ReviewFail
	default:
		out.Outcome = api.ReviewFailed
	}
	if r.Err != nil {
		out.Error = r.Err.Error()
	}
	for _, f := range r.Findings {
		if f.Blocking() {
			out.Blocking++
		} else {
			out.Minor++
		}
	}
	return out
}

// routeIteration picks the role of a task's iteration by the loop's rules
// (loop.routes): the first iteration is in the initial phase, later ones
// are routed by how the last tests went and the task's convergence status.
func routeIteration(rules []router.Rule, iteration int, history []convergence.Metrics, status string) router.Role {
	in := router.Input{Phase: router.PhaseInitial}
	if iteration > 1 {
		in = router.Input{Phase: router.PhaseIterating, Status: status}
		if n := len(history); n > 0 {
			in.LastOutcome = string(history[n-1].LastOutcome)
		}
	}
	role, _ := router.Route(rules, in)
	if role == "" {
		role = router.Developer
	}
	return role
}

// iterationMetrics measures an iteration by its targeted tests: what
// convergence.Classify judges a task on.
func iterationMetrics(iteration int, tr *api.TestResult) convergence.Metrics {
	m := convergence.UnknownMetrics(iteration)
	if tr == nil {
		return m
	}
	if sum, ok := convergence.ParseTestSummary(tr.Output); ok {
		m.TestPassRate, m.TestsPassed, m.TestsFailed, m.TestFramework = sum.PassRate(), sum.Passed, sum.Failed, sum.Framework
	}
	if tr.Passed {
		m.LastOutcome = convergence.OutcomeOK
		return m
	}
	m.LastOutcome = convergence.OutcomeTestsFailed
	if b, ok := convergence.ParseBuild(tr.Output); ok && (b.Failed || b.Errors > 0) {
		ok := false
		m.BuildOK = &ok
		m.LastOutcome = convergence.OutcomeBuildFailed
	}
	ff := convergence.FirstFailure(tr.Output)
	if ff == "" {
		ff = firstLine(tr.Output)
	}
	if ff != "" {
		m.FirstFailure, m.ErrorHash = ff, convergence.ErrorHash(ff)
	}
	return m
}

// iterationDeadline is when an iteration of a task that started at
// taskStart, in a run worked since runStart, runs out of time: the
// earlier of the task's and the run's time budgets, or zero without
// either.
func iterationDeadline(o api.RunOptions, taskStart, runStart time.Time) time.Time {
	var d time.Time
	for _, b := range []struct {
		minutes float64
		start   time.Time
	}{{o.TaskMaxMinutes, taskStart}, {o.MaxMinutes, runStart}} {
		if b.minutes <= 0 {
			continue
		}
		end := b.start.Add(time.Duration(b.minutes * float64(time.Minute)))
		if d.IsZero() || end.Before(d) {
			d = end
		}
	}
	return d
}

// judgeIteration decides whether an iteration finished its task, and if
// not, what the next iteration is told.
func judgeIteration(m *iterationDone) (done bool, feedback string) {
	switch {
	case m.err != nil:
		return false, m.err.Error()
	case m.agent.Err != nil:
		return false, fmt.Sprintf("The agent run failed: %v", m.agent.Err)
	case m.test != nil && !m.test.Passed:
		return false, fmt.Sprintf("The targeted tests failed (`%s`):\n%s", m.test.Command, m.test.Output)
	case m.offBranch != "":
		return false, fmt.Sprintf("Your work was committed on %s, not on the task's branch %s, which is what gets merged; the work tree is back on %s. Bring those commits onto it (git merge %s) and do not switch branches.", m.offBranch, m.branch, m.branch, m.offBranch)
	case !m.committed:
		return false, "There is no commit on this branch yet. Do the task and commit your work."
	case m.dirty != "":
		return false, fmt.Sprintf("The tests pass, but there are uncommitted changes or new files not added (`git status --short`):\n%s\nCommit all of your work on this branch (git add the new files your work needs; ignore or delete the others).", clipLines(m.dirty, maxDirtyLines))
	case m.review != nil && m.review.Outcome != reviewer.Pass:
		return false, reviewFeedback(*m.review)
	}
	return true, ""
}

// reviewFeedback is what the next iteration is told of a review that did
// not pass.
func reviewFeedback(r reviewer.Result) string {
	if r.Outcome == reviewer.Failed {
		return fmt.Sprintf("The tests pass, but the review could not run (%v); the work is unreviewed.", r.Err)
	}
	var b strings.Builder
	b.WriteString("The tests pass, but the reviewer did not pass the task (FAIL). Fix these findings and commit:")
	for _, f := range r.Findings {
		where := f.File
		if where != "" && f.Line > 0 {
			where += ":" + strconv.Itoa(f.Line)
		}
		if where != "" {
			where = " (" + where + ")"
		}
		fmt.Fprintf(&b, "\n- %s%s: %s", f.Severity, where, f.Summary)
	}
	if len(r.Findings) == 0 {
		b.WriteString("\n- (the reviewer gave no findings)")
	}
	return b.String()
}

// reviewerCommand parses the --reviewer option: nil for the configured
// reviewer or for "claude", else the argv of a custom command template.
func reviewerCommand(opt string) ([]string, error) {
	switch opt = strings.TrimSpace(opt); opt {
	case "", reviewer.CLIClaude:
		return nil, nil
	}
	argv, err := argsplit.Split(opt)
	if err != nil {
		return nil, fmt.Errorf("reviewer command %q: %w", opt, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("reviewer command %q is empty", opt)
	}
	return argv, nil
}

// runSettings is what a run reads of the configuration when it starts or
// resumes; a change to the configuration applies to the next run.
type runSettings struct {
	// rules route iterations to roles (loop.routes).
	rules []router.Rule
	// thresholds judge a task's convergence (loop.plateau_window,
	// loop.thrash_repeats).
	thresholds convergence.Thresholds
	// review is the reviewer of every task, without its prompt and model;
	// nil when tasks are not reviewed.
	review *reviewer.Spec
	// models are the reviewer's models, used in turn across a task's
	// reviews, the first one first.
	models []string
}

// newRunSettings reads a run's settings from the configuration and its
// options. The reviewer is the configured one (review.cli, review.command,
// review.models, review.timeout, review.budget_usd) unless the options
// turn it off or name another command; limiter caps the reviewer
// processes of the whole supervisor, and childTag (when set) goes in the
// environment of every reviewer, for the supervisor's watchdog.
func newRunSettings(cfg config.Config, o api.RunOptions, limiter *reviewer.Limiter, childTag string) (runSettings, error) {
	var set runSettings
	rules, err := cfg.LoopRules()
	if err != nil {
		return set, fmt.Errorf("loop.routes: %w", err)
	}
	set.rules = rules
	set.thresholds = convergence.DefaultThresholds()
	if cfg.Loop.PlateauWindow > 0 {
		set.thresholds.PlateauWindow = cfg.Loop.PlateauWindow
	}
	if cfg.Loop.ThrashRepeats > 0 {
		set.thresholds.ThrashRepeats = cfg.Loop.ThrashRepeats
	}
	if o.NoReview {
		return set, nil
	}
	spec := &reviewer.Spec{CLI: cfg.Review.CLI, Timeout: cfg.Review.Timeout, Limiter: limiter, OwnerTag: childTag}
	argv, err := reviewerCommand(o.Reviewer)
	switch {
	case err != nil:
		return set, err
	case argv != nil:
		spec.CLI, spec.Command = reviewer.CLICustom, argv
	case strings.TrimSpace(o.Reviewer) == reviewer.CLIClaude:
		spec.CLI = reviewer.CLIClaude
	case cfg.Review.CLI == reviewer.CLICustom:
		if spec.Command, err = argsplit.Split(cfg.Review.Command); err != nil {
			return set, fmt.Errorf("review.command %q: %w", cfg.Review.Command, err)
		}
		if len(spec.Command) == 0 {
			return set, errors.New("review.command is empty while review.cli is custom")
		}
	}
	if b := strings.TrimSpace(cfg.Review.BudgetUSD); b != "" {
		if spec.BudgetUSD, err = strconv.ParseFloat(b, 64); err != nil || spec.BudgetUSD < 0 {
			return set, fmt.Errorf("review.budget_usd %q is not a number of dollars", b)
		}
	}
	set.review = spec
	set.models = cfg.ReviewModels()
	if len(set.models) == 0 {
		set.models = reviewer.DefaultModels
	}
	return set, nil
}

// describeReviewer says who reviews the run's tasks, for its status.
func (s runSettings) describeReviewer() string {
	if s.review == nil {
		return ""
	}
	who := s.review.CLI
	switch who {
	case "":
		who = reviewer.CLIClaude
	case reviewer.CLICustom:
		who = strings.Join(s.review.Command, " ")
	}
	models := strings.Join(s.models, ", ")
	if len(s.models) > 1 {
		models += " in turn"
	}
	return who + " (" + models + ")"
}

// maxDirtyLines bounds the `git status` lines an iteration is told of.
const maxDirtyLines = 20

// clipLines keeps the first max lines of s, noting how many more there
// were.
func clipLines(s string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:max], "\n") + fmt.Sprintf("\n... and %d more", len(lines)-max)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// iterationJob is everything one iteration needs, copied out of the actor.
type iterationJob struct {
	root, runID string
	task        rungraph.Task
	iteration   int
	base        string
	opts        api.RunOptions
	prompt      string
	// review is the reviewer of the iteration, when the run has one, and
	// reviewPrompt what it is asked ({{base}} still to fill in).
	review       *reviewer.Spec
	reviewPrompt string
	// deadline ends the iteration with the task's budget (zero: none).
	deadline time.Time
	// worktrees is the project's lock on work tree changes.
	worktrees *sync.Mutex
	// report sends the agent's progress to the run actor, without
	// waiting: the agent's output is not read while it runs.
	report func(agentProgress)
	// childTag is RunsEnv.ChildTag, for the agent and the test command.
	childTag string
	// err is a failure met before the iteration could start.
	err error
}

func (j iterationJob) run(ctx context.Context) *iterationDone {
	out := &iterationDone{task: j.task.ID, iteration: j.iteration, base: j.base}
	if j.err != nil {
		out.err = j.err
		return out
	}
	if !j.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, j.deadline)
		defer cancel()
	}
	j.worktrees.Lock()
	wt, err := worktree.Create(ctx, j.root, j.runID, j.task.ID, "")
	j.worktrees.Unlock()
	if err != nil {
		out.err = err
		return out
	}
	out.base = j.base
	if out.base == "" {
		out.base = wt.Base
	}
	spec, err := agentSpec(j.opts, j.runID, j.task.ID, j.iteration, wt.Path, j.prompt, j.childTag)
	if err != nil {
		out.err = err
		return out
	}
	meter := newAgentMeter()
	res, err := agentrun.Run(ctx, spec, func(ev agentrun.Event) {
		if meter.add(ev) && j.report != nil {
			j.report(meter.progress())
		}
	})
	if err != nil {
		out.err = err
		return out
	}
	out.agent = res
	out.progress = meter.progress()
	if ctx.Err() != nil {
		return out
	}
	argv, err := testArgv(j.opts, j.task, wt.Path)
	if err != nil {
		out.err = err
		return out
	}
	tr := runCommand(ctx, wt.Path, argv, j.childTag)
	out.test = &tr
	// The task's branch is what gets merged: commits on another branch,
	// or on a detached HEAD, would be reported done and never merged.
	if head, err := gitOut(ctx, wt.Path, "symbolic-ref", "--quiet", "--short", "HEAD"); err != nil || head != wt.Branch {
		out.offBranch, out.branch = head, wt.Branch
		if head == "" {
			// A detached HEAD's commits are named by their id alone.
			out.offBranch, _ = gitOut(ctx, wt.Path, "rev-parse", "HEAD")
		}
		// Back on the task's branch, the next iteration can merge the
		// commits; a work tree left elsewhere could not be reused. With
		// changes in the way the switch fails, and the next iteration's
		// work tree check says so.
		_, _ = gitOut(ctx, wt.Path, "switch", "--quiet", wt.Branch)
	}
	if n, err := gitOut(ctx, wt.Path, "rev-list", "--count", out.base+"..refs/heads/"+wt.Branch); err == nil {
		c, _ := strconv.Atoi(n)
		out.committed = c > 0
	}
	// Untracked files count: an agent that forgot to add a new file has
	// tests that pass here and a branch that lacks the file.
	if s, err := gitOut(ctx, wt.Path, "status", "--porcelain=v1", "--untracked-files=all"); err == nil {
		out.dirty = s
	}
	if done, _ := judgeIteration(out); done && j.review != nil {
		spec := *j.review
		spec.Prompt = strings.ReplaceAll(j.reviewPrompt, "{{base}}", out.base)
		spec.Dir = wt.Path
		res := reviewer.Run(ctx, spec)
		out.review = &res
	}
	if done, _ := judgeIteration(out); done {
		// The branch is what gets merged; the work tree is no longer needed.
		j.worktrees.Lock()
		err := worktree.Remove(ctx, wt)
		j.worktrees.Unlock()
		if err != nil {
			out.err = err
		}
	}
	return out
}

// startCheckpoint marks the wave as merging and returns what merges its
// branches in dependency order and runs the suite in the main work tree,
// in a goroutine.
func (a *runActor) startCheckpoint(ctx actor.Context, wave int) func() {
	a.merging = true
	var branches []string
	for _, gt := range a.graph.Order() {
		if t := a.task(gt.ID); t != nil && t.Wave == wave {
			branches = append(branches, t.Branch)
		}
	}
	root, target, suite, tag := a.env.Root, a.rec.Target, a.rec.Options.SuiteCommand, a.env.ChildTag
	system, self, runCtx := ctx.ActorSystem(), ctx.Self(), a.ctx
	return func() {
		a.log.Info("wave checkpoint started", zap.Int("wave", wave), zap.Strings("branches", branches))
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			out := &waveChecked{wave: wave}
			out.merge, out.mergeErr = worktree.MergeInOrder(runCtx, root, target, branches, worktree.ContinueOnConflict)
			if out.mergeErr == nil && out.merge.OK() {
				argv, err := expand(suite, nil, nil)
				if err != nil {
					out.mergeErr = err
				} else {
					tr := runCommand(runCtx, root, argv, tag)
					out.suite = &tr
				}
			}
			system.Root.Send(self, out)
		}()
	}
}

func (a *runActor) waveChecked(m *waveChecked) {
	if m.wave != a.rec.Merged+1 || a.rec.State != api.RunRunning {
		return
	}
	byBranch := map[string]*api.RunTask{}
	for i := range a.rec.Tasks {
		byBranch[a.rec.Tasks[i].Branch] = &a.rec.Tasks[i]
	}
	var conflicts []string
	for _, b := range m.merge.Branches {
		t := byBranch[b.Branch]
		if t == nil || b.Status != worktree.NeedsReview {
			continue
		}
		t.State, t.Conflict = api.TaskNeedsReview, b.ConflictFiles
		t.Error = "merge conflict in " + strings.Join(b.ConflictFiles, ", ")
		conflicts = append(conflicts, fmt.Sprintf("- task %s: %s\n%s", t.ID, t.Error, b.ConflictDiff))
	}
	switch {
	case m.mergeErr != nil:
		a.fail(fmt.Sprintf("wave %d: merging into %s failed: %v", m.wave, a.rec.Target, m.mergeErr))
	case len(conflicts) > 0:
		a.fail(fmt.Sprintf("wave %d: branches conflict with %s and need review (the others were merged):\n%s", m.wave, a.rec.Target, strings.Join(conflicts, "\n")))
	case m.suite == nil:
		a.fail(fmt.Sprintf("wave %d: the suite did not run", m.wave))
	default:
		a.rec.Suite = m.suite
		if !m.suite.Passed {
			a.fail(fmt.Sprintf("wave %d checkpoint failed: `%s` does not pass on %s after merging the wave; the run stops here.\n%s", m.wave, m.suite.Command, a.rec.Target, m.suite.Output))
			return
		}
		a.rec.Merged = m.wave
		a.log.Info("wave checkpoint passed", zap.Int("wave", m.wave))
	}
}

// taskPrompt is what the agent is asked in one iteration of a task: the
// run_task template, with the instructions of the iteration's role. tests
// are the task's targeted tests as the test command gets them.
func taskPrompt(tmpl templates.Set, t rungraph.Task, branch string, tests []string, iteration, maxIterations int, role router.Role, feedback string) (string, error) {
	vars := map[string]string{
		"task_id": strconv.Quote(t.ID), "branch": branch, "description": t.Description,
		"files": strings.Join(t.Files, ", "), "tests": strings.Join(tests, " "),
		"iteration": strconv.Itoa(iteration), "max_iterations": strconv.Itoa(maxIterations), "feedback": feedback,
		"role": string(role), "agent_name": "drover:" + string(role),
	}
	sections := []struct {
		key, name string
		want      bool
	}{
		{"files_section", templates.RunTaskFiles, len(t.Files) > 0},
		{"tests_section", templates.RunTaskTests, vars["tests"] != ""},
		{"retry_section", templates.RunTaskRetry, iteration > 1},
	}
	for _, sec := range sections {
		vars[sec.key] = ""
		if !sec.want {
			continue
		}
		text, err := tmpl.Render(sec.name, vars)
		if err != nil {
			return "", err
		}
		vars[sec.key] = text
	}
	rolePrompt, err := tmpl.Render(templates.RolePrefix+string(role), vars)
	if err != nil {
		// A role without a template: its name alone.
		rolePrompt = ""
	}
	vars["role_prompt"] = rolePrompt
	text, err := tmpl.Render(templates.RunTask, vars)
	// Absent sections leave runs of blank lines.
	for strings.Contains(text, "\n\n\n") {
		text = strings.ReplaceAll(text, "\n\n\n", "\n\n")
	}
	return text, err
}

// agentSpec builds the agent process of one iteration. childTag, when
// set, goes in its environment: the agent's tool calls, in sessions of
// their own, inherit it, so the supervisor's watchdog ends them too.
func agentSpec(o api.RunOptions, runID, taskID string, iteration int, dir, prompt, childTag string) (agentrun.Spec, error) {
	env := []string{"DROVER_RUN_ID=" + runID, "DROVER_TASK_ID=" + taskID, "DROVER_ITERATION=" + strconv.Itoa(iteration)}
	if childTag != "" {
		env = append(env, childTag)
	}
	if o.Agent == "" {
		return agentrun.Spec{Bin: "claude", Args: agentrun.ClaudeArgs("--dangerously-skip-permissions"), Prompt: prompt, Dir: dir, Env: env, Timeout: o.IterationTimeout}, nil
	}
	vars := map[string][]string{
		"prompt": {prompt}, "task": {taskID}, "iteration": {strconv.Itoa(iteration)}, "run": {runID}, "worktree": {dir},
	}
	used := map[string]bool{}
	argv, err := expand(o.Agent, vars, used)
	if err != nil {
		return agentrun.Spec{}, fmt.Errorf("agent command %q: %w", o.Agent, err)
	}
	spec := agentrun.Spec{Bin: argv[0], Args: argv[1:], Dir: dir, Env: env, Timeout: o.IterationTimeout}
	if !used["prompt"] {
		spec.Prompt = prompt
	}
	return spec, nil
}

// testArgv is the targeted test command of a task; a task with no
// targeted tests (or none left that go can test) runs the suite instead.
// dir is the task's work tree, where the command runs.
func testArgv(o api.RunOptions, t rungraph.Task, dir string) ([]string, error) {
	tests := rungraph.TargetedTests(t, goTestTree(o, dir))
	if len(tests) == 0 {
		return expand(o.SuiteCommand, nil, nil)
	}
	return expand(o.TestCommand, map[string][]string{"packages": tests}, nil)
}

// goTestTree is the tree a run's targeted tests are checked against when
// its test command is `go test` (the default), or nil when it is another
// runner, which reads the tests as written.
func goTestTree(o api.RunOptions, dir string) fs.FS {
	argv, err := expand(o.TestCommand, placeholderValues([]string{"packages"}), nil)
	if err != nil || len(argv) < 2 || filepath.Base(argv[0]) != "go" || argv[1] != "test" {
		return nil
	}
	return os.DirFS(dir)
}

var placeholder = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// expand splits a command template as a shell would (nothing expanded)
// and fills in its placeholders. A word that is exactly one placeholder
// becomes as many words as the placeholder has values; inside a longer
// word the values are joined with spaces. used, when not nil, records the
// placeholders met.
func expand(tmpl string, vars map[string][]string, used map[string]bool) ([]string, error) {
	words, err := argsplit.Split(tmpl)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("the command is empty")
	}
	if placeholder.MatchString(words[0]) {
		return nil, fmt.Errorf("the executable %q must not hold a placeholder", words[0])
	}
	var unknown []string
	out := []string{words[0]}
	for _, w := range words[1:] {
		if m := placeholder.FindStringSubmatch(w); m != nil && m[0] == w {
			v, ok := vars[m[1]]
			if !ok {
				unknown = append(unknown, w)
				continue
			}
			if used != nil {
				used[m[1]] = true
			}
			out = append(out, v...)
			continue
		}
		out = append(out, placeholder.ReplaceAllStringFunc(w, func(s string) string {
			key := s[2 : len(s)-2]
			v, ok := vars[key]
			if !ok {
				unknown = append(unknown, s)
				return s
			}
			if used != nil {
				used[key] = true
			}
			return strings.Join(v, " ")
		}))
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown placeholder(s) %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

// runCommand runs argv in dir, without a shell, in its own process group
// (killed whole on timeout or cancel), keeping the end of its output.
// childTag, when set, goes in its environment, for the supervisor's
// watchdog: nothing else ends the group when the supervisor dies.
func runCommand(ctx context.Context, dir string, argv []string, childTag string) api.TestResult {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmdline := strings.Join(argv, " ")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if childTag != "" {
		cmd.Env = append(cmd.Environ(), childTag)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &tailBuffer{max: maxTestOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	res := api.TestResult{Command: cmdline, Passed: err == nil, Output: out.String(), At: time.Now()}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Output = fmt.Sprintf("timed out after %s\n%s", commandTimeout, res.Output)
	case err != nil:
		res.Output = fmt.Sprintf("%v\n%s", err, res.Output)
	}
	return res
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return "..." + string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
