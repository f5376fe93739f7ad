package templates

// The names of the plan workflow's templates (internal/workflow/plan) and of
// the reviewer's. They live in their own file so that each workflow's names
// stay together.
const (
	// Reviewer prompts, one per kind of review.
	PlanReviewPlan    = "plan_review_plan"
	PlanReviewTasks   = "plan_review_tasks"
	PlanReviewCode    = "plan_review_code"
	PlanReviewAllCode = "plan_review_all_code"
	// ReviewerRecheck is appended to a review prompt after the first
	// review of a cycle: re-check the open findings and the diff.
	ReviewerRecheck = "reviewer_recheck"
	// The pieces of ReviewerRecheck: the line that ends a list of findings
	// cut short, the list of none, the diff of no changes, and the note
	// that ends a diff cut short.
	ReviewerRecheckMore    = "reviewer_recheck_more"
	ReviewerRecheckNone    = "reviewer_recheck_none"
	ReviewerRecheckNoDiff  = "reviewer_recheck_no_diff"
	ReviewerRecheckDiffCut = "reviewer_recheck_diff_cut"
	// ReviewerAnswerSchema follows the prompt of a reviewer CLI that takes
	// no schema flag (gemini): answer in JSON, in the schema that follows.
	ReviewerAnswerSchema = "reviewer_answer_schema"

	// Block messages that send the agent to a post-review, one per kind.
	PlanPostReviewPlan    = "plan_post_review_plan"
	PlanPostReviewTasks   = "plan_post_review_tasks"
	PlanPostReviewCode    = "plan_post_review_code"
	PlanPostReviewAllCode = "plan_post_review_all_code"

	// PlanReviewWait blocks while a reviewer runs.
	PlanReviewWait = "plan_review_wait"
	// PlanReviewFile is the review file drover writes from a verdict.
	PlanReviewFile = "plan_review_file"
	// PlanInvalid blocks on a plan folder that breaks the folder rules.
	PlanInvalid = "plan_invalid"

	// Messages for the user (systemMessage).
	PlanReviewFailed  = "plan_review_failed"
	PlanReviewMissing = "plan_review_missing"
	PlanPassed        = "plan_passed"
	PlanMaxReviews    = "plan_max_reviews"
	// PlanMaxReviewsStandalone ends a standalone review (/drover:plan
	// code-review and friends) that reached max_reviews, after which the
	// plan does not move on.
	PlanMaxReviewsStandalone = "plan_max_reviews_standalone"
	PlanReviewsOff           = "plan_reviews_off"
	PlanViewRewritten        = "plan_view_rewritten"
	PlanFolderMissing        = "plan_folder_missing"

	// PlanNext heads what `drover plan continue` prints: where the plan
	// stands and the action it routes to, whose prompt follows.
	PlanNext = "plan_next"
)

// The prompts of the plan actions: what /drover:plan ACTION (and `drover
// plan continue`, for the action it routes to) tells the agent to do, and
// the `drover plan` command that reports it done.
const (
	PlanActionNewPlan         = "plan_action_new_plan"
	PlanActionCreateTasks     = "plan_action_create_tasks"
	PlanActionCompleteTask    = "plan_action_complete_task"
	PlanActionCompleteTaskTDD = "plan_action_complete_task_tdd"
	PlanActionNextTask        = "plan_action_next_task"
	PlanActionNextTaskTDD     = "plan_action_next_task_tdd"
	PlanActionContinueTask    = "plan_action_continue_task"
	PlanActionAddTask         = "plan_action_add_task"
	PlanActionPlanReview      = "plan_action_plan_review"
	PlanActionTasksReview     = "plan_action_tasks_review"
	PlanActionCodeReview      = "plan_action_code_review"
	PlanActionAllCodeReview   = "plan_action_all_code_review"
	// PlanActionPostReview, PlanActionStop, PlanActionDone and
	// PlanActionAskUser are where `drover plan continue` may route besides
	// the actions above.
	PlanActionPostReview = "plan_action_post_review"
	PlanActionStop       = "plan_action_stop"
	PlanActionDone       = "plan_action_done"
	PlanActionAskUser    = "plan_action_ask_user"
)

