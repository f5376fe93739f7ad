package actors

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/internal/worktree"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// startIteration executes run.StartIteration: the run's executor runs the
// iteration in a work child; its agent's progress comes to the run actor
// as messages, and its end as the child's result.
func (a *runActor) startIteration(ctx actor.Context, e run.StartIteration) {
	gt, _ := a.graph.Task(e.Task)
	it := executor.Iteration{
		RunID: a.s.Run.ID, Task: gt, Iteration: e.Iteration, Attempt: e.Attempt, Base: e.Base, Branch: e.Branch, Fresh: e.Fresh,
		Role: e.Role, Options: a.s.Run.Options, Deadline: e.Deadline,
	}
	tmpl, err := a.env.templates()
	if err == nil {
		// The agent is told the command the iteration's end runs (read
		// from the main work tree: the task's may not exist yet).
		var checks run.TaskTests
		checks, err = run.TestsOf(it.Options, gt, os.DirFS(a.env.Root))
		if err == nil {
			it.Prompt, err = run.TaskPrompt(tmpl, gt, e.Branch, checks, e.Iteration, it.Options.MaxIterations, e.Role, e.Feedback)
		}
	}
	if err == nil && e.Review && a.set.review != nil {
		it.Review = executor.ReviewOf(a.set.review)
		it.Review.Model = e.ReviewModel
	}
	if err != nil {
		err = fmt.Errorf("the prompt of task %s: %w", e.Task, err)
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	report := func(p executor.Progress) {
		// Send does not wait: the mailbox is unbounded.
		system.Root.Send(self, run.AgentProgress{Task: e.Task, Iteration: e.Iteration, Progress: runProgress(p), Worker: p.Worker, Paused: p.Paused})
	}
	exec := a.executor()
	a.log.Info("task iteration started", zap.String("task", e.Task), zap.Int("iteration", e.Iteration), zap.String("role", string(e.Role)))
	a.iterations[e.Task] = spawnWork(ctx, a.log, a.env.Killed, "iteration", func(ctx context.Context) any {
		if err != nil {
			return iterationDone(it, executor.Failed(err))
		}
		return iterationDone(it, exec.Run(ctx, it, report))
	}, func(err error) any {
		// As an agent that failed to start.
		return run.IterationDone{Task: it.Task.ID, Iteration: it.Iteration, Base: it.Base, Err: err}
	})
}

// iterationDone returns the run engine's event of iteration it, which
// ended with res.
func iterationDone(it executor.Iteration, res executor.Result) run.IterationDone {
	out := run.IterationDone{
		Task: it.Task.ID, Iteration: it.Iteration, Worker: res.Worker, Base: res.Base, Progress: runProgress(res.Progress),
		AgentErr: executor.Error(res.AgentErr), Test: res.Test, Committed: res.Committed, OffBranch: res.OffBranch,
		Branch: res.Branch, Dirty: res.Dirty, Limit: res.Limit, Err: executor.Error(res.Err),
	}
	if out.Base == "" {
		out.Base = it.Base
	}
	if res.Review != nil {
		rev := res.Review.Reviewer()
		out.Review = &rev
	}
	return out
}

// runProgress is p as the run engine counts it.
func runProgress(p executor.Progress) run.Progress {
	return run.Progress{CostUSD: p.CostUSD, ToolCalls: p.ToolCalls, Finished: p.Finished}
}

// executorProgress is p of the local worker.
func executorProgress(p run.Progress) executor.Progress {
	return executor.Progress{Worker: executor.LocalWorker, CostUSD: p.CostUSD, ToolCalls: p.ToolCalls, Finished: p.Finished}
}

// checkWave executes run.CheckWave: it merges the wave's branches in
// dependency order and runs the suite in the main work tree, in a work
// child whose result comes back as a message. The run's budgets and its
// cancel do not end it: only the actor's stop does.
func (a *runActor) checkWave(ctx actor.Context, e run.CheckWave) {
	root, target, opts, tag, tmpl := a.env.Root, a.s.Run.Target, a.s.Run.Options, a.env.ChildTag, a.tmpl
	runID, planID, log := a.s.Run.ID, a.s.Run.Plan, a.log
	taskOf := make(map[string]string, len(a.s.Run.Tasks))
	for _, t := range a.s.Run.Tasks {
		taskOf[t.Branch] = t.ID
	}
	a.log.Info("wave checkpoint started", zap.Int("wave", e.Wave), zap.Strings("branches", e.Branches))
	spawnWork(ctx, a.log, a.env.Killed, "wave", func(runCtx context.Context) any {
		runCtx = runTags(runCtx, runID, tag)
		merge, err := worktree.MergeInOrder(runCtx, root, target, e.Branches, worktree.ContinueOnConflict)
		branches := make([]run.MergedBranch, 0, len(merge.Branches))
		var onTarget []string
		for _, b := range merge.Branches {
			mb := run.MergedBranch{
				Branch: b.Branch, OnTarget: b.Status == worktree.Merged || b.Status == worktree.UpToDate,
				Conflict: b.Status == worktree.NeedsReview, Files: b.ConflictFiles, Diff: b.ConflictDiff,
			}
			if mb.OnTarget {
				onTarget = append(onTarget, taskOf[b.Branch])
			}
			branches = append(branches, mb)
		}
		// Before the suite: a task whose branch is merged is done in the
		// plan whatever the suite says, and a run stopped here must not
		// work it again from the plan.
		if marked, merr := markPlanDone(runCtx, root, planID, runID, onTarget); merr != nil {
			log.Warn("marking the plan's merged tasks done", zap.String("plan", planID), zap.Error(merr))
		} else if len(marked) > 0 {
			log.Info("plan tasks marked done", zap.String("plan", planID), zap.Strings("tasks", marked))
		}
		out, suite := run.WaveMerged(e.Wave, opts, err, branches)
		if suite != "" {
			tr := runUserCommand(runCtx, tmpl, root, suite, tag)
			out.Suite = &tr
		}
		return out
	}, func(err error) any {
		// As a merge that could not be tried.
		out, _ := run.WaveMerged(e.Wave, opts, err, nil)
		return out
	})
}

// runTags tags every process the work of run runID starts under ctx (its
// git commands above all: work trees, merges, checks): with the
// supervisor's tag (childTag, when set), by which its watchdog ends them
// when the supervisor dies, and with DROVER_RUN_ID, by which a resume of
// the run ends what an earlier supervisor left running (a git merge
// killed mid-way leaves its locks, which the next merge clears:
// worktree.MergeInOrder).
func runTags(ctx context.Context, runID, childTag string) context.Context {
	return proc.WithTags(ctx, "DROVER_RUN_ID="+runID, childTag)
}

// executor returns the run's executor: the one its options name, or the
// local one.
func (a *runActor) executor() executor.Executor {
	if a.set.exec != nil {
		return a.set.exec
	}
	return NewLocalExecutor(a.env.Root, a.env.worktrees, a.env.templates, a.env.Reviewers, a.env.ChildTag)
}

// NewLocalExecutor returns the local executor (executor.Local) of the
// project whose main work tree is root: it works each iteration in a git
// work tree of its own, on this machine, its work tree changes serialized
// by worktrees (shared by everything that changes root's work trees).
// tmpl gives the texts of the review prompt and of the test result (nil:
// the built-in ones); reviewers caps the reviewer processes (nil: no cap);
// childTag, when set, goes in the environment of the agent, the tests and
// the reviewer, for a watchdog.
func NewLocalExecutor(root string, worktrees *sync.Mutex, tmpl func() (templates.Set, error), reviewers *reviewer.Limiter, childTag string) executor.Executor {
	return localExecutor{root: root, worktrees: worktrees, templates: tmpl, reviewers: reviewers, childTag: childTag}
}

// localExecutor is the local executor (executor.Local): it works each
// iteration in a git work tree of the project's main work tree, on this
// machine.
type localExecutor struct {
	root string
	// worktrees is the project's lock on work tree changes.
	worktrees *sync.Mutex
	// templates give the texts of the review prompt and of the test
	// result (nil: the built-in ones).
	templates func() (templates.Set, error)
	// reviewers caps reviewer processes (nil: no cap).
	reviewers *reviewer.Limiter
	// childTag is RunsEnv.ChildTag, for the agent, the test command and
	// the reviewer.
	childTag string
}

// Run runs iteration it: its work tree, the agent, the targeted tests,
// the branch and commit checks, and the review. report is sent the
// agent's progress, without waiting: the agent's output is not read while
// it runs.
func (x localExecutor) Run(ctx context.Context, it executor.Iteration, report func(executor.Progress)) executor.Result {
	res := x.run(ctx, it, report)
	res.Worker = executor.LocalWorker
	return res
}

func (x localExecutor) run(ctx context.Context, it executor.Iteration, report func(executor.Progress)) executor.Result {
	out := executor.Result{Base: it.Base}
	tmpl := templates.Defaults()
	if x.templates != nil {
		var err error
		if tmpl, err = x.templates(); err != nil {
			return executor.Failed(err)
		}
	}
	ctx = runTags(ctx, it.RunID, x.childTag)
	if !it.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, it.Deadline)
		defer cancel()
	}
	wt, err := func() (worktree.Worktree, error) {
		// Deferred: a panic, recovered by the work child, must not
		// leave the project's work trees locked.
		x.worktrees.Lock()
		defer x.worktrees.Unlock()
		wt, err := worktree.Create(ctx, x.root, it.RunID, it.Task.ID, it.Base)
		if err == nil && it.Fresh && wt.Reused {
			err = worktree.Reset(ctx, wt)
		}
		return wt, err
	}()
	if err != nil {
		out.Err = err.Error()
		return out
	}
	if out.Base == "" {
		out.Base = wt.Base
	}
	spec, err := agentSpec(it.Options, it.RunID, it.Task.ID, it.Iteration, wt.Path, it.Prompt, x.childTag)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	meter := newAgentMeter()
	res, err := agentrun.Run(ctx, spec, func(ev agentrun.Event) {
		if meter.add(ev) && report != nil {
			report(executorProgress(meter.progress()))
		}
	})
	if err != nil {
		out.Err = err.Error()
		return out
	}
	if res.Err != nil {
		out.AgentErr = res.Err.Error()
	}
	out.Progress = executorProgress(meter.progress())
	if ctx.Err() != nil {
		return out
	}
	if res.Limit != nil {
		// The agent met a usage or rate limit: the iteration waits for
		// it and is worked again; its tests and review have nothing to
		// judge.
		out.Limit = res.Limit
		return out
	}
	checks, err := run.TestsOf(it.Options, it.Task, os.DirFS(wt.Path))
	if err != nil {
		out.Err = err.Error()
		return out
	}
	// A task with no tests (tests: []) runs none: the wave's suite
	// checks it.
	if checks.Command != "" {
		tr := runUserCommand(ctx, tmpl, wt.Path, checks.Command, x.childTag)
		out.Test = &tr
	}
	// The task's branch is what gets merged: commits on another branch,
	// or on a detached HEAD, would be reported done and never merged.
	head, err := gitOut(ctx, wt.Path, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		head = ""
	}
	if run.OffBranch(head, wt.Branch) {
		out.OffBranch, out.Branch = head, wt.Branch
		if head == "" {
			// A detached HEAD's commits are named by their id alone.
			out.OffBranch, _ = gitOut(ctx, wt.Path, "rev-parse", "HEAD")
		}
		// With changes in the way the switch fails, and the next
		// iteration's work tree check says so.
		_, _ = gitOut(ctx, wt.Path, "switch", "--quiet", wt.Branch)
	}
	if n, err := gitOut(ctx, wt.Path, "rev-list", "--count", out.Base+"..refs/heads/"+wt.Branch); err == nil {
		c, _ := strconv.Atoi(n)
		out.Committed = c > 0
	}
	// Untracked files count: an agent that forgot to add a new file has
	// tests that pass here and a branch that lacks the file.
	if s, err := gitOut(ctx, wt.Path, "status", "--porcelain=v1", "--untracked-files=all"); err == nil {
		out.Dirty = s
	}
	// The run engine's rules (Reviews, RemovesWorkTree) judge the
	// outcome as the engine will see it.
	if run.Reviews(iterationDone(it, out), it.Review != nil) {
		spec := it.Review.Spec()
		spec.Prompt, err = run.ReviewPrompt(tmpl, it.Task, wt.Branch, out.Base)
		if err != nil {
			out.Err = fmt.Errorf("the review prompt of task %s: %w", it.Task.ID, err).Error()
			return out
		}
		spec.Dir = wt.Path
		spec.Limiter, spec.OwnerTag = x.reviewers, x.childTag
		// What drover adds to a reviewer's prompt is worded by the
		// project's templates too.
		spec.Templates = tmpl
		out.Review = executor.ReviewResultOf(reviewer.Run(ctx, spec))
	}
	if run.RemovesWorkTree(iterationDone(it, out)) {
		x.worktrees.Lock()
		err := worktree.Remove(ctx, wt)
		x.worktrees.Unlock()
		if err != nil {
			out.Err = err.Error()
		}
	}
	return out
}

