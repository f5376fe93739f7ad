// Package config holds drover's settings and loads them from their layers:
// built-in defaults < the user file (~/.config/drover/config.yaml) < the
// project file (.drover/config.yaml) < DROVER_* environment variables <
// command-line flags.
//
// Loading is strict: a key drover does not know, or a value of the wrong
// type, is an error that names the key and where it came from, because a
// typo that silently falls back to a default is worse than a refusal.
//
// It is a leaf: plain values and their range checks, knowing no workflow.
// What the engine builds from them lives beside the engine
// (internal/loopconf for the convergence thresholds and loop.routes,
// internal/reviewconf for the reviewer); loop.routes is checked there,
// by loopconf.Check, which the supervisor calls beside Validate.
package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/proctag"
)

// Config is drover's effective configuration. Its koanf tags are the
// dotted config keys; its help tags are the flag help texts.
type Config struct {
	Queue      Queue      `koanf:"queue"`
	Hook       Hook       `koanf:"hook"`
	Supervisor Supervisor `koanf:"supervisor"`
	Loop       Loop       `koanf:"loop"`
	Review     Review     `koanf:"review"`
	Run        Run        `koanf:"run"`
	Log        Log        `koanf:"log"`
	Status     Status     `koanf:"status"`
	Events     Events     `koanf:"events"`
	Notify     Notify     `koanf:"notify"`
	UI         UI         `koanf:"ui"`
	Metrics    Metrics    `koanf:"metrics"`
}

// UI configures the dashboard listener: HTTP on 127.0.0.1 only, every
// request carrying the project's token (.drover/state/ui-token).
type UI struct {
	Enabled bool `koanf:"enabled" reload:"restart" help:"serve the dashboard listener on 127.0.0.1 (its address goes to .drover/state/ui-addr, its token to .drover/state/ui-token)"`
	Port    int  `koanf:"port" reload:"restart" help:"the dashboard listener's port on 127.0.0.1 (0: a free port)"`
}

// Metrics configures GET /metrics on the dashboard listener.
type Metrics struct {
	Enabled bool `koanf:"enabled" reload:"restart" help:"serve Prometheus metrics at /metrics on the dashboard listener (started for it even when ui.enabled is off), behind the same token"`
}

// Notify configures notifications: the events (the notify.on words) that
// are sent to a webhook, a command, or both. Neither set: nothing is sent.
type Notify struct {
	On      string        `koanf:"on" help:"events to notify of, separated by commas: done, stuck, needs-review, budget, review-fail, stale"`
	Webhook string        `koanf:"webhook" help:"http(s) URL that each notification is POSTed to as JSON (with a Slack-compatible text field); empty: none"`
	Command string        `koanf:"command" help:"command run with sh -c for each notification, the event as JSON on its stdin; empty: none"`
	Timeout time.Duration `koanf:"timeout" help:"time limit of one webhook request or one run of notify.command"`
}

// NotifyWords lists the accepted words of notify.on.
var NotifyWords = []string{"done", "stuck", "needs-review", "budget", "review-fail", "stale"}

