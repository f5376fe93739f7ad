package convergence

import (
	"encoding/json"

	"github.com/drover-dev/drover/internal/transcript"
)

// Outcome is how the last test or build run of an iteration went. The
// values are the router's last_outcome vocabulary.
type Outcome string

// The outcomes.
const (
	OutcomeNone        Outcome = "none"         // no test or build run
	OutcomeOK          Outcome = "ok"           // the last run passed
	OutcomeTestsFailed Outcome = "tests_failed" // the last run had failing tests, or a test command failed
	OutcomeBuildFailed Outcome = "build_failed" // the last run did not compile
	// OutcomeLintFailed is a lint run that failed. drover's own
	// measurements count lint issues instead (Metrics.LintIssues); the
	// outcome comes from routing inputs other tools write (seed 004's
	// lint_fail), so that drover route and loop.routes can name it.
	OutcomeLintFailed Outcome = "lint_failed"
)

// Outcomes lists every Outcome, for validating configuration.
func Outcomes() []Outcome {
	return []Outcome{OutcomeNone, OutcomeOK, OutcomeTestsFailed, OutcomeBuildFailed, OutcomeLintFailed}
}

// Metrics are the measurements of one iteration. Unknown numbers are -1;
// decode stored metrics with encoding/json, which keeps absent fields
// unknown rather than zero.
type Metrics struct {
	// Iteration is the loop iteration these metrics belong to. MetricsFrom
	// leaves it zero: the caller knows the number.
	Iteration int `json:"iteration"`

	// TestPassRate is TestsPassed/(TestsPassed+TestsFailed) of the
	// iteration's representative test run, or -1.
	TestPassRate  float64 `json:"test_pass_rate"`
	TestsPassed   int     `json:"tests_passed"`
	TestsFailed   int     `json:"tests_failed"`
	TestFramework string  `json:"test_framework,omitempty"`

	// BuildOK is nil when no build was seen.
	BuildOK *bool `json:"build_success,omitempty"`
	// LintIssues is the issue count of the last lint run, or -1.
	LintIssues int `json:"lint_issues"`

	// FirstFailure is the failure the iteration ended on (see
	// FirstFailure) and ErrorHash its hash; both are empty when it ended
	// green or ran nothing.
	ErrorHash    string `json:"error_hash,omitempty"`
	FirstFailure string `json:"first_failure,omitempty"`

	// LastOutcome is how the last test or build run went.
	LastOutcome Outcome `json:"last_outcome"`
	// CommandOutcome is how the project's metric commands, run after the
	// iteration, went; empty when none ran.
	CommandOutcome Outcome `json:"command_outcome,omitempty"`

	ToolCalls    int `json:"tool_calls"`
	ToolErrors   int `json:"tool_errors"`
	FilesChanged int `json:"files_changed"`
}

// UnknownMetrics returns the metrics of an iteration that measured nothing.
func UnknownMetrics(iteration int) Metrics {
	return Metrics{Iteration: iteration, TestPassRate: -1, LintIssues: -1, LastOutcome: OutcomeNone}
}

// UnmarshalJSON decodes stored metrics, leaving absent numbers unknown (-1)
// rather than zero: a missing test_pass_rate is not a 0% pass rate.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	type plain Metrics
	p := plain(UnknownMetrics(0))
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Metrics(p)
	return nil
}

// run is one classified Bash call with its result.
type run struct {
	kind    CommandKind
	output  string
	isError bool
	tests   TestResult
	hasTest bool
	status  Outcome
}

// MetricsFrom measures an iteration from its tool calls and their results.
//
// Test numbers come from the representative test run: of the runs whose
// output had a test summary, the one with the largest total, the latest on
// a tie. A narrow rerun of one test after a full run does not hide the
// failures of the full run. LastOutcome and the failure are those of the
// last test or build command, unless it passed while the representative
// run failed (then tests_failed, with the representative run's failure);
// with no test or build command, the failure is that of the last Bash call
// if it failed.
func MetricsFrom(it transcript.Iteration) Metrics {
	m := UnknownMetrics(0)
	m.ToolCalls = it.ToolCalls
	m.ToolErrors = it.ToolErrors
	m.FilesChanged = len(it.FilesChanged)

	var rep, last *run
	var lastBash *transcript.ToolCall
	for i := range it.Calls {
		c := &it.Calls[i]
		if c.Name != "Bash" || c.Result == nil {
			continue
		}
		lastBash = c
		r := classifyRun(c)
		if r.hasTest && (rep == nil || r.tests.Total >= rep.tests.Total) {
			rep = &r
		}
		switch r.kind {
		case CommandTest, CommandBuild:
			last = &r
			if r.status == OutcomeBuildFailed {
				m.BuildOK = ptr(false)
			} else if r.kind == CommandBuild || buildsFirst(r.tests.Framework) {
				m.BuildOK = ptr(true)
			}
		case CommandLint:
			if l, ok := ParseLint(r.output); ok {
				m.LintIssues = l.Issues
			} else if !r.isError {
				m.LintIssues = 0 // linters that print nothing when clean
			}
		}
	}
	if rep != nil {
		m.TestsPassed, m.TestsFailed = rep.tests.Passed, rep.tests.Failed
		m.TestFramework = rep.tests.Framework
		m.TestPassRate = rep.tests.PassRate()
	}
	switch {
	case last != nil && last.status == OutcomeOK && rep != nil && rep.tests.Failed > 0:
		// The last run passed, but it ran fewer tests than the one that
		// failed: the failures are still there.
		m.LastOutcome = OutcomeTestsFailed
		m.FirstFailure = FirstFailure(rep.output)
	case last != nil:
		m.LastOutcome = last.status
		if last.status != OutcomeOK {
			m.FirstFailure = FirstFailure(last.output)
		}
	case lastBash != nil && (lastBash.Result.IsError || lastBash.Result.FromHint):
		m.FirstFailure = FirstFailure(lastBash.Result.Text)
	}
	m.ErrorHash = ErrorHash(m.FirstFailure)
	return m
}

func classifyRun(c *transcript.ToolCall) run {
	r := run{kind: ClassifyCommand(c.Command), output: c.Result.Text, isError: c.Result.IsError}
	r.tests, r.hasTest = ParseTestSummary(r.output)
	if c.Result.FromHint && !r.hasTest {
		// Output written into the call (seed 004's output_hint) has no
		// exit status: it failed if it names a failure.
		r.isError = FirstFailure(r.output) != ""
	}
	if r.hasTest && r.kind == CommandOther {
		r.kind = CommandTest // make check, a script that runs the tests
	}
	b, _ := ParseBuild(r.output)
	ran := r.hasTest && r.tests.Passed+r.tests.Failed > 0
	switch {
	case r.kind == CommandBuild && (r.isError || b.Failed || b.Errors > 0):
		r.status = OutcomeBuildFailed
	case r.kind == CommandTest && (b.Failed || (b.Errors > 0 && r.isError && !ran)):
		r.status = OutcomeBuildFailed
	case r.kind == CommandTest && (r.tests.Failed > 0 || r.isError):
		r.status = OutcomeTestsFailed
	default:
		r.status = OutcomeOK
	}
	return r
}

// buildsFirst is true for runners that compile before testing, so a test
// summary means the build passed.
func buildsFirst(framework string) bool {
	return framework == "go" || framework == "go-packages" || framework == "cargo"
}

func ptr[T any](v T) *T { return &v }
