package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
)

func (a *app) planCmd(g *globalFlags) *cobra.Command {
	var argsFrom string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Work through a plan whose every step is reviewed by independent reviewers",
		Long: `plan drives seed 001's plan workflow in this session. A plan lives in
.drover/plans/<plan-id>/: plan.md, tasks.md (a Markdown table of tasks),
task-<id>.md per task, and the review files drover writes.

Each time the agent stops after a plan, a task list or a task's code,
drover has an independent reviewer process (review.cli, opus then sonnet in
turn) review it; the agent gets the review and performs a post-review; two
clean reviews in a row advance the plan; review.max_reviews bounds each
cycle. The agent reports finished steps with drover plan advance (the
block messages name the exact command). state.json in the plan folder is a
view drover writes: read it, change the plan with drover plan set. Of a
hand edit, drover takes next_phase null (ends the review loop) and
max_reviews, says so at the next stop, and undoes the rest. A plan has one
session: drover plan continue ID in another session takes it over, and the
session that drove it lets go at its next stop.

code-review, plan-review, tasks-review and all-code-review start a
standalone review at the next stop: one review, as seed 001's review
commands perform, with no post-review after it; the plan stays where it
was, with next_phase null.

With --args - the subcommand and its arguments are read from stdin and
split as a shell would (nothing expanded): that is how /drover:plan passes
what the user typed. There an action word (create-tasks, complete-task,
complete-task-tdd, next-task, next-task-tdd, continue-task, add-task,
code-review, plan-review, tasks-review, all-code-review) prints that
action's prompt (templates plan_action_*): what to do, and the command
that reports it done.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if argsFrom != "-" {
				return cmd.Help()
			}
			return a.planFromStdin(cmd, g)
		},
	}
	cmd.Flags().StringVar(&argsFrom, "args", "", "read the subcommand and its arguments from stdin (-)")
	cmd.AddCommand(
		a.planNewCmd(g),
		a.planAdvanceCmd(g),
		a.planSetCmd(g),
		a.planStatusCmd(g),
		a.planFindingsCmd(g),
		a.planContinueCmd(g),
		a.planWaitCmd(g),
		a.planStopReviewsCmd(g),
		a.planSetMaxReviewsCmd(g),
		a.planAddTaskCmd(g),
		a.planPhaseCmd(g, "post-review-done", "post-review", "Report the post-review done: the next review starts at the next stop", false),
		a.planPhaseCmd(g, "create-tasks", "create-tasks", "Report tasks.md and the task files written: the tasks review starts at the next stop", false),
		a.planPhaseCmd(g, "complete-task", "complete-task", "Report a task implemented (the first one not done unless ID is given): its code review starts at the next stop", true),
		a.planPhaseCmd(g, "next-task", "next-task", "Report a task implemented without a review loop (next_phase null)", true),
		a.planPhaseCmd(g, "continue-task", "continue-task", "Report an interrupted task resumed; its review loop, if any, stays as it was", false),
		a.planPhaseCmd(g, "complete", "complete", "Mark the plan complete (for example to skip the all-code review of a small plan)", false),
		a.planReviewCmd(g, "code-review", "Have task ID's code (default: the current task) reviewed once at the next stop"),
		a.planReviewCmd(g, "plan-review", "Have the plan reviewed once at the next stop"),
		a.planReviewCmd(g, "tasks-review", "Have the tasks reviewed once at the next stop"),
		a.planReviewCmd(g, "all-code-review", "Have all the plan's code reviewed once at the next stop"),
	)
	return cmd
}

// planReviewCmd is a standalone review: seed 001's code-review,
// plan-review, tasks-review and all-code-review commands.
func (a *app) planReviewCmd(g *globalFlags, name, short string) *cobra.Command {
	use, args := name, cobra.NoArgs
	if name == "code-review" {
		use, args = name+" [ID]", cobra.MaximumNArgs(1)
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

It is standalone, as seed 001's review commands are: an independent
reviewer reviews once and drover writes the review file; no post-review
follows whatever the verdict, next_phase becomes null and the plan does not
move on (review cycles belong to new, create-tasks and complete-task).
Then drover plan continue says what comes next.`,
		Args: args,
		RunE: func(cmd *cobra.Command, rest []string) error {
			pa := api.PlanArgs{Phase: name}
			if len(rest) == 1 {
				pa.Task = rest[0]
			}
			return a.planAct(cmd.Context(), g, "review", pa, false)
		},
	}
}

