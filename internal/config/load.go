package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Sources names the layers above the built-in defaults. A zero Sources
// loads the defaults alone.
type Sources struct {
	// UserFile is the user's config file; "" = none. A missing file is fine.
	UserFile string
	// ProjectFile is the project's .drover/config.yaml; "" = none. A missing
	// file is fine.
	ProjectFile string
	// Environ is the environment in os.Environ form; nil = none. Tests pass
	// their own so that the process environment cannot leak in.
	Environ []string
	// Flags is the command line; nil = none. Only flags the user set
	// override the lower layers (see AddFlags).
	Flags *pflag.FlagSet
}

// DefaultSources returns the usual layers for the project at projectRoot:
// the user file under $XDG_CONFIG_HOME (or $HOME/.config) as environ gives
// them, the project's .drover/config.yaml, and environ itself. It sets no
// flags.
func DefaultSources(projectRoot string, environ []string) Sources {
	src := Sources{Environ: environ}
	// The XDG spec says a relative XDG_CONFIG_HOME is invalid and to be ignored.
	if x := getenv(environ, "XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		src.UserFile = filepath.Join(x, "drover", "config.yaml")
	} else if h := getenv(environ, "HOME"); h != "" {
		src.UserFile = filepath.Join(h, ".config", "drover", "config.yaml")
	}
	if projectRoot != "" {
		src.ProjectFile = filepath.Join(projectRoot, ".drover", "config.yaml")
	}
	return src
}

// getenv looks name up in environ the way os.Getenv does: the first
// occurrence wins.
func getenv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Load merges the layers of src over the defaults and validates the
// result. Every problem is reported at once, each naming its key and the
// file, variable or flag it came from.
func Load(src Sources) (Config, error) {
	fields := fieldsByKey()
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(flatten(Defaults()), "."), nil); err != nil {
		return Config{}, fmt.Errorf("loading config defaults: %w", err)
	}

	var errs []error
	for _, path := range []string{src.UserFile, src.ProjectFile} {
		if path == "" {
			continue
		}
		flat, err := readFile(path, fields)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := k.Load(confmap.Provider(flat, "."), nil); err != nil {
			errs = append(errs, fmt.Errorf("merging config file %q: %w", path, err))
		}
	}
	if src.Environ != nil {
		if err := loadEnv(k, src.Environ, fields); err != nil {
			errs = append(errs, err)
		}
	}
	if src.Flags != nil {
		if err := loadFlags(k, src.Flags, fields); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}

	var c Config
	err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook:  mapstructure.StringToTimeDurationHookFunc(),
		ErrorUnused: true,
		TagName:     "koanf",
	}})
	if err != nil {
		return Config{}, fmt.Errorf("decoding config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func fieldsByKey() map[string]field {
	m := make(map[string]field)
	for _, f := range fields() {
		m[f.key] = f
	}
	return m
}

// flatten returns c as dotted keys and typed values.
func flatten(c Config) map[string]any {
	flat := make(map[string]any)
	for _, f := range fields() {
		flat[f.key] = f.get(c)
	}
	return flat
}

// readFile parses the YAML config file at path into dotted keys and typed
// values. A missing file yields nothing; an unknown key or a wrongly typed
// value is an error naming both the key and path.
func readFile(path string, fields map[string]field) (map[string]any, error) {
	tmp := koanf.New(".")
	if err := tmp.Load(file.Provider(path), yaml.Parser()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading config file %q: %w", path, err)
	}
	sections := make(map[string]bool)
	for key := range fields {
		for i := strings.IndexByte(key, '.'); i >= 0; i = nextDot(key, i) {
			sections[key[:i]] = true
		}
	}

	raw := tmp.All()
	keys := make([]string, 0, len(raw))
	for key := range raw {
		keys = append(keys, key)
	}
	sort.Strings(keys)

	var errs []error
	flat := make(map[string]any)
	for _, key := range keys {
		v := raw[key]
		if f, ok := fields[key]; ok {
			tv, err := fromYAML(f.kind, numberAsText(f, v))
			if err != nil {
				errs = append(errs, fmt.Errorf("config key %q in %s: %w", key, path, err))
				continue
			}
			flat[key] = tv
			continue
		}
		if sections[key] {
			// "queue:" with nothing under it, as left when every entry
			// is commented out.
			if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
				continue
			}
			errs = append(errs, fmt.Errorf("config key %q in %s: want a mapping of keys, got %s", key, path, describe(v)))
			continue
		}
		if leaf := leafAbove(key, fields); leaf != "" {
			errs = append(errs, fmt.Errorf("config key %q in %s: %s", leaf, path, wantText(fields[leaf].kind, "a mapping")))
			continue
		}
		errs = append(errs, fmt.Errorf("unknown config key %q in %s", key, path))
	}
	return flat, errors.Join(errs...)
}

