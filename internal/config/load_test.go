package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func flagSet(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("drover", pflag.ContinueOnError)
	fs.Bool("detach", false, "not a config flag")
	AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestLoadLayering(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, dir, "user.yaml", "queue:\n  max_iterations: 10\nlog:\n  level: debug\n")
	project := writeFile(t, dir, "project.yaml", "queue:\n  max_iterations: 20\nhook:\n  budget:\n    stop: 12s\n")
	env := []string{"DROVER_QUEUE_MAX_ITERATIONS=30", "PATH=/bin"}

	tests := []struct {
		name     string
		src      Sources
		wantIter int
	}{
		{"defaults", Sources{}, 50},
		{"user file beats defaults", Sources{UserFile: user}, 10},
		{"project file beats user file", Sources{UserFile: user, ProjectFile: project}, 20},
		{"env beats project file", Sources{UserFile: user, ProjectFile: project, Environ: env}, 30},
		{"flag beats env", Sources{UserFile: user, ProjectFile: project, Environ: env, Flags: flagSet(t, "--queue.max_iterations=40")}, 40},
		{"unset flag does not clobber", Sources{UserFile: user, ProjectFile: project, Environ: env, Flags: flagSet(t, "--detach")}, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if c.Queue.MaxIterations != tt.wantIter {
				t.Errorf("queue.max_iterations = %d, want %d", c.Queue.MaxIterations, tt.wantIter)
			}
		})
	}

	// Keys set only in a lower layer survive the upper ones.
	c, err := Load(Sources{UserFile: user, ProjectFile: project, Environ: env, Flags: flagSet(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Queue.MaxIterations = 30
	want.Log.Level = "debug"
	want.Hook.Budget.Stop = 12 * time.Second
	if c != want {
		t.Errorf("Load() = %+v\nwant %+v", c, want)
	}
}

func TestLoadMissingFilesAreFine(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(Sources{UserFile: filepath.Join(dir, "nope.yaml"), ProjectFile: filepath.Join(dir, "no", "such", "config.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if c != Defaults() {
		t.Errorf("Load() = %+v, want the defaults", c)
	}
}

func TestLoadEmptyFileAndSections(t *testing.T) {
	for name, content := range map[string]string{
		"empty":            "",
		"comments only":    "# nothing yet\n",
		"null section":     "queue:\n  # max_iterations: 5\n",
		"empty section":    "hook: {}\n",
		"empty subsection": "hook:\n  budget: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "config.yaml", content)
			c, err := Load(Sources{ProjectFile: path})
			if err != nil {
				t.Fatal(err)
			}
			if c != Defaults() {
				t.Errorf("Load() = %+v, want the defaults", c)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string // substrings of the error, besides the path
	}{
		{"unknown key", "queue:\n  max_iteratons: 5\n", []string{`unknown config key "queue.max_iteratons" in `}},
		{"unknown section", "queues:\n  max_iterations: 5\n", []string{`unknown config key "queues.max_iterations"`}},
		{"string for int", "queue:\n  max_iterations: lots\n", []string{`config key "queue.max_iterations"`, "want an integer", `"lots"`}},
		{"quoted int", "queue:\n  max_iterations: \"5\"\n", []string{`config key "queue.max_iterations"`, "want an integer"}},
		{"float for int", "queue:\n  max_iterations: 5.5\n", []string{`config key "queue.max_iterations"`, "want an integer"}},
		{"bare number for duration", "hook:\n  budget:\n    stop: 15\n", []string{`config key "hook.budget.stop"`, "want a duration"}},
		{"bad duration", "hook:\n  start_timeout: soon\n", []string{`config key "hook.start_timeout"`, "want a duration", `"soon"`}},
		{"word for bool", "queue:\n  git_commit_check: yes\n", []string{`config key "queue.git_commit_check"`, "want true or false"}},
		{"word for number", "loop:\n  success_pass_rate: high\n", []string{`config key "loop.success_pass_rate"`, "want a number", `"high"`}},
		{"int for string", "log:\n  level: 3\n", []string{`config key "log.level"`, "want a string"}},
		{"null value", "log:\n  level:\n", []string{`config key "log.level"`, "got nothing"}},
		{"list for int", "log:\n  max_backups: [1, 2]\n", []string{`config key "log.max_backups"`, "a list"}},
		{"scalar section", "queue: 5\n", []string{`config key "queue"`, "want a mapping"}},
		{"mapping under a leaf", "log:\n  level:\n    name: debug\n", []string{`config key "log.level"`, "want a string, got a mapping"}},
		{"bad yaml", "queue: [\n", []string{"reading config file", "yaml"}},
		{"top-level list", "- a\n- b\n", []string{"reading config file"}},
		{"valid type, invalid value", "hook:\n  budget:\n    stop: 700s\n", []string{`config key "hook.budget.stop"`, "below 10m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), filepath.Join(".drover", "config.yaml"), tt.content)
			_, err := Load(Sources{ProjectFile: path})
			if err == nil {
				t.Fatal("Load() = nil error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) && tt.name != "valid type, invalid value" {
				t.Errorf("error %q does not name the file %s", msg, path)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadUnknownKeyMessage(t *testing.T) {
	path := writeFile(t, t.TempDir(), filepath.Join(".drover", "config.yaml"), "queue:\n  max_iteratons: 5\n")
	_, err := Load(Sources{ProjectFile: path})
	want := `unknown config key "queue.max_iteratons" in ` + path
	if err == nil || err.Error() != want {
		t.Fatalf("Load() error = %v, want %s", err, want)
	}
}

func TestLoadReportsEveryFileProblem(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, dir, "user.yaml", "log:\n  levle: debug\n")
	project := writeFile(t, dir, "project.yaml", "queue:\n  max_iterations: x\n  bogus: 1\n")
	_, err := Load(Sources{UserFile: user, ProjectFile: project})
	if err == nil {
		t.Fatal("Load() = nil error")
	}
	for _, w := range []string{
		`"log.levle" in ` + user,
		`"queue.max_iterations" in ` + project,
		`"queue.bogus" in ` + project,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestLoadEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		check   func(Config) bool
		wantErr []string
	}{
		{"int", []string{"DROVER_QUEUE_MAX_ITERATIONS=5"}, func(c Config) bool { return c.Queue.MaxIterations == 5 }, nil},
		{"duration", []string{"DROVER_HOOK_BUDGET_STOP=15s"}, func(c Config) bool { return c.Hook.Budget.Stop == 15*time.Second }, nil},
		{"underscores inside key names", []string{"DROVER_HOOK_BUDGET_USER_PROMPT_SUBMIT=7s", "DROVER_SUPERVISOR_SHUTDOWN_TIMEOUT=1m"},
			func(c Config) bool {
				return c.Hook.Budget.UserPromptSubmit == 7*time.Second && c.Supervisor.ShutdownTimeout == time.Minute
			}, nil},
		{"string", []string{"DROVER_LOG_LEVEL=debug"}, func(c Config) bool { return c.Log.Level == "debug" }, nil},
		{"bool", []string{"DROVER_QUEUE_GIT_COMMIT_CHECK=false"}, func(c Config) bool { return !c.Queue.GitCommitCheck }, nil},
		{"first occurrence wins", []string{"DROVER_LOG_LEVEL=warn", "DROVER_LOG_LEVEL=debug"}, func(c Config) bool { return c.Log.Level == "warn" }, nil},
		{"empty value is unset", []string{"DROVER_LOG_LEVEL="}, func(c Config) bool { return c == Defaults() }, nil},
		{"allowlisted and foreign variables ignored",
			[]string{"DROVER_REVIEWER=1", "DROVER_SOCKET=/tmp/s", "DROVER_BIN=/bin/drover", "DROVER_HOOK_DISABLE=1", "HOME=/home/x", "drover_log_level=nonsense", "NOEQUALS"},
			func(c Config) bool { return c == Defaults() }, nil},
		// Not a key: ignored here, warned about by the callers (UnknownEnv).
		{"unknown variable", []string{"DROVER_QUEUE_MAX_ITERATONS=5"}, func(c Config) bool { return c == Defaults() }, nil},
		{"unknown variable beside a known one", []string{"DROVER_UNRELATED=yes", "DROVER_LOG_LEVEL=debug"}, func(c Config) bool { return c.Log.Level == "debug" }, nil},
		{"bad int", []string{"DROVER_QUEUE_MAX_ITERATIONS=many"}, nil, []string{"DROVER_QUEUE_MAX_ITERATIONS", "queue.max_iterations", "want an integer"}},
		{"bad duration", []string{"DROVER_HOOK_BUDGET_STOP=15"}, nil, []string{"DROVER_HOOK_BUDGET_STOP", "want a duration"}},
		{"number", []string{"DROVER_LOOP_MIN_IMPROVEMENT=0.02"}, func(c Config) bool { return c.Loop.MinImprovement == 0.02 }, nil},
		{"bad number", []string{"DROVER_LOOP_SUCCESS_PASS_RATE=most"}, nil, []string{"DROVER_LOOP_SUCCESS_PASS_RATE", "want a number"}},
		{"number out of range", []string{"DROVER_LOOP_SUCCESS_PASS_RATE=95"}, nil, []string{"loop.success_pass_rate", "at most 1"}},
		{"out of range", []string{"DROVER_HOOK_BUDGET_STOP=601s"}, nil, []string{"hook.budget.stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Sources{Environ: tt.environ})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(c) {
					t.Errorf("Load() = %+v", c)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load() = nil error, want one naming %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A DROVER_* variable that is no config key is listed for a warning; it
// does not stop drover (issue 12, item 21).
func TestUnknownEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"none", []string{"HOME=/home/x", "DROVER_LOG_LEVEL=debug"}, nil},
		{"misspelt key", []string{"DROVER_QUEUE_MAX_ITERATONS=5"}, []string{"DROVER_QUEUE_MAX_ITERATONS"}},
		{"named after a section", []string{"DROVER_QUEUE=5"}, []string{"DROVER_QUEUE"}},
		{"several, sorted, once each", []string{"DROVER_B=2", "DROVER_A=1", "DROVER_B=3"}, []string{"DROVER_A", "DROVER_B"}},
		{"drover's own non-config variables",
			[]string{"DROVER_REVIEWER=1", "DROVER_SOCKET=/tmp/s", "DROVER_BIN=/bin/drover", "DROVER_HOOK_DISABLE=1", "DROVER_RUN_ID=r", "DROVER_TASK_ID=t", "DROVER_ITERATION=2", "DROVERD_BIN=/bin/droverd"},
			nil},
		{"other prefixes and case", []string{"drover_log_level=x", "DROVERX=1", "NOEQUALS", "DROVER_NOEQUALS"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnknownEnv(tt.environ); !slices.Equal(got, tt.want) {
				t.Errorf("UnknownEnv() = %q, want %q", got, tt.want)
			}
			// Load takes the same environment without complaint.
			if _, err := Load(Sources{Environ: tt.environ}); err != nil {
				t.Errorf("Load() = %v", err)
			}
		})
	}
	if w := EnvWarning("DROVER_X"); !strings.Contains(w, "DROVER_X") || !strings.Contains(w, "ignoring") {
		t.Errorf("EnvWarning = %q", w)
	}
}

func TestLoadNilEnvironIgnoresProcessEnv(t *testing.T) {
	t.Setenv("DROVER_LOG_LEVEL", "debug")
	t.Setenv("DROVER_TYPO", "1")
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != "info" {
		t.Errorf("log.level = %q: the process environment leaked in", c.Log.Level)
	}
}

func TestLoadFlags(t *testing.T) {
	project := writeFile(t, t.TempDir(), "config.yaml", "log:\n  level: warn\nqueue:\n  max_iterations: 8\n")
	tests := []struct {
		name  string
		args  []string
		check func(Config) bool
	}{
		{"none set", nil, func(c Config) bool { return c.Log.Level == "warn" && c.Queue.MaxIterations == 8 }},
		{"set to its default still overrides", []string{"--log.level=info"}, func(c Config) bool { return c.Log.Level == "info" && c.Queue.MaxIterations == 8 }},
		{"duration", []string{"--hook.budget.stop", "25s"}, func(c Config) bool { return c.Hook.Budget.Stop == 25*time.Second && c.Log.Level == "warn" }},
		{"bool", []string{"--queue.git_commit_check=false"}, func(c Config) bool { return !c.Queue.GitCommitCheck }},
		{"non-config flag ignored", []string{"--detach"}, func(c Config) bool { return c.Log.Level == "warn" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Sources{ProjectFile: project, Flags: flagSet(t, tt.args...)})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("Load() = %+v", c)
			}
		})
	}
}

func TestLoadFlagOfWrongType(t *testing.T) {
	// A flag someone else registered as a string for an int key.
	fs := pflag.NewFlagSet("drover", pflag.ContinueOnError)
	fs.String("queue.max_iterations", "", "")
	if err := fs.Parse([]string{"--queue.max_iterations=lots"}); err != nil {
		t.Fatal(err)
	}
	_, err := Load(Sources{Flags: fs})
	if err == nil || !strings.Contains(err.Error(), "--queue.max_iterations") {
		t.Fatalf("Load() error = %v, want one naming --queue.max_iterations", err)
	}
}

func TestDefaultSources(t *testing.T) {
	tests := []struct {
		name     string
		root     string
		environ  []string
		wantUser string
		wantProj string
	}{
		{"xdg", "/p", []string{"HOME=/h", "XDG_CONFIG_HOME=/x"}, "/x/drover/config.yaml", "/p/.drover/config.yaml"},
		{"home", "/p", []string{"HOME=/h"}, "/h/.config/drover/config.yaml", "/p/.drover/config.yaml"},
		{"relative xdg ignored", "/p", []string{"HOME=/h", "XDG_CONFIG_HOME=rel"}, "/h/.config/drover/config.yaml", "/p/.drover/config.yaml"},
		{"empty xdg ignored", "/p", []string{"XDG_CONFIG_HOME=", "HOME=/h"}, "/h/.config/drover/config.yaml", "/p/.drover/config.yaml"},
		{"neither", "", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := DefaultSources(tt.root, tt.environ)
			if src.UserFile != tt.wantUser || src.ProjectFile != tt.wantProj {
				t.Errorf("DefaultSources() = user %q project %q, want %q %q", src.UserFile, src.ProjectFile, tt.wantUser, tt.wantProj)
			}
			if len(src.Environ) != len(tt.environ) || src.Flags != nil {
				t.Errorf("DefaultSources() = %+v: environ not passed through or flags set", src)
			}
		})
	}
}

// TestLoadNumbers: the convergence thresholds are numbers in every layer;
// a whole number in YAML is a number too.
func TestLoadNumbers(t *testing.T) {
	dir := t.TempDir()
	project := writeFile(t, dir, "project.yaml", "loop:\n  success_pass_rate: 1\n  min_improvement: 0.1\n  require_lint_clean: true\n")
	c, err := Load(Sources{ProjectFile: project})
	if err != nil {
		t.Fatal(err)
	}
	if c.Loop.SuccessPassRate != 1 || c.Loop.MinImprovement != 0.1 || !c.Loop.RequireLintClean {
		t.Errorf("from the file: %+v", c.Loop)
	}
	c, err = Load(Sources{ProjectFile: project, Flags: flagSet(t, "--loop.success_pass_rate=0.9")})
	if err != nil || c.Loop.SuccessPassRate != 0.9 {
		t.Errorf("flag: %v %v", c.Loop.SuccessPassRate, err)
	}
}

// The dollar keys are strings (empty means no limit) but a file writes
// dollars as a YAML number, so a number is read as its decimal text.
func TestLoadDollarKeysTakeNumbers(t *testing.T) {
	tests := []struct {
		name, content           string
		wantBudget, wantTaskMax string
	}{
		{"float", "review:\n  budget_usd: 0.3\nrun:\n  task_max_usd: 2.5\n", "0.3", "2.5"},
		{"integer", "review:\n  budget_usd: 2\nrun:\n  task_max_usd: 10\n", "2", "10"},
		{"quoted", "review:\n  budget_usd: \"0.75\"\n", "0.75", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "config.yaml", tt.content)
			c, err := Load(Sources{ProjectFile: path})
			if err != nil {
				t.Fatal(err)
			}
			if c.Review.BudgetUSD != tt.wantBudget || c.Run.TaskMaxUSD != tt.wantTaskMax {
				t.Errorf("review.budget_usd = %q, run.task_max_usd = %q; want %q, %q", c.Review.BudgetUSD, c.Run.TaskMaxUSD, tt.wantBudget, tt.wantTaskMax)
			}
		})
	}
	// Other string keys still refuse numbers.
	path := writeFile(t, t.TempDir(), "config.yaml", "review:\n  cli: 3\n")
	if _, err := Load(Sources{ProjectFile: path}); err == nil || !strings.Contains(err.Error(), "want a string") {
		t.Errorf("review.cli: 3: err = %v, want a string error", err)
	}
}

// TestLoadNotifyOn: notify.on written as people write it, unquoted: the
// key "on" is a key (YAML 1.1 would read it as true), and the env
// variable sets it too.
func TestLoadNotifyOn(t *testing.T) {
	path := writeFile(t, t.TempDir(), "config.yaml", "notify:\n  on: done, stuck\n  webhook: https://hooks.example.com/x\n")
	c, err := Load(Sources{ProjectFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.NotifyOn(); !slices.Equal(got, []string{"done", "stuck"}) || c.Notify.Webhook != "https://hooks.example.com/x" {
		t.Errorf("notify = %+v (on %q), want done, stuck and the webhook", c.Notify, got)
	}
	c, err = Load(Sources{Environ: []string{"DROVER_NOTIFY_ON=budget"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.NotifyOn(); !slices.Equal(got, []string{"budget"}) {
		t.Errorf("DROVER_NOTIFY_ON=budget: on %q, want budget", got)
	}
}