// planFromStdin runs `drover plan <stdin words>`.
func (a *app) planFromStdin(cmd *cobra.Command, g *globalFlags) error {
	data, err := a.stdinArgs()
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	words, err := argsplit.Split(data)
	if err != nil {
		return fmt.Errorf("reading plan arguments from stdin: %w", err)
	}
	for _, w := range words {
		if w == "--args" || strings.HasPrefix(w, "--args=") {
			return errors.New("plan: --args cannot be given on stdin")
		}
	}
	if len(words) == 0 {
		words = []string{"continue"}
	}
	if slices.Contains(slashActions, words[0]) {
		return a.planSlashAction(cmd.Context(), g, words[0], words[1:])
	}
	var args []string
	if g.Project != "" {
		args = append(args, "--project", g.Project)
	}
	if g.Session != "" {
		args = append(args, "--session", g.Session)
	}
	args = append(append(args, "plan"), words...)
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	return root.ExecuteContext(cmd.Context())
}

// slashActions are the action words of /drover:plan ACTION [ID] [--tdd]:
// from the slash command they print the action's prompt (the supervisor
// renders it from the project's templates); from a terminal the same
// words, where they are subcommands, report the action done.
var slashActions = []string{
	"create-tasks", "complete-task", "complete-task-tdd", "next-task", "next-task-tdd",
	"continue-task", "add-task", "code-review", "plan-review", "tasks-review", "all-code-review",
}

// slashAction reads the words after an action word: an optional task id,
// and --tdd, which picks the test-first variant of complete-task and
// next-task.
func slashAction(action string, rest []string) (string, string, error) {
	var task string
	for _, w := range rest {
		switch {
		case w == "--tdd" && (action == "complete-task" || action == "next-task"):
			action += "-tdd"
		case w == "--tdd" && strings.HasSuffix(action, "-tdd"):
		case strings.HasPrefix(w, "-"):
			return "", "", fmt.Errorf("plan %s: unknown flag %q", action, w)
		case task != "":
			return "", "", fmt.Errorf("plan %s: one task id at most, got %q and %q", action, task, w)
		default:
			task = w
		}
	}
	return action, task, nil
}

// planSlashAction prints the prompt of action for the session's plan: what
// to do, and which `drover plan` command reports it done.
func (a *app) planSlashAction(ctx context.Context, g *globalFlags, action string, rest []string) error {
	action, task, err := slashAction(action, rest)
	if err != nil {
		return err
	}
	st, err := a.planCall(ctx, g, "action", api.PlanArgs{Phase: action, Task: task})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, strings.TrimRight(st.Message, "\n"))
	return nil
}

// planCall runs one plan command on the session's supervisor.
func (a *app) planCall(ctx context.Context, g *globalFlags, verb string, args api.PlanArgs) (api.PlanStatus, error) {
	var st api.PlanStatus
	id, c, err := a.sessionClient(ctx, g)
	if err != nil {
		return st, err
	}
	if err := c.Workflow(ctx, id, "plan", verb, args, &st); err != nil {
		return st, fmt.Errorf("plan %s: %w", verb, err)
	}
	return st, nil
}

