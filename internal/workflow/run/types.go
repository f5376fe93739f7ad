// Package run is the run workflow (seed 003) as a pure state machine: a
// task graph worked in waves by headless agents, each task in its own git
// work tree and branch, iterated until its targeted tests pass, its work is
// committed (and a reviewer passes it, when the run has one), then each
// wave's branches merged into the target branch in dependency order and
// checked by the suite before the next wave starts. Budgets bound it in
// iterations, minutes and dollars, per task and per run, across crashes.
//
// Nothing here does I/O or reads the clock. The run actor gathers what
// happened (an iteration's outcome, a wave's merge and suite, an agent's
// progress) into an Event, calls Step with the time, commits the new State,
// answers, and only then executes the Effects (start an iteration, end the
// agents, merge and check a wave). The pure pieces those effects need (the
// prompts, the agent, test and suite commands, the targeted tests, the
// verdict on an iteration) are functions here too, and so are the rules of
// a run's start (AdmitStart, Options, New), its resume (AdmitResume,
// Resume, Restore) and its cancel (AdmitCancel), and the order of the
// steps the shell takes in the background (OffBranch, Reviews,
// RemovesWorkTree, WaveMerged). Every text an agent or a user reads is
// rendered from templates.
package run

import (
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// State is what the run actor keeps of a run: the stored record, and what
// a supervisor knows only while it works the run. A restarted supervisor
// rebuilds the rest from the record (Restore).
type State struct {
	// Run is the stored record.
	Run api.Run
	// History holds the convergence metrics of each task's iterations
	// since it (re)started, oldest first; a restored run knows only the
	// last one, from the task's last test.
	History map[string][]convergence.Metrics
	// Live is what the running iteration of each task has added to its
	// cost and tool calls so far, from its agent's progress; the
	// iteration's end adds the rest.
	Live map[string]Progress
	// Ending marks the tasks whose running agent was told to end (their
	// dollar budget is spent), so that it is told once.
	Ending map[string]bool
	// Stop names the run budget (or the cancel) that ends the run; no
	// iteration starts once it is set.
	Stop string
	// Merging is set while a wave's branches are merged and its suite runs.
	Merging bool
}

// Inflight counts the iterations under way: the tasks running.
func (s State) Inflight() int {
	n := 0
	for _, t := range s.Run.Tasks {
		if t.State == api.TaskRunning {
			n++
		}
	}
	return n
}

// Waiting says whether a task waits for a usage or rate limit.
func (s State) Waiting() bool {
	for _, t := range s.Run.Tasks {
		if t.Waiting() {
			return true
		}
	}
	return false
}

// Busy says whether agents or a wave checkpoint are at work.
func (s State) Busy() bool { return s.Merging || s.Inflight() > 0 }

// Finished says whether the run has ended and nothing of it runs any more:
// its actor may stop.
func (s State) Finished() bool {
	return s.Run.State != api.RunRunning && !s.Busy()
}

// Heartbeat decides a heartbeat of the run, every beat while it runs:
// save reports whether the run is saved though nothing changed, and again
// whether another beat is due. A run whose agents or wave checkpoint work
// is saved so that its stored UpdatedAt, which a resume takes as the last
// time the run was worked (Restore), stays recent while the agents run
// quiet tools; a save within the last half beat (progress, an iteration's
// end) already keeps it so. sinceSave is the time since the last save.
// A run whose tasks wait for a limit is saved too: that wait is no one's
// budget, and a resume counts the time to the last save as worked.
func (s State) Heartbeat(sinceSave, beat time.Duration) (save, again bool) {
	return (s.Busy() || s.Waiting()) && sinceSave >= beat/2, s.Run.State == api.RunRunning
}

// Task returns the task id of the run, or nil.
func (s *State) Task(id string) *api.RunTask {
	for i := range s.Run.Tasks {
		if s.Run.Tasks[i].ID == id {
			return &s.Run.Tasks[i]
		}
	}
	return nil
}

// Progress is what an agent has cost (its result line's total, or until
// then an estimate from its token usage) and the tool calls it made.
type Progress struct {
	CostUSD   float64
	ToolCalls int
	// Finished is set once the agent printed its result line.
	Finished bool
}

// Settings is what a run reads of the configuration when it starts or
// resumes; a change to the configuration applies from the next resume.
type Settings struct {
	// Rules route iterations to roles (loop.routes).
	Rules []router.Rule
	// Thresholds judge a task's convergence, built as a loop's are.
	Thresholds convergence.Thresholds
	// Review says whether a reviewer must pass each task.
	Review bool
	// Models are the reviewer's models, used in turn across a task's
	// reviews, the first one first.
	Models []string
}

// Facts is what Step reads besides the state and the event.
type Facts struct {
	Settings Settings
	// Templates give the texts of the reports, task errors and feedback
	// (the zero Set: the built-in ones).
	Templates templates.Set
	// Head is the commit the run's target branch is at (empty: git could
	// not say). A task's first iteration takes it as the task's base,
	// saved with the step that starts the iteration, before any agent.
	Head string
	// Forks are, by task, the commits the existing branches of tasks
	// started without a saved base forked from the target (a run stored
	// before bases were saved up front): those tasks' base, rather than
	// where the target is now.
	Forks map[string]string
}

// Event is something that happened to a run.
type Event interface{ event() }

// Begin: a supervisor begins to work the run (it was started or resumed).
type Begin struct{}

// Cancel: the user cancelled the run.
type Cancel struct{}

// Wake: the time a WakeAt effect asked for has come: the tasks whose
// limit has reset go on.
type Wake struct{}

// AgentProgress: the agent of a task's iteration reports what it has spent
// and done so far.
type AgentProgress struct {
	Task      string
	Iteration int
	Progress  Progress
	// Worker names where the iteration runs (empty: not said).
	Worker string
	// Paused says why the iteration waits on its executor (empty: it
	// works); api.RunTask.Paused.
	Paused string
}

// IterationDone: an iteration of a task ended, with what it found.
type IterationDone struct {
	Task      string
	Iteration int
	// Worker names where the iteration ran (empty: not said).
	Worker string
	// Base is the commit the task's branch began from.
	Base string
	// Progress is what the agent cost and did in all, including what an
	// agent killed before its result line had spent.
	Progress Progress
	// AgentErr is the agent process's failure, if any.
	AgentErr error
	// Test is the targeted tests' result (nil: they did not run).
	Test      *api.TestResult
	Committed bool
	// OffBranch is the branch (or, detached, the commit) the agent left
	// the work tree's HEAD on when that is not the task's branch (Branch),
	// which is what gets merged.
	OffBranch, Branch string
	// Dirty is `git status --short` of the work tree after the tests:
	// changes not committed, and files neither added nor ignored.
	Dirty string
	// Review is the reviewer's result, when the iteration was otherwise
	// done and the run has a reviewer.
	Review *reviewer.Result
	// Limit is the usage or rate limit that ended the agent's run, if
	// one did: the iteration is worked again once it resets, and its
	// tests and review did not run.
	Limit *agentrun.Limit
	// Err is drover's own trouble (no work tree, no agent binary).
	Err error
}

// WaveChecked: a wave's branches were merged and the suite run.
type WaveChecked struct {
	Wave int
	// Conflicts are the branches that conflicted with the target (the
	// others were merged).
	Conflicts []Conflict
	// MergeErr is a merge that could not be tried or finished.
	MergeErr error
	// Suite is the suite's result; nil when it did not run.
	Suite *api.TestResult
}

// Conflict is a branch that conflicted with the run's target.
type Conflict struct {
	Branch string
	Files  []string
	// Diff is the conflict as git showed it.
	Diff string
}

func (Begin) event()         {}
func (Cancel) event()        {}
func (Wake) event()          {}
func (AgentProgress) event() {}
func (IterationDone) event() {}
func (WaveChecked) event()   {}

// Commit says when a step's new state must be saved.
type Commit int

// The commits.
const (
	// CommitNow: before the answer and before any effect runs.
	CommitNow Commit = iota
	// CommitSoon: within a short while; an agent's progress, which comes
	// several times a second, need not be saved each time. A step with
	// effects always commits now.
	CommitSoon
)

// Decision is what a step decided besides the state and the effects.
type Decision struct {
	Commit Commit
	// Finished: the run ended and nothing of it runs; its actor stops.
	Finished bool
}

// Effect is something the run actor must do once the new state is saved.
// Each is idempotent, and a restarted supervisor derives the pending ones
// again from the stored state (Restore, then Begin).
type Effect interface{ effect() }

// StartIteration runs one iteration of a task: its work tree, the agent,
// the targeted tests, the commit checks and the review; its end comes back
// as IterationDone, and its agent's progress as AgentProgress.
type StartIteration struct {
	Task      string
	Iteration int
	Role      router.Role
	// Base is the commit the task's branch began from, or begins from
	// when the work tree is made (empty: not known, the target's head).
	Base   string
	Branch string
	// Fresh says the work tree is put back to the last commit of the
	// task's branch before the agent starts, its changes not committed
	// and files not added dropped: the iteration is worked again after a
	// crash, or the task starts over after a resume, and what a killed or
	// failed agent left half done is not work to build on.
	Fresh bool
	// Feedback is what the iteration is told of the last one.
	Feedback string
	// Attempt names this start of the iteration's work with Task and
	// Iteration: the same after a crash (the work may still be in flight
	// on another machine), another after a usage limit or a resume of a
	// failed task (api.RunTask.Attempt).
	Attempt int
	// Deadline ends the iteration with the task's or the run's time budget
	// (zero: none).
	Deadline time.Time
	// Review says whether a reviewer must pass the iteration's work, and
	// ReviewModel with which model.
	Review      bool
	ReviewModel string
}

// EndIteration ends the running agent of a task: its dollar budget is
// spent. Its iteration ends as usual, with IterationDone.
type EndIteration struct {
	Task string
}

// EndIterations ends the running agents of the run: a run budget is spent
// or the run was cancelled. A wave checkpoint under way finishes.
type EndIterations struct {
	Reason string
}

// CheckWave merges a wave's branches into the target in dependency order
// and, when they all merged, runs the suite there; its end comes back as
// WaveChecked.
type CheckWave struct {
	Wave     int
	Branches []string
}

// WakeAt asks for a Wake event at At, the earliest time a task waiting for
// a limit goes on; it replaces the one asked for before.
type WakeAt struct {
	At time.Time
}

func (StartIteration) effect() {}
func (WakeAt) effect()         {}
func (EndIteration) effect()   {}
func (EndIterations) effect()  {}
func (CheckWave) effect()      {}
