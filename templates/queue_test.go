package templates

// queueNames are the task queue's smaller texts (queue.go).
var queueNames = []string{
	QueueNoPending, QueueNextTask, QueueListNone, QueueDirtyNone, QueueMoreFiles, QueueMoreDirty, QueueMoreInline,
}

// queueContent pins what each of them must say and which placeholders it
// must use: internal/workflow/queue fills them in.
var queueContent = []struct {
	name    string
	phrases []string
}{
	{QueueNoPending, []string{"no pending tasks in {{session_dir}}", "drover add"}},
	{QueueNextTask, []string{"Next task: {{next_task}}"}},
	{QueueListNone, []string{"(none)"}},
	{QueueDirtyNone, []string{"git status"}},
	{QueueMoreFiles, []string{"and {{count}} more", "{{session_dir}}"}},
	{QueueMoreDirty, []string{"and {{count}} more", "git status"}},
	{QueueMoreInline, []string{"and {{count}} more"}},
}
