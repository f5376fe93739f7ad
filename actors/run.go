package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/proctag"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// RunsActorName is the name of the top-level actor that owns the runs.
const RunsActorName = "runs"

// progressSaveEvery bounds how often an agent's progress (its tool calls
// and running cost) is saved: an agent makes several tool calls a second,
// and each save is a write to the store.
const progressSaveEvery = time.Second

// heartbeatEvery is how often a run whose agents work is saved even when
// nothing changed, unless RunsEnv.Heartbeat says otherwise: the time
// worked since the last save is lost to the budgets when the supervisor
// dies.
const heartbeatEvery = 15 * time.Second

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
	// Events, when set, is handed the events of every commit of a run
	// once it succeeded (internal/events); it must not block.
	Events func(ctx context.Context, evs ...events.Draft)
	// Killed, when set, is told of each process that a run's work (an
	// iteration's agent, reviewer or tests, a wave's merge and suite)
	// killed for its timeout, by that work's name; it must not block.
	Killed func(work string)
	// Executors make the executors of runs other than the local one, by
	// the name of run.executor (executor.NATS), from the configuration and
	// the run's options; a run whose executor has none here is refused.
	// The local executor needs none: it is the default. A maker may block
	// (it connects): the run's own actor calls it as the run begins.
	Executors map[string]func(cfg config.Config, o api.RunOptions) (executor.Executor, error)

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

// runExecutor returns what makes the executor of a run with options o:
// nil for the local one, the default. An executor this drover lacks is
// refused at once; making one may wait seconds (NATS that does not
// answer), so the run's own actor calls it (runActor.connect), not the
// runs actor, which serves every run.
func (e RunsEnv) runExecutor(cfg config.Config, o api.RunOptions) (func() (executor.Executor, error), error) {
	if o.Executor == "" || o.Executor == executor.Local {
		return nil, nil
	}
	newExec, ok := e.Executors[o.Executor]
	if !ok {
		return nil, fmt.Errorf("executor %s: this drover has no %s executor yet (run.executor, drover run --executor): use local", o.Executor, o.Executor)
	}
	return func() (executor.Executor, error) {
		x, err := newExec(cfg, o)
		if err != nil {
			return nil, fmt.Errorf("executor %s: %w", o.Executor, err)
		}
		return x, nil
	}, nil
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
		return &runsActor{env: env, live: map[string]*actor.PID{}, byPID: map[string]string{}, unbegun: map[string]bool{}}
	}, actor.WithSupervisor(strategy))
}

type runsActor struct {
	env   RunsEnv
	live  map[string]*actor.PID
	byPID map[string]string
	// unbegun are the live runs whose actor could not make their executor
	// (runNotBegun): it stops, and a cancel is answered here meanwhile.
	unbegun map[string]bool
}

// runNotBegun tells the runs actor that the actor of run id could not
// make its executor: nothing was committed, and it answers what it is
// sent as for a run that is not live (notLive).
type runNotBegun struct{ id string }

// Receive implements actor.Actor.
func (r *runsActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *StartRun:
		pid, reply := r.start(ctx, msg.Request)
		r.begin(ctx, pid, reply)
	case *ResumeRun:
		pid, reply := r.resume(ctx, msg.ID)
		r.begin(ctx, pid, reply)
	case *CancelRun:
		if r.unbegun[msg.ID] {
			ctx.Respond(notLive(r.templates(), msg.ID))
			return
		}
		if err := run.AdmitCancel(r.templates(), r.liveIDs(), msg.ID); err != nil {
			ctx.Respond(&RunReply{Err: refusal(err)})
			return
		}
		pid := r.live[msg.ID]
		// The run actor answers the asker itself.
		ctx.Forward(pid)
	case *LiveRuns:
		ids := make(map[string]bool, len(r.live))
		for id := range r.live {
			ids[id] = true
		}
		ctx.Respond(&LiveRunsReply{IDs: ids})
	case *runNotBegun:
		// Poison, not Stop: a stop comes before the user messages queued
		// and drops them; the pill comes after what was forwarded to the
		// run's actor so far, which it answers, and what comes after is
		// answered here. The run stays live until its actor ended, so
		// that no resume spawns another under its name meanwhile.
		if pid, ok := r.live[msg.id]; ok {
			r.unbegun[msg.id] = true
			ctx.Poison(pid)
		}
	case *actor.Terminated:
		if id, ok := r.byPID[msg.Who.Id]; ok {
			delete(r.byPID, msg.Who.Id)
			delete(r.live, id)
			delete(r.unbegun, id)
		}
	}
}

// begin hands a run to its new actor, which commits it, answers the asker
// and starts its work; or answers the asker with the reply that says why
// the run does not begin.
func (r *runsActor) begin(ctx actor.Context, pid *actor.PID, reply *RunReply) {
	if reply != nil {
		ctx.Respond(reply)
		return
	}
	ctx.Forward(pid)
}

// liveIDs are the ids of the runs being worked.
func (r *runsActor) liveIDs() []string {
	ids := make([]string, 0, len(r.live))
	for id := range r.live {
		ids = append(ids, id)
	}
	return ids
}

