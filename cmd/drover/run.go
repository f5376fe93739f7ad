package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/rungraph"
)

// runPollInterval is how often the live view of `drover run` asks for the
// run's state.
const runPollInterval = time.Second

func (a *app) runCmd(g *globalFlags) *cobra.Command {
	var opts api.RunOptions
	var detach bool
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Work a graph of tasks in waves with headless agents, each in its own work tree",
		Long: `run works the task graph in FILE (YAML: tasks with id, description, files,
tests, depends-on). Tasks whose dependencies are done form a wave; the tasks
of a wave run at the same time (at most --concurrency agents), each in its
own git work tree on branch drover/<run>/<task>. Between iterations a task's
targeted tests run in its work tree; a task is done when they pass and it
committed. When a wave is done its branches are merged into the current
branch in dependency order and the suite runs there; a failure stops the
run with a report.

The agent is Claude Code in print mode unless --agent gives a command
template ({{prompt}}, {{task}}, {{iteration}}, {{run}}, {{worktree}}; without
{{prompt}} the prompt is the last argument). --test-command may hold
{{packages}}, the task's targeted tests.

Budgets end tasks and runs that will not finish: --max-iterations and
--task-max-minutes fail a task, --max-minutes and --max-usd stop the run
(a resumed run gets a fresh budget); a task whose targeted tests are stuck
on a plateau or keep failing the same way fails early. Iterations are
routed to the developer, debugger or architect role as in the loop.
With --reviewer, a task whose tests pass is done only when the reviewer
passes it; a FAIL sends the findings to the task's next iteration.

run prints progress until the run ends, unless --detach. After a crash,
drover run status shows where every run is and drover run resume RUN-ID
goes on without redoing finished tasks.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("reading task graph: %w", err)
			}
			// Validate here too, so that a broken file is reported
			// without a supervisor.
			if _, err := rungraph.Parse(data, file); err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			run, err := c.StartRun(ctx, api.StartRunRequest{File: file, Graph: string(data), Options: opts})
			if err != nil {
				return fmt.Errorf("starting run: %w", err)
			}
			fmt.Fprintf(a.stdout, "run %s: %d tasks in %d waves, merging into %s\n", run.ID, len(run.Tasks), run.Waves, run.Target)
			if detach {
				return nil
			}
			return a.watchRun(ctx, c, run)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Concurrency, "concurrency", actors.DefaultRunConcurrency, "agent processes running at once")
	f.IntVar(&opts.MaxIterations, "max-iterations", actors.DefaultRunMaxIterations, "agent runs per task before it fails")
	f.StringVar(&opts.Agent, "agent", "", "agent command template (default: claude --print --output-format stream-json --verbose --dangerously-skip-permissions PROMPT)")
	f.StringVar(&opts.TestCommand, "test-command", actors.DefaultTestCommand, "targeted test command, run in the task's work tree")
	f.StringVar(&opts.SuiteCommand, "suite-command", actors.DefaultSuiteCommand, "suite command, run in the main work tree after each wave")
	f.Float64Var(&opts.TaskMaxMinutes, "task-max-minutes", 0, "minutes a task may take before it fails, its agent killed (0: no limit)")
	f.Float64Var(&opts.MaxMinutes, "max-minutes", 0, "minutes the whole run may take before it stops (0: no limit)")
	f.Float64Var(&opts.MaxUSD, "max-usd", 0, "dollars the agents of the whole run may cost, as they report it, before it stops (0: no limit)")
	f.StringVar(&opts.Reviewer, "reviewer", "", `reviewer that must pass each task before it is done: "claude", or a command template with {{prompt}}, {{schema}}, {{model}}, {{budget_usd}} (default: no review)`)
	f.BoolVar(&detach, "detach", false, "start the run and return at once")
	cmd.AddCommand(a.runStatusCmd(g), a.runResumeCmd(g))
	return cmd
}

func (a *app) runClient(ctx context.Context, g *globalFlags) (*client.Client, error) {
	p, err := a.paths(g)
	if err != nil {
		return nil, err
	}
	return a.connect(ctx, p)
}

func (a *app) runStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [RUN-ID]",
		Short: "Show a run (default: the newest): every task's state, iteration, role, last test result and cost",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.runClient(ctx, g)
			if err != nil {
				return err
			}
			var run api.Run
			if len(args) == 1 {
				run, err = c.Run(ctx, args[0])
			} else {
				var runs []api.Run
				runs, err = c.Runs(ctx)
				if err == nil && len(runs) == 0 {
					err = errors.New("no runs yet: start one with drover run FILE")
				}
				if err == nil {
					run = runs[0]
				}
			}
			if err != nil {
				return fmt.Errorf("run status: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(run)
			}
			printRun(a.stdout, run)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runResumeCmd(g *globalFlags) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:   "resume RUN-ID",
		Short: "Go on with a run cut short by a crash or stopped by a failure, without redoing finished tasks",
		Args:  cobra.ExactArgs(1),
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

// watchRun prints a line for each change of a task's state or iteration
// and of the run's merged waves, until the run is no longer worked.
func (a *app) watchRun(ctx context.Context, c *client.Client, run api.Run) error {
	seen := map[string]string{}
	merged := run.Merged
	tick := time.NewTicker(runPollInterval)
	defer tick.Stop()
	for {
		for _, t := range run.Tasks {
			key := fmt.Sprintf("%s/%d/%s", t.State, t.Iteration, t.Role)
			if seen[t.ID] == key {
				continue
			}
			seen[t.ID] = key
			line := fmt.Sprintf("task %s (wave %d): %s", t.ID, t.Wave, t.State)
			if t.Iteration > 0 {
				line += fmt.Sprintf(", iteration %d", t.Iteration)
			}
			if t.Role != "" {
				line += ", " + t.Role
			}
			if t.LastTest != nil && t.State != api.TaskRunning {
				line += ", tests " + passFail(t.LastTest.Passed)
			}
			if t.Error != "" {
				line += ": " + t.Error
			}
			fmt.Fprintln(a.stdout, line)
		}
		for ; merged < run.Merged; merged++ {
			fmt.Fprintf(a.stdout, "wave %d merged into %s; suite passed\n", merged+1, run.Target)
		}
		if run.State != api.RunRunning || !run.Active {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(a.stdout, "stopped watching; the run goes on (drover run status %s)\n", run.ID)
			return nil
		case <-tick.C:
		}
		var err error
		if run, err = c.Run(ctx, run.ID); err != nil {
			return fmt.Errorf("watching run: %w", err)
		}
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

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// printRun renders a run for people.
func printRun(w io.Writer, run api.Run) {
	state := string(run.State)
	if run.State == api.RunRunning && !run.Active {
		state = "interrupted (drover run resume " + run.ID + ")"
	}
	fmt.Fprintf(w, "run %s (%s): %s, %d of %d waves merged into %s, cost $%.2f\n", run.ID, run.File, state, run.Merged, run.Waves, run.Target, run.CostUSD)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tWAVE\tSTATE\tITERATION\tROLE\tLAST TEST\tCOST")
	for _, t := range run.Tasks {
		test := "-"
		if t.LastTest != nil {
			test = passFail(t.LastTest.Passed)
		}
		role := t.Role
		if role == "" {
			role = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d/%d\t%s\t%s\t$%.2f\n", t.ID, t.Wave, t.State, t.Iteration, run.Options.MaxIterations, role, test, t.CostUSD)
	}
	_ = tw.Flush()
	for _, t := range run.Tasks {
		if t.Error != "" {
			fmt.Fprintf(w, "task %s: %s\n", t.ID, t.Error)
		}
	}
	if run.Report != "" {
		fmt.Fprintf(w, "%s\n", strings.TrimRight(run.Report, "\n"))
	}
}
