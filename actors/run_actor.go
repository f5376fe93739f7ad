package actors

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/templates"
)

// runActor works one run. It is the shell of the run workflow
// (internal/workflow/run): each event (the run begins, an iteration or a
// wave checkpoint ends, an agent reports progress, the user cancels) is
// stepped by the workflow, committed through commit, answered, and only
// then are its effects executed: iterations and wave checkpoints run in
// the engine's work children (spawnWork), whose results come back as
// messages, as a session's background work does.
type runActor struct {
	env   RunsEnv
	log   *zap.Logger
	s     run.State
	graph rungraph.Graph
	// order is the graph's dependency order, in which waves are merged.
	order []rungraph.Task
	// set is what the run read of the configuration when it began.
	set runSettings
	// tmpl is the templates as last read: an agent's progress, which comes
	// several times a second, is stepped with them rather than read anew.
	tmpl templates.Set

	// iterations are the work children of the running iterations, by
	// task, that no budget ended yet: the run's budgets and its cancel end
	// them (endWork), not the merge of a wave. Every child, a wave's
	// included, stops with the actor, which kills its processes.
	iterations map[string]*actor.PID
	// savedAt is when the run was last saved, and flush the timer of a
	// progress save put off until progressSaveEvery has passed.
	savedAt time.Time
	flush   *time.Timer
	// beat is the timer of the next heartbeat.
	beat *time.Timer
	// wake is the timer of the next run.Wake: a task that waits for a
	// usage or rate limit goes on then.
	wake *time.Timer
	// broken is set once a commit failed: the actor does nothing more and
	// stops, and the stored run, as last committed, waits for a resume.
	broken bool
	// stopping is set once the actor stops: it waits for its children to
	// stop, and takes in nothing they still send meanwhile.
	stopping bool
	// committed is the run as this actor last committed it (no ID before
	// its first commit): the events of a commit are what changed since.
	committed runCommit
	// cancelled is set once the user cancelled the run: the stop that
	// follows is no budget reached.
	cancelled bool
}

func newRunActor(env RunsEnv, rec api.Run, g rungraph.Graph, set runSettings) *runActor {
	if env.worktrees == nil {
		env.worktrees = &sync.Mutex{}
	}
	return &runActor{
		env: env, log: env.Log.With(zap.String("run", rec.ID)), s: run.Restore(rec, env.now()), graph: g, order: g.Order(), set: set,
		iterations: map[string]*actor.PID{},
	}
}

// progressFlush saves progress whose save was put off.
type progressFlush struct{}

// limitWake steps run.Wake: the time a run.WakeAt asked for has come.
type limitWake struct{}

// heartbeat saves a run whose agents work, so that its stored UpdatedAt,
// which a resume takes as the last time the run was worked, stays recent
// while the agents run quiet tools.
type heartbeat struct{}

// Receive implements actor.Actor.
func (a *runActor) Receive(ctx actor.Context) {
	if _, stopping := ctx.Message().(*actor.Stopping); !stopping && (a.broken || a.stopping) {
		if ctx.Sender() != nil {
			// A request the runs actor forwarded (a cancel) before it
			// knew: answered as it answers one for a run not live, rather
			// than left to time out.
			ctx.Respond(notLive(a.env.refusals(), a.s.Run.ID))
		}
		return
	}
	switch msg := ctx.Message().(type) {
	case *StartRun, *ResumeRun:
		// Forwarded by the runs actor: the asker waits for the first
		// commit.
		if err := a.connect(msg); err != nil {
			// Nothing was committed: a start leaves no run, a resume
			// the stored run as it was. The runs actor stops this actor
			// after what it forwarded so far (a cancel sent while it
			// connected), each answered above as a.broken is set.
			a.log.Warn("run not begun: its executor could not be made", zap.Error(err))
			ctx.Respond(&RunReply{Err: err})
			a.broken = true
			ctx.Send(ctx.Parent(), &runNotBegun{id: a.s.Run.ID})
			return
		}
		a.log.Info("run started", zap.Int("tasks", len(a.s.Run.Tasks)), zap.Int("waves", a.s.Run.Waves))
		a.armHeartbeat(ctx)
		a.answer(ctx, run.Begin{})
	case *heartbeat:
		save, again := a.s.Heartbeat(time.Since(a.savedAt), a.heartbeatEvery())
		if save {
			if err := a.commit(); err != nil {
				a.abort(ctx, err)
				return
			}
		}
		if again {
			a.armHeartbeat(ctx)
		}
	case *workDone:
		// The child's job returned: it stops at once.
		ctx.Stop(msg.child)
		switch res := msg.result.(type) {
		case run.IterationDone:
			delete(a.iterations, res.Task)
			a.handle(ctx, res)
		case run.WaveChecked:
			a.handle(ctx, res)
		}
	case run.AgentProgress:
		a.handle(ctx, msg)
	case *limitWake:
		a.handle(ctx, run.Wake{})
	case *CancelRun:
		a.cancelled = true
		a.answer(ctx, run.Cancel{})
	case *progressFlush:
		// A save since the timer was armed has cancelled it.
		if a.flush != nil {
			if err := a.commit(); err != nil {
				a.abort(ctx, err)
			}
		}
	case *actor.Stopping:
		// The children stop after this, each once its job returned (its
		// agent's or command's process group killed); the actor's end,
		// which the runs actor watches, waits for theirs.
		a.stopping = true
		if a.flush != nil {
			a.flush.Stop()
		}
		if a.beat != nil {
			a.beat.Stop()
		}
		if a.wake != nil {
			a.wake.Stop()
		}
	}
}