// What the `drover plan` commands answer (internal/workflow/plan's verbs),
// and the stop that finds the plan's reviewer budget spent.
const (
	PlanStarted            = "plan_started"
	PlanSetAside           = "plan_set_aside"
	PlanAdopted            = "plan_adopted"
	PlanTaskAdded          = "plan_task_added"
	PlanStandaloneSkipped  = "plan_standalone_skipped"
	PlanStandaloneStarts   = "plan_standalone_starts"
	PlanAdvanced           = "plan_advanced"
	PlanAdvancedReview     = "plan_advanced_review"
	PlanAdvancedLimit      = "plan_advanced_limit"
	PlanAdvancedReviewsOff = "plan_advanced_reviews_off"
	PlanCompleted          = "plan_completed"
	PlanSetMaxReviews      = "plan_set_max_reviews"
	PlanSetReviewModel     = "plan_set_review_model"
	PlanSetBudget          = "plan_set_budget"
	PlanSetNoBudget        = "plan_set_no_budget"
	PlanSetTDD             = "plan_set_tdd"
	PlanReviewsStopped     = "plan_reviews_stopped"
	PlanBudgetSpent        = "plan_budget_spent"
)

// The plan's smaller texts, which fill the placeholders of the texts above.
const (
	// The violations of the plan folder rules (PlanInvalid's
	// {{violations}}), in rule order; PlanRuleMore ends a list cut short.
	PlanRuleNoPlan           = "plan_rule_no_plan"
	PlanRuleFileName         = "plan_rule_file_name"
	PlanRuleNested           = "plan_rule_nested"
	PlanRuleMore             = "plan_rule_more"
	PlanRuleReviewOrphan     = "plan_rule_review_orphan"
	PlanRulePostReviewOrphan = "plan_rule_post_review_orphan"
	PlanRuleNoTasksMD        = "plan_rule_no_tasks_md"
	PlanRuleTasksNotTable    = "plan_rule_tasks_not_table"
	PlanRuleTasksNoRows      = "plan_rule_tasks_no_rows"
	PlanRuleTasksHeaderOnly  = "plan_rule_tasks_header_only"
	// What is wrong with a state.json that drover rewrites
	// (PlanViewRewritten's {{problem}}).
	PlanViewNotJSON       = "plan_view_not_json"
	PlanViewNotObject     = "plan_view_not_object"
	PlanViewMissingFields = "plan_view_missing_fields"
	// What a review would have nothing to read (PlanReviewMissing's
	// {{problem}}).
	PlanMissingPlanMD      = "plan_missing_plan_md"
	PlanMissingCurrentTask = "plan_missing_current_task"
	PlanMissingTaskFile    = "plan_missing_task_file"
	PlanMissingTaskFiles   = "plan_missing_task_files"
	// The name of a review in messages ({{review_name}}), one per kind.
	PlanNamePlanReview    = "plan_name_plan_review"
	PlanNameTasksReview   = "plan_name_tasks_review"
	PlanNameCodeReview    = "plan_name_code_review"
	PlanNameAllCodeReview = "plan_name_all_code_review"
	// The section titles of PlanReviewFile's {{findings}}, and what stands
	// in for them when the reviewer found nothing.
	PlanFindingsBlocking = "plan_findings_blocking"
	PlanFindingsMinor    = "plan_findings_minor"
	PlanFindingsNone     = "plan_findings_none"
	// PlanNext's {{target}}: the review file or the task file to read.
	PlanNextReviewFile = "plan_next_review_file"
	PlanNextTaskFile   = "plan_next_task_file"
	// PlanReviewFailed's {{error}} when the run gave none, and its
	// {{log_note}} when the run left a log.
	PlanReviewerFailed = "plan_reviewer_failed"
	PlanLogNote        = "plan_log_note"
	// PlanStarted's {{tdd_note}} and {{budget_note}}, each after a comma.
	PlanTDDNote    = "plan_tdd_note"
	PlanBudgetNote = "plan_budget_note"
	// PlanNoneToContinue refuses drover plan continue in a session with no
	// plan when the plans folder holds none either.
	PlanNoneToContinue = "plan_none_to_continue"
)

