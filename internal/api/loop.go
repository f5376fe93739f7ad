package api

import "time"

// LoopStartArgs are the arguments of `drover loop start`.
type LoopStartArgs struct {
	Prompt            string  `json:"prompt"`
	MaxIterations     int     `json:"max_iterations,omitempty"`
	CompletionPromise string  `json:"completion_promise,omitempty"`
	MaxMinutes        int     `json:"max_minutes,omitempty"`
	MaxUSD            float64 `json:"max_usd,omitempty"`
	CheckpointEvery   int     `json:"checkpoint_every,omitempty"`
	RequireChecks     bool    `json:"require_checks,omitempty"`
}

// LoopStatus is the answer to every loop command: where the loop stands,
// and, for start and cancel, the text for the agent.
type LoopStatus struct {
	SessionID     string `json:"session_id"`
	Active        bool   `json:"active"`
	Iteration     int    `json:"iteration"`
	MaxIterations int    `json:"max_iterations"`
	// MaxMinutes, MaxUSD and CheckpointEvery are the other budgets and
	// the checkpoint period the loop was started with; 0 (omitted) is none.
	MaxMinutes        int       `json:"max_minutes,omitempty"`
	MaxUSD            float64   `json:"max_usd,omitempty"`
	CheckpointEvery   int       `json:"checkpoint_every,omitempty"`
	RequireChecks     bool      `json:"require_checks,omitempty"`
	CompletionPromise string    `json:"completion_promise,omitempty"`
	Prompt            string    `json:"prompt,omitempty"`
	StartedAt         time.Time `json:"started_at,omitempty"`
	Status            string    `json:"status,omitempty"`
	StatusReason      string    `json:"status_reason,omitempty"`
	Role              string    `json:"role,omitempty"`
	Outcome           string    `json:"outcome,omitempty"`
	// EndReason says in words how an ended loop ended.
	EndReason string `json:"end_reason,omitempty"`
	// StuckIterations is the run of iterations in a row that were
	// stuck_plateau or thrashing.
	StuckIterations int     `json:"stuck_iterations,omitempty"`
	CostUSD         float64 `json:"cost_usd,omitempty"`
	Tracker         string  `json:"tracker,omitempty"`
	Reflections     int     `json:"reflections"`
	Message         string  `json:"message,omitempty"`
}
