package templates

// The names of the prompts of `drover run` (actors/run.go): what the
// headless agent of a task is asked in each iteration. The role prompts it
// routes to are the loop's (RoleDeveloper and the others, loop.go).
const (
	// RunTask is the prompt of one iteration of a task.
	RunTask = "run_task"
	// Sections of RunTask, each present only when it has something to say.
	RunTaskFiles = "run_task_files"
	RunTaskTests = "run_task_tests"
	RunTaskRetry = "run_task_retry"
	// RunReview is the prompt of the reviewer that must pass a task.
	RunReview = "run_review"
)
