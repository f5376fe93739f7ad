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
	PlanReviewsOff    = "plan_reviews_off"
	PlanViewRewritten = "plan_view_rewritten"
	PlanFolderMissing = "plan_folder_missing"

	// PlanNext is what `drover plan next` prints.
	PlanNext = "plan_next"
)
