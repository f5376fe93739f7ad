package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/internal/workflow/loop"
)

// The loop's effects: files written from the committed state, and the
// background work (checks, metric commands, checkpoint reviews), each in a
// work child whose result comes back as a message and goes to the loop's
// decision for that event.

// loopRuntime is the loop workflow's in-memory state of one session actor:
// which work child runs for which iteration. The state says what should
// run; this says what does.
type loopRuntime struct {
	checks, metrics, checkpoint *workRun
}

// workRun is one work child and the iteration it works for.
type workRun struct {
	iteration int
	pid       *actor.PID
}

// busy reports whether background work runs; the actor is not passivated
// meanwhile, or the work would be cut short.
func (l *loopRuntime) busy() bool {
	return l.checks != nil || l.metrics != nil || l.checkpoint != nil
}

// The results of the work children.
type (
	checksResult struct {
		iteration int
		result    loop.CheckResult
	}
	metricsResult struct {
		iteration int
		results   []convergence.CommandResult
	}
)

// loopEffect performs one loop effect of a committed decision.
func (a *sessionActor) loopEffect(actx actor.Context, e loop.Effect) {
	switch e := e.(type) {
	case loop.WriteTracker:
		a.writeTracker(e)
	case loop.WriteReflection:
		a.writeReflection(e.Reflection)
	case loop.SetAsideReflections:
		a.setAsideReflections(e.At)
		a.setAsideMetrics(e.At)
	case loop.StartChecks:
		a.startChecks(actx, e)
	case loop.StartMetrics:
		a.startMetrics(actx, e)
	case loop.StartCheckpoint:
		a.startCheckpoint(actx, e)
	case loop.CancelChecks:
		a.stopWork(actx, &a.loop.checks)
	case loop.CancelMetrics:
		a.stopWork(actx, &a.loop.metrics)
	case loop.CancelCheckpoint:
		a.stopWork(actx, &a.loop.checkpoint)
	}
}

// stopWork stops the work child *run, if any; stopping it kills its
// process groups.
func (a *sessionActor) stopWork(actx actor.Context, run **workRun) {
	if *run != nil && actx != nil {
		actx.Stop((*run).pid)
	}
	*run = nil
}

// writeTracker mirrors e.State into the tracker's front matter, keeping the
// body the agent wrote (or writing e.Body when there is none, or when
// e.Fresh). A tracker that does not parse is left alone: the next Stop
// quarantines and reports it.
func (a *sessionActor) writeTracker(e loop.WriteTracker) {
	body := e.Body
	if !e.Fresh {
		tr, err := tracker.Read(a.trackerPath())
		switch {
		case err == nil && tr.Body != "" && tr.StartedAt.Equal(e.State.StartedAt):
			// The body of this loop's tracker. An earlier loop's (a
			// crash between a start's commit and its Fresh write left
			// it) is not kept: it may end with the completion marker.
			body = tr.Body
		case errors.Is(err, tracker.ErrMalformed):
			return
		}
	}
	if err := os.MkdirAll(a.sessionDir(), 0o755); err != nil {
		a.log.Warn("creating session folder", zap.Error(err))
		return
	}
	if err := tracker.Write(a.trackerPath(), loop.TrackerView(e.State, body)); err != nil {
		a.log.Warn("writing loop tracker", zap.Error(err))
	}
}

// reflectionsDir is where the session's loop writes its reflections.
func (a *sessionActor) reflectionsDir() string { return filepath.Join(a.sessionDir(), "reflections") }

// setAsideReflections renames the reflections of the session's earlier
// loop to reflections.<time>, so that a new loop's iteration-N.json files
// are not mixed with the old loop's higher-numbered ones. Best effort: a
// rename that fails is logged, and the new loop goes on.
func (a *sessionActor) setAsideReflections(at time.Time) {
	dir := a.reflectionsDir()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return
	}
	to := dir + "." + at.UTC().Format(tracker.QuarantineLayout)
	if _, err := os.Lstat(to); err == nil {
		to += "-" + strconv.FormatInt(a.env.now().UnixNano(), 10)
	}
	if err := os.Rename(dir, to); err != nil {
		a.log.Warn("setting aside the earlier loop's reflections", zap.Error(err))
	}
}

// writeReflection writes reflections/iteration-N.json in the session's
// folder.
func (a *sessionActor) writeReflection(r convergence.Reflection) {
	data, err := r.JSON()
	if err != nil {
		a.log.Warn("encoding reflection", zap.Error(err))
		return
	}
	dir := a.reflectionsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.log.Warn("creating reflections folder", zap.Error(err))
		return
	}
	path := filepath.Join(dir, "iteration-"+strconv.Itoa(r.Iteration)+".json")
	if err := writeFileAtomic(path, data); err != nil {
		a.log.Warn("writing reflection", zap.String("path", path), zap.Error(err))
	}
}

// startChecks runs the check command for e.Iteration in a work child,
// unless it already runs.
func (a *sessionActor) startChecks(actx actor.Context, e loop.StartChecks) {
	if actx == nil || (a.loop.checks != nil && a.loop.checks.iteration == e.Iteration) {
		return
	}
	a.stopWork(actx, &a.loop.checks)
	root, tag := a.env.Root, a.env.ChildTag
	pid := spawnWork(actx, a.log, a.env.Killed, "checks", func(parent context.Context) any {
		return &checksResult{iteration: e.Iteration, result: runCheck(parent, root, e.Command, tag, e.Timeout)}
	}, func(err error) any {
		// A check that could not run is a failed check.
		return &checksResult{iteration: e.Iteration, result: loop.CheckResult{Command: e.Command, Timeout: e.Timeout, Err: err.Error()}}
	})
	a.loop.checks = &workRun{iteration: e.Iteration, pid: pid}
}

