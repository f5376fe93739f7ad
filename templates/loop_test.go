package templates

// loopNames are the loop workflow's templates and the role prompts (loop.go).
var loopNames = []string{
	LoopStart, LoopContinue, LoopChecksFailed, LoopChecksNone, LoopNeedsCheckCommand, LoopNotRunning,
	LoopStatus, LoopReflection, LoopCheckpoint, LoopCheckpointPending,
	LoopDone, LoopBudget, LoopConverged, LoopStuck, LoopTrackerError, LoopStopped, LoopNone, LoopCompact, LoopOpenFindings, LoopTracker, LoopCheckpointReview,
	RoleDeveloper, RoleDebugger, RoleArchitect,
	LoopChecksStarted, LoopChecksRunning, LoopChecksPassed, LoopChecksError, LoopChecksTimeout,
	LoopCancelled, LoopConsensus, LoopConsensusClean, LoopConsensusNone, LoopConsensusNoRun,
	LoopReflectionLine, LoopReflectionFailures, LoopReflectionThrashing,
	LoopEffectConvergedChecks, LoopEffectConvergedStreak, LoopEffectConverged, LoopEffectStuckLimit, LoopEffectStuck,
}

// loopContent pins what each loop template must say and which placeholders
// it must use: internal/workflow/loop fills them in.
var loopContent = []struct {
	name    string
	phrases []string
}{
	{LoopStart, []string{"[drover] Started a loop in session {{session_id}}", "{{max_iterations}}", "{{loop_prompt}}"}},
	{LoopContinue, []string{
		"{{iteration}} of {{max_iterations}}", "{{prompt}}", "## Role: {{role}}", "{{role_prompt}}",
		"{{status_section}}", "{{reflection_section}}", "{{checkpoint_section}}", "{{tracker_path}}",
		"\n<promise>{{completion_promise}}</promise>\n", "alone on its line", "{{completion_marker}}", "{{require_checks}}", "{{budgets}}",
	}},
	{LoopChecksFailed, []string{"{{completed_by}}", "necessary, not sufficient", "{{checks_summary}}", "{{loop_prompt}}"}},
	{LoopChecksNone, []string{"No check results", "/drover:stop"}},
	{LoopNotRunning, []string{"no loop is running in session {{session_id}}"}},
	{LoopNeedsCheckCommand, []string{"--require-checks", "loop.check_command is not set", ".drover/config.yaml"}},
	{LoopStatus, []string{"## Convergence: {{status}}", "{{status_reason}}", "{{status_effect}}"}},
	{LoopReflection, []string{"{{reflection}}"}},
	{LoopCheckpoint, []string{"{{checkpoint_consensus}}"}},
	{LoopCheckpointPending, []string{"checkpoint review", "running"}},
	{LoopCheckpointReview, []string{"independent reviewer", "Do not change any file", "{{prompt}}", "{{iteration}}", "{{status}}", "blocking", "PASS", "FAIL"}},
	{LoopDone, []string{"[drover] Loop done in session {{session_id}}", "{{iteration}}", "{{completed_by}}", "{{checks_result}}", "{{spent_usd}}"}},
	{LoopBudget, []string{"[drover] Stopped the loop in session {{session_id}}", "{{budget_detail}}", "{{tracker_path}}", "/drover:loop"}},
	{LoopConverged, []string{"[drover] Ended the loop in session {{session_id}}", "converged", "{{status_reason}}", "loop.end_on_converged", "{{tracker_path}}"}},
	{LoopStuck, []string{"[drover] Ended the loop in session {{session_id}}", "{{status}}", "{{stuck_iterations}}", "loop.stuck_limit", "{{status_reason}}", "{{tracker_path}}", "/drover:loop"}},
	{LoopTrackerError, []string{"[drover]", "{{tracker_path}}", "{{tracker_error}}"}},
	{LoopStopped, []string{"[drover] Stopped the loop of session {{session_id}} at iteration {{iteration}}.", "The agent may stop now."}},
	{LoopNone, []string{"[drover] Session {{session_id}} has no active loop.", "The agent may stop now."}},
	{LoopCompact, []string{"[drover] Active loop in session {{session_id}}", "{{iteration}} of {{max_iterations}}", "{{tracker_path}}", "{{findings_section}}", "{{loop_prompt}}"}},
	{LoopOpenFindings, []string{"## Open findings", "{{open_findings}}"}},
	{LoopTracker, []string{"{{prompt}}", "{{completion_marker}}", "last line"}},
	{RoleDeveloper, []string{"developer", "{{agent_name}}", "test"}},
	{RoleDebugger, []string{"debugger", "{{agent_name}}", "Reproduce"}},
	{RoleArchitect, []string{"architect", "{{agent_name}}", "plan"}},
	{LoopChecksStarted, []string{"running the project's checks ({{check_command}})", "End your turn again"}},
	{LoopChecksRunning, []string{"({{check_command}}) are still running", "End your turn again"}},
	{LoopChecksPassed, []string{"{{check_command}} passed", "{{check_output}}"}},
	{LoopChecksError, []string{"{{check_command}} failed: {{check_error}}", "{{check_output}}"}},
	{LoopChecksTimeout, []string{"{{check_command}} timed out after {{check_timeout}}", "{{check_output}}"}},
	{LoopCancelled, []string{"[drover] Cancelled the loop of session {{session_id}} at iteration {{iteration}}."}},
	{LoopConsensus, []string{"After iteration {{checkpoint_iteration}}: {{verdict}}", "{{pass_votes}} pass", "{{fail_votes}} fail", "{{failed_runs}} reviewer run(s) failed", "{{findings}}"}},
	{LoopConsensusClean, []string{"No blocking findings."}},
	{LoopConsensusNone, []string{"After iteration {{checkpoint_iteration}}: no review", "all {{failed_runs}} reviewer run(s) failed", "{{first_error}}"}},
	{LoopConsensusNoRun, []string{"no reviewer ran"}},
	{LoopReflectionLine, []string{"Iteration {{reflection_iteration}}: {{approach}}"}},
	{LoopReflectionFailures, []string{"Failures: {{failure}}"}},
	{LoopReflectionThrashing, []string{"the same failure keeps coming back"}},
	{LoopEffectConvergedChecks, []string{"requires checks", "completion promise"}},
	{LoopEffectConvergedStreak, []string{"{{iterations_left}} from now, drover ends the loop"}},
	{LoopEffectConverged, []string{"ends only on your completion signal"}},
	{LoopEffectStuckLimit, []string{"stuck for {{stuck_run}} in a row", "iteration {{end_iteration}} ends"}},
	{LoopEffectStuck, []string{"Change your approach"}},
}
