package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// runPollInterval is how often the live view of `drover run` asks for the
// run's state.
const runPollInterval = time.Second

func (a *app) runCmd(g *globalFlags) *cobra.Command {
	var opts api.RunOptions
	var detach bool
	var planID string
	cmd := &cobra.Command{
		Use:   "run FILE | run --plan PLAN-ID",
		Short: "Work a graph of tasks in waves with headless agents, each in its own work tree",
		Long: `run works the task graph in FILE (YAML: tasks with id, description, files,
tests, depends-on), or with --plan the tasks of .drover/plans/PLAN-ID/tasks.md
that are not done (described by their task-ID.md files; each depends on the
one before it unless the table has a "Depends on" column). Tasks whose
dependencies are done form a wave; the tasks of a wave run at the same time
(at most --concurrency agents), each in its own git work tree on branch
drover/<run>/<task>. Between iterations a task's targeted tests run in its
work tree; a task is done when they pass, it committed, and the reviewer
passed it. When a wave is done its branches are merged into the current
branch in dependency order and the suite runs there; a failure stops the
run with a report.

The agent is Claude Code in print mode unless --agent (or run.agent) gives a
command template ({{prompt}}, {{task}}, {{iteration}}, {{run}}, {{worktree}};
without {{prompt}} the prompt is the last argument). --test-command may hold
{{packages}}, the task's targeted tests. Flags left unset take the run.*
configuration.

The reviewer is the configured one (review.cli, review.command, review.models
in turn, opus first; review.timeout, review.budget_usd, at most
review.max_parallel at once with the sessions' reviews); --reviewer gives
another command ("claude", or a template with {{prompt}}, {{schema}},
{{model}}, {{budget_usd}}) and --no-review (or run.review: false) turns
review off. A FAIL sends the findings to the task's next iteration.

Budgets end tasks and runs that will not finish: --max-iterations and
--task-max-minutes and --task-max-usd fail a task, --max-minutes and --max-usd stop the run
(spending and time count across crashes and resumes; a failed run or task
that is resumed gets a fresh budget); a task whose targeted tests are stuck
on a plateau or keep failing the same way fails early (loop.plateau_window,
loop.thrash_repeats). Iterations are routed to the developer, debugger or
architect role by the loop's rules (loop.routes).

run prints progress until the run ends, unless --detach. After a crash,
drover run status shows where every run is and drover run resume RUN-ID
goes on without redoing finished tasks.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// JSON has no NaN or infinity: say which flag is wrong rather
			// than fail to encode the request.
			for _, b := range []struct {
				flag string
				v    float64
			}{{"task-max-minutes", opts.TaskMaxMinutes}, {"task-max-usd", opts.TaskMaxUSD}, {"max-minutes", opts.MaxMinutes}, {"max-usd", opts.MaxUSD}} {
				if math.IsNaN(b.v) || math.IsInf(b.v, 0) {
					return fmt.Errorf("--%s %v is not a budget (0 for none)", b.flag, b.v)
				}
			}
			req, err := a.runRequest(g, args, planID)
			if err != nil {
				return err
			}
			req.Options = opts
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			run, err := c.StartRun(ctx, req)
			if err != nil {
				return fmt.Errorf("starting run: %w", err)
			}
			fmt.Fprintf(a.stdout, "run %s: %d tasks in %d waves, merging into %s; %s\n", run.ID, len(run.Tasks), run.Waves, run.Target, reviewedBy(run))
			if detach {
				return nil
			}
			return a.watchRun(ctx, c, run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&planID, "plan", "", "work the tasks of .drover/plans/PLAN-ID/tasks.md that are not done, instead of FILE")
	f.IntVar(&opts.Concurrency, "concurrency", 0, "agent processes running at once (default: run.concurrency, 2)")
	f.IntVar(&opts.MaxIterations, "max-iterations", 0, "agent runs per task before it fails (default: run.max_iterations, 3)")
	f.StringVar(&opts.Agent, "agent", "", "agent: claude, codex or gemini, optionally :MODEL (codex:gpt-5-codex), or a command template (default: run.agent, else claude --print --output-format stream-json --verbose --dangerously-skip-permissions PROMPT)")
	f.StringVar(&opts.TestCommand, "test-command", "", "targeted test command, run in the task's work tree (default: run.test_command, go test {{packages}})")
	f.StringVar(&opts.SuiteCommand, "suite-command", "", "suite command, run in the main work tree after each wave (default: run.suite_command, go test ./...)")
	f.Float64Var(&opts.TaskMaxMinutes, "task-max-minutes", 0, "minutes a task may take before it fails, its agent killed (0: no limit)")
	f.Float64Var(&opts.TaskMaxUSD, "task-max-usd", 0, "dollars the agents of one task may cost, as they report it, before it fails (default: run.task_max_usd, 0: no limit)")
	f.Float64Var(&opts.MaxMinutes, "max-minutes", 0, "minutes the whole run may take before it stops (0: no limit)")
	f.Float64Var(&opts.MaxUSD, "max-usd", 0, "dollars the agents of the whole run may cost, as they report it, before it stops (0: no limit)")
	f.StringVar(&opts.Reviewer, "reviewer", "", `reviewer command that must pass each task: "claude", or a template with {{prompt}}, {{schema}}, {{model}}, {{budget_usd}} (default: review.cli and review.command)`)
	f.BoolVar(&opts.NoReview, "no-review", false, "do not review tasks: a task is done when its tests pass and it committed")
	f.BoolVar(&detach, "detach", false, "start the run and return at once")
	f.StringVar(&opts.Executor, "executor", "", "where the iterations run: local (work trees on this machine) or nats (drover workers over NATS JetStream) (default: run.executor, local)")
	f.StringVar(&opts.NATS, "nats", "", "NATS server URL of the nats executor, without credentials: they go in run.nats.* (default: run.nats.url)")
	cmd.MarkFlagsMutuallyExclusive("reviewer", "no-review")
	cmd.AddCommand(a.runStatusCmd(g), a.runResumeCmd(g), a.runCancelCmd(g))
	return cmd
}

// runRequest reads the task graph of a run: FILE, or the tasks of a plan.
// Either is validated here too, so that a broken one is reported without
// a supervisor.
func (a *app) runRequest(g *globalFlags, args []string, planID string) (api.StartRunRequest, error) {
	switch {
	case planID != "" && len(args) > 0:
		return api.StartRunRequest{}, fmt.Errorf("give a task graph FILE (%s) or --plan %s, not both", args[0], planID)
	case planID == "" && len(args) == 0:
		return api.StartRunRequest{}, errors.New("no tasks: give a task graph FILE or --plan PLAN-ID")
	case planID != "":
		p, err := a.paths(g)
		if err != nil {
			return api.StartRunRequest{}, err
		}
		file, data, err := planGraph(p.Root, planID)
		if err != nil {
			return api.StartRunRequest{}, err
		}
		return api.StartRunRequest{File: file, Graph: string(data), Plan: planID}, nil
	}
	file := args[0]
	data, err := os.ReadFile(file)
	if err != nil {
		return api.StartRunRequest{}, fmt.Errorf("reading task graph: %w", err)
	}
	if _, err := rungraph.Parse(data, file); err != nil {
		return api.StartRunRequest{}, err
	}
	return api.StartRunRequest{File: file, Graph: string(data)}, nil
}

// planGraph reads the task table and task files of plan id under root and
// returns the name of its tasks.md (relative to root, for reports) and the
// task graph made of it.
func planGraph(root, id string) (string, []byte, error) {
	if !plan.ValidPlanID(id) {
		return "", nil, fmt.Errorf("plan id %q is not valid (letters, digits, '-', '_' and '.', starting with a letter or digit)", id)
	}
	rel := filepath.Join(filepath.FromSlash(plan.PlansDir), id)
	dir := filepath.Join(root, rel)
	file := filepath.Join(rel, "tasks.md")
	md, err := os.ReadFile(filepath.Join(root, file))
	if errors.Is(err, os.ErrNotExist) {
		if _, derr := os.Stat(dir); derr != nil {
			return "", nil, fmt.Errorf("no plan %s: %s does not exist", id, rel)
		}
		return "", nil, fmt.Errorf("plan %s has no tasks yet: %s does not exist", id, file)
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading plan tasks %s: %w", file, err)
	}
	taskFiles := map[string]string{}
	names, err := filepath.Glob(filepath.Join(dir, "task-*.md"))
	if err != nil {
		return "", nil, fmt.Errorf("listing the task files of plan %s: %w", id, err)
	}
	for _, name := range names {
		tid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "task-"), ".md")
		b, err := os.ReadFile(name)
		if err != nil {
			return "", nil, fmt.Errorf("reading task file %q: %w", name, err)
		}
		taskFiles[tid] = string(b)
	}
	data, _, err := rungraph.FromPlan(rungraph.PlanTasks{File: file, TasksMD: string(md), TaskFiles: taskFiles})
	if err != nil {
		return "", nil, err
	}
	return file, data, nil
}

// reviewedBy says who reviews a run's tasks.
func reviewedBy(run api.Run) string {
	if run.Reviewer == "" {
		return "tasks are not reviewed"
	}
	return "each task reviewed by " + run.Reviewer
}

func (a *app) runClient(ctx context.Context, g *globalFlags) (*client.Client, error) {
	p, err := a.paths(g)
	if err != nil {
		return nil, err
	}
	return a.connect(ctx, p)
}

func (a *app) runStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "status [RUN-ID]",
		Short: "Show a run (default: the newest): every task's state, iteration, role, last test result, review and cost",
		Long: `status shows a run (default: the newest): every task's wave, state,
iteration, role, last test result, tool calls, last review and cost (tool
calls and cost count a running agent's so far). With --watch it
shows the run again whenever it changes, until the run is no longer worked:
on a terminal it redraws the screen, elsewhere it prints each new view
after the last.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			run, err := fetchRun(ctx, c, id)
			if err != nil {
				return fmt.Errorf("run status: %w", err)
			}
			if watch {
				return a.watchStatus(ctx, c, run, asJSON)
			}
			if asJSON {
				return writeRunJSON(a.stdout, run)
			}
			printRun(a.stdout, run)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&watch, "watch", false, "show the run again at each change until it is no longer worked")
	return cmd
}

// fetchRun gets run id, or the newest run when id is empty.
func fetchRun(ctx context.Context, c *client.Client, id string) (api.Run, error) {
	if id != "" {
		return c.Run(ctx, id)
	}
	runs, err := c.Runs(ctx)
	if err != nil {
		return api.Run{}, err
	}
	if len(runs) == 0 {
		return api.Run{}, errors.New("no runs yet: start one with drover run FILE")
	}
	return runs[0], nil
}

func writeRunJSON(w io.Writer, run api.Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(run)
}

// watchStatus shows run at each change until it is no longer worked. On a
// terminal each view replaces the last; elsewhere (a pipe, a file, a CI
// log) each new view is printed after the last, a blank line between.
func (a *app) watchStatus(ctx context.Context, c *client.Client, run api.Run, asJSON bool) error {
	redraw := isTerminal(a.stdout, a.getenv("TERM"))
	last := ""
	_, err := pollRun(ctx, c, run, runPollInterval, func(run api.Run) error {
		var b strings.Builder
		if asJSON {
			if err := writeRunJSON(&b, run); err != nil {
				return err
			}
		} else {
			printRun(&b, run)
		}
		if view := b.String(); view != last {
			switch {
			case redraw:
				// Home the cursor and clear the screen.
				fmt.Fprint(a.stdout, "\x1b[H\x1b[2J")
			case last != "" && !asJSON:
				fmt.Fprintln(a.stdout)
			}
			fmt.Fprint(a.stdout, view)
			last = view
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pollRun shows run, then fetches it again every interval and shows it,
// until it is no longer worked, ctx ends (ctx.Err()), show fails, or it
// cannot be fetched (watchError). It returns the run as last fetched.
func pollRun(ctx context.Context, c *client.Client, run api.Run, every time.Duration, show func(api.Run) error) (api.Run, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := show(run); err != nil {
			return run, err
		}
		if run.State != api.RunRunning || !run.Active {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-tick.C:
		}
		next, err := c.Run(ctx, run.ID)
		if err != nil {
			return run, watchError(run.ID, err)
		}
		run = next
	}
}

// watchError is the error of a watch that could not fetch run id again. A
// supervisor that is gone (killed, crashed) took the run's work with it:
// the user is told so and how to go on, with the socket error after.
func watchError(id string, err error) error {
	if client.IsUnavailable(err) {
		return fmt.Errorf("run %s is no longer being worked (the supervisor stopped); drover run resume %s goes on: %w", id, id, err)
	}
	return fmt.Errorf("watching run %s: %w", id, err)
}

// isTerminal reports whether w is a terminal that understands the screen
// redraw of --watch.
func isTerminal(w io.Writer, term string) bool {
	f, ok := w.(*os.File)
	if !ok || term == "" || term == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (a *app) runResumeCmd(g *globalFlags) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:   "resume RUN-ID",
		Short: "Go on with a run cut short by a crash or stopped by a failure, without redoing finished tasks",
		Long: `resume continues run RUN-ID from its stored state: finished tasks and
merged waves stay done, and the rest is worked as drover run would. It then
shows the run's progress until it ends, unless --detach is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			run, err := c.ResumeRun(ctx, args[0])
			if err != nil {
				return fmt.Errorf("resuming run %s: %w", args[0], err)
			}
			done := 0
			for _, t := range run.Tasks {
				if t.State == api.TaskDone {
					done++
				}
			}
			fmt.Fprintf(a.stdout, "run %s resumed: %d of %d tasks done, %d of %d waves merged\n", run.ID, done, len(run.Tasks), run.Merged, run.Waves)
			if detach {
				return nil
			}
			return a.watchRun(ctx, c, run)
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "resume the run and return at once")
	return cmd
}

func (a *app) runCancelCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN-ID",
		Short: "Stop a run being worked: its agents are killed and it ends failed, to resume later if wanted",
		Long: `cancel stops run RUN-ID: its running agents and test commands are
killed at once; a wave checkpoint under way (merge and suite) finishes
first. The run ends failed with the report "run stopped: cancelled", its
finished tasks kept, and drover run resume RUN-ID goes on with it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			run, err := c.CancelRun(ctx, args[0])
			if err != nil {
				return fmt.Errorf("cancelling run %s: %w", args[0], err)
			}
			// The agents end at once; wait for the run to say so.
			run, err = pollRun(ctx, c, run, runPollInterval/4, func(api.Run) error { return nil })
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "run %s cancelled:\n%s\n", run.ID, strings.TrimRight(run.Report, "\n"))
			return nil
		},
	}
}

// watchRun prints a line for each change of a task's state or iteration
// and of the run's merged waves, until the run is no longer worked.
func (a *app) watchRun(ctx context.Context, c *client.Client, run api.Run) error {
	seen := map[string]string{}
	merged := run.Merged
	run, err := pollRun(ctx, c, run, runPollInterval, func(run api.Run) error {
		merged = printProgress(a.stdout, run, seen, merged)
		return nil
	})
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.stdout, "stopped watching; the run goes on (drover run status %s)\n", run.ID)
		return nil
	case err != nil:
		return err
	}
	switch {
	case run.State == api.RunDone:
		fmt.Fprintf(a.stdout, "run %s done: %s\n", run.ID, run.Report)
		return nil
	case run.State == api.RunFailed:
		fmt.Fprintf(a.stdout, "run %s failed:\n%s\n", run.ID, run.Report)
		return fmt.Errorf("run %s failed (drover run status %s; fix the cause and drover run resume %s)", run.ID, run.ID, run.ID)
	}
	return fmt.Errorf("run %s is no longer being worked (the supervisor stopped); drover run resume %s goes on", run.ID, run.ID)
}

