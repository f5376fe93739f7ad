package templates

// The names of what the plan workflow says about its reviewer itself: the
// reviewer's own review in the review file, the tool calls its CLI refused,
// and a reviewer CLI that cannot start.
const (
	// PlanReviewText is the reviewer's own write-up in the review file
	// (PlanReviewFile's {{review}}), before the findings.
	PlanReviewText = "plan_review_text"
	// PlanReviewDenials lists, in the review file (PlanReviewFile's
	// {{denials}}), the tool calls the reviewer's CLI refused it.
	PlanReviewDenials = "plan_review_denials"
	// PlanReviewerDenied tells the agent (after a post-review block
	// reason) and the user (after a message) that the reviewer was
	// refused tool calls, so that its review may rest on checks it could
	// not make.
	PlanReviewerDenied = "plan_reviewer_denied"
	// PlanReviewerMissing allows a stop whose review cannot start: the
	// configured reviewer CLI is not there.
	PlanReviewerMissing = "plan_reviewer_missing"
	// LoopCheckpointDenied follows a loop checkpoint's consensus when its
	// reviewers' CLIs refused them tool calls.
	LoopCheckpointDenied = "loop_checkpoint_denied"
)
