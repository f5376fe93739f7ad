package convergence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/drover-dev/drover/internal/transcript"
)

// Reflection is a short account of one iteration, written for the agent's
// next iteration to read (as .drover/sessions/<id>/reflections/
// iteration-N.json). The JSON names are those of seed 004's reflection
// files.
type Reflection struct {
	Iteration int `json:"iteration"`
	// Approach says what the agent did: files changed, commands run, tools
	// used.
	Approach string `json:"approach"`
	// Successes and Failures are short statements; never null in JSON.
	Successes []string `json:"successes"`
	Failures  []string `json:"failures"`
	// ErrorHash is the hash of the failure the iteration ended on.
	ErrorHash string `json:"error_hash,omitempty"`
	// Thrashing is true when this iteration and the ThrashRepeats-1 before
	// it ended on the same failure.
	Thrashing bool `json:"thrashing"`
	// PriorSummary sums up the earlier reflections, oldest first.
	PriorSummary string `json:"prior_iterations_summary"`
	ToolCalls    int    `json:"tool_calls"`
}

// Caps that keep a reflection short enough for a prompt.
const (
	maxListed     = 3   // files or commands named in Approach
	maxCommandLen = 80  // bytes of one command in Approach
	maxPriorFull  = 8   // prior iterations summed up one by one
	maxPriorEntry = 200 // bytes of one prior iteration's summary
)

// Reflect writes the reflection of an iteration from its transcript summary
// and metrics (m.Iteration numbers it), given the reflections of earlier
// iterations in any order. The bool is false, and no reflection should be
// written, for a low-signal iteration: fewer than th.MinToolCalls tool
// calls.
func Reflect(it transcript.Iteration, m Metrics, prior []Reflection, th Thresholds) (Reflection, bool) {
	th = th.WithDefaults()
	if it.ToolCalls < th.MinToolCalls {
		return Reflection{}, false
	}
	prior = slices.Clone(prior)
	sort.SliceStable(prior, func(i, j int) bool { return prior[i].Iteration < prior[j].Iteration })
	r := Reflection{
		Iteration: m.Iteration,
		Approach:  approach(it),
		Successes: successes(m),
		Failures:  failures(it, m),
		ErrorHash: m.ErrorHash,
		ToolCalls: it.ToolCalls,
	}
	r.Thrashing = repeats(m.ErrorHash, prior, th.ThrashRepeats)
	r.PriorSummary = summarizePrior(prior)
	return r, true
}

