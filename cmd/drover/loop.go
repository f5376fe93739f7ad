package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
)

func (a *app) loopCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loop",
		Short: "Run one prompt in a loop until a completion promise, a budget, or convergence ends it",
		Long: `loop re-feeds one prompt to the agent each time it tries to stop, until
the agent keeps its completion promise: <promise>PHRASE</promise> on a line of
its own or in a sentence (never in a quotation, code, an HTML comment or a
negation such as "I will not output it yet"), or PHRASE alone on a line; or
it writes the tracker's completion marker; or a budget is spent; or drover
sees the loop has converged or is stuck. Each iteration is reflected on,
classified, and routed to the developer, debugger or architect role. The
tracker is .drover/sessions/<session>/loop.md. In the /drover:loop slash
command, a lone cancel or status is drover loop cancel or drover loop status.`,
	}
	cmd.AddCommand(a.loopStartCmd(g), a.loopCancelCmd(g), a.loopStatusCmd(g))
	return cmd
}

func (a *app) loopStartCmd(g *globalFlags) *cobra.Command {
	var args api.LoopStartArgs
	var argsFrom string
	cmd := &cobra.Command{
		Use:   `start "PROMPT" [flags]`,
		Short: "Start a loop in this session",
		Long: `start begins a loop on PROMPT in this session and prints the instructions
for the agent. A loop already running in the session is replaced, with its
checks and checkpoint review. With --args - the whole argument string
(prompt and flags, as a shell would split them, nothing expanded) is read
from stdin: that is how the /drover:loop slash command passes what the user
typed. There, a lone unquoted cancel or status is drover loop cancel or
drover loop status, not a prompt.`,
		RunE: func(cmd *cobra.Command, rest []string) error {
			if argsFrom == "-" {
				data, err := a.stdinArgs()
				if err != nil {
					return err
				}
				if verb, ok := loopSubcommand(data); ok {
					// The slash command hands everything the user typed
					// to start: a lone cancel or status is that command,
					// as in seed 004's /dev:loop cancel, not a prompt.
					return a.loopCall(cmd.Context(), g, verb, nil, false)
				}
				words, err := argsplit.Split(data)
				if err != nil {
					return fmt.Errorf("reading arguments from stdin: %w", err)
				}
				argsFrom = ""
				if err := cmd.Flags().Parse(words); err != nil {
					return err
				}
				rest = append(rest, cmd.Flags().Args()...)
			}
			// JSON has no NaN or infinity: say which flag is wrong rather
			// than fail to encode the request.
			if math.IsNaN(args.MaxUSD) || math.IsInf(args.MaxUSD, 0) {
				return fmt.Errorf("--max-usd %v is not an amount of dollars: want 0 (no limit) or more", args.MaxUSD)
			}
			args.Prompt = strings.TrimSpace(strings.Join(rest, " "))
			if args.Prompt == "" {
				return fmt.Errorf("no prompt: drover loop start \"what to do\" [--max-iterations N] [--completion-promise TEXT]")
			}
			return a.loopCall(cmd.Context(), g, "start", args, false)
		},
	}
	f := cmd.Flags()
	f.IntVar(&args.MaxIterations, "max-iterations", 0, "iteration budget (default: loop.max_iterations)")
	f.StringVar(&args.CompletionPromise, "completion-promise", "", "the phrase the agent outputs as <promise>PHRASE</promise> when done (default DONE)")
	f.IntVar(&args.MaxMinutes, "max-minutes", 0, "wall-time budget in minutes (0: none)")
	f.Float64Var(&args.MaxUSD, "max-usd", 0, "spending budget in dollars (0: none)")
	f.IntVar(&args.CheckpointEvery, "checkpoint-every", 0, "a multi-model review every N iterations (0: none)")
	f.BoolVar(&args.RequireChecks, "require-checks", false, "the promise also needs loop.check_command to pass")
	f.StringVar(&argsFrom, "args", "", "read the prompt and flags from stdin (-)")
	return cmd
}

