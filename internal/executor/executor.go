// Package executor is where a run's iterations execute: the run engine
// (actors, internal/workflow/run) decides which iteration of which task
// runs, hands it to an Executor as an Iteration, and takes back its Result.
// The local executor works the iteration in a git work tree of the
// supervisor's machine (actors); others (NATS) ship it to workers. Both
// types travel as JSON, so errors are carried as their text. The package
// links no engine (no actors, store or configuration), so that a worker
// process may use it.
package executor

import (
	"context"
	"errors"
	"time"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
)

// The executors a run may use (run.executor, `drover run --executor`).
const (
	Local = "local"
	NATS  = "nats"
)

// LocalWorker is the Worker of the iterations the local executor runs.
const LocalWorker = "local"

// Executor runs one iteration of a task: its work tree at Base on Branch,
// the agent with Prompt, the targeted tests, the commit checks and, when
// Review is set, the reviewer. It reports the agent's progress to report
// (which must not block) while it works, and returns what it found; its
// own trouble goes in Result.Err. Ending ctx ends the iteration.
type Executor interface {
	Run(ctx context.Context, it Iteration, report func(Progress)) Result
}

// Iteration is one iteration of a task, everything an executor needs to
// run it.
type Iteration struct {
	RunID     string        `json:"run_id"`
	Task      rungraph.Task `json:"task"`
	Iteration int           `json:"iteration"`
	// Attempt names this start of the iteration's work
	// (run.StartIteration.Attempt): the same after a crash of the
	// supervisor, so that an executor of other machines adopts the work
	// in flight rather than starting it twice.
	Attempt int `json:"attempt,omitempty"`
	// Base is the commit the task's branch began from, or begins from
	// when its work tree is made (empty: the target's head).
	Base   string `json:"base,omitempty"`
	Branch string `json:"branch"`
	// Fresh puts the work tree back to its branch's last commit before the
	// agent starts (run.StartIteration.Fresh).
	Fresh  bool        `json:"fresh,omitempty"`
	Prompt string      `json:"prompt"`
	Role   router.Role `json:"role,omitempty"`
	// Options are the run's: the agent command, the iteration timeout and
	// the targeted test command (run.TestsOf derives the tests in the
	// task's work tree).
	Options api.RunOptions `json:"options"`
	// Deadline ends the iteration with the task's or the run's time
	// budget (zero: none).
	Deadline time.Time `json:"deadline,omitzero"`
	// Review is the reviewer of the iteration's work (nil: none).
	Review *Review `json:"review,omitempty"`
}

// Review is the reviewer of an iteration: the parts of a reviewer.Spec
// that come from the configuration and the run's options. The prompt, the
// work tree and the process limits are the executor's.
type Review struct {
	CLI       string        `json:"cli,omitempty"`
	Path      string        `json:"path,omitempty"`
	Model     string        `json:"model,omitempty"`
	Schema    []byte        `json:"schema,omitempty"`
	BudgetUSD float64       `json:"budget_usd,omitempty"`
	Timeout   time.Duration `json:"timeout_ns,omitempty"`
	Command   []string      `json:"command,omitempty"`
	OutputCap int           `json:"output_cap,omitempty"`
	LogPath   string        `json:"log_path,omitempty"`
}

// ReviewOf returns the wire form of spec (nil for nil).
func ReviewOf(spec *reviewer.Spec) *Review {
	if spec == nil {
		return nil
	}
	return &Review{
		CLI: spec.CLI, Path: spec.Path, Model: spec.Model, Schema: spec.Schema, BudgetUSD: spec.BudgetUSD,
		Timeout: spec.Timeout, Command: spec.Command, OutputCap: spec.OutputCap, LogPath: spec.LogPath,
	}
}

// Spec returns the reviewer.Spec of r, without prompt, directory, limiter,
// owner tag or templates: the executor sets those.
func (r Review) Spec() reviewer.Spec {
	return reviewer.Spec{
		CLI: r.CLI, Path: r.Path, Model: r.Model, Schema: r.Schema, BudgetUSD: r.BudgetUSD,
		Timeout: r.Timeout, Command: r.Command, OutputCap: r.OutputCap, LogPath: r.LogPath,
	}
}

// Progress is what a running iteration's agent has spent (its result
// line's total, or until then an estimate from its token usage) and the
// tool calls it made so far, and the worker it runs on: run.Progress and
// the worker.
type Progress struct {
	Worker    string  `json:"worker,omitempty"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int     `json:"tool_calls"`
	// Finished is set once the agent printed its result line.
	Finished bool `json:"finished,omitempty"`
	// Paused says why the iteration waits on its executor (NATS lost,
	// naming its URL); empty while it works.
	Paused string `json:"paused,omitempty"`
}

// Result is what an iteration produced.
type Result struct {
	// Worker names where the iteration ran (LocalWorker for the local
	// executor).
	Worker string `json:"worker,omitempty"`
	// Base is the commit the task's branch began from.
	Base string `json:"base,omitempty"`
	// Progress is what the agent cost and did in all (its Worker unused).
	Progress Progress `json:"progress"`
	// AgentErr is the agent process's failure, if any.
	AgentErr string `json:"agent_err,omitempty"`
	// Test is the targeted tests' result (nil: they did not run).
	Test      *api.TestResult `json:"test,omitempty"`
	Committed bool            `json:"committed,omitempty"`
	// OffBranch and Branch: see run.IterationDone.
	OffBranch string `json:"off_branch,omitempty"`
	Branch    string `json:"branch,omitempty"`
	// Dirty is `git status --porcelain` of the work tree after the tests.
	Dirty string `json:"dirty,omitempty"`
	// Review is the reviewer's result, when one ran.
	Review *ReviewResult `json:"review,omitempty"`
	// Limit is the usage or rate limit that ended the agent, if one did.
	Limit *agentrun.Limit `json:"limit,omitempty"`
	// Err is the executor's own trouble (no work tree, no agent binary).
	Err string `json:"err,omitempty"`
}

// ReviewResult is a reviewer.Result with its error as text: Err, of the
// same JSON name, hides the embedded error, which JSON cannot carry.
type ReviewResult struct {
	reviewer.Result
	Err string `json:"Err,omitempty"`
}

// ReviewResultOf returns the wire form of r.
func ReviewResultOf(r reviewer.Result) *ReviewResult {
	out := &ReviewResult{Result: r, Err: errText(r.Err)}
	out.Result.Err = nil
	return out
}

// Reviewer returns r as the reviewer gave it, its error made of its text.
func (r ReviewResult) Reviewer() reviewer.Result {
	out := r.Result
	out.Err = Error(r.Err)
	return out
}

// Failed returns the Result of an iteration that could not run for err.
func Failed(err error) Result { return Result{Err: errText(err)} }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Error returns the error of text s, as the run engine takes it (nil for
// empty).
func Error(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}