// templates are the texts of the run's refusals (RunsEnv.refusals).
func (r *runsActor) templates() templates.Set {
	return r.env.refusals()
}

// refusals are the texts of the run's refusals; a project's broken
// override must not hide why a request is refused, so it falls back to
// the built-ins.
func (e RunsEnv) refusals() templates.Set {
	set, err := e.templates()
	if err != nil {
		e.Log.Warn("loading templates; using the built-in", zap.Error(err))
		return templates.Defaults()
	}
	return set
}

// notLive is the answer to a cancel of run id, which no actor works: the
// runs actor's for a run it does not know or that ended, and a run
// actor's once it stops.
func notLive(t templates.Set, id string) *RunReply {
	return &RunReply{Err: refusal(run.AdmitCancel(t, nil, id))}
}

// refusal makes a refusal of the run's rules (run.ErrRefused) a bad
// request; any other error is the supervisor's.
func refusal(err error) error {
	if errors.Is(err, run.ErrRefused) {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return err
}

func (r *runsActor) start(ctx actor.Context, req api.StartRunRequest) (*actor.PID, *RunReply) {
	ioctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	// The branch the waves merge into; empty when HEAD is detached.
	target, err := gitOut(ioctx, r.env.Root, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		target = ""
	}
	if err := run.AdmitStart(r.templates(), r.liveIDs(), r.env.Root, target); err != nil {
		return nil, &RunReply{Err: refusal(err)}
	}
	g, err := rungraph.Parse([]byte(req.Graph), req.File)
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	cfg := r.env.config()
	opts, err := run.Options(req.Options, cfg.Run, r.templates())
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	set, err := newRunSettings(cfg, opts, r.env.Reviewers, r.env.ChildTag)
	if err == nil {
		set.connect, err = r.env.runExecutor(cfg, opts)
	}
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	id, err := newRunID(r.env.now())
	if err != nil {
		return nil, &RunReply{Err: err}
	}
	now := r.env.now()
	rec := run.New(id, req.File, req.Graph, opts, target, g, now)
	if req.Plan != "" {
		// The plan's tasks.md is written as tasks merge: its id must
		// name a folder under .drover/plans.
		if !plan.ValidPlanID(req.Plan) {
			return nil, &RunReply{Err: fmt.Errorf("%w: plan id %q is not valid", ErrBadRequest, req.Plan)}
		}
		rec.Plan = req.Plan
	}
	rec.Reviewer = set.describeReviewer()
	return r.spawn(ctx, rec, g, set)
}

func (r *runsActor) resume(ctx actor.Context, id string) (*actor.PID, *RunReply) {
	ioctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	rec, found, err := r.env.Store.LoadRun(ioctx, id)
	if err != nil {
		return nil, &RunReply{Err: err}
	}
	if err := run.AdmitResume(r.templates(), r.liveIDs(), id, found, rec); err != nil {
		return nil, &RunReply{Err: refusal(err)}
	}
	g, err := rungraph.Parse([]byte(rec.Graph), rec.File)
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("run %s: its stored graph: %w", id, err)}
	}
	// The options are the run's; the rest of the configuration is read
	// anew, so that a fixed review.command or loop.routes applies.
	cfg := r.env.config()
	set, err := newRunSettings(cfg, rec.Options, r.env.Reviewers, r.env.ChildTag)
	if err == nil {
		set.connect, err = r.env.runExecutor(cfg, rec.Options)
	}
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("%w: run %s: %w", ErrBadRequest, id, err)}
	}
	// A supervisor that died (kill -9) took its agents with it, and its
	// watchdog the tool calls they ran in sessions of their own; without
	// a watchdog (it failed to start) those would go on in the run's work
	// trees next to the new agents. The agents of another executor are
	// its workers', which may share this machine: a job in flight there
	// is adopted, not killed.
	if !run.AdoptsInFlight(rec.Options) {
		if n, err := proctag.Kill("DROVER_RUN_ID=" + id); err != nil || n > 0 {
			r.env.Log.Warn("killed processes left by the run's last supervisor", zap.String("run", id), zap.Int("count", n), zap.Error(err))
		}
	}
	rec = run.Resume(rec, r.env.now())
	rec.Reviewer = set.describeReviewer()
	return r.spawn(ctx, rec, g, set)
}

// spawn starts the actor of a run, from its state before its first
// commit: the actor commits it when it begins.
func (r *runsActor) spawn(ctx actor.Context, rec api.Run, g rungraph.Graph, set runSettings) (*actor.PID, *RunReply) {
	env := r.env
	props := actor.PropsFromProducer(func() actor.Actor { return newRunActor(env, rec, g, set) })
	pid, err := ctx.SpawnNamed(props, "run-"+rec.ID)
	if err != nil {
		return nil, &RunReply{Err: fmt.Errorf("spawning the actor of run %s: %w", rec.ID, err)}
	}
	r.live[rec.ID] = pid
	r.byPID[pid.Id] = rec.ID
	return pid, nil
}

// newRunID returns a fresh run id: sortable by time, unique by chance.
func newRunID(now time.Time) (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a run id: %w", err)
	}
	return "run-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}
