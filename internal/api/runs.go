package api

import "time"

// PathRuns is the route of the runs of `drover run`: POST starts one, GET
// lists them.
const PathRuns = "/v1/runs"

// RunPath returns the route of one run, or of a verb on it ("resume").
func RunPath(id string, verb ...string) string {
	p := PathRuns + "/" + id
	for _, v := range verb {
		p += "/" + v
	}
	return p
}

// RunState is where a whole run is.
type RunState string

// The states of a run.
const (
	// RunRunning: a run actor works it, or worked it when the supervisor
	// died (then Active is false and `drover run resume` goes on).
	RunRunning RunState = "running"
	// RunDone: every wave was merged and passed its checkpoint.
	RunDone RunState = "done"
	// RunFailed: the run stopped; Report says why.
	RunFailed RunState = "failed"
)

// TaskState is where one task of a run is.
type TaskState string

// The states of a task.
const (
	TaskPending     TaskState = "pending"
	TaskRunning     TaskState = "running"
	TaskDone        TaskState = "done"
	TaskFailed      TaskState = "failed"
	TaskNeedsReview TaskState = "needs-review"
)

// RunOptions are the knobs of one run, kept with it so that a resumed run
// works as the started one did. Zero values are filled in from the run.*
// configuration when the run starts.
type RunOptions struct {
	// Concurrency caps the agent processes running at once.
	Concurrency int `json:"concurrency"`
	// MaxIterations caps the agent runs per task.
	MaxIterations int `json:"max_iterations"`
	// Agent is a command template for the agent ("" runs claude), with the
	// placeholders {{prompt}}, {{task}}, {{iteration}}, {{run}} and
	// {{worktree}}; without {{prompt}} the prompt is the last argument.
	Agent string `json:"agent,omitempty"`
	// TestCommand runs a task's targeted tests in its work tree;
	// {{packages}} stands for them.
	TestCommand string `json:"test_command"`
	// SuiteCommand is the wave checkpoint, run in the main work tree.
	SuiteCommand string `json:"suite_command"`
	// IterationTimeout bounds one agent process (0: run.iteration_timeout);
	// its process group is killed past it.
	IterationTimeout time.Duration `json:"iteration_timeout,omitempty"`
	// TaskMaxMinutes bounds the wall time of one task (0: no bound); a
	// task past it is failed, its running agent killed.
	TaskMaxMinutes float64 `json:"task_max_minutes,omitempty"`
	// TaskMaxUSD bounds what the agents (and reviews) of one task cost, as
	// they report it, since the task (re)started (0: no bound); a task past
	// it is failed.
	TaskMaxUSD float64 `json:"task_max_usd,omitempty"`
	// MaxMinutes bounds the wall time of the run since it was started or
	// resumed (0: no bound); a run past it stops.
	MaxMinutes float64 `json:"max_minutes,omitempty"`
	// MaxUSD bounds what the agents of the run cost in all, as they report
	// it (0: no bound); a run past it stops.
	MaxUSD float64 `json:"max_usd,omitempty"`
	// Reviewer overrides the reviewer command of review.cli and
	// review.command: "claude" runs Claude Code as the reviewer, anything
	// else is a command template with the reviewer placeholders
	// {{prompt}}, {{schema}}, {{model}} and {{budget_usd}}. Empty means
	// the configured reviewer. A task whose tests pass is done only when
	// the reviewer passes it; a FAIL sends its findings to the task's next
	// iteration.
	Reviewer string `json:"reviewer,omitempty"`
	// NoReview turns the review of tasks off: a task is done when its
	// tests pass and it committed.
	NoReview bool `json:"no_review,omitempty"`
	// LimitRetries caps how often in a row a task waits for a usage or
	// rate limit its agent met and tries again (run.limit_retries); the
	// next limit fails it.
	LimitRetries int `json:"limit_retries,omitempty"`
	// Executor is where the iterations run: "local" (also when empty) or
	// "nats" (run.executor), and NATS the NATS server URL of the nats
	// executor (run.nats.url). Credentials are never options: they come
	// from the supervisor's configuration or environment.
	Executor string `json:"executor,omitempty"`
	NATS     string `json:"nats,omitempty"`
}

