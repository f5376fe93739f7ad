package loop

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover/templates"
)

// CheckResult is how one run of the check command ended.
type CheckResult struct {
	Command string
	// Output is the run's combined output (its tail is kept).
	Output string
	// Err is the run's error ("" it passed); TimedOut says it ran past
	// Timeout and was killed.
	Err      string
	TimedOut bool
	Timeout  time.Duration
}

// maxCheckOutput caps what a check run's summary keeps of its output.
const maxCheckOutput = 4000

// Summary is what the agent reads of the run: the command, how it ended,
// and the tail of its output.
func (r CheckResult) Summary(t templates.Set) (string, error) {
	out := r.Output
	if len(out) > maxCheckOutput {
		cut := len(out) - maxCheckOutput
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = "..." + out[cut:]
	}
	vars := map[string]string{"check_command": r.Command, "check_output": out, "check_error": r.Err, "check_timeout": r.Timeout.String()}
	name := templates.LoopChecksPassed
	switch {
	case r.TimedOut:
		name = templates.LoopChecksTimeout
	case r.Err != "":
		name = templates.LoopChecksError
	}
	return t.Render(name, vars)
}

// CheckpointReport is what the reviewers of one checkpoint said.
type CheckpointReport struct {
	Iteration int
	// Passed is the combined verdict; PassVotes and FailVotes count the
	// reviewers that reached a verdict, FailedRuns those that did not.
	Passed                           bool
	PassVotes, FailVotes, FailedRuns int
	// FirstError is the first failed run's model and error ("" none).
	FirstErrorModel, FirstError string
	// Findings are the blocking findings, in the reviewers' order.
	Findings []Finding
}

// Finding is one blocking finding of a checkpoint reviewer.
type Finding struct {
	Model, File, Summary string
	Line                 int
}

// maxConsensusFindings caps the findings a consensus lists.
const maxConsensusFindings = 10

// Consensus says in a few lines what the checkpoint's reviewers agreed on:
// the verdict with its votes and the blocking findings (each once, at most
// maxConsensusFindings). A checkpoint where no reviewer reached a verdict
// is no review, not a FAIL: the agent is told that nobody judged the work,
// and why, rather than sent after findings nobody made.
func Consensus(r CheckpointReport, t templates.Set) (string, error) {
	vars := map[string]string{
		"checkpoint_iteration": strconv.Itoa(r.Iteration),
		"pass_votes":           strconv.Itoa(r.PassVotes),
		"fail_votes":           strconv.Itoa(r.FailVotes),
		"failed_runs":          strconv.Itoa(r.FailedRuns),
	}
	if r.PassVotes+r.FailVotes == 0 {
		if r.FirstError != "" {
			var err error
			if vars["first_error"], err = t.Render(templates.LoopConsensusFirstError, map[string]string{
				"model": r.FirstErrorModel, "error": clipLine(r.FirstError, 200),
			}); err != nil {
				return "", err
			}
		} else {
			var err error
			if vars["first_error"], err = t.Render(templates.LoopConsensusNoRun, vars); err != nil {
				return "", err
			}
		}
		return t.Render(templates.LoopConsensusNone, vars)
	}
	verdict := templates.LoopVerdictFail
	if r.Passed {
		verdict = templates.LoopVerdictPass
	}
	var err error
	if vars["verdict"], err = t.Render(verdict, nil); err != nil {
		return "", err
	}
	var b strings.Builder
	seen := map[string]bool{}
	n := 0
	for _, f := range r.Findings {
		key := f.File + "\x00" + strings.ToLower(strings.TrimSpace(f.Summary))
		if seen[key] || n >= maxConsensusFindings {
			continue
		}
		seen[key] = true
		n++
		loc := f.File
		if f.Line > 0 {
			loc += ":" + strconv.Itoa(f.Line)
		}
		line, err := t.Render(templates.LoopConsensusFinding, map[string]string{"location": loc, "model": f.Model, "summary": f.Summary})
		if err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	vars["findings"] = strings.TrimRight(b.String(), "\n")
	if n == 0 {
		if vars["findings"], err = t.Render(templates.LoopConsensusClean, vars); err != nil {
			return "", err
		}
	}
	return t.Render(templates.LoopConsensus, vars)
}

// clipLine is the first line of s, at most n bytes of it (cut on a rune
// boundary).
func clipLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