// loopSubcommand returns "cancel" or "status" when args, the argument
// string the /drover:loop slash command passes, is that word alone and
// unquoted (any case): the user asked for the command. A quoted "cancel"
// stays a prompt, for whoever really wants a loop on that word.
func loopSubcommand(args string) (string, bool) {
	w := strings.TrimSpace(args)
	for _, verb := range []string{"cancel", "status"} {
		if strings.EqualFold(w, verb) {
			return verb, true
		}
	}
	return "", false
}

func (a *app) loopCancelCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel",
		Short: "End this session's loop at once",
		Long: `cancel ends this session's loop now, whatever its iteration and budget:
the next Stop is allowed. The loop's state and tracker file stay for drover
loop status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.loopCall(cmd.Context(), g, "cancel", nil, false)
		},
	}
}

func (a *app) loopStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show this session's loop: iteration, budget, last convergence status and routed role",
		Long: `status shows this session's loop: whether it is active, its iteration and
budgets, the last convergence status and its reason, the last routed role
and the tracker file. With --json it prints the same as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.loopCall(cmd.Context(), g, "status", nil, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) loopCall(ctx context.Context, g *globalFlags, verb string, args any, asJSON bool) error {
	id, c, err := a.sessionClient(ctx, g)
	if err != nil {
		return err
	}
	var st api.LoopStatus
	if err := c.Workflow(ctx, id, "loop", verb, args, &st); err != nil {
		return fmt.Errorf("loop %s: %w", verb, err)
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	if st.Message != "" {
		fmt.Fprintln(a.stdout, strings.TrimRight(st.Message, "\n"))
		return nil
	}
	if !st.Active && st.StartedAt.IsZero() {
		// No loop ever ran here: iteration 0 of 0 and a tracker path that
		// does not exist would only mislead.
		fmt.Fprintf(a.stdout, "session %s has no loop; start one with drover loop start \"PROMPT\"\n", st.SessionID)
		return nil
	}
	state := "inactive"
	if st.Active {
		state = "active"
	}
	fmt.Fprintf(a.stdout, "loop of session %s: %s, iteration %d of %d", st.SessionID, state, st.Iteration, st.MaxIterations)
	if st.Outcome != "" {
		fmt.Fprintf(a.stdout, ", ended: %s", st.Outcome)
		if st.EndReason != "" {
			fmt.Fprintf(a.stdout, " (%s)", st.EndReason)
		}
	}
	fmt.Fprintln(a.stdout)
	if st.MaxMinutes > 0 || st.MaxUSD > 0 || st.CostUSD > 0 {
		budget := []string{}
		if st.MaxMinutes > 0 {
			budget = append(budget, fmt.Sprintf("%d min", st.MaxMinutes))
		}
		if st.MaxUSD > 0 {
			budget = append(budget, fmt.Sprintf("$%.2f", st.MaxUSD))
		}
		if len(budget) == 0 {
			budget = append(budget, "no time or dollar limit")
		}
		spent := "unknown"
		if st.CostUSD > 0 {
			spent = fmt.Sprintf("about $%.2f", st.CostUSD)
		}
		fmt.Fprintf(a.stdout, "budget: %s; spent %s\n", strings.Join(budget, ", "), spent)
	}
	if st.CheckpointEvery > 0 {
		fmt.Fprintf(a.stdout, "checkpoint review: every %d iteration(s)\n", st.CheckpointEvery)
	}
	if st.RequireChecks {
		fmt.Fprintln(a.stdout, "checks: required with the promise (loop.check_command)")
	}
	if st.Status != "" {
		fmt.Fprintf(a.stdout, "status: %s (%s)\n", st.Status, st.StatusReason)
	}
	if st.StuckIterations > 0 {
		fmt.Fprintf(a.stdout, "stuck: %d iteration(s) in a row\n", st.StuckIterations)
	}
	if st.Role != "" {
		fmt.Fprintf(a.stdout, "role: %s\n", st.Role)
	}
	fmt.Fprintf(a.stdout, "tracker: %s\nreflections: %d\n", st.Tracker, st.Reflections)
	return nil
}