// connect makes the run's executor (runSettings.connect) as the run
// begins, msg being the start or resume that asked for it. It is made
// here rather than in the runs actor because it may wait seconds for
// NATS that does not answer: only this run waits with it.
func (a *runActor) connect(msg any) error {
	if a.set.connect == nil {
		return nil
	}
	x, err := a.set.connect()
	if err != nil {
		if _, resume := msg.(*ResumeRun); resume {
			return fmt.Errorf("%w: run %s: %w", ErrBadRequest, a.s.Run.ID, err)
		}
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	a.set.exec, a.set.connect = x, nil
	return nil
}

// answer steps an event whose asker waits (the run begins, the user
// cancels it): the asker gets the run once it is committed, and then the
// step's effects (the first iterations, the end of the agents) run.
func (a *runActor) answer(ctx actor.Context, ev run.Event) {
	d, effects, err := a.step(ctx, ev)
	if err != nil {
		ctx.Respond(&RunReply{Err: err})
		a.abort(ctx, err)
		return
	}
	rec := a.s.Run
	rec.Active = !d.Finished
	ctx.Respond(&RunReply{Run: rec})
	a.execute(ctx, d, effects)
}

// handle steps an event no one waits an answer for.
func (a *runActor) handle(ctx actor.Context, ev run.Event) {
	d, effects, err := a.step(ctx, ev)
	if err != nil {
		a.abort(ctx, err)
		return
	}
	a.execute(ctx, d, effects)
}

// step applies ev to the run and commits the new state, or arranges its
// commit soon when the workflow allows it (it asks for no effect).
func (a *runActor) step(ctx actor.Context, ev run.Event) (run.Decision, []run.Effect, error) {
	if _, progress := ev.(run.AgentProgress); !progress {
		tmpl, err := a.env.templates()
		if err != nil {
			// The built-in texts stand in for a broken override.
			a.log.Warn("reading the templates", zap.Error(err))
		}
		a.tmpl = tmpl
	}
	facts := run.Facts{Settings: a.set.Settings, Templates: a.tmpl}
	if _, progress := ev.(run.AgentProgress); !progress {
		// Progress starts no iteration: only the other events need
		// where the tasks' branches begin.
		facts.Head, facts.Forks = a.bases()
	}
	before := a.s
	next, d, effects := run.Step(a.s, ev, a.order, facts, a.env.now())
	a.s = next
	a.logStep(before, ev)
	if d.Commit == run.CommitSoon && len(effects) == 0 {
		return d, nil, a.commitSoon(ctx)
	}
	return d, effects, a.commit()
}

// bases gathers where the branches of the tasks that start begin
// (run.Facts.Head and Forks): the target's head, and the fork point of
// each existing branch of a task that started without a saved base.
// Failures leave them empty: the work tree's creation then takes HEAD.
func (a *runActor) bases() (head string, forks map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	target := "HEAD"
	if a.s.Run.Target != "" {
		target = "refs/heads/" + a.s.Run.Target
	}
	head, _ = gitOut(ctx, a.env.Root, "rev-parse", "--verify", "--quiet", "--end-of-options", target+"^{commit}")
	for _, t := range a.s.Run.Tasks {
		if t.Base != "" || t.Runs == 0 || t.State == api.TaskDone {
			continue
		}
		fork, err := gitOut(ctx, a.env.Root, "merge-base", "--end-of-options", target, "refs/heads/"+t.Branch)
		if err != nil || fork == "" {
			continue // no branch yet
		}
		if forks == nil {
			forks = map[string]string{}
		}
		forks[t.ID] = fork
	}
	return head, forks
}

// commit saves the run as it stands. It is the run actors' one save site:
// every change of a run goes through it before the answer that depends on
// it and before any effect it asks for, so the store never says less than
// what has begun.
func (a *runActor) commit() error {
	// This save holds whatever progress a pending flush was for.
	if a.flush != nil {
		a.flush.Stop()
		a.flush = nil
	}
	a.savedAt = time.Now()
	a.s.Run.UpdatedAt = a.env.now()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := a.env.Store.SaveRun(ctx, a.s.Run); err != nil {
		return fmt.Errorf("saving run %s: %w", a.s.Run.ID, err)
	}
	next := runCommit{Run: a.s.Run, Stop: a.s.Stop, Cancelled: a.cancelled, Ending: maps.Clone(a.s.Ending)}
	// A copy: the workflow steps a.s.Run's tasks in place.
	next.Run.Tasks = slices.Clone(a.s.Run.Tasks)
	publish(a.env.Events, ctx, runEvents(a.committed, next))
	a.committed = next
	return nil
}

// commitSoon commits the run after progress (run.CommitSoon), or when it
// was saved less than progressSaveEvery ago, once that has passed.
func (a *runActor) commitSoon(ctx actor.Context) error {
	if a.flush != nil {
		return nil // a save is due already
	}
	if wait := progressSaveEvery - time.Since(a.savedAt); wait > 0 {
		system, self := ctx.ActorSystem(), ctx.Self()
		a.flush = time.AfterFunc(wait, func() { system.Root.Send(self, &progressFlush{}) })
		return nil
	}
	return a.commit()
}

// abort stops the actor of a run whose state could not be committed: its
// effects do not run, its agents are ended, and the stored run, as last
// committed, is resumed with `drover run resume`.
func (a *runActor) abort(ctx actor.Context, err error) {
	a.log.Error("run stopped: its state could not be saved (resume it to go on)", zap.Error(err))
	a.broken = true
	ctx.Stop(ctx.Self())
}

// armHeartbeat sets the timer of the next heartbeat.
func (a *runActor) armHeartbeat(ctx actor.Context) {
	system, self := ctx.ActorSystem(), ctx.Self()
	a.beat = time.AfterFunc(a.heartbeatEvery(), func() { system.Root.Send(self, &heartbeat{}) })
}

// armWake sets the timer of the next run.Wake, at at by the run's clock,
// in place of the one set before: each step that leaves a task waiting
// for a limit asks for the earliest time again, a resumed run's first
// step too.
func (a *runActor) armWake(ctx actor.Context, at time.Time) {
	if a.wake != nil {
		a.wake.Stop()
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	a.wake = time.AfterFunc(max(at.Sub(a.env.now()), 0), func() { system.Root.Send(self, &limitWake{}) })
}

// heartbeatEvery is RunsEnv.Heartbeat, or its default.
func (a *runActor) heartbeatEvery() time.Duration {
	if a.env.Heartbeat > 0 {
		return a.env.Heartbeat
	}
	return heartbeatEvery
}

// execute does what a committed step asked for, and stops the actor of a
// run that ended.
func (a *runActor) execute(ctx actor.Context, d run.Decision, effects []run.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case run.StartIteration:
			a.startIteration(ctx, e)
		case run.EndIteration:
			if pid := a.iterations[e.Task]; pid != nil {
				a.log.Warn("task budget spent; ending its agent", zap.String("task", e.Task))
				ctx.Send(pid, &endWork{})
				delete(a.iterations, e.Task)
			}
		case run.EndIterations:
			a.log.Warn("run stopping; ending its agents", zap.String("reason", e.Reason))
			for task, pid := range a.iterations {
				ctx.Send(pid, &endWork{})
				delete(a.iterations, task)
			}
		case run.CheckWave:
			a.checkWave(ctx, e)
		case run.WakeAt:
			a.armWake(ctx, e.At)
		}
	}
	if d.Finished {
		ctx.Stop(ctx.Self())
	}
}

