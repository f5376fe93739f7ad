package api

import "time"

// PlanArgs are the arguments of the plan commands (WorkflowCommand with
// Workflow "plan"); each verb reads the fields it needs.
type PlanArgs struct {
	// PlanID names the plan (new, set, status, continue).
	PlanID string `json:"plan_id,omitempty"`
	// TDD selects the test-first variants (new).
	TDD bool `json:"tdd,omitempty"`
	// MaxReviews overrides review.max_reviews for a new plan.
	MaxReviews *int `json:"max_reviews,omitempty"`
	// BudgetUSD is a new plan's reviewer budget in dollars (0: none).
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Phase is the phase the agent reports finished (advance), the kind
	// of a standalone review (review: plan-review, tasks-review,
	// code-review, all-code-review), or the action whose prompt to render
	// (action: one of plan.Actions).
	Phase string `json:"phase,omitempty"`
	// Task is the task of advance complete-task and friends, add-task,
	// a standalone code review, or an action.
	Task string `json:"task,omitempty"`
	// Key and Value are an escape hatch of set.
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
}

// PlanStatus is the answer to every plan command: where the session's plan
// stands, under seed 001's field names, and for commands that act, the text
// for the agent in Message.
type PlanStatus struct {
	SessionID string `json:"session_id"`
	PlanID    string `json:"plan_id,omitempty"`
	PlanDir   string `json:"plan_dir,omitempty"`
	Active    bool   `json:"active"`
	// TakenBy is the session that took this session's plan over (drover
	// plan continue there); this session no longer drives it.
	TakenBy string `json:"taken_by,omitempty"`

	Phase            string  `json:"phase"`
	NextPhase        *string `json:"next_phase"`
	CurrentTask      *string `json:"current_task"`
	PhaseIteration   int     `json:"phase_iteration"`
	MaxReviews       int     `json:"max_reviews"`
	ReviewModel      string  `json:"review_model"`
	ConsecutiveClean int     `json:"consecutive_clean"`
	TDD              bool    `json:"tdd"`
	// BudgetUSD is the plan's reviewer budget in dollars (0: none),
	// compared with Totals.CostUSD before each review.
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Standalone is true while the review cycle is a standalone one,
	// which leaves next_phase null when it ends.
	Standalone bool `json:"standalone,omitempty"`
	// CleanStreak is how many clean reviews in a row end a cycle
	// (review.clean_streak).
	CleanStreak int `json:"clean_streak"`

	// ReviewRunning is true while a review of the plan is in flight;
	// Review says which.
	ReviewRunning bool        `json:"review_running"`
	Review        *PlanReview `json:"review,omitempty"`
	// LastReview is the last reviewer run this supervisor saw finish for
	// the session.
	LastReview *PlanReviewRun `json:"last_review,omitempty"`
	// Cycle numbers the review cycles of the plan; OpenFindings counts
	// the findings the cycle's latest review reported.
	Cycle        int `json:"cycle"`
	OpenFindings int `json:"open_findings"`
	// Findings is the findings ledger (findings command only): the
	// current cycle's entries, then those of the plan's earlier cycles,
	// newest cycle first.
	Findings []PlanFinding `json:"findings,omitempty"`
	// Totals sums the reviewer runs recorded for the plan.
	Totals PlanTotals `json:"totals"`

	// Action, Task and File are where `continue` routes the agent.
	Action string `json:"action,omitempty"`
	Task   string `json:"task,omitempty"`
	File   string `json:"file,omitempty"`

	Message string `json:"message,omitempty"`
}

// PlanReview is the review in flight.
type PlanReview struct {
	Kind      string    `json:"kind"`
	Iteration int       `json:"iteration"`
	Model     string    `json:"model"`
	Task      string    `json:"task,omitempty"`
	Running   bool      `json:"running"`
	StartedAt time.Time `json:"started_at,omitempty"`
}

// PlanFinding is one entry of a review cycle's findings ledger; Open says
// whether the cycle's latest review still reported it. Cycle numbers the
// cycle, Kind and Task say what it reviewed (empty while the current
// cycle has no answered review), and Current marks the current cycle.
type PlanFinding struct {
	Severity string `json:"severity"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Summary  string `json:"summary"`
	// FirstReview and LastReview are the review numbers that first and
	// most recently reported it; Times counts the reviews that did.
	FirstReview int    `json:"first_review"`
	LastReview  int    `json:"last_review"`
	Times       int    `json:"times"`
	Open        bool   `json:"open"`
	Cycle       int    `json:"cycle"`
	Kind        string `json:"kind,omitempty"`
	Task        string `json:"task,omitempty"`
	Current     bool   `json:"current"`
}

// PlanReviewRun is one finished reviewer run, as recorded in the plan
// folder's reviews.jsonl (one JSON object a line).
type PlanReviewRun struct {
	Time       time.Time `json:"time"`
	Session    string    `json:"session"`
	Plan       string    `json:"plan"`
	Kind       string    `json:"kind"`
	Task       string    `json:"task,omitempty"`
	Iteration  int       `json:"iteration"`
	Model      string    `json:"model"`
	Outcome    string    `json:"outcome"`
	Verdict    string    `json:"verdict,omitempty"`
	ExitCode   int       `json:"exit_code"`
	DurationMS int64     `json:"duration_ms"`
	Findings   int       `json:"findings"`
	Blocking   int       `json:"blocking"`
	CostUSD    float64   `json:"cost_usd"`
	Error      string    `json:"error,omitempty"`
}

// PlanTotals sums reviewer runs: of the whole plan, and of this session.
type PlanTotals struct {
	Runs           int     `json:"runs"`
	FailedRuns     int     `json:"failed_runs"`
	Seconds        float64 `json:"seconds"`
	CostUSD        float64 `json:"cost_usd"`
	SessionRuns    int     `json:"session_runs"`
	SessionCostUSD float64 `json:"session_cost_usd"`
}
