// Package loop is the loop workflow as a pure state machine: one prompt
// re-fed at every Stop until the agent keeps its completion promise (or
// marks its tracker complete), with budgets in iterations, wall time and
// dollars, an optional checks gate, and a continuation prompt steered by
// convergence status, role routing, reflections and checkpoint reviews.
//
// Nothing here does I/O or reads the clock. The session actor gathers facts
// (the hook payload, the transcript's summary, the tracker file, check,
// metric command and checkpoint results, the configuration) and calls one
// decision per event: OnStop, Begin, CancelLoop, ChecksDone, MetricsDone,
// CheckpointDone. Each returns the next Session and the Effects (start
// checks, metric commands or a checkpoint review, write the tracker or a
// reflection, ...), which the actor performs only after it committed the
// Session and answered. OnStop computes the iteration's metrics,
// reflection, convergence status (package convergence) and role (package
// router) and applies the checks gate before Stop decides. Pending
// re-derives the effects a stored Session still waits for, for an actor
// that restarted between a commit and its effects.
package loop

import (
	"time"

	"github.com/drover-dev/drover/convergence"
	summary "github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/router"
)

// Outcome says how a loop ended. Running is the outcome of an active loop.
type Outcome string

// The outcomes.
const (
	Running Outcome = ""
	// Done: the agent signalled completion (and the checks passed, when
	// the loop requires them).
	Done Outcome = "done"
	// The budgets, named as their flags are.
	MaxIterationsSpent Outcome = "max_iterations"
	MaxMinutesSpent    Outcome = "max_minutes"
	MaxUSDSpent        Outcome = "max_usd"
	// BudgetExhausted: the convergence status said budget_exhausted.
	BudgetExhausted Outcome = "budget_exhausted"
	// Converged: the convergence status said converged_success and the
	// loop ends on convergence (Facts.EndOnConverged, no --require-checks).
	Converged Outcome = "converged"
	// Stuck: the loop stayed stuck_plateau or thrashing for more than
	// Facts.StuckLimit iterations in a row after it first got stuck.
	Stuck Outcome = "stuck"
	// Cancelled: the user stopped the loop.
	Cancelled Outcome = "cancelled"
)

// The convergence statuses this package acts on or names in its prompts.
// The convergence package decides them; budget_exhausted ends a loop,
// converged_success may end one, and stuck_plateau and thrashing end one
// that stays stuck too long (see Stop).
const (
	StatusConvergedSuccess = "converged_success"
	StatusStuckPlateau     = "stuck_plateau"
	StatusThrashing        = "thrashing"
	StatusExploring        = "exploring"
	StatusBudgetExhausted  = "budget_exhausted"
	StatusProgressing      = "progressing"
)

// The roles the plugin ships an agent and a prompt for. The router may
// name others; their prompt then comes in Facts.RolePrompt.
const (
	RoleDeveloper = "developer"
	RoleDebugger  = "debugger"
	RoleArchitect = "architect"
)

// State is the loop workflow's persisted state for one session.
//
// Iteration is the number of the iteration the agent is on, from 1 at
// Start. Stop moves it on only when the loop continues, so once the loop
// has ended it is the number of iterations that ran. A zero budget
// (MaxMinutes, MaxUSD) or CheckpointEvery means none.
type State struct {
	Active            bool      `json:"active"`
	Iteration         int       `json:"iteration"`
	MaxIterations     int       `json:"max_iterations"`
	CompletionPromise string    `json:"completion_promise"`
	Prompt            string    `json:"prompt"`
	StartedAt         time.Time `json:"started_at"`
	MaxMinutes        int       `json:"max_minutes,omitempty"`
	MaxUSD            float64   `json:"max_usd,omitempty"`
	CheckpointEvery   int       `json:"checkpoint_every,omitempty"`
	RequireChecks     bool      `json:"require_checks,omitempty"`

	// What the last Stop saw, for status and for the context snapshot.
	LastRole         string `json:"last_role,omitempty"`
	LastStatus       string `json:"last_status,omitempty"`
	LastStatusReason string `json:"last_status_reason,omitempty"`
	// CostUSD is the largest spend reported so far.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// StuckIterations counts the iterations in a row whose convergence
	// status was stuck_plateau or thrashing, the last one included.
	StuckIterations int `json:"stuck_iterations,omitempty"`
	// SuccessIterations counts the measured iterations in a row whose
	// convergence status was converged_success, the last one included.
	SuccessIterations int `json:"success_iterations,omitempty"`

	Outcome Outcome `json:"outcome,omitempty"`

	// The background work the loop waits for, kept with the state so that
	// a restarted supervisor starts again what has no process (Pending).
	// Checks is the check run of the last completion claim; MetricsFor and
	// CheckpointFor are the finished iteration whose metric commands and
	// checkpoint review run (0: none).
	Checks        *Checks `json:"checks,omitempty"`
	MetricsFor    int     `json:"metrics_for,omitempty"`
	CheckpointFor int     `json:"checkpoint_for,omitempty"`
}