// NotifyOn returns notify.on split on commas, without blanks.
func (c Config) NotifyOn() []string {
	var out []string
	for _, w := range strings.Split(c.Notify.On, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Events configures the event stream (GET /v1/events, drover events).
type Events struct {
	History int `koanf:"history" reload:"restart" help:"events kept in the store for a client to resume from by id (Last-Event-ID)"`
}

// Loop configures the loop workflow: its default budget, the project's
// check command, the convergence thresholds and the routing rules, as
// plain values (runs read the thresholds and routes too).
type Loop struct {
	MaxIterations int           `koanf:"max_iterations" help:"default iteration budget of drover loop start"`
	CheckCommand  string        `koanf:"check_command" help:"the project's check command (run with sh -c), required to pass when a loop has --require-checks"`
	CheckTimeout  time.Duration `koanf:"check_timeout" help:"time limit of one run of loop.check_command"`
	// MetricCommands are run in parallel after each iteration; their output
	// feeds the iteration's metrics.
	MetricCommands string `koanf:"metric_commands" help:"commands separated by ';' (each run with sh -c, in parallel, each limited by loop.check_timeout) whose test, build and lint output feeds each iteration's metrics"`
	PlateauWindow  int    `koanf:"plateau_window" help:"iterations without improvement that make a loop stuck_plateau"`
	ThrashRepeats  int    `koanf:"thrash_repeats" help:"iterations failing with the same error hash that make a loop thrashing"`
	MinToolCalls   int    `koanf:"min_tool_calls" help:"iterations with fewer tool calls get no reflection (low signal)"`
	// The convergence thresholds beside plateau_window, thrash_repeats
	// and min_tool_calls; internal/loopconf builds convergence.Thresholds
	// from them.
	SuccessPassRate  float64 `koanf:"success_pass_rate" help:"test pass rate (0 to 1) at which a loop is converged_success"`
	MinImprovement   float64 `koanf:"min_improvement" help:"rise in test pass rate (0 to 1) over loop.plateau_window iterations that counts as progress; less is stuck_plateau"`
	RequireLintClean bool    `koanf:"require_lint_clean" help:"converged_success also needs the last lint run, if any, to be clean"`
	EndOnConverged   bool    `koanf:"end_on_converged" help:"a converged_success status ends a loop that does not require checks (false: only the completion promise and the budgets end loops)"`
	ConvergedStreak  int     `koanf:"converged_streak" help:"measured iterations in a row that must be converged_success before loop.end_on_converged ends the loop (at least 1; the default 2 keeps a first run of tests that already passed from ending it)"`
	StuckLimit       int     `koanf:"stuck_limit" help:"iterations a loop may stay stuck_plateau or thrashing after the one that first found it stuck (routed to the architect) before drover ends it (0: never)"`
	// Routes is kept as the user wrote it; internal/loopconf parses and
	// checks it, so that config need not know the router.
	Routes string `koanf:"routes" help:"routing rules, first match wins, e.g. 'status=thrashing -> architect; last_outcome=tests_failed -> debugger; anything -> developer' (empty: the defaults)"`
}

// MetricCommandList returns loop.metric_commands split on ';', without
// blanks.
func (c Config) MetricCommandList() []string {
	var out []string
	for _, cmd := range strings.Split(c.Loop.MetricCommands, ";") {
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			out = append(out, cmd)
		}
	}
	return out
}

// Review configures reviewer processes: the plan workflow's reviews and the
// loop's checkpoints.
type Review struct {
	MaxReviews  int           `koanf:"max_reviews" help:"reviews per review cycle before the hard stop (0 skips reviews)"`
	CleanStreak int           `koanf:"clean_streak" help:"consecutive clean reviews that pass a cycle"`
	Models      string        `koanf:"models" help:"comma-separated reviewer models, used in turn (alternate) or all at once (parallel); each runs on the CLI its name belongs to (opus, sonnet, haiku, claude-*: claude; gpt*, o3, *codex*: codex; gemini*: gemini), or the one a cli:model form names (codex:my-model), other names on review.cli"`
	Strategy    string        `koanf:"strategy" help:"alternate or parallel"`
	Quorum      string        `koanf:"quorum" help:"all or majority (parallel reviews)"`
	Timeout     time.Duration `koanf:"timeout" help:"time limit of one reviewer process; its process group is killed past it"`
	MaxParallel int           `koanf:"max_parallel" help:"reviewer processes at once across the whole supervisor (a reload resizes the limit; running reviewers are not stopped)"`
	CLI         string        `koanf:"cli" help:"reviewer CLI for the models whose name names none: claude, codex, gemini or custom"`
	Command     string        `koanf:"command" help:"custom reviewer command template, e.g. mycli --model {{model}} {{prompt}}"`
	BudgetUSD   string        `koanf:"budget_usd" number:"text" help:"dollar budget per reviewer run (empty: none)"`
	CountMinor  bool          `koanf:"count_minor" help:"minor findings also make a plan review unclean (by default only blocking findings do)"`
	Hold        time.Duration `koanf:"hold" help:"how long a Stop that starts or waits for a plan review is held for the reviewer's answer, which it then gives at once (0: never; a longer review is answered with the drover plan wait instruction); with hook.budget.stop it stays below the Stop timeout in hooks.json"`
}

// Budget returns review.budget_usd in dollars; 0 means no budget.
func (r Review) Budget() (float64, error) { return ParseUSD(r.BudgetUSD) }

// Run configures `drover run`: the defaults of its flags, read when a run
// starts (a run keeps its options when it is resumed).
type Run struct {
	Concurrency      int           `koanf:"concurrency" help:"agent processes of a drover run at once (drover run --concurrency)"`
	MaxIterations    int           `koanf:"max_iterations" help:"agent runs per task of drover run before the task fails (drover run --max-iterations)"`
	Agent            string        `koanf:"agent" help:"agent of drover run: claude, codex or gemini (optionally :MODEL, as codex:gpt-5-codex), run headless with its JSON events read, or a command template with {{prompt}}, {{task}}, {{iteration}}, {{run}}, {{worktree}} (empty: claude)"`
	TestCommand      string        `koanf:"test_command" help:"targeted test command of drover run, run in the task's work tree; {{packages}} stands for the task's tests"`
	SuiteCommand     string        `koanf:"suite_command" help:"suite command of drover run, run in the main work tree after each wave"`
	IterationTimeout time.Duration `koanf:"iteration_timeout" help:"time limit of one agent process of drover run; its process group is killed past it"`
	TaskMaxUSD       string        `koanf:"task_max_usd" number:"text" help:"dollars the agents of one task of drover run may cost, as they report it, before the task fails (empty or 0: no limit; drover run --task-max-usd)"`
	LimitRetries     int           `koanf:"limit_retries" help:"how often in a row a task of drover run whose agent met a usage or rate limit (HTTP 429 or 529, usage limit reached) waits for the limit's reset, or a backoff, and tries again without spending an iteration; the next limit fails it (0: never wait)"`
	Review           bool          `koanf:"review" help:"a reviewer (review.cli, review.models) must pass each task of drover run before it is done (drover run --no-review turns it off for one run)"`
	Executor         string        `koanf:"executor" help:"where drover run works its iterations: local (git work trees on this machine) or nats (jobs for drover workers over NATS JetStream, run.nats.*) (drover run --executor)"`
	NATS             RunNATS       `koanf:"nats"`
}

// RunNATS is how the nats executor of drover run reaches NATS. The
// credentials come from here (the config file or DROVER_RUN_NATS_*
// variables), never from a task graph.
type RunNATS struct {
	URL      string     `koanf:"url" help:"NATS server URL(s) of the nats executor, comma-separated (drover run --nats)"`
	Creds    string     `koanf:"creds" help:"NATS credentials file (JWT and NKey seed) of the nats executor"`
	User     string     `koanf:"user" help:"NATS user of the nats executor (with run.nats.password)"`
	Password string     `koanf:"password" secret:"true" help:"NATS password of the nats executor"`
	Token    string     `koanf:"token" secret:"true" help:"NATS token of the nats executor"`
	NKey     string     `koanf:"nkey" help:"NATS NKey seed file of the nats executor"`
	TLS      RunNATSTLS `koanf:"tls"`
	Replicas int        `koanf:"replicas" help:"copies of the nats executor's jobs, results and bundles on a NATS cluster (the streams' and the object store's replicas): 1 to 5, at most the cluster's size; a higher count already set on NATS is kept"`
}

// RunNATSTLS is the TLS of the nats executor's connection.
type RunNATSTLS struct {
	CA   string `koanf:"ca" help:"CA certificate file the nats executor checks the NATS server's certificate with"`
	Cert string `koanf:"cert" help:"client certificate file of the nats executor (with run.nats.tls.key)"`
	Key  string `koanf:"key" help:"client key file of the nats executor"`
}

// TaskMax returns run.task_max_usd in dollars; 0 means no limit.
func (r Run) TaskMax() (float64, error) { return ParseUSD(r.TaskMaxUSD) }

// ParseUSD parses a dollar amount written in config ("0.50", "2"), the
// one parse of every such key: blank means 0 (none); a negative, NaN or
// infinite amount, or one that is not a number, is an error.
func ParseUSD(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of dollars", s)
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a non-negative number of dollars", s)
	}
	return v, nil
}

