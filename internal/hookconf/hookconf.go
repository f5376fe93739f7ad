// Package hookconf reads the few configuration keys the hook client needs
// (hook.budget.<event>, hook.start_timeout, and review.hold, which a Stop
// waits for on top of its budget) without the configuration
// loader of internal/config, which links koanf and every other key's
// rules: the hook client runs as a new process on every hook event, so it
// reads one key, from the first layer that sets it, and nothing else.
//
// The precedence is internal/config's, the documented one: built-in
// defaults < the user's file (~/.config/drover/config.yaml) < the
// project's .drover/config.yaml < DROVER_* environment variables. Flags do
// not apply (a hook has none). A key is looked up from the top layer down
// and the first layer that sets it wins, so a file is opened only when no
// variable sets the key, and the user's file only when the project's does
// not set it either. A file that is read has its whole hook section checked
// (unknown keys, types), so a misspelt hook key is reported as the full
// loader would report it; the other sections are the supervisor's.
package hookconf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/hook"
)

// StartTimeoutKey is the key of how long a hook waits for a supervisor it
// started.
const StartTimeoutKey = "hook.start_timeout"

// DefaultStartTimeout is hook.start_timeout's built-in value.
const DefaultStartTimeout = 3 * time.Second

// BudgetKey is the key of event e's time budget: hook.budget.stop, ...
func BudgetKey(e hook.Event) string {
	return "hook.budget." + strings.ReplaceAll(string(e), "-", "_")
}

// DefaultBudget is the built-in time budget of event e (0 for an unknown
// event).
func DefaultBudget(e hook.Event) time.Duration {
	switch e {
	case hook.SessionStart:
		return 5 * time.Second
	case hook.UserPromptSubmit, hook.SubagentStop, hook.PreCompact:
		return 10 * time.Second
	case hook.Stop:
		return 20 * time.Second
	case hook.SessionEnd:
		return time.Second
	}
	return 0
}

// Ceiling returns the timeout plugin/hooks.json gives the hook command of
// event e (0 for an unknown event). Claude Code kills a hook past it, so a
// budget must stay strictly below it.
func Ceiling(e hook.Event) time.Duration {
	switch e {
	case hook.SessionStart:
		return 10 * time.Second
	case hook.UserPromptSubmit, hook.SubagentStop, hook.PreCompact:
		return 15 * time.Second
	case hook.Stop:
		return 600 * time.Second
	case hook.SessionEnd:
		return 2 * time.Second
	}
	return 0
}

// HoldKey is the key of how long the supervisor may hold a Stop's answer
// while a plan reviewer runs. It is the supervisor's key, in the review
// section; the hook client reads it because its Stop budget must cover it.
const HoldKey = "review.hold"

// DefaultHold is review.hold's built-in value.
const DefaultHold = 5 * time.Minute

// Hold returns review.hold for a Stop whose own budget is stopBudget: how
// much longer than its budget the hook waits for a held answer (and asks
// the supervisor to hold it at most). Budget and hold together stay below
// the Stop ceiling. On an error (a bad value, or one that does not fit) it
// returns 0, with the error: a Stop that is not held is answered with the
// wait instruction, within the budget.
func Hold(src Sources, stopBudget time.Duration) (time.Duration, error) {
	d, set, err := lookupSet(src, HoldKey)
	if err != nil {
		return 0, err
	}
	if !set {
		d = DefaultHold
	}
	if ceiling := Ceiling(hook.Stop); d < 0 || d+stopBudget >= ceiling {
		return 0, fmt.Errorf("config key %q: must be at least 0 and, with %s (%v), below %v (the Stop timeout in hooks.json), got %v", HoldKey, BudgetKey(hook.Stop), stopBudget, ceiling, d)
	}
	return d, nil
}

// Sources names the layers above the defaults, as internal/config's
// DefaultSources would for the same project and environment.
type Sources struct {
	// UserFile and ProjectFile are the config files ("" = none; a missing
	// file is fine).
	UserFile, ProjectFile string
	// Getenv reads the environment; nil reads none.
	Getenv func(string) string

	// read, when set (DefaultSources), keeps each file's hook section
	// once read: a Stop looks up its budget and review.hold (and maybe
	// hook.start_timeout), and each would read and parse the same file
	// again.
	read *sections
}

// sections is the hook sections read so far, by path.
type sections struct {
	mu     sync.Mutex
	byPath map[string]section
}

type section struct {
	keys map[string]time.Duration
	err  error
}

// hookSection returns readHookSection(path), read once for src's
// lifetime when src keeps what it read.
func (src Sources) hookSection(path string) (map[string]time.Duration, error) {
	c := src.read
	if c == nil {
		return readHookSection(path)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.byPath[path]; ok {
		return s.keys, s.err
	}
	keys, err := readHookSection(path)
	c.byPath[path] = section{keys, err}
	return keys, err
}

// DefaultSources returns the layers for the project at root: the user's
// file under $XDG_CONFIG_HOME (when absolute) or $HOME/.config, the
// project's .drover/config.yaml, and the environment. Each file is read at
// most once through the Sources returned, whatever keys are looked up.
func DefaultSources(root string, getenv func(string) string) Sources {
	src := Sources{Getenv: getenv, read: &sections{byPath: map[string]section{}}}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		src.UserFile = filepath.Join(x, "drover", "config.yaml")
	} else if h := getenv("HOME"); h != "" {
		src.UserFile = filepath.Join(h, ".config", "drover", "config.yaml")
	}
	if root != "" {
		src.ProjectFile = filepath.Join(root, ".drover", "config.yaml")
	}
	return src
}