// logStep logs what a step changed that an operator follows: iterations
// ended, waves merged, the run's end.
func (a *runActor) logStep(before run.State, ev run.Event) {
	after := a.s
	switch ev := ev.(type) {
	case run.IterationDone:
		t, was := after.Task(ev.Task), before.Task(ev.Task)
		if t == nil || was == nil || was.State != api.TaskRunning || was.Iteration != ev.Iteration {
			break
		}
		fields := []zap.Field{zap.String("task", t.ID), zap.Int("iteration", ev.Iteration), zap.String("state", string(t.State)), zap.String("status", t.Status), zap.Float64("cost_usd", t.CostUSD-was.CostUSD)}
		if r := t.LastReview; ev.Review != nil && r != nil {
			fields = append(fields, zap.String("review", r.Outcome), zap.String("review_model", r.Model))
		}
		if t.Waiting() {
			a.log.Warn("task waits for a usage or rate limit", zap.String("task", t.ID), zap.Int("iteration", ev.Iteration), zap.Time("until", t.LimitUntil), zap.Int("retry", t.LimitRetries), zap.String("limit", t.Limit))
			break
		}
		a.log.Info("task iteration done", fields...)
	case run.WaveChecked:
		if after.Run.Merged > before.Run.Merged {
			a.log.Info("wave checkpoint passed", zap.Int("wave", after.Run.Merged))
		}
	}
	if before.Run.State == api.RunRunning {
		switch after.Run.State {
		case api.RunDone:
			a.log.Info("run done")
		case api.RunFailed:
			a.log.Warn("run failed", zap.String("report", after.Run.Report))
		}
	}
}
