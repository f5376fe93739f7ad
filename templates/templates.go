// Package templates holds drover's prompts: the built-in ones embedded in the
// binary, per-project overrides read from .drover/templates/NAME.md, and the
// {{placeholder}} rendering that fills them in.
//
// Every prompt drover shows an agent or a user comes from here, so a project
// can reword any of them without a rebuild.
package templates

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The template names. Each is the base name of a file in defaults/ and of its
// override in .drover/templates/.
const (
	Loop          = "loop"
	Review        = "review"
	ReviewStart   = "review_start"
	ReviewFound   = "review_found"
	Uncommitted   = "uncommitted"
	StuckReminder = "stuck_reminder"
	Context       = "context"
	ReviewContext = "review_context"
	Compact       = "compact"
	Start         = "start"
	MaxIterations = "max_iterations"
	// Stopped is what drover stop reports for a queue.
	Stopped = "stopped"
	// Quarantined tells the user, once, that a session's stored state
	// could not be read and the session starts clean.
	Quarantined = "quarantined"
	// SaveFailed tells the user that a hook's decision could not be
	// saved, so drover let the agent stop rather than decide on state it
	// did not keep.
	SaveFailed = "save_failed"
	// BlockCap tells the user, at the Stop past a capped CLI's block cap
	// (hook.BlockCap), that the CLI may have ended the turn while the
	// session goes on, and how to lift the cap.
	BlockCap = "block_cap"
	// SessionHeldQueue, SessionHeldLoop and SessionHeldPlan refuse to
	// start a {{workflow}} in a session that another workflow holds (see
	// internal/session.Record.Holder).
	SessionHeldQueue = "session_held_queue"
	SessionHeldLoop  = "session_held_loop"
	SessionHeldPlan  = "session_held_plan"
)

// BuiltIn is what Source reports for a template that is not overridden.
const BuiltIn = "built-in"

// MaxOverrideBytes caps the size of an override file. A prompt is read on
// every hook, and nothing sensible comes near this.
const MaxOverrideBytes = 1 << 20

//go:embed defaults/*.md
var defaultFiles embed.FS

// Set is one immutable set of templates: the built-ins, each possibly
// replaced by an override. Sets are values; copying one is cheap and safe
// across goroutines.
//
// The zero Set holds no templates (Render reports every name as unknown); get
// one from Defaults or Load.
type Set struct {
	texts   map[string]string
	sources map[string]string
	// warnings are the overrides Load refused while using the built-in
	// in their place (see Warnings).
	warnings []string
}

// Names returns the names of all templates, sorted.
func Names() []string {
	ents, err := fs.ReadDir(defaultFiles, "defaults")
	if err != nil {
		// The go:embed directive guarantees the directory; without it
		// the binary would not have compiled.
		return nil
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Defaults returns the built-in templates.
func Defaults() Set { return builtIns() }

// builtIns reads the embedded templates once: a hook loads its templates
// (Load) on every event, and reading every embedded file again cost each
// load a quarter of a millisecond. The Set is shared, so never written to:
// Load writes its overrides into copies of its maps.
var builtIns = sync.OnceValue(func() Set {
	names := Names()
	s := Set{texts: make(map[string]string, len(names)), sources: make(map[string]string, len(names))}
	for _, name := range names {
		data, err := defaultFiles.ReadFile(path.Join("defaults", name+".md"))
		if err != nil {
			// Unreachable: Names listed the embedded file.
			continue
		}
		s.texts[name] = string(data)
		s.sources[name] = BuiltIn
	}
	return s
})

// Load returns the built-in templates, each replaced by overrideDir/NAME.md
// when that file exists. A missing overrideDir means no overrides. Files in
// overrideDir that do not end in .md, dot files and subdirectories are
// ignored; an .md file whose name is not a template name is an error, so
// that a misspelt override is not silently unused.
//
// An empty override (nothing but white space) is refused and the built-in
// used instead, with a warning naming the file in Warnings: a prompt with
// no words would leave the agent with no instructions at all, and an error
// would fail every hook open, so that each Stop allowed.
func Load(overrideDir string) (Set, error) {
	s := Defaults()
	ents, err := os.ReadDir(overrideDir)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return Set{}, fmt.Errorf("reading template overrides in %q: %w", overrideDir, err)
	}
	s.texts, s.sources = maps.Clone(s.texts), maps.Clone(s.sources)
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(overrideDir, e.Name())
		if _, known := s.texts[name]; !known {
			return Set{}, fmt.Errorf("template override %q: there is no template named %q (known: %s)", file, name, strings.Join(Names(), ", "))
		}
		text, err := readOverride(file)
		if errors.Is(err, errEmptyOverride) {
			s.warnings = append(s.warnings, fmt.Sprintf("template override %s is empty: drover uses the built-in %s template instead (write a prompt in the file, or delete it)", file, name))
			continue
		}
		if err != nil {
			return Set{}, err
		}
		s.texts[name] = text
		s.sources[name] = file
	}
	return s, nil
}