// Queue bounds the task queue loop.
type Queue struct {
	MaxIterations  int  `koanf:"max_iterations" help:"stops allowed per queue run before drover turns the queue off"`
	GitCommitCheck bool `koanf:"git_commit_check" help:"block a stop while there are uncommitted changes outside .drover/"`
}

// Hook holds the hook client's time limits.
type Hook struct {
	Budget       Budgets       `koanf:"budget"`
	StartTimeout time.Duration `koanf:"start_timeout" help:"how long a hook waits for a supervisor it started"`
}

// Budgets is how long the hook client may take per event before it gives
// up and lets the agent go on. Each stays below the timeout hooks.json sets
// for its event (see HookTimeout), so drover's own fail-open answer always
// arrives before Claude Code kills the hook.
type Budgets struct {
	SessionStart     time.Duration `koanf:"session_start" help:"time budget of drover hook session-start"`
	UserPromptSubmit time.Duration `koanf:"user_prompt_submit" help:"time budget of drover hook user-prompt-submit"`
	Stop             time.Duration `koanf:"stop" help:"time budget of drover hook stop"`
	SubagentStop     time.Duration `koanf:"subagent_stop" help:"time budget of drover hook subagent-stop"`
	PreCompact       time.Duration `koanf:"pre_compact" help:"time budget of drover hook pre-compact"`
	SessionEnd       time.Duration `koanf:"session_end" help:"time budget of drover hook session-end"`
}

