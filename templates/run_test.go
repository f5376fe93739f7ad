package templates

// runNames are the templates of `drover run` (run.go).
var runNames = []string{
	RunTask, RunTaskFiles, RunTaskTests, RunTaskSuite, RunTaskNoTests, RunTaskRetry, RunReview,
	RunRoleDeveloper, RunRoleDebugger, RunRoleArchitect,
	RunFeedbackAgentFailed, RunFeedbackTestsFailed, RunFeedbackOffBranch, RunFeedbackNoCommit,
	RunFeedbackDirty, RunFeedbackReviewError, RunFeedbackReviewFailed, RunFeedbackNoFindings,
	RunTaskStopped, RunTaskOutOfBudget, RunTaskStuck, RunTaskNotDone, RunTaskConflict, RunTaskLimited,
	RunBudgetUSD, RunBudgetMinutes, RunTaskBudgetUSD, RunTaskBudgetMinutes,
	RunCancelled, RunDone, RunStopped, RunWaveBlocked, RunMergeFailed, RunConflicts,
	RunSuiteMissing, RunSuiteFailed,
	RunBusy, RunLive, RunNotLive, RunMissing, RunFinished, RunNoBranch, RunCommandTimedOut,
	RunOptionsReviewerAndNoReview, RunOptionsNotABudget, RunMoreLines,
}

// runContent pins what each run template must say and which placeholders
// it must use: internal/workflow/run fills them in.
var runContent = []struct {
	name    string
	phrases []string
}{
	{RunTask, []string{"task {{task_id}} of a drover run", "branch {{branch}}", "{{description}}", "{{files_section}}", "{{tests_section}}", "## Role: {{role}}", "{{role_prompt}}", "commit all of your work", "{{retry_section}}"}},
	{RunTaskFiles, []string{"{{files}}"}},
	{RunTaskTests, []string{"run ONLY this task's targeted tests: {{tests}}", "Command: {{test_command}}", "Do NOT run the full test suite", "wave checkpoint"}},
	{RunTaskSuite, []string{"no targeted tests", "full test suite", "{{test_command}}"}},
	{RunTaskNoTests, []string{"no targeted tests", "runs none", "Do NOT run the full test suite", "wave checkpoint"}},
	{RunRoleDeveloper, []string{"developer", "{{agent_name}}", "task's tests"}},
	{RunRoleDebugger, []string{"debugger", "{{agent_name}}", "Reproduce the failure"}},
	{RunRoleArchitect, []string{"architect", "{{agent_name}}", "new plan"}},
	{RunTaskRetry, []string{"iteration {{iteration}} of {{max_iterations}}", "{{feedback}}"}},
	{RunReview, []string{"independent reviewer", "task {{task_id}}", "{{description}}", "{{branch}}", "git diff {{base}}..HEAD", "Do not change any file", "PASS", "FAIL", "blocking"}},
	{RunFeedbackAgentFailed, []string{"agent run failed", "{{error}}"}},
	{RunFeedbackTestsFailed, []string{"targeted tests failed", "{{command}}", "{{output}}"}},
	{RunFeedbackOffBranch, []string{"{{off_branch}}", "{{branch}}", "git merge {{off_branch}}", "do not switch branches"}},
	{RunFeedbackNoCommit, []string{"no commit", "commit your work"}},
	{RunFeedbackDirty, []string{"uncommitted changes", "{{status}}", "git add"}},
	{RunFeedbackReviewError, []string{"review could not run", "{{error}}", "unreviewed"}},
	{RunFeedbackReviewFailed, []string{"did not pass the task (FAIL)", "{{findings}}"}},
	{RunFeedbackNoFindings, []string{"no findings"}},
	{RunTaskStopped, []string{"stopped with the run", "{{reason}}"}},
	{RunTaskOutOfBudget, []string{"{{budget}}", "{{iterations}} iterations", "{{last}}"}},
	{RunTaskStuck, []string{"{{status}}", "{{iterations}} iterations", "{{reason}}"}},
	{RunTaskNotDone, []string{"not done after {{iterations}} iterations", "{{last}}"}},
	{RunTaskConflict, []string{"merge conflict in {{files}}"}},
	{RunTaskLimited, []string{"usage or rate limit", "{{retries}}", "run.limit_retries", "{{limit}}"}},
	{RunBudgetUSD, []string{"${{budget}} (--max-usd)", "${{cost}}"}},
	{RunBudgetMinutes, []string{"{{minutes}} minutes (--max-minutes)", "{{elapsed}} elapsed"}},
	{RunTaskBudgetUSD, []string{"${{budget}} (--task-max-usd)", "${{cost}}"}},
	{RunTaskBudgetMinutes, []string{"{{minutes}} minutes (--task-max-minutes)", "{{elapsed}} elapsed"}},
	{RunCancelled, []string{"drover run cancel"}},
	{RunDone, []string{"{{tasks}} tasks done in {{waves}} waves", "{{target}}", "${{cost}}"}},
	{RunStopped, []string{"run stopped: {{reason}}", "{{tasks}}"}},
	{RunWaveBlocked, []string{"wave {{wave}} cannot be merged", "{{tasks}}"}},
	{RunMergeFailed, []string{"wave {{wave}}", "{{target}}", "{{error}}"}},
	{RunConflicts, []string{"wave {{wave}}", "{{target}}", "need review", "{{conflicts}}"}},
	{RunSuiteMissing, []string{"wave {{wave}}", "suite did not run"}},
	{RunCommandTimedOut, []string{"timed out after {{timeout}}"}},
	{RunBusy, []string{"run {{run_id}} is being worked", "one run at a time"}},
	{RunLive, []string{"run {{run_id}} is already being worked"}},
	{RunNotLive, []string{"run {{run_id}} is not being worked"}},
	{RunMissing, []string{"no run {{run_id}}"}},
	{RunFinished, []string{"run {{run_id}} is done"}},
	{RunNoBranch, []string{"the main work tree {{root}} is not on a branch to merge into"}},
	{RunOptionsReviewerAndNoReview, []string{"reviewer command", "no review", "choose one"}},
	{RunOptionsNotABudget, []string{"{{option}} {{value}} is not a budget", "0 for none"}},
	{RunMoreLines, []string{"and {{count}} more"}},
	{RunSuiteFailed, []string{"wave {{wave}} checkpoint failed", "{{command}}", "{{target}}", "{{output}}"}},
}