// printProgress prints the changes of run since the last view: a line
// for each task whose state, iteration, role or reviews changed (seen
// holds what was last printed of each, and is updated) and one for each
// wave merged after the first merged waves. A poll can see a wave merged
// and the next wave's tasks started at once; the changes of a wave's tasks
// come before its merge, and the later waves' after it, as they happened.
// It returns the merged waves printed so far.
func printProgress(w io.Writer, run api.Run, seen map[string]string, merged int) int {
	printTasks := func(upTo int) {
		for _, t := range run.Tasks {
			if upTo > 0 && t.Wave > upTo {
				continue
			}
			key := fmt.Sprintf("%s/%d/%s/%d", t.State, t.Iteration, t.Role, t.Reviews)
			if seen[t.ID] == key {
				continue
			}
			seen[t.ID] = key
			fmt.Fprintln(w, progressLine(t))
		}
	}
	for ; merged < run.Merged; merged++ {
		printTasks(merged + 1)
		fmt.Fprintf(w, "wave %d merged into %s; suite passed\n", merged+1, run.Target)
	}
	printTasks(0)
	return merged
}

// progressLine is the live view's line of a task: its state, iteration,
// role, and once an iteration is over its tests, review and cost.
func progressLine(t api.RunTask) string {
	line := fmt.Sprintf("task %s (wave %d): %s", t.ID, t.Wave, t.State)
	if t.Iteration > 0 {
		line += fmt.Sprintf(", iteration %d", t.Iteration)
	}
	if t.Role != "" {
		line += ", " + t.Role
	}
	if t.State != api.TaskRunning && t.Iteration > 0 {
		if t.LastTest != nil {
			line += ", tests " + passFail(t.LastTest.Passed)
		}
		if r := t.LastReview; r != nil && r.Iteration == t.Iteration {
			line += ", review " + reviewSummary(r)
		}
		line += fmt.Sprintf(", $%.2f", t.CostUSD)
	}
	if t.Error != "" {
		line += ": " + t.Error
	}
	if t.State == api.TaskPending && t.Waiting() {
		line += fmt.Sprintf(": waiting for the usage limit until %s: %s", limitClock(t.LimitUntil, time.Now()), t.Limit)
	}
	return line
}

