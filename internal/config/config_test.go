package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/drover-dev/drover/internal/hook"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMetricCommandList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ; ;", nil},
		{"go test ./... ; go vet ./...;golangci-lint run", []string{"go test ./...", "go vet ./...", "golangci-lint run"}},
	} {
		c := Defaults()
		c.Loop.MetricCommands = tc.in
		if got := c.MetricCommandList(); !slices.Equal(got, tc.want) {
			t.Errorf("MetricCommandList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	want := []string{
		"events.history",
		"hook.budget.pre_compact",
		"hook.budget.session_end",
		"hook.budget.session_start",
		"hook.budget.stop",
		"hook.budget.subagent_stop",
		"hook.budget.user_prompt_submit",
		"hook.start_timeout",
		"log.level",
		"log.max_backups",
		"log.max_size_mb",
		"loop.check_command",
		"loop.check_timeout",
		"loop.converged_streak",
		"loop.end_on_converged",
		"loop.max_iterations",
		"loop.metric_commands",
		"loop.min_improvement",
		"loop.min_tool_calls",
		"loop.plateau_window",
		"loop.require_lint_clean",
		"loop.routes",
		"loop.stuck_limit",
		"loop.success_pass_rate",
		"loop.thrash_repeats",
		"metrics.enabled",
		"notify.command",
		"notify.on",
		"notify.timeout",
		"notify.webhook",
		"queue.git_commit_check",
		"queue.max_iterations",
		"review.budget_usd",
		"review.clean_streak",
		"review.cli",
		"review.command",
		"review.count_minor",
		"review.hold",
		"review.max_parallel",
		"review.max_reviews",
		"review.models",
		"review.quorum",
		"review.strategy",
		"review.timeout",
		"run.agent",
		"run.concurrency",
		"run.executor",
		"run.iteration_timeout",
		"run.limit_retries",
		"run.max_iterations",
		"run.nats.creds",
		"run.nats.nkey",
		"run.nats.password",
		"run.nats.replicas",
		"run.nats.tls.ca",
		"run.nats.tls.cert",
		"run.nats.tls.key",
		"run.nats.token",
		"run.nats.url",
		"run.nats.user",
		"run.review",
		"run.suite_command",
		"run.task_max_usd",
		"run.test_command",
		"status.stale_after",
		"supervisor.idle_timeout",
		"supervisor.restart_max",
		"supervisor.restart_window",
		"supervisor.shutdown_timeout",
		"ui.enabled",
		"ui.port",
	}
	if got := Keys(); !slices.Equal(got, want) {
		t.Fatalf("Keys() = %q\nwant %q", got, want)
	}
	seen := map[string]string{}
	for _, k := range Keys() {
		name := EnvName(k)
		if other, dup := seen[name]; dup {
			t.Errorf("keys %q and %q share the variable %s", other, k, name)
		}
		seen[name] = k
		if IsNonConfigEnv(name) {
			t.Errorf("config key %q maps to %s, which is allowlisted as a non-config variable", k, name)
		}
	}
	for _, f := range fields() {
		if f.help == "" {
			t.Errorf("key %q has no help text", f.key)
		}
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"queue.max_iterations": "DROVER_QUEUE_MAX_ITERATIONS",
		"hook.budget.stop":     "DROVER_HOOK_BUDGET_STOP",
		"log.level":            "DROVER_LOG_LEVEL",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestIsNonConfigEnv(t *testing.T) {
	for name, want := range map[string]bool{
		"DROVER_REVIEWER":       true,
		"DROVER_SOCKET":         true,
		"DROVER_BIN":            true,
		"DROVER_HOOK_DISABLE":   true,
		"DROVER_RUN_ID":         true,
		"DROVER_TASK_ID":        true,
		"DROVER_ITERATION":      true,
		"DROVER_SUPERVISOR_RUN": true,
		"DROVER_AGENT_RUN":      true,
		"DROVER_REVIEW_RUN":     true,
		"DROVER_LOG_LEVEL":      false,
		"DROVER_":               false,
		"drover_bin":            false,
	} {
		if got := IsNonConfigEnv(name); got != want {
			t.Errorf("IsNonConfigEnv(%q) = %v, want %v", name, got, want)
		}
	}
}

// The plugin's hooks.json is the ceiling every budget must stay under; a
// change there without one here would let a hook be killed before it
// answers.
func TestHookTimeoutMatchesHooksJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "plugin", "hooks", "hooks.json"))
	if err != nil {
		t.Fatalf("reading hooks.json: %v", err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parsing hooks.json: %v", err)
	}
	for _, e := range hook.Events {
		groups := doc.Hooks[e.ClaudeName()]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 {
			t.Errorf("%s: want one hook in hooks.json, got %+v", e, groups)
			continue
		}
		got := time.Duration(groups[0].Hooks[0].Timeout * float64(time.Second))
		if want := HookTimeout(e); got != want {
			t.Errorf("%s: hooks.json timeout %v, HookTimeout %v", e, got, want)
		}
		if d := Defaults().Budget(e); d >= got {
			t.Errorf("%s: default budget %v not below the hooks.json timeout %v", e, d, got)
		}
	}
	if HookTimeout("nope") != 0 {
		t.Errorf("HookTimeout of an unknown event is not 0")
	}
}

func TestBudget(t *testing.T) {
	var c Config
	c.Hook.Budget = Budgets{SessionStart: 1, UserPromptSubmit: 2, Stop: 3, SubagentStop: 4, PreCompact: 5, SessionEnd: 6}
	want := map[hook.Event]time.Duration{
		hook.SessionStart: 1, hook.UserPromptSubmit: 2, hook.Stop: 3,
		hook.SubagentStop: 4, hook.PreCompact: 5, hook.SessionEnd: 6,
		"nope": 0,
	}
	for e, w := range want {
		if got := c.Budget(e); got != w {
			t.Errorf("Budget(%s) = %v, want %v", e, got, w)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantKey string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"one iteration", func(c *Config) { c.Queue.MaxIterations = 1 }, ""},
		{"zero iterations", func(c *Config) { c.Queue.MaxIterations = 0 }, "queue.max_iterations"},
		{"budget just below ceiling", func(c *Config) { c.Hook.Budget.Stop, c.Review.Hold = 600*time.Second-time.Millisecond, 0 }, ""},
		{"budget at ceiling", func(c *Config) { c.Hook.Budget.Stop = 600 * time.Second }, "hook.budget.stop"},
		{"no hold", func(c *Config) { c.Review.Hold = 0 }, ""},
		{"negative hold", func(c *Config) { c.Review.Hold = -time.Second }, "review.hold"},
		{"hold and budget just below ceiling", func(c *Config) { c.Review.Hold = 600*time.Second - c.Hook.Budget.Stop - time.Millisecond }, ""},
		{"hold and budget at ceiling", func(c *Config) { c.Review.Hold = 600*time.Second - c.Hook.Budget.Stop }, "review.hold"},
		{"hold at ceiling", func(c *Config) { c.Review.Hold = 600 * time.Second }, "review.hold"},
		{"budget above ceiling", func(c *Config) { c.Hook.Budget.SessionEnd = 5 * time.Second }, "hook.budget.session_end"},
		{"zero budget", func(c *Config) { c.Hook.Budget.UserPromptSubmit = 0 }, "hook.budget.user_prompt_submit"},
		{"negative budget", func(c *Config) { c.Hook.Budget.PreCompact = -time.Second }, "hook.budget.pre_compact"},
		{"subagent budget at ceiling", func(c *Config) { c.Hook.Budget.SubagentStop = 15 * time.Second }, "hook.budget.subagent_stop"},
		{"session start budget at ceiling", func(c *Config) { c.Hook.Budget.SessionStart = 10 * time.Second }, "hook.budget.session_start"},
		{"zero start timeout", func(c *Config) { c.Hook.StartTimeout = 0 }, "hook.start_timeout"},
		{"zero idle timeout", func(c *Config) { c.Supervisor.IdleTimeout = 0 }, "supervisor.idle_timeout"},
		{"no restarts", func(c *Config) { c.Supervisor.RestartMax = 0 }, ""},
		{"negative restarts", func(c *Config) { c.Supervisor.RestartMax = -1 }, "supervisor.restart_max"},
		{"zero restart window", func(c *Config) { c.Supervisor.RestartWindow = 0 }, "supervisor.restart_window"},
		{"zero shutdown timeout", func(c *Config) { c.Supervisor.ShutdownTimeout = 0 }, "supervisor.shutdown_timeout"},
		{"debug level", func(c *Config) { c.Log.Level = "debug" }, ""},
		{"error level", func(c *Config) { c.Log.Level = "error" }, ""},
		{"unknown level", func(c *Config) { c.Log.Level = "verbose" }, "log.level"},
		{"upper-case level", func(c *Config) { c.Log.Level = "INFO" }, "log.level"},
		{"zero log size", func(c *Config) { c.Log.MaxSizeMB = 0 }, "log.max_size_mb"},
		{"zero backups", func(c *Config) { c.Log.MaxBackups = 0 }, "log.max_backups"},
		{"never stale", func(c *Config) { c.Status.StaleAfter = 0 }, ""},
		{"negative stale after", func(c *Config) { c.Status.StaleAfter = -time.Second }, "status.stale_after"},
		{"notify of nothing", func(c *Config) { c.Notify.On = "" }, ""},
		{"notify words", func(c *Config) { c.Notify.On = " done , review-fail" }, ""},
		{"unknown notify word", func(c *Config) { c.Notify.On = "done,finished" }, "notify.on"},
		{"https webhook", func(c *Config) { c.Notify.Webhook = "https://hooks.example.com/T0/B0/secret" }, ""},
		{"webhook without scheme", func(c *Config) { c.Notify.Webhook = "hooks.example.com/x" }, "notify.webhook"},
		{"file webhook", func(c *Config) { c.Notify.Webhook = "file:///tmp/x" }, "notify.webhook"},
		{"zero notify timeout", func(c *Config) { c.Notify.Timeout = 0 }, "notify.timeout"},
		{"zero loop iterations", func(c *Config) { c.Loop.MaxIterations = 0 }, "loop.max_iterations"},
		{"zero plateau window", func(c *Config) { c.Loop.PlateauWindow = 0 }, "loop.plateau_window"},
		{"zero check timeout", func(c *Config) { c.Loop.CheckTimeout = 0 }, "loop.check_timeout"},
		{"never end a stuck loop", func(c *Config) { c.Loop.StuckLimit = 0 }, ""},
		{"negative stuck limit", func(c *Config) { c.Loop.StuckLimit = -1 }, "loop.stuck_limit"},
		{"converged streak below 1", func(c *Config) { c.Loop.ConvergedStreak = 0 }, "loop.converged_streak"},
		{"full pass rate", func(c *Config) { c.Loop.SuccessPassRate = 1 }, ""},
		{"zero pass rate", func(c *Config) { c.Loop.SuccessPassRate = 0 }, "loop.success_pass_rate"},
		{"pass rate as a percentage", func(c *Config) { c.Loop.SuccessPassRate = 95 }, "loop.success_pass_rate"},
		{"NaN pass rate", func(c *Config) { c.Loop.SuccessPassRate = math.NaN() }, "loop.success_pass_rate"},
		{"zero improvement", func(c *Config) { c.Loop.MinImprovement = 0 }, "loop.min_improvement"},
		{"negative improvement", func(c *Config) { c.Loop.MinImprovement = -0.1 }, "loop.min_improvement"},
		{"no reviews", func(c *Config) { c.Review.MaxReviews = 0 }, ""},
		{"negative reviews", func(c *Config) { c.Review.MaxReviews = -1 }, "review.max_reviews"},
		{"no models", func(c *Config) { c.Review.Models = " , " }, "review.models"},
		{"parallel strategy", func(c *Config) { c.Review.Strategy = "parallel" }, ""},
		{"unknown strategy", func(c *Config) { c.Review.Strategy = "random" }, "review.strategy"},
		{"unknown quorum", func(c *Config) { c.Review.Quorum = "most" }, "review.quorum"},
		{"custom cli without command", func(c *Config) { c.Review.CLI = "custom" }, "review.command"},
		{"unknown cli", func(c *Config) { c.Review.CLI = "gpt" }, "review.cli"},
		{"codex cli with its models", func(c *Config) { c.Review.CLI, c.Review.Models = "codex", "gpt-5-codex,gpt-5" }, ""},
		{"gemini cli with its models", func(c *Config) { c.Review.CLI, c.Review.Models = "gemini", "gemini-2.5-pro" }, ""},
		{"codex cli with the default claude aliases (run on claude)", func(c *Config) { c.Review.CLI = "codex" }, ""},
		{"gemini cli with a claude model (run on claude)", func(c *Config) { c.Review.CLI, c.Review.Models = "gemini", "gemini-2.5-pro,Claude-Sonnet-4-5" }, ""},
		{"claude and codex models in one cycle", func(c *Config) { c.Review.Models = "opus,gpt-5-codex" }, ""},
		{"explicit cli:model", func(c *Config) { c.Review.Models = "opus,codex:my-model,gemini:gemini-2.5-pro" }, ""},
		{"unknown cli prefix", func(c *Config) { c.Review.Models = "opus,ollama:llama3" }, "review.models"},
		{"cli prefix without a model", func(c *Config) { c.Review.Models = "codex:" }, "review.models"},
		{"custom cli takes its own model names", func(c *Config) {
			c.Review.CLI, c.Review.Command, c.Review.Models = "custom", "rev {{prompt}}", "llama3:8b"
		}, ""},
		{"budget not a number", func(c *Config) { c.Review.BudgetUSD = "ten" }, "review.budget_usd"},
		{"budget", func(c *Config) { c.Review.BudgetUSD = "0.50" }, ""},
		{"negative budget", func(c *Config) { c.Review.BudgetUSD = "-0.5" }, "review.budget_usd"},
		{"infinite budget", func(c *Config) { c.Review.BudgetUSD = "Inf" }, "review.budget_usd"},
		{"task budget", func(c *Config) { c.Run.TaskMaxUSD = "2.5" }, ""},
		{"task budget not a number", func(c *Config) { c.Run.TaskMaxUSD = "lots" }, "run.task_max_usd"},
		{"negative task budget", func(c *Config) { c.Run.TaskMaxUSD = "-1" }, "run.task_max_usd"},
		{"never wait for a limit", func(c *Config) { c.Run.LimitRetries = 0 }, ""},
		{"negative limit retries", func(c *Config) { c.Run.LimitRetries = -1 }, "run.limit_retries"},
		{"unknown executor", func(c *Config) { c.Run.Executor = "ssh" }, "run.executor"},
		{"nats executor", func(c *Config) { c.Run.Executor, c.Run.NATS.URL = "nats", "nats://127.0.0.1:4222" }, ""},
		{"nats executor without url", func(c *Config) { c.Run.Executor = "nats" }, "run.nats.url"},
		{"nats url with a password", func(c *Config) { c.Run.NATS.URL = "nats://127.0.0.1:4222,nats://u:pw@h:4222" }, "run.nats.url"},
		{"nats url with a token", func(c *Config) { c.Run.NATS.URL = "nats://tok@h:4222" }, "run.nats.url"},
		{"nats user without password", func(c *Config) { c.Run.NATS.User = "drover" }, "run.nats.user"},
		{"nats user and password", func(c *Config) { c.Run.NATS.User, c.Run.NATS.Password = "drover", "pw" }, ""},
		{"nats token and nkey", func(c *Config) { c.Run.NATS.Token, c.Run.NATS.NKey = "t", "seed.nk" }, "run.nats.nkey"},
		{"nats tls cert without key", func(c *Config) { c.Run.NATS.TLS.Cert = "client.pem" }, "run.nats.tls.cert"},
		{"nats replicas of a three-node cluster", func(c *Config) { c.Run.NATS.Replicas = 3 }, ""},
		{"nats replicas zero", func(c *Config) { c.Run.NATS.Replicas = 0 }, "run.nats.replicas"},
		{"nats replicas above five", func(c *Config) { c.Run.NATS.Replicas = 6 }, "run.nats.replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %q", tt.wantKey)
			}
			if !strings.Contains(err.Error(), `"`+tt.wantKey+`"`) {
				t.Fatalf("Validate() = %v, want it to name %q", err, tt.wantKey)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Defaults()
	c.Queue.MaxIterations = 0
	c.Log.Level = "loud"
	c.Run.Concurrency = 0
	c.Run.TestCommand = " "
	c.Run.IterationTimeout = 0
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	for _, key := range []string{"queue.max_iterations", "log.level", "run.concurrency", "run.test_command", "run.iteration_timeout"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestYAMLGolden(t *testing.T) {
	got, err := Defaults().YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "defaults.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("YAML() differs from %s (run with -update to accept):\n%s", golden, got)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	c := Defaults()
	c.Queue.MaxIterations = 7
	c.Queue.GitCommitCheck = false
	c.Hook.Budget.Stop = 1500 * time.Millisecond
	c.Hook.StartTimeout = 90 * time.Second
	c.Supervisor.IdleTimeout = 2*time.Hour + 3*time.Minute
	c.Supervisor.RestartMax = 0
	c.Log.Level = "debug"
	c.Log.MaxBackups = 9

	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, y, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(Sources{ProjectFile: path})
	if err != nil {
		t.Fatalf("loading the rendered YAML: %v\n%s", err, y)
	}
	if got != c {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v\nyaml:\n%s", got, c, y)
	}
}

func TestAddFlags(t *testing.T) {
	fs := pflag.NewFlagSet("drover", pflag.ContinueOnError)
	fs.Int("queue.max_iterations", 1, "registered by someone else")
	AddFlags(fs)
	AddFlags(fs) // idempotent: a second call must not panic on duplicates
	for _, k := range Keys() {
		f := fs.Lookup(k)
		if f == nil {
			t.Errorf("no flag --%s", k)
			continue
		}
		if f.Usage == "" {
			t.Errorf("flag --%s has no help text", k)
		}
	}
	if got := fs.Lookup("hook.budget.stop").DefValue; got != "20s" {
		t.Errorf("--hook.budget.stop default = %q, want 20s", got)
	}
	if got := fs.Lookup("log.level").DefValue; got != "info" {
		t.Errorf("--log.level default = %q, want info", got)
	}
	if u := fs.Lookup("log.level").Usage; !strings.Contains(u, "DROVER_LOG_LEVEL") {
		t.Errorf("--log.level help %q does not name its variable", u)
	}
}

// The keys the supervisor reads only at start: where each is read (the
// actor tree's options, the log file's rotation, the
// shutdown deadline) is fixed when the supervisor starts.
func TestRestartKeys(t *testing.T) {
	want := []string{
		"events.history",
		"log.max_backups", "log.max_size_mb",
		"metrics.enabled",
		"supervisor.idle_timeout", "supervisor.restart_max", "supervisor.restart_window", "supervisor.shutdown_timeout",
		"ui.enabled", "ui.port",
	}
	got := RestartKeys()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("RestartKeys() = %v, want %v", got, want)
	}
	known := map[string]bool{}
	for _, k := range Keys() {
		known[k] = true
	}
	for _, k := range got {
		if !known[k] {
			t.Errorf("restart key %q is not a config key", k)
		}
	}
}

func TestRestartChanges(t *testing.T) {
	def := Defaults()
	live := def
	live.Queue.MaxIterations++
	live.Log.Level = "debug"
	restart := def
	restart.Log.MaxBackups++
	restart.Supervisor.IdleTimeout *= 2
	cases := []struct {
		name string
		next Config
		want string
	}{
		{"no change", def, ""},
		{"only reloadable keys", live, ""},
		{"restart keys", restart, "log.max_backups supervisor.idle_timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(RestartChanges(def, c.next), " "); got != c.want {
				t.Errorf("RestartChanges = %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseUSD(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{in: "", want: 0},
		{in: "  ", want: 0},
		{in: "0.50", want: 0.5},
		{in: " 2 ", want: 2},
		{in: "0", want: 0},
		{in: "ten", wantErr: true},
		{in: "$1", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "+Inf", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseUSD(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseUSD(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	r := Review{BudgetUSD: "0.25"}
	if v, err := r.Budget(); v != 0.25 || err != nil {
		t.Errorf("Review.Budget = %v, %v", v, err)
	}
	run := Run{TaskMaxUSD: "x"}
	if _, err := run.TaskMax(); err == nil {
		t.Error("Run.TaskMax accepted x")
	}
}

// The NATS credentials are shown hidden, set or not said: drover config
// and the supervisor's config API print YAML.
func TestYAMLHidesSecrets(t *testing.T) {
	c := Defaults()
	c.Run.NATS.User, c.Run.NATS.Password, c.Run.NATS.Token = "drover", "pw-s3cret", "tok-s3cret"
	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw-s3cret", "tok-s3cret"} {
		if bytes.Contains(y, []byte(secret)) {
			t.Errorf("YAML() shows the secret %q:\n%s", secret, y)
		}
	}
	for _, want := range []string{"password: " + HiddenSecret, "token: " + HiddenSecret, "user: drover"} {
		if !bytes.Contains(y, []byte(want)) {
			t.Errorf("YAML() lacks %q:\n%s", want, y)
		}
	}
}
