package templates

// planNames are the plan workflow's and the reviewer's templates (plan.go).
var planNames = []string{
	PlanReviewPlan, PlanReviewTasks, PlanReviewCode, PlanReviewAllCode, ReviewerRecheck,
	PlanPostReviewPlan, PlanPostReviewTasks, PlanPostReviewCode, PlanPostReviewAllCode,
	PlanReviewWait, PlanReviewFile, PlanInvalid,
	PlanReviewFailed, PlanReviewMissing, PlanPassed, PlanMaxReviews, PlanReviewsOff, PlanViewRewritten, PlanFolderMissing,
	PlanNext,
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
	{PlanPostReviewPlan, []string{"{{review_file}}", "{{post_review_file}}", "post-plan-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews"}},
	{PlanPostReviewTasks, []string{"{{review_file}}", "{{post_review_file}}", "post-tasks-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews"}},
	{PlanPostReviewCode, []string{"{{review_file}}", "{{post_review_file}}", "post-code-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews"}},
	{PlanPostReviewAllCode, []string{"{{review_file}}", "{{post_review_file}}", "post-all-code-review", "drover plan post-review-done", "state.json", "drover plan stop-reviews"}},
	{PlanReviewWait, []string{"{{model}}", "{{review_file}}", "drover plan wait"}},
	{PlanReviewFile, []string{"{{verdict}}", "{{findings}}", "{{model}}"}},
	{PlanInvalid, []string{"{{violations}}", "{{plan_dir}}"}},
	{PlanReviewFailed, []string{"{{error}}", "{{log_note}}"}},
	{PlanReviewMissing, []string{"{{problem}}", "drover plan stop-reviews"}},
	{PlanPassed, []string{"{{next_phase}}", "drover plan next"}},
	{PlanMaxReviews, []string{"{{max_reviews}}", "drover plan set-max-reviews", "drover plan stop-reviews"}},
	{PlanReviewsOff, []string{"max_reviews is 0", "{{next_phase}}"}},
	{PlanViewRewritten, []string{"state.json", "{{problem}}", "drover plan"}},
	{PlanFolderMissing, []string{"{{plan_dir}}", "drover plan new"}},
	{PlanNext, []string{"{{action}}", "{{target}}", "{{phase}}", "{{next_phase}}"}},
}