func nextDot(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// leafAbove returns the known key that key is nested under
// (queue.max_iterations for queue.max_iterations.x), or "".
func leafAbove(key string, fields map[string]field) string {
	for i := strings.IndexByte(key, '.'); i >= 0; i = nextDot(key, i) {
		if _, ok := fields[key[:i]]; ok {
			return key[:i]
		}
	}
	return ""
}

// loadEnv merges the DROVER_* variables of environ that name config keys
// into k. Any other DROVER_* variable is left alone: it may belong to
// something else entirely, so it must not stop drover; UnknownEnv lists
// those for a warning, since one may be a misspelt key.
func loadEnv(k *koanf.Koanf, environ []string, fields map[string]field) error {
	byEnv := envFields(fields)
	var errs []error
	p := env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return firstOccurrences(environ) },
		TransformFunc: func(name, value string) (string, any) {
			f, ok := byEnv[name]
			if !ok {
				return "", nil
			}
			// An empty value is how shells unset a variable for one
			// command (DROVER_LOG_LEVEL= drover ...): treat it as unset.
			if value == "" {
				return "", nil
			}
			v, err := fromString(f.kind, value)
			if err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s (config key %q): %w", name, f.key, err))
				return "", nil
			}
			return f.key, v
		},
	})
	if err := k.Load(p, nil); err != nil {
		return fmt.Errorf("loading config from the environment: %w", err)
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func envFields(fields map[string]field) map[string]field {
	byEnv := make(map[string]field, len(fields))
	for key, f := range fields {
		byEnv[EnvName(key)] = f
	}
	return byEnv
}

// UnknownEnv returns, sorted, the names of the DROVER_* variables of
// environ that are neither a config key nor one of IsNonConfigEnv. Load
// ignores them; callers warn about them (see EnvWarning), since one may
// be a misspelt key, without refusing to start over a variable that may
// belong to something else.
func UnknownEnv(environ []string) []string {
	byEnv := envFields(fieldsByKey())
	var names []string
	for _, kv := range firstOccurrences(environ) {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) || IsNonConfigEnv(name) {
			continue
		}
		if _, known := byEnv[name]; !known {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// EnvWarning is the warning about a DROVER_* variable that UnknownEnv
// lists.
func EnvWarning(name string) string {
	return fmt.Sprintf("ignoring environment variable %s: no config key has that name (drover config lists the keys; a key's variable is DROVER_ and the key in capitals, dots as underscores)", name)
}

// firstOccurrences drops later duplicates of a variable, so that the env
// layer sees what os.Getenv would.
func firstOccurrences(environ []string) []string {
	seen := make(map[string]bool, len(environ))
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, kv)
	}
	return out
}

// loadFlags merges the config flags the user set on fs into k. Flags that
// are not config keys (--help, --detach) are ignored.
func loadFlags(k *koanf.Koanf, fs *pflag.FlagSet, fields map[string]field) error {
	var errs []error
	p := posflag.ProviderWithFlag(fs, ".", k, func(fl *pflag.Flag) (string, any) {
		f, ok := fields[fl.Name]
		if !ok || !fl.Changed {
			return "", nil
		}
		v, err := fromString(f.kind, fl.Value.String())
		if err != nil {
			errs = append(errs, fmt.Errorf("flag --%s: %w", fl.Name, err))
			return "", nil
		}
		return f.key, v
	})
	if err := k.Load(p, nil); err != nil {
		return fmt.Errorf("loading config from flags: %w", err)
	}
	return errors.Join(errs...)
}

// numberAsText returns v as its decimal text when f is a string key that
// holds a number and the file wrote one (budget_usd: 0.5), else v.
func numberAsText(f field, v any) any {
	if !f.numberText {
		return v
	}
	switch n := v.(type) {
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case int:
		return strconv.Itoa(n)
	case int64:
		return strconv.FormatInt(n, 10)
	case uint64:
		return strconv.FormatUint(n, 10)
	}
	return v
}

// fromYAML checks a value parsed from a config file against its key's
// kind. It does not coerce: "5" is not an integer and 30 is not a
// duration (30 what?), so a file says what it means.
func fromYAML(kd kind, v any) (any, error) {
	switch kd {
	case kindInt:
		switch n := v.(type) {
		case int:
			return n, nil
		case int64:
			if int64(int(n)) == n {
				return int(n), nil
			}
		case uint64:
			if n <= uint64(int(^uint(0)>>1)) {
				return int(n), nil
			}
		}
	case kindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kindDuration:
		if s, ok := v.(string); ok {
			d, err := time.ParseDuration(s)
			if err == nil {
				return d, nil
			}
		}
	case kindFloat:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int:
			return float64(n), nil
		case int64:
			return float64(n), nil
		case uint64:
			return float64(n), nil
		}
	}
	return nil, errors.New(wantText(kd, describe(v)))
}

// fromString parses an environment or flag value for a key of kind kd.
func fromString(kd kind, s string) (any, error) {
	var (
		v   any
		err error
	)
	switch kd {
	case kindInt:
		v, err = strconv.Atoi(strings.TrimSpace(s))
	case kindBool:
		v, err = strconv.ParseBool(strings.TrimSpace(s))
	case kindString:
		v = s
	case kindDuration:
		v, err = time.ParseDuration(strings.TrimSpace(s))
	case kindFloat:
		v, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
	}
	if err != nil {
		return nil, errors.New(wantText(kd, strconv.Quote(s)))
	}
	return v, nil
}

func wantText(kd kind, got string) string {
	switch kd {
	case kindInt:
		return "want an integer, got " + got
	case kindBool:
		return "want true or false, got " + got
	case kindString:
		return "want a string, got " + got
	case kindDuration:
		return `want a duration with a unit such as "10s" or "1m30s", got ` + got
	case kindFloat:
		return "want a number, got " + got
	}
	return "unexpected value " + got
}

// describe names a parsed YAML value for an error message.
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