// Supervisor tunes the supervisor daemon and its session actors.
type Supervisor struct {
	IdleTimeout     time.Duration `koanf:"idle_timeout" reload:"restart" help:"a session actor idle this long is stopped and later recovered from the store"`
	RestartMax      int           `koanf:"restart_max" reload:"restart" help:"failures of one session actor restarted within supervisor.restart_window (0: never restart)"`
	RestartWindow   time.Duration `koanf:"restart_window" reload:"restart" help:"window over which supervisor.restart_max counts failures"`
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout" reload:"restart" help:"how long a stopping supervisor waits for requests in flight"`
}

// Log configures the supervisor's log file.
type Log struct {
	Level      string `koanf:"level" help:"log level: debug, info, warn or error"`
	MaxSizeMB  int    `koanf:"max_size_mb" reload:"restart" help:"the log file is rotated at this size in megabytes"`
	MaxBackups int    `koanf:"max_backups" reload:"restart" help:"rotated log files kept"`
}

// Status tunes what drover status says of a session's health.
type Status struct {
	StaleAfter time.Duration `koanf:"stale_after" help:"a session whose workflow runs and that has sent no hook for longer than this is shown as stale: its agent may have died without a Stop (0: never stale)"`
}

// Defaults returns the built-in configuration, the bottom layer.
func Defaults() Config {
	return Config{
		Queue: Queue{MaxIterations: 50, GitCommitCheck: true},
		Hook: Hook{
			Budget: Budgets{
				SessionStart:     5 * time.Second,
				UserPromptSubmit: 10 * time.Second,
				Stop:             20 * time.Second,
				SubagentStop:     10 * time.Second,
				PreCompact:       10 * time.Second,
				SessionEnd:       1 * time.Second,
			},
			StartTimeout: 3 * time.Second,
		},
		Events: Events{History: 10000},
		Notify: Notify{On: strings.Join(NotifyWords, ","), Timeout: 10 * time.Second},
		Supervisor: Supervisor{
			IdleTimeout:     10 * time.Minute,
			RestartMax:      5,
			RestartWindow:   time.Minute,
			ShutdownTimeout: 10 * time.Second,
		},
		Loop: Loop{
			MaxIterations: 20,
			CheckTimeout:  10 * time.Minute,
			PlateauWindow: 3,
			ThrashRepeats: 3,
			MinToolCalls:  10,
			// convergence.DefaultThresholds, seed 004's.
			SuccessPassRate: 0.95,
			MinImprovement:  0.05,
			// Seed 004's loop exits when its quality criteria are met
			// (e2e-converge-exit-08), and the issue ends loops that are stuck.
			EndOnConverged:  true,
			ConvergedStreak: 2,
			StuckLimit:      3,
		},
		Review: Review{
			MaxReviews:  8,
			CleanStreak: 2,
			Models:      "opus,sonnet",
			Strategy:    "alternate",
			Quorum:      "all",
			Timeout:     10 * time.Minute,
			MaxParallel: 2,
			CLI:         "claude",
			Hold:        DefaultReviewHold,
		},
		Run: Run{
			Concurrency:      2,
			MaxIterations:    3,
			TestCommand:      "go test {{packages}}",
			SuiteCommand:     "go test ./...",
			IterationTimeout: time.Hour,
			LimitRetries:     5,
			Review:           true,
			Executor:         executor.Local,
			NATS:             RunNATS{Replicas: 1},
		},
		Log:    Log{Level: "info", MaxSizeMB: 10, MaxBackups: 3},
		Status: Status{StaleAfter: 30 * time.Minute},
	}
}

