// Package plan is the plan workflow (seed 001) as a pure state machine: a
// plan folder .drover/plans/<plan-id>/ with plan.md, tasks.md and task-N.md
// files, worked through in phases (new-plan, plan-review, create-tasks,
// tasks-review, complete-task, code-review, all-code-review, complete), with
// review cycles run by independent reviewer processes until two reviews in a
// row are clean or max_reviews is reached.
//
// Nothing here does I/O or reads the clock. The session actor owns the
// state: it gathers Facts (the plan folder's files, git, whether a
// reviewer is running), calls Stop for a hook, Command (and Adopt) for a
// `drover plan` verb, ReviewAnswered and ReviewFiled for a reviewer's
// answer, commits the new State, answers with the text the decision
// rendered from the templates, and then performs the Effects (start or
// cancel a reviewer, write the review file, log the reviewer runs, write
// state.json, create the plan folder). Pending re-derives from a stored
// State the effects a crash may have cut short. The agent does not edit
// state.json: it is a view drover writes (View) and reads back to take a
// plan up in another session (StateFromView), one field list for both, and
// to find a hand edit (ReadEdit: seed 001's escape hatches are taken, the
// rest undone) or another session that took the plan over; the agent
// reports progress with `drover plan ...` commands, each of which is a
// function here. Status and Findings describe the state for the API.
//
// Where seed 001 differs from the real CLI or from drover's architecture,
// this package follows drover: the verdict comes from a reviewer.Result
// (parsed from .structured_output, not .result), the reviewer is a child of
// the supervisor rather than of the hook, so a review takes two stops (one
// starts it, a later one reads its answer; the actor may also hold the first
// reply until the answer is in), and drover writes the review file from the
// reviewer's findings, so the reviewer needs no write permission.
package plan

import (
	"reflect"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
)

// Phase is a step of the plan workflow; the names are seed 001's.
type Phase string

// The phases.
const (
	PhaseNone              Phase = ""
	PhaseNewPlan           Phase = "new-plan"
	PhasePlanReview        Phase = "plan-review"
	PhasePostPlanReview    Phase = "post-plan-review"
	PhaseCreateTasks       Phase = "create-tasks"
	PhaseTasksReview       Phase = "tasks-review"
	PhasePostTasksReview   Phase = "post-tasks-review"
	PhaseNextTask          Phase = "next-task"
	PhaseNextTaskTDD       Phase = "next-task-tdd"
	PhaseCompleteTask      Phase = "complete-task"
	PhaseCompleteTaskTDD   Phase = "complete-task-tdd"
	PhaseContinueTask      Phase = "continue-task"
	PhaseCodeReview        Phase = "code-review"
	PhasePostCodeReview    Phase = "post-code-review"
	PhaseAllCodeReview     Phase = "all-code-review"
	PhasePostAllCodeReview Phase = "post-all-code-review"
	PhaseComplete          Phase = "complete"
)

// Kind is a kind of review.
type Kind string

// The kinds of review.
const (
	KindPlan    Kind = "plan"
	KindTasks   Kind = "tasks"
	KindCode    Kind = "code"
	KindAllCode Kind = "all-code"
)

// ReviewKind returns the kind of review p is, if it is a review phase
// (plan-review, tasks-review, code-review, all-code-review).
func (p Phase) ReviewKind() (Kind, bool) {
	switch p {
	case PhasePlanReview:
		return KindPlan, true
	case PhaseTasksReview:
		return KindTasks, true
	case PhaseCodeReview:
		return KindCode, true
	case PhaseAllCodeReview:
		return KindAllCode, true
	}
	return "", false
}

// PostReviewKind returns the kind of review p answers, if it is a
// post-review phase.
func (p Phase) PostReviewKind() (Kind, bool) {
	switch p {
	case PhasePostPlanReview:
		return KindPlan, true
	case PhasePostTasksReview:
		return KindTasks, true
	case PhasePostCodeReview:
		return KindCode, true
	case PhasePostAllCodeReview:
		return KindAllCode, true
	}
	return "", false
}

// ReviewPhase returns the review phase of k (code-review for KindCode).
func (k Kind) ReviewPhase() Phase { return Phase(string(k) + "-review") }

