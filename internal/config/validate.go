// Validation: every range check of a Config, each error naming its key.

package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
)

// logLevels lists the accepted values of log.level.
var logLevels = []string{"debug", "info", "warn", "error"}

// Validate reports every value out of range, each naming its key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %q: "+format, append([]any{key}, args...)...))
	}
	if c.Queue.MaxIterations < 1 {
		bad("queue.max_iterations", "must be at least 1, got %d", c.Queue.MaxIterations)
	}
	for _, e := range hook.Events {
		b, ceiling := c.Budget(e), HookTimeout(e)
		if b <= 0 || b >= ceiling {
			bad(budgetKey(e), "must be above 0 and below %v (the %s timeout in hooks.json), got %v", ceiling, e.ClaudeName(), b)
		}
	}
	// A held Stop still has its own budget to answer in: the hook client
	// waits for both, and Claude Code kills the hook at the ceiling.
	if ceiling := HookTimeout(hook.Stop); c.Review.Hold < 0 || c.Review.Hold+c.Hook.Budget.Stop >= ceiling {
		bad("review.hold", "must be at least 0 and, with hook.budget.stop (%v), below %v (the Stop timeout in hooks.json), got %v", c.Hook.Budget.Stop, ceiling, c.Review.Hold)
	}
	positive := []struct {
		key string
		d   time.Duration
	}{
		{"hook.start_timeout", c.Hook.StartTimeout},
		{"supervisor.idle_timeout", c.Supervisor.IdleTimeout},
		{"supervisor.restart_window", c.Supervisor.RestartWindow},
		{"supervisor.shutdown_timeout", c.Supervisor.ShutdownTimeout},
	}
	for _, p := range positive {
		if p.d <= 0 {
			bad(p.key, "must be above 0, got %v", p.d)
		}
	}
	if c.UI.Port < 0 || c.UI.Port > 65535 {
		bad("ui.port", "must be from 0 to 65535, got %d", c.UI.Port)
	}
	if c.Events.History < 1 {
		bad("events.history", "must be at least 1, got %d", c.Events.History)
	}
	for _, w := range c.NotifyOn() {
		if !contains(NotifyWords, w) {
			bad("notify.on", "%q is not one of %s", w, strings.Join(NotifyWords, ", "))
		}
	}
	if c.Notify.Webhook != "" {
		// The URL may hold a token: the error names its scheme only.
		if u, err := url.Parse(c.Notify.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("notify.webhook", "must be an http:// or https:// URL with a host")
		}
	}
	if c.Notify.Timeout <= 0 {
		bad("notify.timeout", "must be above 0, got %v", c.Notify.Timeout)
	}
	if c.Supervisor.RestartMax < 0 {
		bad("supervisor.restart_max", "must not be negative, got %d", c.Supervisor.RestartMax)
	}
	for _, p := range []struct {
		key string
		v   int
	}{
		{"loop.max_iterations", c.Loop.MaxIterations},
		{"loop.plateau_window", c.Loop.PlateauWindow},
		{"loop.thrash_repeats", c.Loop.ThrashRepeats},
		{"review.clean_streak", c.Review.CleanStreak},
		{"review.max_parallel", c.Review.MaxParallel},
		{"run.concurrency", c.Run.Concurrency},
		{"run.max_iterations", c.Run.MaxIterations},
	} {
		if p.v < 1 {
			bad(p.key, "must be at least 1, got %d", p.v)
		}
	}
	if c.Run.LimitRetries < 0 {
		bad("run.limit_retries", "must not be negative (0 never waits for a limit), got %d", c.Run.LimitRetries)
	}
	validateRunNATS(c.Run, bad)
	if c.Loop.MinToolCalls < 0 {
		bad("loop.min_tool_calls", "must not be negative, got %d", c.Loop.MinToolCalls)
	}
	for _, p := range []struct {
		key string
		v   float64
	}{{"loop.success_pass_rate", c.Loop.SuccessPassRate}, {"loop.min_improvement", c.Loop.MinImprovement}} {
		// 0 is refused rather than taken as the default, as the
		// convergence package would read it.
		if !(p.v > 0 && p.v <= 1) {
			bad(p.key, "must be above 0 and at most 1, got %v", p.v)
		}
	}
	if c.Loop.ConvergedStreak < 1 {
		bad("loop.converged_streak", "must be at least 1, got %d", c.Loop.ConvergedStreak)
	}
	if c.Loop.StuckLimit < 0 {
		bad("loop.stuck_limit", "must not be negative (0 never ends a stuck loop), got %d", c.Loop.StuckLimit)
	}
	if c.Status.StaleAfter < 0 {
		bad("status.stale_after", "must not be negative (0: never stale), got %v", c.Status.StaleAfter)
	}
	if c.Review.MaxReviews < 0 {
		bad("review.max_reviews", "must not be negative, got %d", c.Review.MaxReviews)
	}
	for _, p := range []struct {
		key string
		d   time.Duration
	}{{"loop.check_timeout", c.Loop.CheckTimeout}, {"review.timeout", c.Review.Timeout}, {"run.iteration_timeout", c.Run.IterationTimeout}} {
		if p.d <= 0 {
			bad(p.key, "must be above 0, got %v", p.d)
		}
	}
	if len(c.ReviewModels()) == 0 {
		bad("review.models", "must name at least one model")
	}
	if !contains([]string{"alternate", "parallel"}, c.Review.Strategy) {
		bad("review.strategy", "must be alternate or parallel, got %q", c.Review.Strategy)
	}
	if !contains([]string{"all", "majority"}, c.Review.Quorum) {
		bad("review.quorum", "must be all or majority, got %q", c.Review.Quorum)
	}
	// Each model runs on the CLI its name (or its cli: prefix) says,
	// review.cli being the default: one cycle may mix CLIs.
	for _, m := range c.ReviewModels() {
		if _, _, err := reviewer.ModelCLI(m, c.Review.CLI); err != nil {
			bad("review.models", "%v", err)
		}
	}
	switch c.Review.CLI {
	case "claude", "codex", "gemini":
	case "custom":
		if strings.TrimSpace(c.Review.Command) == "" {
			bad("review.command", "must be set when review.cli is custom")
		}
	default:
		bad("review.cli", "must be claude, codex, gemini or custom, got %q", c.Review.CLI)
	}
	if _, err := c.Review.Budget(); err != nil {
		bad("review.budget_usd", "must be a non-negative number of dollars, got %q", c.Review.BudgetUSD)
	}
	if _, err := c.Run.TaskMax(); err != nil {
		bad("run.task_max_usd", "must be a non-negative number of dollars, got %q", c.Run.TaskMaxUSD)
	}
	for _, p := range []struct{ key, v string }{{"run.test_command", c.Run.TestCommand}, {"run.suite_command", c.Run.SuiteCommand}} {
		if strings.TrimSpace(p.v) == "" {
			bad(p.key, "must not be empty")
		}
	}
	if !contains(logLevels, c.Log.Level) {
		bad("log.level", "must be one of %s, got %q", strings.Join(logLevels, ", "), c.Log.Level)
	}
	// Zero would mean "unbounded" to lumberjack; the log must stay bounded.
	if c.Log.MaxSizeMB < 1 {
		bad("log.max_size_mb", "must be at least 1, got %d", c.Log.MaxSizeMB)
	}
	if c.Log.MaxBackups < 1 {
		bad("log.max_backups", "must be at least 1, got %d", c.Log.MaxBackups)
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateRunNATS checks run.executor and run.nats.*: one way to log in
// to NATS at most, and a URL for the nats executor.
func validateRunNATS(r Run, bad func(key, format string, args ...any)) {
	if executors := []string{executor.Local, executor.NATS}; !slices.Contains(executors, r.Executor) {
		bad("run.executor", "%q is not one of %s", r.Executor, strings.Join(executors, ", "))
	}
	n := r.NATS
	if r.Executor == executor.NATS && strings.TrimSpace(n.URL) == "" {
		bad("run.nats.url", "must be set for run.executor nats")
	}
	if strings.TrimSpace(n.URL) != "" {
		if err := CheckNATSURL(n.URL); err != nil {
			bad("run.nats.url", "%v", err)
		}
	}
	if (n.User == "") != (n.Password == "") {
		bad("run.nats.user", "run.nats.user and run.nats.password go together")
	}
	var ways []string
	for _, w := range []struct{ key, v string }{{"run.nats.creds", n.Creds}, {"run.nats.user", n.User}, {"run.nats.token", n.Token}, {"run.nats.nkey", n.NKey}} {
		if w.v != "" {
			ways = append(ways, w.key)
		}
	}
	if len(ways) > 1 {
		bad(ways[1], "only one way to log in to NATS: %s are all set", strings.Join(ways, ", "))
	}
	if (n.TLS.Cert == "") != (n.TLS.Key == "") {
		bad("run.nats.tls.cert", "run.nats.tls.cert and run.nats.tls.key go together")
	}
	// JetStream's own bounds on a stream's replicas.
	if n.Replicas < 1 || n.Replicas > 5 {
		bad("run.nats.replicas", "%d is not between 1 and 5", n.Replicas)
	}
}

// CheckNATSURL checks a NATS server list (run.nats.url, drover run --nats,
// drover worker --nats): URLs with a host and without credentials, which
// go in run.nats.user, .password, .token, .nkey or .creds: a run's options
// are stored with it, and a URL is shown in errors and drover run status.
func CheckNATSURL(list string) error {
	for _, one := range strings.Split(list, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			return fmt.Errorf("nats URL %q: not a URL with a host (nats://host:4222)", one)
		}
		if u.User != nil {
			return fmt.Errorf("nats URL of host %s: holds credentials; they go in run.nats.user, run.nats.password, run.nats.token, run.nats.nkey or run.nats.creds", u.Host)
		}
	}
	return nil
}