// runCheck runs the check command with sh -c in root, its process group
// killed past timeout.
func runCheck(ctx context.Context, root, command, childTag string, timeout time.Duration) loop.CheckResult {
	res, err := proc.Shell(ctx, command, proc.Cmd{Dir: root, OwnerTag: childTag, Combined: true, OutputCap: checkOutputCap, Timeout: timeout})
	r := loop.CheckResult{Command: command, Output: res.Stdout.String(), Timeout: timeout}
	switch {
	case res.TimedOut:
		r.TimedOut, r.Err = true, "timed out"
	case err != nil:
		r.Err = err.Error()
	}
	return r
}

// checkOutputCap caps what a check run keeps of its output: the agent
// reads its tail (loop.CheckResult.Summary), and its head when the check
// failed early.
const checkOutputCap = 64 << 10

// startMetrics runs the metric commands after e.Iteration in parallel in a
// work child, each in its own process group with its own timeout, replacing
// a run for another iteration; their results come back together.
func (a *sessionActor) startMetrics(actx actor.Context, e loop.StartMetrics) {
	if actx == nil || (a.loop.metrics != nil && a.loop.metrics.iteration == e.Iteration) {
		return
	}
	a.stopWork(actx, &a.loop.metrics)
	root, tag, log := a.env.Root, a.env.ChildTag, a.log
	pid := spawnWork(actx, a.log, a.env.Killed, "metrics", func(parent context.Context) any {
		results := make([]convergence.CommandResult, len(e.Commands))
		var wg sync.WaitGroup
		for i, command := range e.Commands {
			wg.Go(func() {
				// The work child's recover does not reach this
				// goroutine: a panic here is this command's failure.
				defer func() {
					if p := recover(); p != nil {
						log.Error("metric command panicked", zap.String("command", command), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
						results[i] = convergence.CommandResult{Command: command, Failed: true}
					}
				}()
				results[i] = runMetricCommand(parent, root, command, tag, e.Timeout)
			})
		}
		wg.Wait()
		return &metricsResult{iteration: e.Iteration, results: results}
	}, func(error) any {
		// No results: the iteration's metrics keep what the hook saw.
		return &metricsResult{iteration: e.Iteration}
	})
	a.loop.metrics = &workRun{iteration: e.Iteration, pid: pid}
}

// runMetricCommand runs one metric command with sh -c in root, its
// process group killed past timeout.
func runMetricCommand(ctx context.Context, root, command, childTag string, timeout time.Duration) convergence.CommandResult {
	res, err := proc.Shell(ctx, command, proc.Cmd{Dir: root, OwnerTag: childTag, Combined: true, OutputCap: maxMetricOutput, Timeout: timeout})
	return convergence.CommandResult{Command: command, Output: res.Stdout.String(), Failed: err != nil}
}

// maxMetricOutput caps what a metric command's result keeps of its output:
// the summaries that matter come at the end, and proc keeps the tail.
const maxMetricOutput = 256 << 10

// loopMessage handles the loop's background results; it reports whether
// msg was one. Each result is the event of a decision, committed like a
// hook's.
func (a *sessionActor) loopMessage(actx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case *workDone:
		actx.Stop(m.child)
		switch r := m.result.(type) {
		case *checksResult:
			if a.ownWork(&a.loop.checks, m.child) {
				a.checksFinished(actx, r)
			}
		case *metricsResult:
			if a.ownWork(&a.loop.metrics, m.child) {
				a.loopEvent(actx, "metric command results", func(s loop.Session) (loop.Session, bool, error) {
					next, ok := loop.MetricsDone(s, r.iteration, r.results)
					return next, ok, nil
				})
			}
		case *checkpointResult:
			if a.ownWork(&a.loop.checkpoint, m.child) {
				a.checkpointFinished(actx, r)
			}
		}
		return true
	case *actor.Stopping:
		// The children stop with this actor, which kills their processes.
		a.loop = loopRuntime{}
		return true
	}
	return false
}

// ownWork reports whether child is the run *run waits for, and forgets the
// run if so: a result of a run that was replaced or cancelled is dropped.
func (a *sessionActor) ownWork(run **workRun, child *actor.PID) bool {
	if *run == nil || !(*run).pid.Equal(child) {
		return false
	}
	*run = nil
	return true
}

func (a *sessionActor) checksFinished(actx actor.Context, r *checksResult) {
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; check result dropped", zap.Error(err))
		return
	}
	a.loopEvent(actx, "check result", func(s loop.Session) (loop.Session, bool, error) {
		return loop.ChecksDone(s, r.iteration, r.result, tmpl)
	})
}

// loopEvent applies decide to the loop of a session that runs one and
// commits the result when it changed anything.
func (a *sessionActor) loopEvent(actx actor.Context, what string, decide func(loop.Session) (loop.Session, bool, error)) {
	if a.rec.Workflow != session.Loop {
		return
	}
	next, changed, err := decide(a.loopSession())
	if err != nil {
		a.log.Error("deciding on "+what, zap.Error(err))
		return
	}
	if !changed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := a.commitThen(actx, ctx, withLoop(a.rec, next), nil); err != nil {
		a.log.Error("saving "+what, zap.Error(err))
	}
}