// PostReviewPhase returns the post-review phase of k.
func (k Kind) PostReviewPhase() Phase { return Phase("post-" + string(k) + "-review") }

// DefaultMaxReviews is seed 001's default limit on reviews per cycle.
const DefaultMaxReviews = 8

// CleanToAdvance is how many clean reviews in a row end a cycle when
// Facts.CleanStreak does not say (review.clean_streak's default).
const CleanToAdvance = 2

// State is the plan workflow's persisted state for one session. The JSON
// names of the seed's fields are the seed's; the view the agent reads
// (state.json) is rendered from it by View.
type State struct {
	PlanID      string `json:"plan_id"`
	Phase       Phase  `json:"phase"`
	NextPhase   Phase  `json:"next_phase,omitempty"`
	CurrentTask string `json:"current_task,omitempty"`
	// Iteration counts the reviews finished in the current cycle (the
	// seed's phase_iteration). The next review is Iteration+1.
	Iteration  int `json:"phase_iteration"`
	MaxReviews int `json:"max_reviews"`
	// ModelIndex picks the next review's model with reviewer.NextModel;
	// it advances after each review and is reset at each new cycle.
	ModelIndex       int  `json:"model_index"`
	ConsecutiveClean int  `json:"consecutive_clean"`
	TDD              bool `json:"tdd"`
	// Standalone marks a review started on its own (drover plan
	// code-review and friends, seed 001's standalone commands): it is one
	// review, after which next_phase becomes null instead of a post-review
	// or the plan advancing. Every new cycle clears it.
	Standalone bool `json:"standalone,omitempty"`
	// BudgetUSD is the plan's own reviewer budget in dollars (0: none):
	// no review starts once the plan's recorded reviewer runs cost this
	// much. review.budget_usd, by contrast, bounds each run.
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Review is the review in flight, if any. It is persisted so that a
	// supervisor that restarts runs it again (or adopts its result).
	Review *InFlight `json:"review,omitempty"`
	// Ledger holds the current cycle's findings, for the next review's
	// re-check prompt. LedgerKind and LedgerTask say what its reviews
	// were about (set by each answered review), to label the ledger once
	// the cycle is over.
	Ledger     reviewer.Ledger `json:"ledger"`
	LedgerKind Kind            `json:"ledger_kind,omitempty"`
	LedgerTask string          `json:"ledger_task,omitempty"`
	// PastLedgers are the ledgers of the plan's earlier cycles that had
	// findings, oldest first, at most MaxPastLedgers: drover plan
	// findings shows them after the current one.
	PastLedgers []CycleLedger `json:"past_ledgers,omitempty"`
	// ReviewHead is the git HEAD when the last answered review of this
	// cycle started: the actor diffs against it for the next review.
	ReviewHead string `json:"review_head,omitempty"`
	// Answer is the hook answer to a review that finished between stops
	// (the post-review instructions, or why the review did not count):
	// the next Stop gives it. It is saved with the rest, so an actor
	// passivated or restarted before that stop still gives it; any other
	// change to the plan drops it (see DropAnswer).
	Answer *hook.Output `json:"answer,omitempty"`
	// LastRun is the last reviewer run that was applied (for a parallel
	// review, the combined answer), for status; Runs are its run log lines,
	// kept so that a restart logs them if a crash came first (RecordRuns
	// leaves out those already logged).
	LastRun *api.PlanReviewRun  `json:"last_run,omitempty"`
	Runs    []api.PlanReviewRun `json:"runs,omitempty"`

	// Owner is the session that drives the plan (it started the plan or
	// took it up); state.json names it as session_id, which is how another
	// session that drove the plan before learns that it was taken over.
	Owner string `json:"owner,omitempty"`
	// LastView is the state.json drover last wrote (see Wrote): a
	// state.json that is neither this nor the view of the state was
	// edited by hand (ReadEdit), and the edit is judged against it.
	LastView string `json:"last_view,omitempty"`
	// TakenBy is the session that took the plan over (drover plan
	// continue in another session). The plan is no longer this session's:
	// the next stop says so and lets the agent go (TakenOver).
	TakenBy string `json:"taken_by,omitempty"`
}

// DropAnswer returns next without an Answer unless it is prev unchanged: an
// answer belongs to the state it was made for, and a command that moved
// the plan on (post-review-done, stop-reviews, ...) makes it stale.
func DropAnswer(prev, next State) State {
	if next.Answer != nil && !reflect.DeepEqual(prev, next) {
		next.Answer = nil
	}
	return next
}

