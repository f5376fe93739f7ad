package templates

// planNames are the plan workflow's and the reviewer's templates (plan.go).
var planNames = []string{
	PlanReviewPlan, PlanReviewTasks, PlanReviewCode, PlanReviewAllCode, ReviewerRecheck,
	PlanPostReviewPlan, PlanPostReviewTasks, PlanPostReviewCode, PlanPostReviewAllCode,
	PlanReviewWait, PlanReviewFile, PlanInvalid,
	PlanReviewFailed, PlanReviewMissing, PlanPassed, PlanMaxReviews, PlanReviewsOff, PlanViewRewritten, PlanFolderMissing,
	PlanPassedStandalone, PlanMaxReviewsStandalone,
	PlanNext,
	PlanActionNewPlan, PlanActionCreateTasks, PlanActionCompleteTask, PlanActionCompleteTaskTDD,
	PlanActionNextTask, PlanActionNextTaskTDD, PlanActionContinueTask, PlanActionAddTask,
	PlanActionPlanReview, PlanActionTasksReview, PlanActionCodeReview, PlanActionAllCodeReview,
	PlanActionPostReview, PlanActionStop, PlanActionDone, PlanActionAskUser,
}

// planContent pins what each plan template must say and which placeholders
// it must use: internal/workflow/plan fills them in.
var planContent = []struct {
	name    string
	phrases []string
}{
	{PlanReviewPlan, []string{"{{plan_dir}}/plan.md", "{{review_file}}", "{{iteration}}", `"blocking"`, `"minor"`, "Do not edit any file"}},
	{PlanReviewTasks, []string{"{{plan_dir}}/tasks.md", "{{task_files}}", "{{review_file}}", "Do not edit any file"}},
	{PlanReviewCode, []string{"{{plan_dir}}/task-{{task}}.md", "{{plan_dir}}/plan.md", "{{review_file}}", "Do not edit any file"}},
	{PlanReviewAllCode, []string{"{{plan_dir}}/tasks.md", "{{task_files}}", "{{review_file}}", "Do not edit any file"}},
	{ReviewerRecheck, []string{"{{previous_findings}}", "{{previous_count}}", "{{diff_since}}"}},
	{PlanPostReviewPlan, []string{"{{review_file}}", "{{post_review_file}}", "post-plan-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews", "{{clean_streak}} end the cycle"}},
	{PlanPostReviewTasks, []string{"{{review_file}}", "{{post_review_file}}", "post-tasks-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews", "{{clean_streak}} end the cycle"}},
	{PlanPostReviewCode, []string{"{{review_file}}", "{{post_review_file}}", "post-code-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews", "{{clean_streak}} end the cycle"}},
	{PlanPostReviewAllCode, []string{"{{review_file}}", "{{post_review_file}}", "post-all-code-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews", "{{clean_streak}} end the cycle"}},
	{PlanReviewWait, []string{"{{model}}", "{{review_file}}", "drover plan wait"}},
	{PlanReviewFile, []string{"{{verdict}}", "{{findings}}", "{{model}}"}},
	{PlanInvalid, []string{"{{violations}}", "{{plan_dir}}"}},
	{PlanReviewFailed, []string{"{{error}}", "{{log_note}}"}},
	{PlanReviewMissing, []string{"{{problem}}", "drover plan stop-reviews"}},
	{PlanPassed, []string{"{{next_phase}}", "{{consecutive_clean}} clean review(s) in a row", "{{clean_streak}} end the cycle", "`drover plan continue`"}},
	{PlanPassedStandalone, []string{"standalone {{review_name}}", "{{clean_streak}} end the cycle", "next_phase is null", "`drover plan continue`"}},
	{PlanMaxReviews, []string{"{{max_reviews}}", "without {{clean_streak}} clean reviews in a row", "drover plan set-max-reviews", "drover plan stop-reviews"}},
	{PlanMaxReviewsStandalone, []string{"standalone {{review_name}}", "{{max_reviews}}", "without {{clean_streak}} clean reviews in a row", "next_phase is null", "/drover:plan {{review_phase}}", "drover plan set-max-reviews"}},
	{PlanReviewsOff, []string{"max_reviews is 0", "{{next_phase}}", "`drover plan continue`"}},
	{PlanViewRewritten, []string{"state.json", "{{problem}}", "drover plan"}},
	{PlanFolderMissing, []string{"{{plan_dir}}", "drover plan new"}},
	{PlanNext, []string{"{{action}}", "{{target}}", "{{phase}}", "{{next_phase}}"}},
	// The action prompts: what to write, and the command that reports it.
	{PlanActionNewPlan, []string{"Write the plan to {{plan_file}} (", "{{plan_dir}}", "{{first_model}}", "{{clean_streak}}", "{{max_reviews}}", "drover plan advance new-plan"}},
	{PlanActionCreateTasks, []string{"{{plan_file}}", "{{tasks_file}}", "| Id | Status | Description |", "task-<Id>.md", "`drover plan create-tasks`"}},
	{PlanActionCompleteTask, []string{"{{task_file}}", "mark the task `done` in {{tasks_file}} in the same commit", "{{clean_streak}}", "`drover plan complete-task {{task}}`"}},
	{PlanActionCompleteTaskTDD, []string{"{{task_file}}", "red, green, refactor", "mark the task `done` in {{tasks_file}} in the same commit", "`drover plan complete-task {{task}} --tdd`"}},
	{PlanActionNextTask, []string{"{{task_file}}", "no review", "`drover plan next-task {{task}}`", "/drover:plan code-review {{task}}"}},
	{PlanActionNextTaskTDD, []string{"{{task_file}}", "red, green, refactor", "`drover plan next-task {{task}} --tdd`"}},
	{PlanActionContinueTask, []string{"{{task_file}}", "{{next_phase}}", "`drover plan continue-task`"}},
	{PlanActionAddTask, []string{"| {{task}} | pending |", "{{tasks_file}}", "{{task_file}}", "{{current_task}}", "`drover plan add-task {{task}}`"}},
	{PlanActionPlanReview, []string{"{{plan_file}}", "standalone", "next_phase null", "{{clean_streak}}", "`drover plan plan-review`"}},
	{PlanActionTasksReview, []string{"{{tasks_file}}", "standalone", "next_phase null", "{{clean_streak}}", "`drover plan tasks-review`"}},
	{PlanActionCodeReview, []string{"{{task_file}}", "standalone", "next_phase null", "{{clean_streak}}", "`drover plan code-review {{task}}`"}},
	{PlanActionAllCodeReview, []string{"{{tasks_file}}", "standalone", "next_phase null", "{{clean_streak}}", "`drover plan all-code-review`"}},
	{PlanActionPostReview, []string{"{{review_file}}", "{{post_review_file}}", "{{clean_streak}}", "`drover plan post-review-done`"}},
	{PlanActionStop, []string{"{{review_name}}", "{{next_iteration}}", "Stop now"}},
	{PlanActionDone, []string{"is complete", "`drover plan status`"}},
	{PlanActionAskUser, []string{"{{phase}}", "{{next_phase}}", "{{current_task}}", "`drover plan status`", "`drover plan advance <phase>`"}},
}