// ReviewModels returns review.models as a list, without empty entries.
func (c Config) ReviewModels() []string {
	var out []string
	for _, m := range strings.Split(c.Review.Models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// ParallelReview reports whether reviews run in parallel: the parallel
// strategy with more than one model (one model has nothing to run beside).
func (c Config) ParallelReview() bool {
	return c.Review.Strategy == "parallel" && len(c.ReviewModels()) > 1
}

// HookTimeout returns the timeout plugin/hooks.json gives the hook command
// of event e (0 for an unknown event). Claude Code kills a hook past it, so
// every budget must stay strictly below it.
func HookTimeout(e hook.Event) time.Duration {
	switch e {
	case hook.SessionStart:
		return 10 * time.Second
	case hook.UserPromptSubmit:
		return 15 * time.Second
	case hook.Stop:
		// Room for review.hold: a Stop may wait for a reviewer.
		return 600 * time.Second
	case hook.SubagentStop:
		return 15 * time.Second
	case hook.PreCompact:
		return 15 * time.Second
	case hook.SessionEnd:
		return 2 * time.Second
	}
	return 0
}

// Budget returns the hook client's time budget for event e (0 for an
// unknown event).
func (c Config) Budget(e hook.Event) time.Duration {
	b := c.Hook.Budget
	switch e {
	case hook.SessionStart:
		return b.SessionStart
	case hook.UserPromptSubmit:
		return b.UserPromptSubmit
	case hook.Stop:
		return b.Stop
	case hook.SubagentStop:
		return b.SubagentStop
	case hook.PreCompact:
		return b.PreCompact
	case hook.SessionEnd:
		return b.SessionEnd
	}
	return 0
}

// DefaultReviewHold is review.hold's built-in value: most reviews end
// within it, and with the Stop budget it stays below the Stop timeout in
// hooks.json.
const DefaultReviewHold = 5 * time.Minute

// budgetKey is the config key of event e's budget: hook.budget.stop,
// hook.budget.session_start, ...
func budgetKey(e hook.Event) string {
	return "hook.budget." + strings.ReplaceAll(string(e), "-", "_")
}

// HiddenSecret is what YAML shows of a secret key (tag secret:"true":
// run.nats.password, run.nats.token) that is set.
const HiddenSecret = "<hidden>"

// YAML renders the configuration as a config file would hold it, durations
// in Go's notation ("10m0s"), so that it loads back unchanged; but a set
// secret shows as HiddenSecret: drover config and the supervisor's config
// API print it, and it must not reach a terminal, a log or a bug report.
func (c Config) YAML() ([]byte, error) {
	flat := make(map[string]any)
	for _, f := range fields() {
		v := f.get(c)
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		if f.secret && v != "" {
			v = HiddenSecret
		}
		flat[f.key] = v
	}
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(flat, "."), nil); err != nil {
		return nil, fmt.Errorf("rendering config: %w", err)
	}
	b, err := k.Marshal(yaml.Parser())
	if err != nil {
		return nil, fmt.Errorf("rendering config as YAML: %w", err)
	}
	return b, nil
}

// Keys returns every config key, dotted and sorted.
func Keys() []string {
	fs := fields()
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	sort.Strings(keys)
	return keys
}

// RestartKeys returns, sorted, the keys a running supervisor reads only when
// it starts (tagged reload:"restart"): a change to them in a reloaded file
// takes effect at the next supervisor start. Every other key is read where
// it is used, from the configuration as last reloaded.
func RestartKeys() []string {
	var keys []string
	for _, f := range fields() {
		if f.restart {
			keys = append(keys, f.key)
		}
	}
	sort.Strings(keys)
	return keys
}

// RestartChanges returns the restart keys (see RestartKeys) whose values
// differ between old and next, in key order, so a reload can say which of
// its changes wait for the next start.
func RestartChanges(old, next Config) []string {
	var keys []string
	for _, f := range fields() {
		if f.restart && f.get(old) != f.get(next) {
			keys = append(keys, f.key)
		}
	}
	sort.Strings(keys)
	return keys
}

// EnvName returns the environment variable that sets key:
// queue.max_iterations -> DROVER_QUEUE_MAX_ITERATIONS.
func EnvName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

const envPrefix = "DROVER_"

// IsNonConfigEnv reports whether name is a DROVER_* variable that other
// parts of drover read and that is therefore not a config key: UnknownEnv
// does not warn about these.
func IsNonConfigEnv(name string) bool {
	switch name {
	case "DROVER_REVIEWER", "DROVER_SOCKET", "DROVER_BIN", "DROVER_HOOK_DISABLE":
		return true
	case "DROVER_RUN_ID", "DROVER_TASK_ID", "DROVER_ITERATION":
		// Set by `drover run` in the environment of its agents, where
		// drover's own hooks and commands run too.
		return true
	case proctag.SupervisorKey, proctag.AgentKey, proctag.ReviewKey:
		// The tags by which the supervisor and its watchdog find what its
		// agents and reviewers left behind, also inherited by the hooks
		// and commands those run.
		return true
	}
	return false
}

// AddFlags registers one flag per config key on fs, named by the dotted key
// (--queue.max_iterations), with the built-in default as its value. Keys
// fs already has a flag for are left alone. Pass fs as Sources.Flags: only
// the flags the user sets override the lower layers.
func AddFlags(fs *pflag.FlagSet) {
	def := Defaults()
	for _, f := range fields() {
		if fs.Lookup(f.key) != nil {
			continue
		}
		help := f.help + " (env " + EnvName(f.key) + ")"
		if f.restart {
			help += "; a running supervisor applies it at its next start"
		}
		switch v := f.get(def).(type) {
		case int:
			fs.Int(f.key, v, help)
		case bool:
			fs.Bool(f.key, v, help)
		case string:
			fs.String(f.key, v, help)
		case time.Duration:
			fs.Duration(f.key, v, help)
		case float64:
			fs.Float64(f.key, v, help)
		}
	}
}

// kind is the type of a config value as the loaders see it.
type kind int

const (
	kindInt kind = iota
	kindBool
	kindString
	kindDuration
	kindFloat
)

// field is one config key and where it lives in Config.
type field struct {
	key   string
	index []int
	kind  kind
	help  string
	// restart marks a key the supervisor reads only at start.
	restart bool
	// numberText marks a string key holding a number where empty means
	// none (the dollar limits, tag number:"text"): a file may write it as
	// a YAML number, as people write dollars.
	numberText bool
	// secret marks a credential (tag secret:"true"), hidden by YAML.
	secret bool
}

func (f field) get(c Config) any {
	return reflect.ValueOf(c).FieldByIndex(f.index).Interface()
}

var durationType = reflect.TypeFor[time.Duration]()

// fields lists every leaf of Config, in declaration order. It is derived
// from the struct so that keys, flags, env names and docs cannot drift.
func fields() []field {
	var out []field
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			key := prefix + sf.Tag.Get("koanf")
			idx := append(append([]int(nil), index...), i)
			restart := sf.Tag.Get("reload") == "restart"
			switch {
			case sf.Type == durationType:
				out = append(out, field{key: key, index: idx, kind: kindDuration, help: sf.Tag.Get("help"), restart: restart})
			case sf.Type.Kind() == reflect.Struct:
				walk(sf.Type, key+".", idx)
			case sf.Type.Kind() == reflect.Int:
				out = append(out, field{key: key, index: idx, kind: kindInt, help: sf.Tag.Get("help"), restart: restart})
			case sf.Type.Kind() == reflect.Bool:
				out = append(out, field{key: key, index: idx, kind: kindBool, help: sf.Tag.Get("help"), restart: restart})
			case sf.Type.Kind() == reflect.String:
				out = append(out, field{
					key: key, index: idx, kind: kindString, help: sf.Tag.Get("help"), restart: restart,
					numberText: sf.Tag.Get("number") == "text", secret: sf.Tag.Get("secret") == "true",
				})
			case sf.Type.Kind() == reflect.Float64:
				out = append(out, field{key: key, index: idx, kind: kindFloat, help: sf.Tag.Get("help"), restart: restart})
			}
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return out
}
