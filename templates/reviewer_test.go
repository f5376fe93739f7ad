package templates

// reviewerNames are the templates of reviewer.go.
var reviewerNames = []string{PlanReviewText, PlanReviewDenials, PlanReviewerDenied, PlanReviewerMissing, LoopCheckpointDenied}

// reviewerContent pins what each of them must say and which placeholders
// it must use: internal/workflow/plan fills them in.
var reviewerContent = []struct {
	name    string
	phrases []string
}{
	{PlanReviewText, []string{"{{review}}"}},
	{PlanReviewDenials, []string{"{{denials}}", "{{denial_count}}", "Refused tool calls"}},
	{PlanReviewerDenied, []string{"[drover]", "{{denials}}", "{{denial_count}}", "{{review_name}}", "run them yourself"}},
	{LoopCheckpointDenied, []string{"{{denials}}", "{{denial_count}}", "run them yourself"}},
	{PlanReviewerMissing, []string{"[drover]", "{{review_name}}", "{{command}}", "{{reason}}", "{{key}}", ".drover/config.yaml", "drover plan stop-reviews"}},
}
