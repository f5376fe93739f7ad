// Package queue is the queue workflow as a pure state machine: a per-session
// queue of task files that the agent works through one Stop at a time, an
// uncommitted-changes gate, an iteration budget, and a review phase when the
// queue is empty.
//
// Nothing here does I/O. The session actor gathers Facts (task files, git
// status, config), calls these functions, persists the new Session, and only
// then answers the hook.
package queue

// State is where a session's queue stands.
type State string

// The queue states of seed 000.
const (
	Off    State = "off"
	On     State = "on"
	Review State = "review"
)

// Session is the queue workflow's persisted state for one session.
type Session struct {
	State     State `json:"state"`
	Iteration int   `json:"iteration"`
}

// Active reports whether the queue is running (on or in review).
func (s Session) Active() bool { return s.State == On || s.State == Review }

// Facts is what the session actor gathered before a decision. Paths are
// absolute; each task list is sorted by name, which is by creation time.
type Facts struct {
	SessionID  string
	SessionDir string
	Pending    []string
	Done       []string
	Stuck      []string

	// Dirty is true when git reports uncommitted changes outside .drover/.
	// DirtyFiles holds the first few of them, for the block message.
	Dirty      bool
	DirtyFiles []string

	MaxIterations  int
	GitCommitCheck bool
}
