package templates

// The names of the loop workflow's templates (internal/workflow/loop) and of
// the role prompts it routes to. They live in their own file so that each
// workflow's names stay together.
const (
	// LoopStart is what `/drover:loop` tells the agent once the loop runs.
	LoopStart = "loop_start"
	// LoopContinue is the block reason that re-feeds the loop prompt.
	LoopContinue = "loop_continue"
	// LoopChecksFailed blocks a completion signal that the required
	// checks did not confirm.
	LoopChecksFailed = "loop_checks_failed"
	// LoopChecksNone stands in for the check results when there are none.
	LoopChecksNone = "loop_checks_none"
	// LoopNeedsCheckCommand refuses a loop started with --require-checks
	// in a project without loop.check_command.
	LoopNeedsCheckCommand = "loop_needs_check_command"
	// LoopNotRunning refuses drover loop cancel in a session whose loop
	// is not running.
	LoopNotRunning = "loop_not_running"

	// Sections of LoopContinue, each present only when it has something
	// to say.
	LoopStatus            = "loop_status"
	LoopReflection        = "loop_reflection"
	LoopCheckpoint        = "loop_checkpoint"
	LoopCheckpointPending = "loop_checkpoint_pending"

	// Messages for the user (systemMessage).
	LoopDone         = "loop_done"
	LoopBudget       = "loop_budget"
	LoopConverged    = "loop_converged"
	LoopStuck        = "loop_stuck"
	LoopTrackerError = "loop_tracker_error"
	// LoopStopped and LoopNone are what drover stop reports in a loop
	// session: the loop ended, or there was none running.
	LoopStopped = "loop_stopped"
	LoopNone    = "loop_none"

	// LoopCompact brings the agent back into the loop after compaction.
	LoopCompact = "loop_compact"
	// LoopOpenFindings is LoopCompact's section of the last checkpoint
	// review's findings.
	LoopOpenFindings = "loop_open_findings"
	// LoopTracker is the first body of a new loop tracker file.
	LoopTracker = "loop_tracker"
	// LoopCheckpointReview is the prompt of the reviewers at a checkpoint.
	LoopCheckpointReview = "loop_checkpoint_review"

	// RolePrefix starts the name of a role's prompt: role_<role>.
	RolePrefix    = "role_"
	RoleDeveloper = RolePrefix + "developer"
	RoleDebugger  = RolePrefix + "debugger"
	RoleArchitect = RolePrefix + "architect"
)

// The loop's texts for background work (checks, checkpoint reviews) and
// cancel, composed by internal/workflow/loop.
const (
	// LoopChecksStarted and LoopChecksRunning block a completion claim
	// while the required checks run.
	LoopChecksStarted = "loop_checks_started"
	LoopChecksRunning = "loop_checks_running"
	// LoopChecksPassed, LoopChecksError and LoopChecksTimeout are the
	// check command's result, as the agent reads it in checks_summary.
	LoopChecksPassed  = "loop_checks_passed"
	LoopChecksError   = "loop_checks_error"
	LoopChecksTimeout = "loop_checks_timeout"
	// LoopCancelled is what drover loop cancel reports.
	LoopCancelled = "loop_cancelled"
	// LoopConsensus is a checkpoint review's consensus; LoopConsensusClean
	// stands in for its findings when none blocks. LoopConsensusNone is a
	// checkpoint where no reviewer reached a verdict, and
	// LoopConsensusNoRun its reason when no run even reported an error.
	LoopConsensus      = "loop_consensus"
	LoopConsensusClean = "loop_consensus_clean"
	LoopConsensusNone  = "loop_consensus_none"
	LoopConsensusNoRun = "loop_consensus_no_run"
	// LoopReflectionLine is the one-line summary of the last reflection in
	// the continuation prompt, followed by LoopReflectionFailures (its first
	// failure) and LoopReflectionThrashing (the failure repeats) when they
	// apply.
	LoopReflectionLine      = "loop_reflection_line"
	LoopReflectionFailures  = "loop_reflection_failures"
	LoopReflectionThrashing = "loop_reflection_thrashing"
	// The status_effect of LoopStatus: what the convergence status means
	// for the end of the loop (converged with checks required, converged
	// with a streak to go, converged, stuck with a limit, stuck).
	LoopEffectConvergedChecks = "loop_effect_converged_checks"
	LoopEffectConvergedStreak = "loop_effect_converged_streak"
	LoopEffectConverged       = "loop_effect_converged"
	LoopEffectStuckLimit      = "loop_effect_stuck_limit"
	LoopEffectStuck           = "loop_effect_stuck"
)