// Budget returns the time budget of event e. On an error (a bad value, an
// unreadable file, an unknown hook key) it returns the default with the
// error, so the hook can go on and say why.
func Budget(src Sources, e hook.Event) (time.Duration, error) {
	def, ceiling := DefaultBudget(e), Ceiling(e)
	if def == 0 {
		return 0, fmt.Errorf("no time budget for hook event %q", e)
	}
	d, err := lookup(src, BudgetKey(e))
	if err != nil || d == 0 {
		return def, err
	}
	if d <= 0 || d >= ceiling {
		return def, fmt.Errorf("config key %q: must be above 0 and below %v (the %s timeout in hooks.json), got %v", BudgetKey(e), ceiling, e.ClaudeName(), d)
	}
	return d, nil
}

// StartTimeout returns hook.start_timeout, or its default with the error.
func StartTimeout(src Sources) (time.Duration, error) {
	d, err := lookup(src, StartTimeoutKey)
	if err != nil || d == 0 {
		return DefaultStartTimeout, err
	}
	if d < 0 {
		return DefaultStartTimeout, fmt.Errorf("config key %q: must be above 0, got %v", StartTimeoutKey, d)
	}
	return d, nil
}

// EnvName returns the environment variable that sets key, as
// internal/config names it: hook.budget.stop -> DROVER_HOOK_BUDGET_STOP.
func EnvName(key string) string {
	return "DROVER_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// lookup returns key's value from the top layer that sets it, or 0 when
// none does; a value of 0 is an error.
func lookup(src Sources, key string) (time.Duration, error) {
	d, set, err := lookupSet(src, key)
	if err != nil || !set {
		return 0, err
	}
	return nonZero(key, d)
}

// lookupSet returns key's value from the top layer that sets it; set is
// false when none does.
func lookupSet(src Sources, key string) (d time.Duration, set bool, err error) {
	if src.Getenv != nil {
		// An empty value is how shells unset a variable for one command.
		if v := strings.TrimSpace(src.Getenv(EnvName(key))); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return 0, false, fmt.Errorf("environment variable %s (config key %q): %s", EnvName(key), key, wantDuration(strconv.Quote(v)))
			}
			return d, true, nil
		}
	}
	for _, path := range []string{src.ProjectFile, src.UserFile} {
		if path == "" {
			continue
		}
		keys, err := src.hookSection(path)
		if err != nil {
			return 0, false, err
		}
		if d, ok := keys[key]; ok {
			return d, true, nil
		}
	}
	return 0, false, nil
}

// nonZero turns a value of 0 into the range error the loader gives, since
// 0 is what lookup returns for "not set".
func nonZero(key string, d time.Duration) (time.Duration, error) {
	if d == 0 {
		return 0, fmt.Errorf("config key %q: must be above 0, got 0s", key)
	}
	return d, nil
}

// known lists the keys of the hook section.
func known() map[string]bool {
	m := map[string]bool{StartTimeoutKey: true}
	for _, e := range hook.Events {
		m[BudgetKey(e)] = true
	}
	return m
}

// readHookSection reads the config file at path and returns the keys of
// its hook section, and review.hold (HoldKey) when it is set. A missing
// file has none; an unknown hook key or a value that is not a duration is
// an error naming the key and the file. The review section's other keys
// are the supervisor's to check.
func readHookSection(path string) (map[string]time.Duration, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config file %q: %w", path, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading config file %q: %w", path, err)
	}
	flat := map[string]any{}
	flatten("", doc, flat)
	keys := make([]string, 0, len(flat))
	for k := range flat {
		if k == "hook" || strings.HasPrefix(k, "hook.") || k == HoldKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	valid := known()
	out := make(map[string]time.Duration)
	var errs []error
	for _, k := range keys {
		v := flat[k]
		switch {
		case valid[k] || k == HoldKey:
			s, ok := v.(string)
			d, err := time.ParseDuration(s)
			if !ok || err != nil {
				errs = append(errs, fmt.Errorf("config key %q in %s: %s", k, path, wantDuration(describe(v))))
				continue
			}
			out[k] = d
		case k == "hook" || k == "hook.budget":
			// A section with nothing under it, as left when every entry
			// is commented out.
			if m, ok := v.(map[string]any); v != nil && !(ok && len(m) == 0) {
				errs = append(errs, fmt.Errorf("config key %q in %s: want a mapping of keys, got %s", k, path, describe(v)))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown config key %q in %s", k, path))
		}
	}
	return out, errors.Join(errs...)
}

// flatten writes the leaves of m under dotted keys, as koanf does; an
// empty mapping is kept as a leaf so that an empty section can be told
// from a misplaced value.
func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flatten(key, sub, out)
			continue
		}
		out[key] = v
	}
}

func wantDuration(got string) string {
	return `want a duration with a unit such as "10s" or "1m30s", got ` + got
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	default:
		return fmt.Sprintf("%v", x)
	}
}
