package templates

// The names of the task queue's smaller texts (internal/workflow/queue):
// the pieces its prompts are filled with and the refusal of a start with
// nothing to do. The queue's prompts themselves (Loop, Review, Compact and
// the others) are in templates.go.
const (
	// QueueNoPending refuses drover start when no task is pending.
	QueueNoPending = "queue_no_pending"
	// QueueNextTask follows the loop prompt when a project's override of
	// it does not name the next task.
	QueueNextTask = "queue_next_task"
	// QueueListNone and QueueDirtyNone stand in for an empty list of
	// tasks and of uncommitted files.
	QueueListNone  = "queue_list_none"
	QueueDirtyNone = "queue_dirty_none"
	// QueueMoreFiles, QueueMoreDirty and QueueMoreInline end a list cut
	// short: of task files (one a line), of uncommitted files (one a
	// line), and of stuck tasks (comma-separated).
	QueueMoreFiles  = "queue_more_files"
	QueueMoreDirty  = "queue_more_dirty"
	QueueMoreInline = "queue_more_inline"
)