// StartRunRequest starts a run of a task graph.
type StartRunRequest struct {
	// File names the graph file, for reports.
	File string `json:"file"`
	// Graph is the file's contents.
	Graph   string     `json:"graph"`
	Options RunOptions `json:"options"`
	// Plan, when set, is the plan whose tasks.md the graph was made of
	// (`drover run --plan`): each task whose branch is merged is marked
	// done there.
	Plan string `json:"plan,omitempty"`
}

// TestResult is the outcome of one test command.
type TestResult struct {
	Command string    `json:"command"`
	Passed  bool      `json:"passed"`
	Output  string    `json:"output,omitempty"`
	At      time.Time `json:"at"`
}

// The outcomes of a review: the reviewer's verdict, or no verdict.
const (
	ReviewPass   = "pass"
	ReviewFail   = "fail"
	ReviewFailed = "failed"
)

// TaskReview is the outcome of one review of a task.
type TaskReview struct {
	// Model is the reviewer's model ("" for the CLI's default).
	Model string `json:"model,omitempty"`
	// Outcome is ReviewPass, ReviewFail, or ReviewFailed when the reviewer
	// gave no verdict (Error says why).
	Outcome string `json:"outcome"`
	// Blocking and Minor count the findings by severity.
	Blocking int     `json:"blocking,omitempty"`
	Minor    int     `json:"minor,omitempty"`
	Error    string  `json:"error,omitempty"`
	CostUSD  float64 `json:"cost_usd"`
	// Denied lists the tool calls the reviewer's CLI refused it (claude's
	// permission_denials), each in one line of Markdown: the review may
	// rest on checks that never ran.
	Denied []string `json:"denied,omitempty"`
	// Iteration is the task's iteration the review judged.
	Iteration int       `json:"iteration"`
	At        time.Time `json:"at"`
}

