package natsexec

import (
	"encoding/json"
	"fmt"
)

// Job is one iteration on the jobs stream.
type Job struct {
	// ID names the job: the same iteration published again has the same
	// ID and is not a second job.
	ID string `json:"id"`
	// Repo is the repository's identity; a worker of another refuses it.
	Repo  Identity `json:"repo"`
	RunID string   `json:"run_id"`
	Task  string   `json:"task"`
	// Iteration is the task's iteration this job runs.
	Iteration int `json:"iteration"`
	// Base is the commit the task's branch starts from.
	Base string `json:"base"`
	// Branch is the task's branch.
	Branch string `json:"branch"`
	// Head is the branch's commit when the job was published ("": the
	// branch does not exist yet and starts at Base).
	Head string `json:"head,omitempty"`
	// Bundle is the object holding the branch's commits beyond Base (""
	// : none); Base itself is the object baseObject(Base), fetched by a
	// worker whose repository lacks it.
	Bundle string `json:"bundle,omitempty"`
	// Author is the git identity of the project (its git config
	// user.name and user.email, either empty when unset): the worker's
	// repository commits under it.
	Author Author `json:"author,omitzero"`
	// Iter is what the executor runs, opaque to the transport.
	Iter json.RawMessage `json:"iter,omitempty"`
}

// Author is a git identity.
type Author struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// Result is what a worker sends back for a job.
type Result struct {
	JobID string `json:"job_id"`
	// Worker names the worker that ran the job.
	Worker string `json:"worker"`
	// Head is the task branch's commit after the job ("": unchanged or
	// absent); Bundle holds its new commits, or Inline when they are a
	// bundle of at most InlineMax bytes (most iterations' few commits):
	// in the result itself, one message rather than an object stored,
	// fetched and deleted.
	Head   string `json:"head,omitempty"`
	Bundle string `json:"bundle,omitempty"`
	Inline []byte `json:"inline,omitempty"`
	// Out is what the executor returned, opaque to the transport.
	Out json.RawMessage `json:"out,omitempty"`
	// Err is a failure of the job itself (not of the agent).
	Err string `json:"err,omitempty"`
	// Refused is set when the worker would not run the job.
	Refused bool `json:"refused,omitempty"`
	// Cancelled is the supervisor's result of a job it gave up on (its
	// run was cancelled or stopped): a worker running it ends it, and no
	// worker starts it.
	Cancelled bool `json:"cancelled,omitempty"`
}

// Progress is a report of a job at work, on the progress subject.
type Progress struct {
	JobID  string          `json:"job_id"`
	Worker string          `json:"worker"`
	Data   json.RawMessage `json:"data,omitempty"`
}

func (j Job) check() error {
	if j.ID == "" || j.Base == "" || j.Branch == "" {
		return fmt.Errorf("job %q of task %s: an id, a base and a branch are needed", j.ID, j.Task)
	}
	return nil
}
