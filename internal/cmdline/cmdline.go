// Package cmdline is the command-line surface that drover and droverd
// share: the names, help texts and flags of the commands both binaries
// know (serve, config and the loop's components), and the global flags.
// droverd runs these commands; drover shows their help, checks their flags
// and hands the command line to droverd, since what they do needs the
// configuration loader or the engine, which drover does not link. The
// package holds no behaviour, so both stay in step by construction.
package cmdline

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Globals are the flags every command of both binaries takes.
type Globals struct {
	Project string
	Session string
}

// AddGlobals registers the global flags on root's persistent flags.
func AddGlobals(root *cobra.Command, g *Globals) {
	root.PersistentFlags().StringVar(&g.Project, "project", "", "project directory (default: $CLAUDE_PROJECT_DIR, else the current directory; worktrees resolve to their main repository)")
	root.PersistentFlags().StringVar(&g.Session, "session", "", "session id (default: $CLAUDE_CODE_SESSION_ID)")
}

// RestartKeys are the config keys a running supervisor reads only when it
// starts (internal/config's RestartKeys, which drover cannot link; a test
// keeps the two lists equal).
var RestartKeys = []string{
	"events.history",
	"log.max_backups",
	"log.max_size_mb",
	"metrics.enabled",
	"supervisor.idle_timeout",
	"supervisor.restart_max",
	"supervisor.restart_window",
	"supervisor.shutdown_timeout",
	"ui.enabled",
	"ui.port",
}

// Serve is `serve`, the supervisor. droverd adds a flag per config key.
func Serve() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the supervisor for this project (started on demand by hooks and commands)",
		Long: `serve runs the supervisor for one project: the project's store
(.drover/state/), its actor tree and the local API on an owner-only unix
socket outside the work tree. Only one runs per project; worktrees of one
repository share it. SIGTERM or SIGINT stops it gracefully. It is droverd's
command: drover serve runs droverd serve with the same arguments.

In the foreground it logs to stderr as well as to .drover/logs/drover.log.
Every configuration key is also a flag (--queue.max_iterations=20 ...), which
overrides the files and the environment.
With --detach it starts in the background and returns once it answers.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().Bool("detach", false, "start in the background and return once the supervisor answers")
	cmd.Flags().Bool("no-console", false, "log only to .drover/logs/drover.log, not to stderr (used when started on demand)")
	return cmd
}

// Config is `config`, the effective configuration.
func Config() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration (defaults < user file < .drover/config.yaml < DROVER_* env)",
		Long: `config prints the configuration this command line would use, as YAML.
With --from-supervisor it prints what the project's running supervisor uses
(it reloads .drover/config.yaml on change; a file that does not load leaves
the previous configuration in force, and the reason is in its log).

A running supervisor reads these keys only when it starts; a change to them
takes effect after drover serve is restarted (SIGTERM it; the next hook
starts a new one):
  ` + strings.Join(RestartKeys, "\n  "),
		Args: cobra.NoArgs,
	}
	cmd.Flags().Bool("from-supervisor", false, "print the configuration the running supervisor uses")
	return cmd
}

// Reflect is `reflect`, the loop's reflection on one iteration.
func Reflect() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reflect --transcript FILE --state FILE --reflections-dir DIR",
		Short: "Write the reflection on a transcript's latest iteration (reflections/iteration-N.json)",
		Long: `reflect reads a Claude Code transcript (JSONL, streamed in constant memory),
summarizes its latest iteration and writes DIR/iteration-N.json (N from the
state file's "iteration") with approach, successes, failures, error_hash,
thrashing and a summary of the prior reflections found in DIR. An iteration
with fewer than loop.min_tool_calls (10) tool calls is low-signal: nothing
is written. The thresholds are the project's loop.* configuration.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().String("transcript", "", "transcript JSONL file")
	cmd.Flags().String("state", "", `state JSON file ({"iteration": N, ...})`)
	cmd.Flags().String("reflections-dir", "", "folder of iteration-N.json files")
	required(cmd, "transcript", "state", "reflections-dir")
	return cmd
}