// planAct runs a command that acts and prints its message (or JSON).
func (a *app) planAct(ctx context.Context, g *globalFlags, verb string, args api.PlanArgs, asJSON bool) error {
	st, err := a.planCall(ctx, g, verb, args)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(st)
	}
	if st.Message != "" {
		fmt.Fprintln(a.stdout, strings.TrimRight(st.Message, "\n"))
		return nil
	}
	a.printPlanStatus(st)
	return nil
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) planNewCmd(g *globalFlags) *cobra.Command {
	var (
		args       api.PlanArgs
		maxReviews int
	)
	cmd := &cobra.Command{
		Use:   "new PLAN-ID [--tdd] [--max-reviews N] [--budget-usd D]",
		Short: "Start a plan in .drover/plans/PLAN-ID/ for this session",
		Long: `new creates .drover/plans/PLAN-ID/ and makes it this session's plan, at
phase new-plan with next_phase plan-review: write plan.md there (it may
already be written), then stop, and drover has it reviewed. PLAN-ID is
letters, digits, '-', '_' and '.', starting with a letter or digit.

A session drives one plan at a time; a queue or loop running in the
session must be ended first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			args.PlanID = rest[0]
			if cmd.Flags().Changed("max-reviews") {
				args.MaxReviews = &maxReviews
			}
			return a.planAct(cmd.Context(), g, "new", args, false)
		},
	}
	cmd.Flags().BoolVar(&args.TDD, "tdd", false, "use the test-first variants (complete-task-tdd) for every task")
	cmd.Flags().IntVar(&maxReviews, "max-reviews", 0, "reviews per review cycle before the hard stop (default review.max_reviews; 0 turns reviews off)")
	cmd.Flags().Float64Var(&args.BudgetUSD, "budget-usd", 0, "the plan's reviewer budget in dollars: no review starts once its reviewer runs cost this much (0: none)")
	return cmd
}

func (a *app) planAdvanceCmd(g *globalFlags) *cobra.Command {
	var args api.PlanArgs
	cmd := &cobra.Command{
		Use:   "advance PHASE [--task ID]",
		Short: "Report a finished phase of the plan",
		Long: `advance is how the agent reports a finished step; the block messages name
the one to run. PHASE is one of:

  new-plan              plan.md is (re)written; the plan review follows
  create-tasks          tasks.md and the task files are written; the tasks review follows
  complete-task         a task is implemented (--task ID, default the first
                        not done); its code review follows
  complete-task-tdd     the same, test first
  next-task, next-task-tdd
                        a task is implemented, with no review loop
  continue-task         an interrupted task is resumed
  post-review           the post-review the last review asked for is done
                        (also post-plan-review, post-tasks-review,
                        post-code-review, post-all-code-review)
  complete              the plan is done

Then stop: the review that follows starts when the agent stops.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			args.Phase = rest[0]
			return a.planAct(cmd.Context(), g, "advance", args, false)
		},
	}
	cmd.Flags().StringVar(&args.Task, "task", "", "the task (complete-task, next-task and their tdd variants)")
	return cmd
}

// planPhaseCmd is a shorthand for `advance PHASE`, under the names the
// block messages use.
func (a *app) planPhaseCmd(g *globalFlags, name, phase, short string, task bool) *cobra.Command {
	var tdd bool
	use := name
	args := cobra.NoArgs
	if task {
		use += " [ID] [--tdd]"
		args = cobra.MaximumNArgs(1)
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + ".\nIt is drover plan advance " + phase + " under another name.",
		Args:  args,
		RunE: func(cmd *cobra.Command, rest []string) error {
			pa := api.PlanArgs{Phase: phase}
			if len(rest) == 1 {
				pa.Task = rest[0]
			}
			if tdd {
				pa.Phase += "-tdd"
			}
			return a.planAct(cmd.Context(), g, "advance", pa, false)
		},
	}
	if task {
		cmd.Flags().BoolVar(&tdd, "tdd", false, "the test-first variant")
	}
	return cmd
}

func (a *app) planSetCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "set PLAN-ID KEY=VALUE",
		Short: "Change a setting of the plan (the escape hatches)",
		Long: `set changes one setting of this session's plan:

  max_reviews=N       reviews per review cycle from now on (0 turns reviews off)
  next_phase=null     end the review loop now (a review in flight is cancelled)
  review_model=M      the model of the next review (one of review.models)
  tdd=true|false      the test-first variants for the next tasks
  budget_usd=D        the plan's reviewer budget in dollars (0: none); no
                      review starts once the plan's reviewer runs cost D`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, rest []string) error {
			key, value, ok := strings.Cut(rest[1], "=")
			if !ok || key == "" {
				return fmt.Errorf("plan set: want KEY=VALUE, got %q", rest[1])
			}
			return a.planAct(cmd.Context(), g, "set", api.PlanArgs{PlanID: rest[0], Key: key, Value: value}, false)
		},
	}
}

func (a *app) planSetMaxReviewsCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "set-max-reviews N",
		Short: "Set the reviews per review cycle (0 turns reviews off)",
		Long:  "set-max-reviews is drover plan set <plan> max_reviews=N for this session's plan.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			if _, err := strconv.Atoi(rest[0]); err != nil {
				return fmt.Errorf("plan set-max-reviews: N must be a whole number, got %q", rest[0])
			}
			return a.planAct(cmd.Context(), g, "set", api.PlanArgs{Key: "max_reviews", Value: rest[0]}, false)
		},
	}
}

