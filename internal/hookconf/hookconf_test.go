package hookconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
)

// The defaults, ceilings and key names are internal/config's: this reader
// is a second reader of the same keys, so they must not drift.
func TestAgreesWithConfigDefaults(t *testing.T) {
	def := config.Defaults()
	keys := map[string]bool{}
	for _, k := range config.Keys() {
		keys[k] = true
	}
	for _, e := range hook.Events {
		if got, want := DefaultBudget(e), def.Budget(e); got != want {
			t.Errorf("DefaultBudget(%s) = %v, config has %v", e, got, want)
		}
		if got, want := Ceiling(e), config.HookTimeout(e); got != want {
			t.Errorf("Ceiling(%s) = %v, config has %v", e, got, want)
		}
		if !keys[BudgetKey(e)] {
			t.Errorf("%s is not a config key", BudgetKey(e))
		}
		if got, want := EnvName(BudgetKey(e)), config.EnvName(BudgetKey(e)); got != want {
			t.Errorf("EnvName = %s, config has %s", got, want)
		}
	}
	if DefaultHold != def.Review.Hold || !keys[HoldKey] {
		t.Errorf("hold %v (key %s), config has %v", DefaultHold, HoldKey, def.Review.Hold)
	}
	if DefaultStartTimeout != def.Hook.StartTimeout || !keys[StartTimeoutKey] {
		t.Errorf("start timeout %v (key %s), config has %v", DefaultStartTimeout, StartTimeoutKey, def.Hook.StartTimeout)
	}
	n := 0
	for k := range keys {
		if strings.HasPrefix(k, "hook.") {
			n++
			if !known()[k] {
				t.Errorf("config key %s is not known here", k)
			}
		}
	}
	if n != len(known()) {
		t.Errorf("config has %d hook keys, this reader knows %d", n, len(known()))
	}
}