// Checks is the check command's run for one iteration's completion claim.
type Checks struct {
	Iteration int    `json:"iteration"`
	Running   bool   `json:"running,omitempty"`
	Passed    bool   `json:"passed,omitempty"`
	Summary   string `json:"summary,omitempty"`
}

// MaxHistory bounds the metrics and reflections a Session keeps.
const MaxHistory = 50

// Session is the loop's part of a session record: the State and what the
// decisions read back (the metrics history, the reflections, the
// checkpoint consensus).
type Session struct {
	State       State
	History     []convergence.Metrics
	Reflections []convergence.Reflection
	// Consensus is the last checkpoint consensus, kept until it has gone
	// into a block reason; Findings keeps it after that, for the context
	// snapshot after a compaction.
	Consensus string
	Findings  string
}

// StopFacts is what the actor gathered for a Stop: the hook's and the
// configuration's Facts, and the raw inputs of the metrics, convergence,
// routing and checks gate that OnStop computes.
type StopFacts struct {
	Facts
	// Iteration is the transcript's summary of the iteration that just
	// ended; nil when no transcript could be read.
	Iteration *summary.Iteration
	// Thresholds and Rules are the configured convergence thresholds and
	// routes (nil Rules: router.DefaultRules).
	Thresholds convergence.Thresholds
	Rules      []router.Rule
	// CheckCommand is loop.check_command ("" none) and CheckTimeout its
	// timeout, which the metric commands share; MetricCommands is
	// loop.metric_commands.
	CheckCommand   string
	CheckTimeout   time.Duration
	MetricCommands []string
}

// StartOptions are the flags of `/drover:loop "<prompt>" ...`.
type StartOptions struct {
	Prompt            string
	MaxIterations     int     // --max-iterations, at least 1
	CompletionPromise string  // --completion-promise; empty means DefaultPromise
	MaxMinutes        int     // --max-minutes, 0 for no limit
	MaxUSD            float64 // --max-usd, 0 for no limit
	CheckpointEvery   int     // --checkpoint-every, 0 for none
	RequireChecks     bool    // --require-checks
}

// Facts is what the session actor gathered before a decision.
type Facts struct {
	SessionID string
	// TrackerPath is the absolute path of the session's loop tracker.
	TrackerPath string

	// LastAssistantMessage is the Stop payload's field: nil when the CLI
	// did not send it, which is not the same as an empty final message
	// (a turn that ended on a tool call).
	LastAssistantMessage *string
	// TranscriptLastText is the final assistant text read from the
	// transcript, used only when LastAssistantMessage is nil, and only
	// when TranscriptCaughtUp says the transcript holds the current turn.
	TranscriptLastText string
	TranscriptCaughtUp bool

	// TrackerComplete is tracker.Tracker.Complete of the tracker file.
	// TrackerErr is the error reading it (the actor has quarantined a
	// malformed one); a tracker with an error never completes the loop.
	TrackerComplete bool
	TrackerErr      error
	// TrackerActive and TrackerStartedAt are the tracker file's active
	// and started_at fields (false and zero when there is none): Pending
	// rewrites the tracker of an ended loop only while it still says
	// that loop runs.
	TrackerActive    bool
	TrackerStartedAt time.Time

	Now time.Time

	// EndOnConverged is loop.end_on_converged: a converged_success status
	// ends a loop that does not require checks. StuckLimit is
	// loop.stuck_limit: how many iterations a loop may stay stuck
	// (stuck_plateau or thrashing) after the one that first found it stuck,
	// which the default rules route to the architect; 0 never ends a loop
	// for being stuck.
	EndOnConverged bool
	StuckLimit     int
	// ConvergedStreak is loop.converged_streak: how many measured
	// iterations in a row must be converged_success before that ends the
	// loop. One passing run can be the tests that were already there before
	// the work began; a second one after another iteration is convergence.
	// Below 1 counts as 1.
	ConvergedStreak int

	// CostUSD is the loop's spend so far, as measured; 0 when unknown.
	CostUSD float64

	// The checks gate: ChecksPassed is nil when no result is available.
	ChecksConfigured bool
	ChecksPassed     *bool
	ChecksSummary    string

	// Status is the convergence status ("" unknown) and StatusReason its
	// explanation.
	Status       string
	StatusReason string
	// Role is the routed role ("" keeps the last one, or developer).
	// RolePrompt, when set, replaces the role_<role> template; it is how a
	// role the plugin does not ship gets its instructions. AgentName is
	// the subagent for the role ("" means drover:<role> for the roles the
	// plugin ships).
	Role       string
	RolePrompt string
	AgentName  string
	// Reflection is the last reflection summary.
	Reflection string
	// CheckpointDue is true while a checkpoint review started for this
	// loop has not reported; CheckpointConsensus is its consensus once it
	// has.
	CheckpointDue       bool
	CheckpointConsensus string
	// OpenFindings is the last checkpoint consensus, kept after it went
	// into a block reason; ContextSnapshot puts it back after compaction.
	OpenFindings string
}
