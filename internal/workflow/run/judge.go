package run

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// maxDirtyLines bounds the `git status` lines an iteration is told of.
const maxDirtyLines = 20

// verdict is why an iteration did not finish its task, or done.
type verdict int

const (
	done verdict = iota
	droverFailed
	agentFailed
	testsFailed
	offBranch
	notCommitted
	dirty
	reviewNotPassed
)

func judge(m IterationDone) verdict {
	switch {
	case m.Err != nil:
		return droverFailed
	case m.AgentErr != nil:
		return agentFailed
	case m.Test != nil && !m.Test.Passed:
		return testsFailed
	case m.OffBranch != "":
		return offBranch
	case !m.Committed:
		return notCommitted
	case m.Dirty != "":
		return dirty
	case m.Review != nil && m.Review.Outcome != reviewer.Pass:
		return reviewNotPassed
	}
	return done
}

// Done says whether an iteration finished its task. The review is part of
// it: an iteration that is Done without its review (Review nil) is
// reviewed next, when the run has a reviewer.
func Done(m IterationDone) bool { return judge(m) == done }

// Judge decides whether an iteration finished its task, and if not, what
// the next iteration is told.
func Judge(t templates.Set, m IterationDone) (bool, string) {
	switch judge(m) {
	case droverFailed:
		return false, m.Err.Error()
	case agentFailed:
		return false, say(t, templates.RunFeedbackAgentFailed, map[string]string{"error": m.AgentErr.Error()})
	case testsFailed:
		return false, say(t, templates.RunFeedbackTestsFailed, map[string]string{"command": m.Test.Command, "output": m.Test.Output})
	case offBranch:
		return false, say(t, templates.RunFeedbackOffBranch, map[string]string{"off_branch": m.OffBranch, "branch": m.Branch})
	case notCommitted:
		return false, say(t, templates.RunFeedbackNoCommit, nil)
	case dirty:
		return false, say(t, templates.RunFeedbackDirty, map[string]string{"status": clipLines(t, m.Dirty, maxDirtyLines)})
	case reviewNotPassed:
		return false, reviewFeedback(t, *m.Review)
	}
	return true, ""
}

// reviewFeedback is what the next iteration is told of a review that did
// not pass, then of the tool calls the reviewer's CLI refused it, if any:
// the findings (or the missing verdict) may come of a check that never ran.
func reviewFeedback(t templates.Set, r reviewer.Result) string {
	text := reviewOutcomeFeedback(t, r)
	if denied := deniedLines(r.Denials); len(denied) > 0 {
		v := map[string]string{"denials": "- " + strings.Join(denied, "\n- "), "denial_count": strconv.Itoa(len(denied))}
		text += "\n" + say(t, templates.RunFeedbackReviewDenied, v)
	}
	return text
}

// deniedLines is each refused call in one line of Markdown.
func deniedLines(ds []reviewer.Denial) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Markdown())
	}
	return out
}

// reviewOutcomeFeedback is what the next iteration is told of the verdict
// of a review that did not pass, or of its missing verdict.
func reviewOutcomeFeedback(t templates.Set, r reviewer.Result) string {
	if r.Outcome == reviewer.Failed {
		return say(t, templates.RunFeedbackReviewError, map[string]string{"error": fmt.Sprint(r.Err)})
	}
	var lines []string
	for _, f := range r.Findings {
		where := f.File
		if where != "" && f.Line > 0 {
			where += ":" + strconv.Itoa(f.Line)
		}
		if where != "" {
			where = " (" + where + ")"
		}
		lines = append(lines, fmt.Sprintf("- %s%s: %s", f.Severity, where, f.Summary))
	}
	if len(lines) == 0 {
		lines = append(lines, say(t, templates.RunFeedbackNoFindings, nil))
	}
	return say(t, templates.RunFeedbackReviewFailed, map[string]string{"findings": strings.Join(lines, "\n")})
}

// TaskReview is what the run keeps of one review.
func TaskReview(r reviewer.Result, iteration int, at time.Time) *api.TaskReview {
	out := &api.TaskReview{Model: r.Model, CostUSD: r.CostUSD, Iteration: iteration, At: at}
	switch r.Outcome {
	case reviewer.Pass:
		out.Outcome = api.ReviewPass
	case reviewer.Fail:
		out.Outcome = api.ReviewFail
	default:
		out.Outcome = api.ReviewFailed
	}
	if r.Err != nil {
		out.Error = r.Err.Error()
	}
	out.Denied = deniedLines(r.Denials)
	for _, f := range r.Findings {
		if f.Blocking() {
			out.Blocking++
		} else {
			out.Minor++
		}
	}
	return out
}

// RouteIteration picks the role of a task's iteration by the loop's rules
// (loop.routes): the first iteration is in the initial phase, later ones
// are routed by how the last tests went and the task's convergence status.
func RouteIteration(rules []router.Rule, iteration int, history []convergence.Metrics, status string) router.Role {
	in := router.Input{Phase: router.PhaseInitial}
	if iteration > 1 {
		in = router.Input{Phase: router.PhaseIterating, Status: status}
		if n := len(history); n > 0 {
			in.LastOutcome = string(history[n-1].LastOutcome)
		}
	}
	role, _ := router.Route(rules, in)
	if role == "" {
		role = router.Developer
	}
	return role
}

// IterationMetrics measures an iteration by its targeted tests: what
// convergence.Classify judges a task on.
func IterationMetrics(iteration int, tr *api.TestResult) convergence.Metrics {
	m := convergence.UnknownMetrics(iteration)
	if tr == nil {
		return m
	}
	if sum, ok := convergence.ParseTestSummary(tr.Output); ok {
		m.TestPassRate, m.TestsPassed, m.TestsFailed, m.TestFramework = sum.PassRate(), sum.Passed, sum.Failed, sum.Framework
	}
	if tr.Passed {
		m.LastOutcome = convergence.OutcomeOK
		return m
	}
	m.LastOutcome = convergence.OutcomeTestsFailed
	if b, ok := convergence.ParseBuild(tr.Output); ok && (b.Failed || b.Errors > 0) {
		ok := false
		m.BuildOK = &ok
		m.LastOutcome = convergence.OutcomeBuildFailed
	}
	ff := convergence.FirstFailure(tr.Output)
	if ff == "" {
		ff = firstLine(tr.Output)
	}
	if ff != "" {
		m.FirstFailure, m.ErrorHash = ff, convergence.ErrorHash(ff)
	}
	return m
}

// clipLines keeps the first max lines of s, noting (as t words it) how
// many more there were.
func clipLines(t templates.Set, s string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:max], "\n") + "\n" + say(t, templates.RunMoreLines, map[string]string{"count": strconv.Itoa(len(lines) - max)})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