// Every layer, as internal/config would load it: the same value, or an
// error from both, for the hook keys.
func TestAgreesWithConfigLoad(t *testing.T) {
	cases := []struct {
		name          string
		user, project string
		env           []string
		wantErr       string
	}{
		{name: "defaults"},
		{name: "project file", project: "hook:\n  budget:\n    stop: 12s\n  start_timeout: 7s\n"},
		{name: "user file", user: "hook:\n  budget:\n    stop: 11s\n    session_end: 500ms\n"},
		{name: "project over user", user: "hook:\n  budget:\n    stop: 11s\n", project: "hook:\n  budget:\n    stop: 13s\n"},
		{name: "env over files", project: "hook:\n  budget:\n    stop: 13s\n", env: []string{"DROVER_HOOK_BUDGET_STOP=9s", "DROVER_HOOK_START_TIMEOUT=1s"}},
		{name: "empty env is unset", project: "hook:\n  budget:\n    stop: 13s\n", env: []string{"DROVER_HOOK_BUDGET_STOP="}},
		{name: "dotted key", project: "hook.budget.stop: 14s\n"},
		{name: "other sections are not ours", project: "queue:\n  max_iterations: 7\nhook:\n  budget:\n    stop: 14s\n"},
		{name: "empty sections", project: "hook:\n  budget:\n"},
		{name: "unknown hook key", project: "hook:\n  budgett: {}\n", wantErr: "budgett"},
		{name: "bare number", project: "hook:\n  budget:\n    stop: 15\n", wantErr: "want a duration"},
		{name: "above the ceiling", project: "hook:\n  budget:\n    stop: 700s\n", wantErr: "below 10m0s"},
		{name: "hold", project: "review:\n  hold: 2m\n  max_reviews: 3\n"},
		{name: "no hold", user: "review:\n  hold: 0s\n"},
		{name: "hold from env", project: "review:\n  hold: 2m\n", env: []string{"DROVER_REVIEW_HOLD=90s"}},
		{name: "hold over the ceiling", project: "review:\n  hold: 590s\n", wantErr: "review.hold"},
		{name: "hold and budget over the ceiling", project: "hook:\n  budget:\n    stop: 300s\nreview:\n  hold: 300s\n", wantErr: "review.hold"},
		{name: "negative hold", env: []string{"DROVER_REVIEW_HOLD=-1s"}, wantErr: "review.hold"},
		{name: "hold not a duration", project: "review:\n  hold: 5\n", wantErr: "want a duration"},
		{name: "zero", project: "hook:\n  start_timeout: 0s\n", wantErr: "above 0"},
		{name: "bad env", env: []string{"DROVER_HOOK_BUDGET_STOP=15"}, wantErr: "DROVER_HOOK_BUDGET_STOP"},
		{name: "not YAML", project: "hook: [\n", wantErr: "config.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			home, root := filepath.Join(dir, "home"), filepath.Join(dir, "p")
			write := func(path, content string) {
				if content == "" {
					return
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(home, ".config", "drover", "config.yaml"), c.user)
			write(filepath.Join(root, ".drover", "config.yaml"), c.project)
			environ := append([]string{"HOME=" + home}, c.env...)
			getenv := func(k string) string {
				for _, kv := range environ {
					if v, ok := strings.CutPrefix(kv, k+"="); ok {
						return v
					}
				}
				return ""
			}
			src := DefaultSources(root, getenv)
			cfg, cerr := config.Load(config.DefaultSources(root, environ))
			var errs []error
			for _, e := range hook.Events {
				got, err := Budget(src, e)
				if err != nil {
					errs = append(errs, err)
					if got != DefaultBudget(e) {
						t.Errorf("%s: on an error got %v, want the default", e, got)
					}
					continue
				}
				if cerr == nil && got != cfg.Budget(e) {
					t.Errorf("Budget(%s) = %v, config loads %v", e, got, cfg.Budget(e))
				}
			}
			budget, _ := Budget(src, hook.Stop)
			hold, err := Hold(src, budget)
			if err != nil {
				errs = append(errs, err)
				if hold != 0 {
					t.Errorf("on an error Hold = %v, want 0", hold)
				}
			} else if cerr == nil && hold != cfg.Review.Hold {
				t.Errorf("Hold = %v, config loads %v", hold, cfg.Review.Hold)
			}
			st, err := StartTimeout(src)
			if err != nil {
				errs = append(errs, err)
			} else if cerr == nil && st != cfg.Hook.StartTimeout {
				t.Errorf("StartTimeout = %v, config loads %v", st, cfg.Hook.StartTimeout)
			}
			if c.wantErr == "" {
				if cerr != nil || len(errs) > 0 {
					t.Fatalf("config: %v; here: %v", cerr, errs)
				}
				return
			}
			if cerr == nil || !strings.Contains(cerr.Error(), c.wantErr) {
				t.Errorf("config.Load: %v, want an error naming %q", cerr, c.wantErr)
			}
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), c.wantErr) {
				t.Errorf("errors %v, want one naming %q", errs, c.wantErr)
			}
		})
	}
}

// The key is looked up from the top layer down: a variable that sets it
// spares opening the files, and the project's file the user's.
func TestReadsNoFileItDoesNotNeed(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "config.yaml")
	if err := os.Mkdir(unreadable, 0o700); err != nil { // reading a directory fails
		t.Fatal(err)
	}
	project := filepath.Join(dir, "project.yaml")
	if err := os.WriteFile(project, []byte("hook:\n  budget:\n    stop: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "DROVER_HOOK_BUDGET_STOP" {
			return "2s"
		}
		return ""
	}
	if d, err := Budget(Sources{ProjectFile: unreadable, UserFile: unreadable, Getenv: env}, hook.Stop); err != nil || d != 2*time.Second {
		t.Errorf("from the environment: %v, %v", d, err)
	}
	if d, err := Budget(Sources{ProjectFile: project, UserFile: unreadable}, hook.Stop); err != nil || d != 3*time.Second {
		t.Errorf("from the project file: %v, %v", d, err)
	}
	if _, err := Budget(Sources{ProjectFile: project, UserFile: unreadable}, hook.SessionEnd); err == nil {
		t.Error("a key the project file does not set was not looked up in the user's file")
	}
}