// The loop's words and short phrases that the texts above are filled with,
// so that a project rewording the loop's messages can reword these too.
const (
	// LoopIterationCountOne and LoopIterationCount count iterations: "1
	// iteration", "{{count}} iterations".
	LoopIterationCountOne = "loop_iteration_count_one"
	LoopIterationCount    = "loop_iteration_count"
	// The end reason of `drover loop status`, one per way a loop ends.
	LoopEndDone      = "loop_end_done"
	LoopEndBudget    = "loop_end_budget"
	LoopEndConverged = "loop_end_converged"
	LoopEndStuck     = "loop_end_stuck"
	LoopEndCancelled = "loop_end_cancelled"
	// The budget_detail of LoopBudget: which budget the loop spent, and how.
	LoopSpentIterations = "loop_spent_iterations"
	LoopSpentMinutes    = "loop_spent_minutes"
	LoopSpentUSD        = "loop_spent_usd"
	LoopSpentExhausted  = "loop_spent_exhausted"
	// LoopChecksNotRequired and LoopChecksResultPassed are the
	// checks_result of LoopDone.
	LoopChecksNotRequired  = "loop_checks_not_required"
	LoopChecksResultPassed = "loop_checks_result_passed"
	// LoopConsensusFirstError is LoopConsensusNone's first_error when a
	// reviewer run reported one; LoopConsensusFinding is one line of
	// LoopConsensus's findings; LoopVerdictPass and LoopVerdictFail are
	// its verdict.
	LoopConsensusFirstError = "loop_consensus_first_error"
	LoopConsensusFinding    = "loop_consensus_finding"
	LoopVerdictPass         = "loop_verdict_pass"
	LoopVerdictFail         = "loop_verdict_fail"
	// The parts of {{budgets}}, the budgets in force joined by "; ": the
	// iterations, and the minutes and dollars when the loop has such a
	// budget.
	LoopBudgetsIterations = "loop_budgets_iterations"
	LoopBudgetsMinutes    = "loop_budgets_minutes"
	LoopBudgetsUSD        = "loop_budgets_usd"
	// LoopSpendUnknown is {{spent_usd}} while no cost was reported.
	LoopSpendUnknown = "loop_spend_unknown"
	// LoopYes and LoopNo are {{require_checks}}.
	LoopYes = "loop_yes"
	LoopNo  = "loop_no"
	// What became of a malformed loop tracker ({{tracker_error}}): set
	// aside and rewritten, with the agent's notes kept or not, or not set
	// aside at all.
	LoopTrackerSetAside       = "loop_tracker_set_aside"
	LoopTrackerSetAsideNotes  = "loop_tracker_set_aside_notes"
	LoopTrackerSetAsideFailed = "loop_tracker_set_aside_failed"
	// Why /drover:loop refuses its options, one per option that is wrong
	// ({{value}} is what was given).
	LoopBadPromptEmpty     = "loop_bad_prompt_empty"
	LoopBadPromptLong      = "loop_bad_prompt_long"
	LoopBadMaxIterations   = "loop_bad_max_iterations"
	LoopBadMaxMinutes      = "loop_bad_max_minutes"
	LoopBadMaxUSD          = "loop_bad_max_usd"
	LoopBadCheckpointEvery = "loop_bad_checkpoint_every"
	LoopBadPromiseBrackets = "loop_bad_promise_brackets"
	LoopBadPromiseLong     = "loop_bad_promise_long"
)