// MaxPastLedgers bounds State.PastLedgers; the oldest cycles go first. A
// plan has a few cycles per task, so this keeps every cycle of a plan of
// about ten tasks while keeping the session record small.
const MaxPastLedgers = 32

// CycleLedger is the findings ledger of a finished review cycle and what
// the cycle reviewed (Task for code reviews).
type CycleLedger struct {
	Kind   Kind            `json:"kind,omitempty"`
	Task   string          `json:"task,omitempty"`
	Ledger reviewer.Ledger `json:"ledger"`
}

// Active reports whether the session has a plan.
func (s State) Active() bool { return s.Phase != PhaseNone }

// InFlight is a review that was started and whose answer has not been
// applied yet.
type InFlight struct {
	Kind      Kind   `json:"kind"`
	Iteration int    `json:"iteration"`
	Model     string `json:"model"`
	Task      string `json:"task,omitempty"`
	// Head is the git HEAD when the review started; it becomes
	// State.ReviewHead once the review's answer is applied.
	Head string `json:"head,omitempty"`
	// Answered is the reviewer's answer, once it came back and until it
	// is applied: recorded before the review file is written, so that a
	// restart writes the file again rather than run the review again.
	Answered *Answered `json:"answered,omitempty"`
}

// Facts is what the session actor gathered before a decision.
type Facts struct {
	// PlanID and PlanDir name the session's plan folder; PlanDir is
	// absolute and appears in messages. They must match the State.
	PlanID  string
	PlanDir string
	// DirExists is false when the plan folder is missing.
	DirExists bool
	// Files lists every file under PlanDir, relative and slash-separated
	// ("plan.md", "nested/extra.md"), including non-Markdown ones.
	Files []string
	// TasksMD is the content of tasks.md (empty when it is missing).
	TasksMD string
	// PlanMD is the content of plan.md, and TaskMD that of the current
	// task's file (task-<State.CurrentTask>.md); each is empty when the
	// file is missing. drover plan continue judges from them whether the
	// plan or the task was left half-written (seed 001's continue-plan).
	PlanMD string
	TaskMD string
	// View is the content of state.json as found; nil when missing.
	View []byte

	// Review is the answer of a reviewer that finished since the last
	// decision, if any, for Stop to apply at once (the actor hands answers
	// to ReviewAnswered instead, to write the review file before applying
	// it); ReviewInFlight is true while the reviewer still runs.
	Review         *ReviewOutcome
	ReviewInFlight bool
	// ReviewerMissing, when set, says that the configured reviewer CLI
	// cannot be started (internal/reviewconf.Missing): no review starts,
	// and the stop is allowed with a message that names the CLI and its
	// config key, instead of a review that would fail at once, stop after
	// stop.
	ReviewerMissing *MissingReviewer

	// Models is the alternation of reviewer models (config); empty means
	// reviewer.DefaultModels.
	Models []string
	// StrictReviews makes minor findings count against a clean review
	// too (review.count_minor); by default only blocking findings do.
	StrictReviews bool
	// Parallel is config.ParallelReview: every model of Models reviews
	// at once, so messages name them all.
	Parallel bool
	// CleanStreak is how many clean reviews in a row end a cycle
	// (review.clean_streak); 0 or less means CleanToAdvance.
	CleanStreak int
	// SpentUSD is what the plan's reviewer runs have cost so far, for
	// State.BudgetUSD; the actor need only fill it when a budget is set.
	SpentUSD float64

	// SessionID is the session that runs the command, and
	// DefaultMaxReviews review.max_reviews: the plan commands use them.
	SessionID         string
	DefaultMaxReviews int

	// StopHookActive is the Stop input's stop_hook_active. It only keeps
	// a failing folder validation from blocking twice in a row: review
	// loops are bounded by max_reviews instead.
	StopHookActive bool

	// Head is the current git HEAD, and DiffSinceReview the diff from
	// State.ReviewHead to the work tree (empty for the first review of a
	// cycle or outside git).
	Head            string
	DiffSinceReview string
}