func (a *app) planStopReviewsCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "stop-reviews",
		Aliases: []string{"cancel"},
		Short:   "End the review loop (next_phase null) and cancel a review in flight",
		Long: `stop-reviews sets next_phase to null, so that no review starts at the next
stop, and kills a reviewer that is running (its whole process group). The
plan stays where it is; drover plan continue or advance moves it on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.planAct(cmd.Context(), g, "stop-reviews", api.PlanArgs{}, false)
		},
	}
}

func (a *app) planAddTaskCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "add-task ID",
		Short: "Report a task added to tasks.md (with its task-ID.md)",
		Long:  "add-task checks that task-ID.md exists and makes it the current task when none is in progress.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			return a.planAct(cmd.Context(), g, "add-task", api.PlanArgs{Task: rest[0]}, false)
		},
	}
}

func (a *app) planContinueCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "continue [PLAN-ID]",
		Aliases: []string{"next"},
		Short:   "Say what to do next on the plan (picks a plan up in a new session)",
		Long: `continue reads next_phase (what should happen), then phase (what was last
done), and says which action comes next and which command reports it
done. In a session without a plan (a new session after a crash or a
restart) it takes over PLAN-ID, or the plan whose state.json changed
last, from its state.json. A plan has one session: the session that drove
it before starts no more reviewers for it and lets go at its next stop.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			var args api.PlanArgs
			if len(rest) == 1 {
				args.PlanID = rest[0]
			}
			return a.planAct(cmd.Context(), g, "continue", args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (action, task, file, and the plan's state)")
	return cmd
}

func (a *app) planStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [PLAN-ID]",
		Short: "Show where the plan stands: phase, review iteration, model, costs",
		Long: `status shows this session's plan (seed 001's fields: phase, next_phase,
current_task, phase_iteration, max_reviews, review_model,
consecutive_clean, tdd), the review in flight, and the reviewer runs and
their cost. Outside a session (no CLAUDE_CODE_SESSION_ID and no --session)
it lists every plan of the project from its state.json, or PLAN-ID's.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, rest []string) error {
			var args api.PlanArgs
			if len(rest) == 1 {
				args.PlanID = rest[0]
			}
			if _, err := a.sessionID(g); err != nil {
				return a.planViews(g, args.PlanID, asJSON)
			}
			st, err := a.planCall(cmd.Context(), g, "status", args)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(st)
			}
			a.printPlanStatus(st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON under seed 001's field names")
	return cmd
}

func (a *app) planFindingsCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "findings",
		Short: "List the findings of the plan's review cycles",
		Long: `findings lists every finding the reviews of the current cycle reported,
deduplicated: the reviews that first and last reported it, and whether the
latest review still does (open). The next review is asked to re-check the
open ones rather than review everything again. The findings of the plan's
earlier cycles follow, newest cycle first, each labelled with what it
reviewed; open there means the cycle ended with it still reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.planCall(cmd.Context(), g, "findings", api.PlanArgs{})
			if err != nil {
				return err
			}
			if asJSON {
				if st.Findings == nil {
					// A list for scripts to range over, never null.
					st.Findings = []api.PlanFinding{}
				}
				return a.printJSON(st.Findings)
			}
			return a.printFindings(st)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// planWaitPoll bounds the pause between two questions of plan wait.
const (
	planWaitFirstPoll = 200 * time.Millisecond
	planWaitMaxPoll   = 2 * time.Second
)

func (a *app) planWaitCmd(g *globalFlags) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait [--timeout D]",
		Short: "Wait until the review in flight is done (bounded)",
		Long: `wait returns when the review in flight has finished and drover has applied
its answer; then stop, and drover tells the agent what the review found. It
gives up after --timeout (default 100s, below the agent's default command
timeout) and says so: run it again. A review that was lost to a supervisor
restart is started again here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			deadline := time.Now().Add(timeout)
			pause := planWaitFirstPoll
			for {
				st, err := a.planCall(ctx, g, "wait", api.PlanArgs{})
				if err != nil {
					return err
				}
				if !st.Active && st.PlanID == "" {
					fmt.Fprintf(a.stdout, "[drover] Session %s has no plan; nothing to wait for.\n", st.SessionID)
					return nil
				}
				if !st.ReviewRunning {
					a.printWaitDone(st)
					return nil
				}
				if time.Now().Add(pause).After(deadline) {
					r := st.Review
					fmt.Fprintf(a.stdout, "[drover] The %s review %d (%s) of plan %s is still running after %s. Run `drover plan wait` again.\n", r.Kind, r.Iteration, r.Model, st.PlanID, timeout)
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(pause):
				}
				pause = min(2*pause, planWaitMaxPoll)
			}
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 100*time.Second, "give up after this long")
	return cmd
}
