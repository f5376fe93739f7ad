package actors

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/internal/worktree"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// startIteration executes run.StartIteration: the iteration runs in a work
// child; its agent's progress comes to the run actor as messages, and its
// end as the child's result.
func (a *runActor) startIteration(ctx actor.Context, e run.StartIteration) {
	gt, _ := a.graph.Task(e.Task)
	job := iterationJob{
		root: a.env.Root, runID: a.s.Run.ID, task: gt, iteration: e.Iteration, base: e.Base, fresh: e.Fresh,
		opts: a.s.Run.Options, deadline: e.Deadline, worktrees: a.env.worktrees, childTag: a.env.ChildTag,
	}
	tmpl, err := a.env.templates()
	job.tmpl = tmpl
	if err == nil {
		// The agent is told the command the iteration's end runs (read
		// from the main work tree: the task's may not exist yet).
		var checks run.TaskTests
		checks, err = run.TestsOf(job.opts, gt, os.DirFS(a.env.Root))
		if err == nil {
			job.prompt, err = run.TaskPrompt(tmpl, gt, e.Branch, checks, e.Iteration, job.opts.MaxIterations, e.Role, e.Feedback)
		}
	}
	if err == nil && e.Review && a.set.review != nil {
		spec := *a.set.review
		spec.Model = e.ReviewModel
		job.review = &spec
	}
	if err != nil {
		job.err = fmt.Errorf("the prompt of task %s: %w", e.Task, err)
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	job.report = func(p run.Progress) {
		// Send does not wait: the mailbox is unbounded.
		system.Root.Send(self, run.AgentProgress{Task: e.Task, Iteration: e.Iteration, Progress: p})
	}
	a.log.Info("task iteration started", zap.String("task", e.Task), zap.Int("iteration", e.Iteration), zap.String("role", string(e.Role)))
	a.iterations[e.Task] = spawnWork(ctx, a.log, a.env.Killed, "iteration", func(ctx context.Context) any { return job.run(ctx) }, func(err error) any {
		// As an agent that failed to start.
		return run.IterationDone{Task: job.task.ID, Iteration: job.iteration, Base: job.base, Err: err}
	})
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

// iterationJob is everything one iteration needs, copied out of the actor.
type iterationJob struct {
	root, runID string
	task        rungraph.Task
	iteration   int
	base        string
	// fresh puts the work tree back to its branch's last commit before
	// the agent starts (run.StartIteration.Fresh).
	fresh  bool
	opts   api.RunOptions
	prompt string
	// review is the reviewer of the iteration, when the run has one.
	review *reviewer.Spec
	// tmpl gives the texts of the review prompt and of the test result.
	tmpl templates.Set
	// deadline ends the iteration with the task's budget (zero: none).
	deadline time.Time
	// worktrees is the project's lock on work tree changes.
	worktrees *sync.Mutex
	// report sends the agent's progress to the run actor, without
	// waiting: the agent's output is not read while it runs.
	report func(run.Progress)
	// childTag is RunsEnv.ChildTag, for the agent and the test command.
	childTag string
	// err is a failure met before the iteration could start.
	err error
}

func (j iterationJob) run(ctx context.Context) run.IterationDone {
	out := run.IterationDone{Task: j.task.ID, Iteration: j.iteration, Base: j.base}
	if j.err != nil {
		out.Err = j.err
		return out
	}
	ctx = runTags(ctx, j.runID, j.childTag)
	if !j.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, j.deadline)
		defer cancel()
	}
	wt, err := func() (worktree.Worktree, error) {
		// Deferred: a panic, recovered by the work child, must not
		// leave the project's work trees locked.
		j.worktrees.Lock()
		defer j.worktrees.Unlock()
		wt, err := worktree.Create(ctx, j.root, j.runID, j.task.ID, j.base)
		if err == nil && j.fresh && wt.Reused {
			err = worktree.Reset(ctx, wt)
		}
		return wt, err
	}()
	if err != nil {
		out.Err = err
		return out
	}
	if out.Base == "" {
		out.Base = wt.Base
	}
	spec, err := agentSpec(j.opts, j.runID, j.task.ID, j.iteration, wt.Path, j.prompt, j.childTag)
	if err != nil {
		out.Err = err
		return out
	}
	meter := newAgentMeter()
	res, err := agentrun.Run(ctx, spec, func(ev agentrun.Event) {
		if meter.add(ev) && j.report != nil {
			j.report(meter.progress())
		}
	})
	if err != nil {
		out.Err = err
		return out
	}
	out.AgentErr = res.Err
	out.Progress = meter.progress()
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
	checks, err := run.TestsOf(j.opts, j.task, os.DirFS(wt.Path))
	if err != nil {
		out.Err = err
		return out
	}
	// A task with no tests (tests: []) runs none: the wave's suite
	// checks it.
	if checks.Command != "" {
		tr := runUserCommand(ctx, j.tmpl, wt.Path, checks.Command, j.childTag)
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
	if run.Reviews(out, j.review != nil) {
		spec := *j.review
		spec.Prompt, err = run.ReviewPrompt(j.tmpl, j.task, wt.Branch, out.Base)
		if err != nil {
			out.Err = fmt.Errorf("the review prompt of task %s: %w", j.task.ID, err)
			return out
		}
		spec.Dir = wt.Path
		// What drover adds to a reviewer's prompt is worded by the
		// project's templates too.
		spec.Templates = j.tmpl
		res := reviewer.Run(ctx, spec)
		out.Review = &res
	}
	if run.RemovesWorkTree(out) {
		j.worktrees.Lock()
		err := worktree.Remove(ctx, wt)
		j.worktrees.Unlock()
		if err != nil {
			out.Err = err
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
