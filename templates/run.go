package templates

// The names of the texts of `drover run` (internal/workflow/run): what the
// headless agent of a task is asked in each iteration, what it is told of
// the last one, and what the run's status says of its tasks, budgets and
// waves. The role prompts it routes to are its own (RunRolePrefix): the
// loop's (RoleDeveloper and the others, loop.go) speak of the loop's
// tracker, which a run does not have.
const (
	// RunTask is the prompt of one iteration of a task.
	RunTask = "run_task"
	// Sections of RunTask, each present only when it has something to say.
	RunTaskFiles = "run_task_files"
	RunTaskTests = "run_task_tests"
	RunTaskRetry = "run_task_retry"
	// RunTaskTests tells the agent the command of its targeted tests;
	// RunTaskSuite, for a task with nothing narrower to test, that the
	// suite checks it; RunTaskNoTests, for a task whose graph lists no
	// tests (tests: []), that none run. One of the three is always there.
	RunTaskSuite   = "run_task_suite"
	RunTaskNoTests = "run_task_no_tests"
	// RunRolePrefix starts the name of a role's prompt in a run:
	// run_role_<role>. A role without one gets no role prompt.
	RunRolePrefix    = "run_role_"
	RunRoleDeveloper = RunRolePrefix + "developer"
	RunRoleDebugger  = RunRolePrefix + "debugger"
	RunRoleArchitect = RunRolePrefix + "architect"
	// RunReview is the prompt of the reviewer that must pass a task.
	RunReview = "run_review"

	// What the next iteration of a task is told of the last one, when it
	// did not finish the task (RunTaskRetry's {{feedback}}).
	RunFeedbackAgentFailed  = "run_feedback_agent_failed"
	RunFeedbackTestsFailed  = "run_feedback_tests_failed"
	RunFeedbackOffBranch    = "run_feedback_off_branch"
	RunFeedbackNoCommit     = "run_feedback_no_commit"
	RunFeedbackDirty        = "run_feedback_dirty"
	RunFeedbackReviewError  = "run_feedback_review_error"
	RunFeedbackReviewFailed = "run_feedback_review_failed"
	RunFeedbackNoFindings   = "run_feedback_no_findings"
	// RunFeedbackReviewDenied follows RunFeedbackReviewFailed or
	// RunFeedbackReviewError when the reviewer's CLI refused it tool calls
	// (claude's permission_denials): the review may rest on checks that
	// never ran.
	RunFeedbackReviewDenied = "run_feedback_review_denied"

	// Why a task failed or needs review (its error in the run's status).
	RunTaskStopped     = "run_task_stopped"
	RunTaskOutOfBudget = "run_task_out_of_budget"
	RunTaskStuck       = "run_task_stuck"
	RunTaskNotDone     = "run_task_not_done"
	RunTaskConflict    = "run_task_conflict"
	// RunTaskLimited: the task's agent met a usage or rate limit once more
	// than run.limit_retries allows in a row.
	RunTaskLimited = "run_task_limited"

	// Which budget is spent, run or task, dollars or minutes.
	RunBudgetUSD         = "run_budget_usd"
	RunBudgetMinutes     = "run_budget_minutes"
	RunTaskBudgetUSD     = "run_task_budget_usd"
	RunTaskBudgetMinutes = "run_task_budget_minutes"

	// The run's report: why it stopped or failed, or that it is done.
	RunCancelled    = "run_cancelled"
	RunDone         = "run_done"
	RunStopped      = "run_stopped"
	RunWaveBlocked  = "run_wave_blocked"
	RunMergeFailed  = "run_merge_failed"
	RunConflicts    = "run_conflicts"
	RunSuiteMissing = "run_suite_missing"
	RunSuiteFailed  = "run_suite_failed"

	// Why `drover run`, `run resume` or `run cancel` is refused.
	RunBusy     = "run_busy"
	RunLive     = "run_live"
	RunNotLive  = "run_not_live"
	RunMissing  = "run_missing"
	RunFinished = "run_finished"
	RunNoBranch = "run_no_branch"

	// RunMoreLines ends a list of lines cut short (the git status of a
	// task's uncommitted changes).
	RunMoreLines = "run_more_lines"

	// RunOptionsReviewerAndNoReview and RunOptionsNotABudget refuse the
	// options of a run: a reviewer command with --no-review, and a budget
	// that is negative or not a number ({{option}} names it).
	RunOptionsReviewerAndNoReview = "run_options_reviewer_and_no_review"
	RunOptionsNotABudget          = "run_options_not_a_budget"

	// RunCommandTimedOut heads the output of a test or suite command that
	// ran out of time, as the agent and the run's report read it.
	RunCommandTimedOut = "run_command_timed_out"
)