// reviewSummary is a review in a few words: "pass (opus)", "fail: 2
// blocking (sonnet)", "failed (opus)", then how many tool calls the
// reviewer's CLI refused it, if any ("pass (opus), 1 tool call(s) refused").
func reviewSummary(r *api.TaskReview) string {
	s := r.Outcome
	if r.Outcome == api.ReviewFail {
		s += fmt.Sprintf(": %d blocking", r.Blocking)
	}
	if r.Model != "" {
		s += " (" + r.Model + ")"
	}
	if n := len(r.Denied); n > 0 {
		s += fmt.Sprintf(", %d tool call(s) refused", n)
	}
	return s
}

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// waiting says whether task t of run waits for a usage or rate limit: a
// run that no longer runs waits for nothing.
func waiting(run api.Run, t api.RunTask) bool {
	return run.State == api.RunRunning && t.State == api.TaskPending && t.Waiting()
}

// limitClock is when a limit resets, in local time: its hour and minute,
// with the day when that is not within the next day.
func limitClock(until, now time.Time) string {
	until = until.Local()
	if until.Sub(now) < 20*time.Hour {
		return until.Format("15:04")
	}
	return until.Format("15:04 on Jan 2")
}

// printRun renders a run for people.
func printRun(w io.Writer, run api.Run) {
	state := string(run.State)
	if run.State == api.RunRunning && !run.Active {
		state = "interrupted (drover run resume " + run.ID + ")"
	}
	fmt.Fprintf(w, "run %s (%s): %s, %d of %d waves merged into %s, cost $%.2f; %s\n", run.ID, run.File, state, run.Merged, run.Waves, run.Target, run.CostUSD, reviewedBy(run))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tWAVE\tSTATE\tITERATION\tROLE\tLAST TEST\tTOOLS\tCOST\tREVIEW\tWORKER")
	for _, t := range run.Tasks {
		test := "-"
		if t.LastTest != nil {
			test = passFail(t.LastTest.Passed)
		}
		role := t.Role
		if role == "" {
			role = "-"
		}
		review := "-"
		if t.LastReview != nil {
			review = reviewSummary(t.LastReview)
		}
		state := string(t.State)
		if waiting(run, t) {
			state = "waiting"
		}
		worker := t.Worker
		if worker == "" {
			worker = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d/%d\t%s\t%s\t%d\t$%.2f\t%s\t%s\n", t.ID, t.Wave, state, t.Iteration, run.Options.MaxIterations, role, test, t.ToolCalls, t.CostUSD, review, worker)
	}
	_ = tw.Flush()
	now := time.Now()
	for _, t := range run.Tasks {
		if t.Error != "" {
			fmt.Fprintf(w, "task %s: %s\n", t.ID, t.Error)
		}
		if r := t.LastReview; r != nil && len(r.Denied) > 0 {
			fmt.Fprintf(w, "task %s: the reviewer's CLI refused it %d tool call(s) in the review of iteration %d, so the review may rest on checks it could not make: %s\n", t.ID, len(r.Denied), r.Iteration, strings.Join(r.Denied, "; "))
		}
		if t.Paused != "" && t.State == api.TaskRunning {
			fmt.Fprintf(w, "task %s: paused: %s\n", t.ID, t.Paused)
		}
		if waiting(run, t) {
			fmt.Fprintf(w, "task %s: waiting for the usage limit until %s (wait %d of %d): %s\n", t.ID, limitClock(t.LimitUntil, now), t.LimitRetries, run.Options.LimitRetries, t.Limit)
		}
	}
	if run.Report != "" {
		fmt.Fprintf(w, "%s\n", strings.TrimRight(run.Report, "\n"))
	}
}