// agentSpec builds the agent process of one iteration. childTag, when
// set, goes in its environment: the agent's tool calls, in sessions of
// their own, inherit it, so the supervisor's watchdog ends them too.
func agentSpec(o api.RunOptions, runID, taskID string, iteration int, dir, prompt, childTag string) (agentrun.Spec, error) {
	env := []string{"DROVER_RUN_ID=" + runID, "DROVER_TASK_ID=" + taskID, "DROVER_ITERATION=" + strconv.Itoa(iteration)}
	if childTag != "" {
		env = append(env, childTag)
	}
	agent := o.Agent
	if agent == "" {
		agent = agentrun.AgentClaude
	}
	if cli, model, ok := agentrun.Named(agent); ok {
		// A named CLI: its JSON events are read in its format, and the
		// tokens of one that reports no cost priced from the table.
		spec := agentrun.NamedSpec(cli, model)
		spec.Prompt, spec.Dir, spec.Timeout = prompt, dir, o.IterationTimeout
		spec.Env = append(spec.Env, env...)
		spec.Price = convergence.DefaultPrices().Tokens
		return spec, nil
	}
	argv, stdin, err := run.AgentArgv(o.Agent, runID, taskID, iteration, dir, prompt)
	if err != nil {
		return agentrun.Spec{}, err
	}
	spec := agentrun.Spec{Bin: argv[0], Args: argv[1:], Dir: dir, Env: env, Timeout: o.IterationTimeout}
	if stdin {
		spec.Prompt = prompt
	}
	return spec, nil
}
