package session

import "time"

// IterationMetrics is one line of a loop session's metrics.jsonl (seed
// 004's metrics history): what the loop measured and decided at the end of
// one iteration. The measured fields are convergence.Metrics', as the
// iteration's transcript showed them (the project's metric commands run
// after the line is written; their results route the next iteration);
// Status, StatusReason and Role are what the loop made of them; CostUSD
// is what the loop had spent so far.
type IterationMetrics struct {
	Iteration int       `json:"iteration"`
	Time      time.Time `json:"time"`
	// LoopStartedAt names the loop: a session that runs a second loop
	// counts its iterations from 1 again.
	LoopStartedAt time.Time `json:"loop_started_at"`

	TestPassRate   float64 `json:"test_pass_rate"`
	TestsPassed    int     `json:"tests_passed"`
	TestsFailed    int     `json:"tests_failed"`
	TestFramework  string  `json:"test_framework,omitempty"`
	BuildOK        *bool   `json:"build_success,omitempty"`
	LintIssues     int     `json:"lint_issues"`
	LastOutcome    string  `json:"last_outcome"`
	CommandOutcome string  `json:"command_outcome,omitempty"`
	FirstFailure   string  `json:"first_failure,omitempty"`
	ErrorHash      string  `json:"error_hash,omitempty"`
	ToolCalls      int     `json:"tool_calls"`
	ToolErrors     int     `json:"tool_errors"`
	FilesChanged   int     `json:"files_changed"`

	// Status and StatusReason are the convergence status after this
	// iteration; Role is the role the next iteration was routed to.
	Status       string  `json:"status,omitempty"`
	StatusReason string  `json:"status_reason,omitempty"`
	Role         string  `json:"role,omitempty"`
	CostUSD      float64 `json:"cost_usd"`
	// Active is false on the line of the iteration that ended the loop,
	// and Outcome then says how it ended.
	Active  bool   `json:"active"`
	Outcome string `json:"outcome,omitempty"`
}

// LastIterationMetrics returns the metrics line of the last iteration the
// session's loop measured, stamped at, or false when it runs no loop or
// the loop has measured none yet. It reads only the committed record, so a
// restarted actor derives the same line again (its writer keeps one line
// per iteration).
func (r Record) LastIterationMetrics(at time.Time) (IterationMetrics, bool) {
	if r.Workflow != Loop || len(r.LoopHistory) == 0 {
		return IterationMetrics{}, false
	}
	m := r.LoopHistory[len(r.LoopHistory)-1]
	s := r.Loop
	return IterationMetrics{
		Iteration: m.Iteration, Time: at.UTC(), LoopStartedAt: s.StartedAt.UTC(),
		TestPassRate: m.TestPassRate, TestsPassed: m.TestsPassed, TestsFailed: m.TestsFailed, TestFramework: m.TestFramework,
		BuildOK: m.BuildOK, LintIssues: m.LintIssues, LastOutcome: string(m.LastOutcome), CommandOutcome: string(m.CommandOutcome),
		FirstFailure: m.FirstFailure, ErrorHash: m.ErrorHash, ToolCalls: m.ToolCalls, ToolErrors: m.ToolErrors, FilesChanged: m.FilesChanged,
		Status: s.LastStatus, StatusReason: s.LastStatusReason, Role: s.LastRole, CostUSD: s.CostUSD,
		Active: s.Active, Outcome: string(s.Outcome),
	}, true
}