// errEmptyOverride is readOverride's answer for a file with no text.
var errEmptyOverride = errors.New("template override is empty")

func readOverride(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("reading template override %q: %w", file, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxOverrideBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading template override %q: %w", file, err)
	}
	if len(data) > MaxOverrideBytes {
		return "", fmt.Errorf("template override %q is larger than %d bytes", file, MaxOverrideBytes)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", fmt.Errorf("%w: %q", errEmptyOverride, file)
	}
	return string(data), nil
}

// placeholder matches {{key}}, allowing spaces inside the braces.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// Render returns template name with every {{key}} that has an entry in vars
// replaced by its value. Placeholders without a var are left as they are, so
// an override may mention {{anything}} safely. Values are inserted as they
// are and never expanded again, whatever braces they hold. Trailing
// whitespace is trimmed so that rendered pieces compose cleanly.
func (s Set) Render(name string, vars map[string]string) (string, error) {
	text, ok := s.texts[name]
	if !ok {
		return "", fmt.Errorf("unknown template %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	out := placeholder.ReplaceAllStringFunc(text, func(m string) string {
		key := placeholder.FindStringSubmatch(m)[1]
		if v, ok := vars[key]; ok {
			return v
		}
		return m
	})
	return strings.TrimRight(out, " \t\r\n"), nil
}

// Warnings returns, one line each in file order, the overrides that Load
// refused and replaced by the built-in: an empty file. Callers show them
// to the user (a hook's systemMessage) and log them.
func (s Set) Warnings() []string { return slices.Clone(s.warnings) }

// Source reports where template name comes from: BuiltIn, or the path of
// its override file. It is empty for a name that is not a template.
func (s Set) Source(name string) string { return s.sources[name] }

// SeedNames returns the templates `drover templates` copies when given no
// names: the two that seed 000 lets a project override, the queue's loop
// prompt and its review prompt. Copying every template would pin each
// prompt against later fixes of drover's.
func SeedNames() []string { return []string{Loop, Review} }

// CheckNames returns an error naming every entry of names that is not a
// template name, with the known names it may have meant: those that start
// with it or are within two edits of it.
func CheckNames(names []string) error {
	known := Names()
	var errs []error
	for _, n := range names {
		if _, ok := slices.BinarySearch(known, n); ok {
			continue
		}
		var near []string
		if n != "" {
			for _, k := range known {
				if strings.HasPrefix(k, n) || editDistance(k, n) <= 2 {
					near = append(near, k)
				}
			}
		}
		switch {
		case len(near) == 0:
			errs = append(errs, fmt.Errorf("no template named %q", n))
		case len(near) <= 12:
			errs = append(errs, fmt.Errorf("no template named %q (did you mean %s?)", n, strings.Join(near, ", ")))
		default:
			errs = append(errs, fmt.Errorf("no template named %q (%d template names start with it)", n, len(near)))
		}
	}
	return errors.Join(errs...)
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (template names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// WriteDefaults copies the built-in templates named by names to
// dir/NAME.md, creating dir if needed, and leaves every file that already
// exists alone: those are the user's edits. It returns the paths written
// and the paths skipped. A name that is not a template's (see CheckNames)
// is an error, and then nothing is written.
func WriteDefaults(dir string, names []string) (written, skipped []string, err error) {
	if err := CheckNames(names); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating template directory %q: %w", dir, err)
	}
	d := Defaults()
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		file := filepath.Join(dir, name+".md")
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			skipped = append(skipped, file)
			continue
		}
		if err != nil {
			return written, skipped, fmt.Errorf("creating template %q: %w", file, err)
		}
		_, werr := io.WriteString(f, d.texts[name])
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			// Leave no half-written file behind: it would be taken as
			// the user's edit and skipped forever after.
			_ = os.Remove(file)
			return written, skipped, fmt.Errorf("writing template %q: %w", file, err)
		}
		written = append(written, file)
	}
	return written, skipped, nil
}
