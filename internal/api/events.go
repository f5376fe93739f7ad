package api

import (
	"encoding/json"
	"time"
)

// PathEvents streams the project's events as Server-Sent Events; a client
// resumes after an event with the Last-Event-ID header or ?since=ID.
const PathEvents = "/v1/events"

// Event is one state change the engine committed: its id is the project's,
// increasing by one per event across supervisor restarts, and Data is the
// kind's payload (EventKind's doc says which).
type Event struct {
	ID      uint64          `json:"id"`
	Kind    EventKind       `json:"kind"`
	Session string          `json:"session,omitempty"`
	Run     string          `json:"run,omitempty"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// EventKind names what an Event reports.
type EventKind string

// The event kinds. A payload is the JSON of the struct named in the
// comment; an empty comment means no payload.
const (
	EventSupervisorStarted EventKind = "supervisor.started" // SupervisorData
	EventSupervisorStopped EventKind = "supervisor.stopped" //
	EventSessionStarted    EventKind = "session.started"    // SessionData
	EventSessionEnded      EventKind = "session.ended"      // SessionData
	EventHookDecided       EventKind = "hook.decided"       // DecisionData (a Stop's decision among them)
	EventLoopIteration     EventKind = "loop.iteration"     // LoopIterationData
	EventLoopEnded         EventKind = "loop.ended"         // LoopIterationData
	EventTaskDone          EventKind = "task.done"          // TaskData
	EventTaskStuck         EventKind = "task.stuck"         // TaskData
	EventReviewStarted     EventKind = "review.started"     // ReviewData
	EventReviewFinished    EventKind = "review.finished"    // ReviewData
	EventNeedsReview       EventKind = "needs_review"       // ReviewData
	EventBudgetReached     EventKind = "budget.reached"     // BudgetData
	EventRunState          EventKind = "run.state"          // RunStateData
	EventRunWave           EventKind = "run.wave"           // RunStateData
	EventRunTask           EventKind = "run.task"           // TaskData
)

// SupervisorData is the payload of supervisor.started.
type SupervisorData struct {
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid"`
}

// SessionData is the payload of session.started and session.ended.
type SessionData struct {
	Workflow string `json:"workflow"`
}

// DecisionData is the payload of hook.decided: the hook event and what
// the engine answered ("block" or "allow").
type DecisionData struct {
	Event string `json:"event"`
	// Request is the hook request's id.
	Request  string `json:"request,omitempty"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// LoopIterationData is the payload of loop.iteration and loop.ended.
type LoopIterationData struct {
	Iteration    int      `json:"iteration"`
	Status       string   `json:"status,omitempty"`
	StatusReason string   `json:"status_reason,omitempty"`
	Role         string   `json:"role,omitempty"`
	CostUSD      float64  `json:"cost_usd,omitempty"`
	TestPassRate *float64 `json:"test_pass_rate,omitempty"`
	LintIssues   *int     `json:"lint_issues,omitempty"`
	Outcome      string   `json:"outcome,omitempty"`
}

// TaskData is the payload of task.done, task.stuck and run.task.
type TaskData struct {
	Task      string  `json:"task"`
	State     string  `json:"state,omitempty"`
	Wave      int     `json:"wave,omitempty"`
	Iteration int     `json:"iteration,omitempty"`
	Role      string  `json:"role,omitempty"`
	Status    string  `json:"status,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// Worker names where a run's task iteration runs or ran ("local" for
	// the local executor).
	Worker string `json:"worker,omitempty"`
}

// ReviewData is the payload of review.started, review.finished and
// needs_review.
type ReviewData struct {
	Plan      string  `json:"plan,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	Task      string  `json:"task,omitempty"`
	Model     string  `json:"model,omitempty"`
	Phase     string  `json:"phase,omitempty"`
	Iteration int     `json:"iteration,omitempty"`
	Verdict   string  `json:"verdict,omitempty"`
	Findings  int     `json:"findings,omitempty"`
	Blocking  int     `json:"blocking,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
}

// BudgetData is the payload of budget.reached.
type BudgetData struct {
	What    string  `json:"what"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Reason  string  `json:"reason,omitempty"`
}

// RunStateData is the payload of run.state and run.wave.
type RunStateData struct {
	State   string  `json:"state"`
	Merged  int     `json:"merged"`
	Waves   int     `json:"waves"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Report  string  `json:"report,omitempty"`
}