// RunTask is the state of one task of a run.
type RunTask struct {
	ID        string      `json:"id"`
	Wave      int         `json:"wave"`
	State     TaskState   `json:"state"`
	Iteration int         `json:"iteration"`
	Branch    string      `json:"branch,omitempty"`
	Base      string      `json:"base,omitempty"`
	LastTest  *TestResult `json:"last_test,omitempty"`
	CostUSD   float64     `json:"cost_usd"`
	// Role is the role (developer, debugger, architect) the current or
	// last iteration was routed to.
	Role string `json:"role,omitempty"`
	// Worker names where the current or last iteration runs or ran: "local"
	// for the local executor, a worker's name for the NATS one.
	Worker string `json:"worker,omitempty"`
	// Paused says why the running iteration waits on its executor (NATS
	// lost, naming its URL); empty while it works.
	Paused string `json:"paused,omitempty"`
	// Status is the convergence status after the last iteration, and
	// StatusReason why.
	Status       string `json:"status,omitempty"`
	StatusReason string `json:"status_reason,omitempty"`
	// Reviews counts the reviews of the task, across resumes; LastReview
	// is the latest.
	Reviews    int         `json:"reviews,omitempty"`
	LastReview *TaskReview `json:"last_review,omitempty"`
	// Runs counts agent processes started for the task, across resumes.
	Runs int `json:"runs"`
	// ToolCalls counts the tool calls of the task's agents, across
	// resumes; like CostUSD it grows while an agent runs.
	ToolCalls int       `json:"tool_calls,omitempty"`
	Error     string    `json:"error,omitempty"`
	Conflict  []string  `json:"conflict,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Interrupted is set on a task whose iteration ended with its
	// supervisor (a crash), or on a usage or rate limit (LimitUntil): the
	// run works that iteration again, under the same number and role.
	Interrupted bool `json:"interrupted,omitempty"`
	// Attempt is Runs when the current iteration's work began: an
	// iteration a crash cut short and worked again keeps it, so that an
	// executor of other machines adopts the work still in flight there
	// (StartIteration.Attempt).
	Attempt int `json:"attempt,omitempty"`
	// AttemptCostUSD and AttemptToolCalls are what the agent of the
	// current attempt reported so far, counted in CostUSD and ToolCalls:
	// a resumed run whose executor adopts the attempt in flight (nats)
	// counts that agent's next reports from there, not from zero.
	AttemptCostUSD   float64 `json:"attempt_cost_usd,omitempty"`
	AttemptToolCalls int     `json:"attempt_tool_calls,omitempty"`
	// Feedback is what the task's next iteration is told about its last
	// one; it is kept so that a resumed run tells it too.
	Feedback string `json:"feedback,omitempty"`
	// BudgetFromUSD is what the task had cost when its budget began (it
	// begins again only when a failed task is resumed): --task-max-usd
	// counts CostUSD less this, across supervisors.
	BudgetFromUSD float64 `json:"budget_from_usd,omitempty"`
	// WorkedBefore is how long earlier supervisors of the run worked the
	// task within its budget: --task-max-minutes counts it and the time
	// since StartedAt or the run's ResumedAt, whichever is later.
	WorkedBefore time.Duration `json:"worked_before_ns,omitempty"`
	// LimitUntil is set while the task waits for a usage or rate limit its
	// agent met: its iteration is worked again, under the same number,
	// once that time has come. LimitSince is when the wait began, and
	// Limit what the agent said of the limit.
	LimitUntil time.Time `json:"limit_until,omitzero"`
	LimitSince time.Time `json:"limit_since,omitzero"`
	Limit      string    `json:"limit,omitempty"`
	// LimitRetries counts the limits the task met in a row; Limits counts
	// them all, across resumes.
	LimitRetries int `json:"limit_retries,omitempty"`
	Limits       int `json:"limits,omitempty"`
	// Waited is how long the task waited for limits: --task-max-minutes
	// does not count it.
	Waited time.Duration `json:"waited_ns,omitempty"`
}

// Waiting says whether the task waits for a usage or rate limit.
func (t RunTask) Waiting() bool { return !t.LimitUntil.IsZero() }

// Run is the stored state of one run, and its status on the wire.
type Run struct {
	ID   string `json:"id"`
	File string `json:"file"`
	// Graph is the graph file as it was at the start; a resumed run works
	// this, not whatever the file says now.
	Graph   string     `json:"graph"`
	Options RunOptions `json:"options"`
	// Plan is the plan the run works the tasks of (`drover run --plan`),
	// empty for a graph file.
	Plan string `json:"plan,omitempty"`
	// Target is the branch each wave is merged into.
	Target string `json:"target"`
	// Reviewer says who must pass each task, as read from the options and
	// the configuration when the run was started or resumed; empty when
	// tasks are not reviewed.
	Reviewer string   `json:"reviewer,omitempty"`
	State    RunState `json:"state"`
	// Waves is the number of waves; Merged counts those merged and
	// checked by the suite.
	Waves  int `json:"waves"`
	Merged int `json:"merged"`
	// Report says why a run failed, or sums up a finished one.
	Report    string      `json:"report,omitempty"`
	Suite     *TestResult `json:"suite,omitempty"`
	Tasks     []RunTask   `json:"tasks"`
	CostUSD   float64     `json:"cost_usd"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	// ResumedAt is when the supervisor working the run began to: when it
	// started the run, or resumed it.
	ResumedAt time.Time `json:"resumed_at,omitzero"`
	// BudgetFromUSD and WorkedBefore are what the run had cost when its
	// budget began, and how long earlier supervisors worked it since:
	// --max-usd and --max-minutes count from them, across crashes. The
	// budget begins again only when a failed run is resumed.
	BudgetFromUSD float64       `json:"budget_from_usd,omitempty"`
	WorkedBefore  time.Duration `json:"worked_before_ns,omitempty"`
	// Active is set by the supervisor when it answers: true while a run
	// actor works the run. A running run that is not active was cut short
	// (a crash) and waits for `drover run resume`.
	Active bool `json:"active"`
}

// RunsResponse lists runs, newest first.
type RunsResponse struct {
	Runs []Run `json:"runs"`
}
