package templates

// runNames are the templates of `drover run` (run.go).
var runNames = []string{RunTask, RunTaskFiles, RunTaskTests, RunTaskRetry, RunReview}

// runContent pins what each run template must say and which placeholders
// it must use: actors/run.go fills them in.
var runContent = []struct {
	name    string
	phrases []string
}{
	{RunTask, []string{"task {{task_id}} of a drover run", "branch {{branch}}", "{{description}}", "{{files_section}}", "{{tests_section}}", "## Role: {{role}}", "{{role_prompt}}", "commit all of your work", "{{retry_section}}"}},
	{RunTaskFiles, []string{"{{files}}"}},
	{RunTaskTests, []string{"{{tests}}"}},
	{RunTaskRetry, []string{"iteration {{iteration}} of {{max_iterations}}", "{{feedback}}"}},
	{RunReview, []string{"independent reviewer", "task {{task_id}}", "{{description}}", "{{branch}}", "git diff {{base}}..HEAD", "Do not change any file", "PASS", "FAIL", "blocking"}},
}
