// Package tracker reads and writes the loop workflow's tracker file,
// .drover/sessions/<id>/loop.md: a YAML front matter that mirrors where the
// loop stands (drover writes it) and a Markdown body that the agent keeps its
// progress notes in (the agent writes it).
//
// The file is agent-editable, so everything here treats it as untrusted: a
// front matter that does not parse is an ErrMalformed error, which the caller
// answers by quarantining the file and writing a fresh one from its own
// state. It is never a reason to block a stop.
package tracker

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FileName is the tracker's name inside a session directory.
const FileName = "loop.md"

// DefaultCompletionMarker is the marker that ends a loop when it is the last
// non-empty line of the body and the front matter names no other. It is an
// HTML comment so that it stays invisible in rendered Markdown.
const DefaultCompletionMarker = "<!-- WORKFLOW_COMPLETE -->"

// MaxBytes caps the size of a tracker file. The agent appends notes every
// iteration; far past this the file is no longer a useful note, and reading
// it on every stop would cost more than it is worth.
const MaxBytes = 1 << 20

// MaxFrontMatterBytes caps the front matter. drover's own is a few hundred
// bytes plus the loop prompt; the cap keeps the YAML parser's work small
// whatever the agent writes there.
const MaxFrontMatterBytes = 64 << 10

// ErrMalformed is wrapped by every error that says a tracker's content (not
// the file system) is wrong. A caller quarantines on it and on nothing else.
var ErrMalformed = errors.New("tracker: malformed loop tracker")

// Tracker is one loop tracker: the front matter fields, in the order Render
// writes them, and the body.
//
// A zero number means "no limit" for MaxMinutes, MaxUSD and CheckpointEvery.
type Tracker struct {
	// The fields of seed 002's tracker.
	Iteration        int
	MaxIterations    int
	CompletionMarker string
	Active           bool
	StartedAt        time.Time

	// drover's fields.
	Prompt            string
	CompletionPromise string
	MaxMinutes        int
	MaxUSD            float64
	CheckpointEvery   int
	RequireChecks     bool
	Role              string
	Status            string
	StatusReason      string

	// Body is everything after the front matter, byte for byte.
	Body string
}

// frontMatter is the YAML shape of the front matter. The pointers tell a
// missing key from a zero value: the counters and the active flag are
// required, since a tracker without them says nothing about the loop.
type frontMatter struct {
	Iteration         *strictInt `yaml:"iteration"`
	MaxIterations     *strictInt `yaml:"max_iterations"`
	CompletionMarker  string     `yaml:"completion_marker"`
	Active            *bool      `yaml:"active"`
	StartedAt         string     `yaml:"started_at"`
	Prompt            string     `yaml:"prompt"`
	CompletionPromise string     `yaml:"completion_promise"`
	MaxMinutes        strictInt  `yaml:"max_minutes"`
	MaxUSD            float64    `yaml:"max_usd"`
	CheckpointEvery   strictInt  `yaml:"checkpoint_every"`
	RequireChecks     bool       `yaml:"require_checks"`
	Role              string     `yaml:"role"`
	Status            string     `yaml:"status"`
	StatusReason      string     `yaml:"status_reason"`
}

// strictInt is an int that only a YAML integer decodes into: yaml.v3 would
// truncate "1.5" to 1, and a counter that changed on the way in is not one
// the agent meant.
type strictInt int

// UnmarshalYAML implements yaml.Unmarshaler.
func (i *strictInt) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return fmt.Errorf("line %d: %q is not an integer", n.Line, n.Value)
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return err
	}
	*i = strictInt(v)
	return nil
}

const delimiter = "---"