func approach(it transcript.Iteration) string {
	var parts []string
	if n := len(it.FilesChanged); n > 0 {
		parts = append(parts, fmt.Sprintf("changed %s (%s)", plural(n, "file"), listed(baseNames(it.FilesChanged), n)))
	}
	if n := it.ToolCounts["Read"]; n > 0 {
		parts = append(parts, "read "+plural(n, "file"))
	}
	var cmds []string
	seen := map[string]bool{}
	for _, c := range it.Commands() {
		c = oneLine(c, maxCommandLen)
		if !seen[c] {
			seen[c] = true
			cmds = append(cmds, "`"+c+"`")
		}
	}
	if n := it.ToolCounts["Bash"]; n > 0 {
		parts = append(parts, fmt.Sprintf("ran %s (%s)", plural(n, "command"), listed(lastN(cmds, maxListed), len(cmds))))
	}
	var others []string
	for name, n := range it.ToolCounts {
		switch name {
		case "Read", "Bash", "Write", "Edit", "MultiEdit", "NotebookEdit":
			continue
		}
		others = append(others, fmt.Sprintf("%s ×%d", name, n))
	}
	if len(others) > 0 {
		sort.Strings(others)
		parts = append(parts, "also used "+strings.Join(others, ", "))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s with no file changes or commands", plural(it.ToolCalls, "tool call"))
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func successes(m Metrics) []string {
	out := []string{}
	noun := testNoun(m)
	switch {
	case m.TestsPassed == 1 && m.TestsFailed == 0:
		out = append(out, "the 1 "+noun+" passes"+framework(m))
	case m.TestsPassed > 0 && m.TestsFailed == 0:
		out = append(out, fmt.Sprintf("all %d %ss pass%s", m.TestsPassed, noun, framework(m)))
	case m.TestsPassed > 0:
		out = append(out, fmt.Sprintf("%d of %d %ss pass%s", m.TestsPassed, m.TestsPassed+m.TestsFailed, noun, framework(m)))
	}
	if m.BuildOK != nil && *m.BuildOK {
		out = append(out, "the build passes")
	}
	if m.LintIssues == 0 {
		out = append(out, "lint is clean")
	}
	if m.FilesChanged > 0 {
		out = append(out, "changed "+plural(m.FilesChanged, "file"))
	}
	return out
}

func failures(it transcript.Iteration, m Metrics) []string {
	out := []string{}
	if m.TestsFailed > 0 {
		out = append(out, fmt.Sprintf("%d of %d %ss fail%s", m.TestsFailed, m.TestsPassed+m.TestsFailed, testNoun(m), framework(m)))
	}
	if m.LastOutcome == OutcomeTestsFailed && m.TestsFailed == 0 {
		out = append(out, "the last test command failed: "+lastCommandOf(it, CommandTest))
	}
	if m.BuildOK != nil && !*m.BuildOK {
		out = append(out, "the build fails")
	}
	if m.LintIssues > 0 {
		out = append(out, plural(m.LintIssues, "lint issue"))
	}
	if m.FirstFailure != "" {
		out = append(out, "first failure: "+m.FirstFailure)
	}
	if m.ToolErrors > 0 && len(out) == 0 {
		out = append(out, plural(m.ToolErrors, "tool call")+" returned an error")
	}
	return out
}

// JSON renders the reflection as its file holds it: indented, with <, >
// and & left as they are for the agent to read, and a final newline.
func (r Reflection) JSON() ([]byte, error) {
	if r.Successes == nil {
		r.Successes = []string{}
	}
	if r.Failures == nil {
		r.Failures = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding reflection of iteration %d: %w", r.Iteration, err)
	}
	return buf.Bytes(), nil
}

func lastCommandOf(it transcript.Iteration, kind CommandKind) string {
	for i := len(it.Calls) - 1; i >= 0; i-- {
		if c := it.Calls[i]; c.Command != "" && ClassifyCommand(c.Command) == kind {
			return "`" + oneLine(c.Command, maxCommandLen) + "`"
		}
	}
	return "(command not kept)"
}

// repeats reports whether the last n-1 prior reflections ended on the same
// failure as hash. A prior reflection matches on its error_hash, or, when
// it was written by something hashing differently, on the hash of one of
// its failure texts.
func repeats(hash string, prior []Reflection, n int) bool {
	if hash == "" || n < 2 || len(prior) < n-1 {
		return false
	}
	for _, p := range prior[len(prior)-(n-1):] {
		if p.ErrorHash == hash {
			continue
		}
		match := false
		for _, f := range p.Failures {
			if ErrorHash(strings.TrimPrefix(f, "first failure: ")) == hash {
				match = true
				break
			}
		}
		if !match {
			return false
		}
	}
	return true
}

func summarizePrior(prior []Reflection) string {
	if len(prior) == 0 {
		return ""
	}
	var parts []string
	older := prior[:max(0, len(prior)-maxPriorFull)]
	if len(older) > 0 {
		failed, thrashed := 0, 0
		for _, p := range older {
			if len(p.Failures) > 0 {
				failed++
			}
			if p.Thrashing {
				thrashed++
			}
		}
		parts = append(parts, fmt.Sprintf("Iterations %d-%d: %d with failures, %d thrashing.",
			older[0].Iteration, older[len(older)-1].Iteration, failed, thrashed))
	}
	for _, p := range prior[len(older):] {
		s := fmt.Sprintf("Iteration %d", p.Iteration)
		if p.Approach != "" {
			s += " (" + p.Approach + ")"
		}
		s += ": "
		if len(p.Successes) > 0 {
			s += strings.Join(p.Successes, ", ")
		} else {
			s += "no successes"
		}
		if len(p.Failures) > 0 {
			s += "; failed: " + strings.Join(p.Failures, ", ")
		}
		if p.Thrashing {
			s += "; thrashing"
		}
		parts = append(parts, oneLine(s, maxPriorEntry)+".")
	}
	return strings.Join(parts, " ")
}

func framework(m Metrics) string {
	switch m.TestFramework {
	case "":
		return ""
	case "go-packages":
		return " (go test)"
	}
	return " (" + m.TestFramework + ")"
}

// testNoun is what the counts count: go test without -v only tells
// packages apart.
func testNoun(m Metrics) string {
	if m.TestFramework == "go-packages" {
		return "test package"
	}
	return "test"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// listed names up to maxListed items and says how many more there are.
func listed(items []string, total int) string {
	if len(items) > maxListed {
		items = items[:maxListed]
	}
	s := strings.Join(items, ", ")
	if more := total - len(items); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = path.Base(strings.ReplaceAll(p, `\`, "/"))
	}
	return out
}

// oneLine flattens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - 1
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