// ReviewOutcome is a finished reviewer run, as the actor hands it back.
type ReviewOutcome struct {
	Kind      Kind               `json:"kind"`
	Iteration int                `json:"iteration"`
	Model     string             `json:"model"`
	Outcome   reviewer.Outcome   `json:"outcome"`
	Verdict   string             `json:"verdict,omitempty"`
	Findings  []reviewer.Finding `json:"findings,omitempty"`
	CostUSD   float64            `json:"cost_usd,omitempty"`
	// Reviewers is how many reviewers ran at once for this answer
	// (review.strategy parallel; 0 or 1 for a single reviewer), and
	// PassVotes how many of them said PASS. When every one of several
	// reviewers said PASS and the review is clean, it counts as the whole
	// clean streak at once: independent reviewers agreeing now are worth
	// as much as agreeing one after another.
	Reviewers int `json:"reviewers,omitempty"`
	PassVotes int `json:"pass_votes,omitempty"`
	// Err says why a Failed run failed; LogPath is its log, if any.
	Err     string `json:"error,omitempty"`
	LogPath string `json:"log_path,omitempty"`
	// Review is the reviewer's own write-up, which the review file
	// holds before the findings, and Denials the tool calls its CLI
	// refused it (also of a Failed run), which the review file and the
	// messages report.
	Review  string            `json:"review,omitempty"`
	Denials []reviewer.Denial `json:"denials,omitempty"`
}

// cleanStreak returns how many clean reviews in a row end a cycle under f.
func (f Facts) cleanStreak() int {
	if f.CleanStreak <= 0 {
		return CleanToAdvance
	}
	return f.CleanStreak
}

// Unanimous reports whether o is the combined answer of several reviewers
// that all said PASS.
func (o ReviewOutcome) Unanimous() bool {
	return o.Reviewers > 1 && o.PassVotes == o.Reviewers && o.Outcome == reviewer.Pass
}

// OutcomeOf turns a reviewer result for the review in flight into a
// ReviewOutcome.
func OutcomeOf(r InFlight, res reviewer.Result, logPath string) ReviewOutcome {
	o := ReviewOutcome{
		Kind: r.Kind, Iteration: r.Iteration, Model: r.Model,
		Outcome: res.Outcome, Verdict: res.Verdict, Findings: res.Findings, CostUSD: res.CostUSD,
		Review: res.Review, Denials: res.Denials,
	}
	if res.Model != "" {
		// A parallel review's answer is every model that ran at once.
		o.Model = res.Model
	}
	if res.Err != nil {
		o.Err = res.Err.Error()
		o.LogPath = logPath
	}
	if o.Outcome == "" {
		o.Outcome = reviewer.Failed
	}
	return o
}

// Effect is something the actor must do after persisting the new State.
type Effect interface{ effect() }

// StartReview starts a reviewer child: Prompt for Model, its answer to be
// handed back to ReviewAnswered (or to Stop as Facts.Review) with this Kind
// and Iteration.
type StartReview struct {
	Kind      Kind
	Iteration int
	Model     string
	Prompt    string
	// ReviewFile is where the review will be written (by WriteReview).
	ReviewFile string
	// Task is the task reviewed (code reviews only).
	Task string
}

// WriteReview writes the review file rendered from a reviewer's answer.
// From ReviewAnswered (and Pending) it names the answered review too: how
// the write went is the Filing the caller hands to ReviewFiled. Its Path is
// empty when the answer has no verdict and so no file: nothing is written,
// and the Filing reports no error.
type WriteReview struct {
	Path      string
	Data      []byte
	Kind      Kind
	Iteration int
	Task      string
}

// WriteView writes state.json, the agent's read-only view of the State.
// Write it atomically (a temporary file in the same folder, then rename).
type WriteView struct {
	Path string
	Data []byte
}

// WaitForUser says that a stop was let through while the plan waits for
// the user: its next review would pass max_reviews or the plan budget, so
// the plan does not advance until the user decides. Nothing in the State
// marks it (the budget is read from the review log at each stop), so the
// actor reports it from this effect, once per stop.
type WaitForUser struct {
	Plan      string
	Kind      Kind
	Task      string
	Phase     Phase
	Iteration int
}

func (StartReview) effect() {}
func (WaitForUser) effect() {}
func (WriteReview) effect() {}
func (WriteView) effect()   {}