// Converge is `converge`, the convergence status of a metrics history.
func Converge() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "converge --metrics FILE --state FILE --output FILE",
		Short: `Classify a metrics history; writes {"status": ..., "reason": ...}`,
		Long: `converge reads a JSON array of per-iteration metrics (iteration,
test_pass_rate, tests_passed, tests_failed, build_success, lint_issues,
error_hash, ...) and the loop state (iteration, max_iterations, max_minutes,
max_usd, elapsed_seconds, cost_usd) and writes the convergence status
(converged_success, stuck_plateau, thrashing, exploring, budget_exhausted
or progressing) with the reason in words. A state file that
does not exist is an empty state: no iteration, no budgets. The thresholds
are the project's loop.* configuration (success_pass_rate, min_improvement,
require_lint_clean, plateau_window, thrash_repeats).`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().String("metrics", "", "metrics history JSON file (an array)")
	cmd.Flags().String("state", "", "state JSON file")
	cmd.Flags().String("output", "", "where to write the result")
	required(cmd, "metrics", "state", "output")
	return cmd
}

// Route is `route`, the role for an iteration.
func Route() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "route --input FILE --output FILE",
		Short: `Route an iteration to a role; writes {"agent": "dev:<role>", "role": ...}`,
		Long: `route reads {"phase", "last_outcome", "convergence_status"} and applies the
project's routing rules, loop.routes (first match wins; defaults: initial to
developer, test or build failure to debugger, plateau or thrashing to
architect). Seed 004's words are taken as aliases (phase "implementing" for
iterating, last_outcome "test_fail" for tests_failed, null for none), and so
are the pass/fail words of tests, build and lint ("test_pass", "build_fail",
"build_pass", "lint_fail" for lint_failed, "lint_pass", ...); any other
unknown value is an error naming its field.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().String("input", "", "input JSON file")
	cmd.Flags().String("output", "", "where to write the result")
	required(cmd, "input", "output")
	return cmd
}

func required(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.MarkFlagRequired(n)
	}
}

// Worker is `worker`, a machine's worker of the nats executor.
func Worker() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker --nats URL [--concurrency N] [--agent CMD]",
		Short: "Work the iterations of drover runs that use the nats executor, pulled from NATS JetStream",
		Long: `worker serves one repository (the project's: its root commit and
--repo-name are its identity, and a job of another repository is refused)
to drover runs started with --executor nats. It pulls each iteration as a
job from the NATS JetStream work queue, unpacks the job's git bundle into a
repository of its own (--dir), runs the agent and the targeted tests with
the same process rules as a local run, reports the agent's progress while it
works, sends back a bundle of the task branch's new commits with the result,
and acknowledges the job. A worker that dies stops acknowledging: after the
ack wait its job goes to another worker and runs again from the same base.
SIGTERM or SIGINT hands the jobs at work back and stops.

The NATS credentials are the project's run.nats.* configuration (the config
files or the DROVER_RUN_NATS_* variables), never a task's text.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().String("nats", "", "NATS server URL(s), comma-separated (default: run.nats.url)")
	cmd.Flags().Int("concurrency", 1, "iterations at once")
	cmd.Flags().String("agent", "", "agent command template, as run.agent (default: the run's own)")
	cmd.Flags().String("name", "", "this worker's name in results and drover run status (default: host-pid)")
	cmd.Flags().String("repo-name", "", "the repository's name in its identity (default: the project directory's name)")
	cmd.Flags().String("dir", "", "the worker's repositories and work trees (default: the user cache directory's drover/worker)")
	cmd.Flags().Duration("ack-wait", 30*time.Second, "how long a job stays with a worker that stopped saying it works on it before it goes to another (the same on every worker of a repository)")
	return cmd
}