// Why a `drover plan` command is refused (internal/workflow/plan's
// verbs): no plan, another plan, a bad id or setting, an unknown phase.
const (
	PlanRefuseNoPlanAction    = "plan_refuse_no_plan_action"
	PlanRefuseNoPlanCommand   = "plan_refuse_no_plan_command"
	PlanRefuseNotThisSession  = "plan_refuse_not_this_session"
	PlanRefuseOtherPlan       = "plan_refuse_other_plan"
	PlanRefuseBadID           = "plan_refuse_bad_id"
	PlanRefuseBadIDShort      = "plan_refuse_bad_id_short"
	PlanRefuseNegativeReviews = "plan_refuse_negative_reviews"
	PlanRefuseExists          = "plan_refuse_exists"
	PlanRefuseUnknownPhase    = "plan_refuse_unknown_phase"
	PlanRefuseSetMaxReviews   = "plan_refuse_set_max_reviews"
	PlanRefuseSetNextPhase    = "plan_refuse_set_next_phase"
	PlanRefuseSetReviewModel  = "plan_refuse_set_review_model"
	PlanRefuseSetBudget       = "plan_refuse_set_budget"
	PlanRefuseSetTDD          = "plan_refuse_set_tdd"
	PlanRefuseSetUnknown      = "plan_refuse_set_unknown"
	PlanRefuseNoPlan          = "plan_refuse_no_plan"
	PlanRefuseUnknownReview   = "plan_refuse_unknown_review"
	PlanRefuseNoView          = "plan_refuse_no_view"
	// Why a plan action (/drover:plan ACTION) or a step of the plan is
	// refused: the action, the plan or the task it needs.
	PlanRefuseUnknownAction = "plan_refuse_unknown_action"
	PlanRefuseActionNoPlan  = "plan_refuse_action_no_plan"
	PlanRefuseTakesNoTask   = "plan_refuse_takes_no_task"
	PlanRefuseBadTaskID     = "plan_refuse_bad_task_id"
	PlanRefuseAllDone       = "plan_refuse_all_done"
	PlanRefuseNoCurrentTask = "plan_refuse_no_current_task"
	PlanRefuseTaskExists    = "plan_refuse_task_exists"
	PlanRefuseNoTaskFile    = "plan_refuse_no_task_file"
	// Why a step of the plan (drover plan advance, set and the others)
	// is refused: a file to write first, no task, no plan, a review
	// running.
	PlanRefuseWriteFirst       = "plan_refuse_write_first"
	PlanRefuseAllDoneName      = "plan_refuse_all_done_name"
	PlanRefuseContinueNoTask   = "plan_refuse_continue_no_task"
	PlanRefuseNoPostReview     = "plan_refuse_no_post_review"
	PlanRefuseCommandNoPlan    = "plan_refuse_command_no_plan"
	PlanRefuseCommandStartPlan = "plan_refuse_command_start_plan"
	PlanRefuseSetNegative      = "plan_refuse_set_negative"
	PlanRefuseNameTheTask      = "plan_refuse_name_the_task"
	PlanRefuseNothingToReview  = "plan_refuse_nothing_to_review"
	PlanRefuseBadBudget        = "plan_refuse_bad_budget"
	PlanRefuseWaitsFor         = "plan_refuse_waits_for"
	PlanRefuseReviewRunning    = "plan_refuse_review_running"
)

// A state.json edited by hand (internal/workflow/plan's ReadEdit), a plan
// another session took over, and the answer of a standalone review, which
// is one review (seed 001's standalone review commands).
const (
	// PlanViewEditNextPhase and PlanViewEditMaxReviews say that the seed's
	// escape hatches were taken; PlanViewEditCancelled is the former's
	// {{cancelled}} when a review was running. PlanViewEditRefused says
	// which other edits drover undid and names drover plan set.
	PlanViewEditNextPhase  = "plan_view_edit_next_phase"
	PlanViewEditCancelled  = "plan_view_edit_cancelled"
	PlanViewEditMaxReviews = "plan_view_edit_max_reviews"
	PlanViewEditRefused    = "plan_view_edit_refused"
	// PlanTakenOver tells a session that another one ({{owner}}) drives
	// its plan now.
	PlanTakenOver = "plan_taken_over"
	// PlanStandaloneReviewed answers a standalone review.
	PlanStandaloneReviewed = "plan_standalone_reviewed"
)