// Parse decodes a tracker: a first line "---", YAML up to the next line
// "---", then the body. A UTF-8 byte order mark and CRLF line ends are
// accepted; keys drover does not know are ignored (and dropped by the next
// Render). Every failure wraps ErrMalformed.
func Parse(data []byte) (Tracker, error) {
	if len(data) > MaxBytes {
		return Tracker{}, malformed("it is larger than %d bytes", MaxBytes)
	}
	yamlText, rest, err := split(data, MaxFrontMatterBytes)
	if err != nil {
		return Tracker{}, err
	}

	fm, err := decodeFrontMatter(yamlText)
	if err != nil {
		return Tracker{}, err
	}
	t := Tracker{
		CompletionMarker:  fm.CompletionMarker,
		Prompt:            fm.Prompt,
		CompletionPromise: fm.CompletionPromise,
		MaxMinutes:        int(fm.MaxMinutes),
		MaxUSD:            fm.MaxUSD,
		CheckpointEvery:   int(fm.CheckpointEvery),
		RequireChecks:     fm.RequireChecks,
		Role:              fm.Role,
		Status:            fm.Status,
		StatusReason:      fm.StatusReason,
		Body:              string(rest),
	}
	switch {
	case fm.Iteration == nil:
		return Tracker{}, malformed("front matter has no iteration")
	case fm.MaxIterations == nil:
		return Tracker{}, malformed("front matter has no max_iterations")
	case fm.Active == nil:
		return Tracker{}, malformed("front matter has no active")
	}
	t.Iteration, t.MaxIterations, t.Active = int(*fm.Iteration), int(*fm.MaxIterations), *fm.Active
	if fm.StartedAt != "" {
		at, err := time.Parse(time.RFC3339Nano, fm.StartedAt)
		if err != nil {
			return Tracker{}, malformed("started_at %q is not an RFC 3339 time", fm.StartedAt)
		}
		t.StartedAt = at
	}
	if err := t.Validate(); err != nil {
		return Tracker{}, err
	}
	return t, nil
}

// Body returns the body of a tracker whose front matter may not parse:
// what follows the closing "---" line. It is what the agent wrote, and a
// typo in drover's front matter is no reason to lose it. ok is false when
// there is no body to trust: the file is larger than MaxBytes, does not
// start with a front matter line, or never closes it.
func Body(data []byte) (body string, ok bool) {
	if len(data) > MaxBytes {
		return "", false
	}
	_, rest, err := split(data, 0)
	if err != nil {
		return "", false
	}
	return string(rest), true
}

// split cuts a tracker into its front matter's YAML and its body. A UTF-8
// byte order mark and CRLF line ends are accepted. limit, when positive,
// caps the front matter's size. Every failure wraps ErrMalformed.
func split(data []byte, limit int) (yamlText, body []byte, err error) {
	rest := bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, ok := cutLine(rest)
	if !ok && len(first) == 0 {
		return nil, nil, malformed("the file is empty")
	}
	if !isDelimiter(first) {
		return nil, nil, malformed("it does not start with a %q front matter line", delimiter)
	}
	for {
		var line []byte
		line, rest, ok = cutLine(rest)
		switch {
		case isDelimiter(line):
			return yamlText, rest, nil
		case !ok:
			return nil, nil, malformed("the front matter has no closing %q line", delimiter)
		case limit > 0 && len(yamlText)+len(line) >= limit:
			return nil, nil, malformed("the front matter is larger than %d bytes", limit)
		}
		yamlText = append(yamlText, line...)
		yamlText = append(yamlText, '\n')
	}
}

// knownKeys are the front matter keys of frontMatter.
var knownKeys = map[string]bool{
	"iteration": true, "max_iterations": true, "completion_marker": true, "active": true,
	"started_at": true, "prompt": true, "completion_promise": true, "max_minutes": true,
	"max_usd": true, "checkpoint_every": true, "require_checks": true, "role": true,
	"status": true, "status_reason": true,
}

// decodeFrontMatter decodes the YAML between the delimiters in two steps:
// a parse to a node tree, which is linear in the input, then a decode of
// the known keys only, each of which must be a plain scalar. yaml.v3's own
// decode checks mapping keys for duplicates pairwise and writes one error
// per pair, so a few thousand repeated keys (in any mapping, however deep)
// would cost seconds and gigabytes; checked here, a duplicate costs a map
// lookup and unknown values are never decoded at all.
func decodeFrontMatter(text []byte) (frontMatter, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return frontMatter{}, malformed("front matter: %v", err)
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if root.Kind == 0 || (root.Kind == yaml.DocumentNode && len(root.Content) == 0) {
		// Nothing between the delimiters: an empty mapping.
		root = &yaml.Node{Kind: yaml.MappingNode}
	}
	if root.Kind != yaml.MappingNode {
		return frontMatter{}, malformed("front matter: line %d: want a mapping of keys to values", root.Line)
	}
	known := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	line := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || !knownKeys[k.Value] {
			continue
		}
		if first, dup := line[k.Value]; dup {
			return frontMatter{}, malformed("front matter: line %d: %s is already set on line %d", k.Line, k.Value, first)
		}
		line[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode {
			return frontMatter{}, malformed("front matter: line %d: %s is not a plain value", v.Line, k.Value)
		}
		known.Content = append(known.Content, k, v)
	}
	var fm frontMatter
	if err := known.Decode(&fm); err != nil {
		return frontMatter{}, malformed("front matter: %v", err)
	}
	// A !!binary scalar decodes to any bytes; YAML text cannot hold them.
	for _, p := range []*string{&fm.CompletionMarker, &fm.StartedAt, &fm.Prompt, &fm.CompletionPromise, &fm.Role, &fm.Status, &fm.StatusReason} {
		*p = strings.ToValidUTF8(*p, string(utf8.RuneError))
	}
	return fm, nil
}

// cutLine returns the first line of b without its line end ("\n" or
// "\r\n"), the rest after it, and whether a line end was found.
func cutLine(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t")) == delimiter
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("parsing loop tracker: %w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Validate reports the first field of t that no tracker may hold: a
// negative counter or budget, a budget that is not a finite number, or a
// start time RFC 3339 cannot write. The error wraps ErrMalformed.
func (t Tracker) Validate() error {
	switch {
	case t.Iteration < 0:
		return malformed("iteration is %d, want 0 or more", t.Iteration)
	case t.MaxIterations < 0:
		return malformed("max_iterations is %d, want 0 or more", t.MaxIterations)
	case t.MaxMinutes < 0:
		return malformed("max_minutes is %d, want 0 or more", t.MaxMinutes)
	case math.IsNaN(t.MaxUSD) || math.IsInf(t.MaxUSD, 0) || t.MaxUSD < 0:
		return malformed("max_usd is %v, want a number, 0 or more", t.MaxUSD)
	case t.CheckpointEvery < 0:
		return malformed("checkpoint_every is %d, want 0 or more", t.CheckpointEvery)
	case t.StartedAt.Year() < 0 || t.StartedAt.Year() > 9999:
		// RFC 3339 has four-digit years: Render could write it, Parse
		// could not read it back.
		return malformed("started_at %v is outside the years 0 to 9999", t.StartedAt)
	}
	return nil
}

// Render encodes t: the front matter with every field, always in the same
// order and with every string double-quoted, then the body as it is. Parse
// of the result gives t back (strings are made valid UTF-8 first, as YAML
// cannot hold anything else).
func (t Tracker) Render() []byte {
	var b bytes.Buffer
	b.WriteString(delimiter + "\n")
	field := func(key, value string) {
		b.WriteString(key)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteByte('\n')
	}
	field("iteration", strconv.Itoa(t.Iteration))
	field("max_iterations", strconv.Itoa(t.MaxIterations))
	field("completion_marker", quote(t.CompletionMarker))
	field("active", strconv.FormatBool(t.Active))
	started := ""
	if !t.StartedAt.IsZero() {
		started = t.StartedAt.Format(time.RFC3339Nano)
	}
	field("started_at", quote(started))
	field("prompt", quote(t.Prompt))
	field("completion_promise", quote(t.CompletionPromise))
	field("max_minutes", strconv.Itoa(t.MaxMinutes))
	field("max_usd", strconv.FormatFloat(t.MaxUSD, 'f', -1, 64))
	field("checkpoint_every", strconv.Itoa(t.CheckpointEvery))
	field("require_checks", strconv.FormatBool(t.RequireChecks))
	field("role", quote(t.Role))
	field("status", quote(t.Status))
	field("status_reason", quote(t.StatusReason))
	b.WriteString(delimiter + "\n")
	b.WriteString(t.Body)
	return b.Bytes()
}

// quote returns s as a YAML double-quoted scalar. Everything that YAML
// would fold or reject in a quoted scalar (line breaks, tabs, control and
// other non-printing characters) is escaped, so a value of any shape reads
// back as it was written.
func quote(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || (unicode.IsPrint(r) && r != '\ufeff'):
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Marker returns the completion marker in force: the front matter's, or
// DefaultCompletionMarker when it names none.
func (t Tracker) Marker() string {
	if m := strings.TrimSpace(t.CompletionMarker); m != "" {
		return m
	}
	return DefaultCompletionMarker
}

// Complete reports whether the agent marked the loop done: the last
// non-empty line of the body, trimmed, is the completion marker.
//
// Only the last line counts, as in athena's tracker: a body that explains
// the marker ("add <!-- WORKFLOW_COMPLETE --> when done"), or an earlier
// note that was followed by more work, is not a completion.
func (t Tracker) Complete() bool {
	body := t.Body
	for body != "" {
		i := strings.LastIndexByte(body, '\n')
		line := strings.TrimSpace(body[i+1:])
		if line != "" {
			return line == t.Marker()
		}
		if i < 0 {
			break
		}
		body = body[:i]
	}
	return false
}
