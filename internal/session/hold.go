package session

import (
	"fmt"
	"strconv"
	"time"

	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/queue"
	"github.com/drover-dev/drover/templates"
)

// One workflow owns a session's stops at a time. These are the rules of
// which one, in one place for the queue, the loop and the plan.

// Holder returns the workflow that keeps want from starting in the
// session: the session's own workflow while it runs (Active), when it is
// not want. A finished workflow (a queue that is off, a loop that ended, a
// plan that is complete) holds nothing. Starting the workflow the session
// already runs is that workflow's own decision (a second plan, a queue
// started again), so it is None too.
func (r Record) Holder(want Workflow) Workflow {
	if r.Workflow == want || !r.Active() {
		return None
	}
	return r.Workflow
}

// HeldError refuses to start a workflow in a session another one holds.
// Its text, from templates, says which one and how to end it.
type HeldError struct {
	Holder Workflow
	Text   string
}

func (e *HeldError) Error() string { return e.Text }

// CheckStart returns nil when want may start in the session, else a
// *HeldError (see Holder).
func (r Record) CheckStart(t templates.Set, want Workflow) error {
	h := r.Holder(want)
	vars := map[string]string{"session_id": r.ID, "workflow": string(want)}
	var name string
	switch h {
	case None:
		return nil
	case Queue:
		name, vars["state"] = templates.SessionHeldQueue, string(r.Queue.State)
	case Loop:
		name, vars["iteration"] = templates.SessionHeldLoop, strconv.Itoa(r.Loop.Iteration)
	case Plan:
		name, vars["plan_id"] = templates.SessionHeldPlan, r.Plan.PlanID
	default:
		return &HeldError{Holder: h, Text: fmt.Sprintf("session %s runs workflow %q", r.ID, h)}
	}
	text, err := t.Render(name, vars)
	if err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	return &HeldError{Holder: h, Text: text}
}

// StopTarget returns the workflow that `drover stop` ends in the session:
// the loop or the plan it runs (even one that has ended, which then says
// so), else its queue, which records the stop even when it is off.
func (r Record) StopTarget() Workflow {
	switch r.Workflow {
	case Loop, Plan:
		return r.Workflow
	}
	return Queue
}

// TaskAdded returns the record after a task was added to a session that
// the store did not know (known false), or knew without a workflow (it
// only had notes): the session is recorded as a queue that is off, so that
// status lists it; adding starts nothing. It reports whether the record
// changed and must be saved.
func (r Record) TaskAdded(known bool, now time.Time) (Record, bool) {
	if known && r.Workflow != None {
		return r, false
	}
	r.Workflow = Queue
	if !known || r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt = now
	r.Queue = queue.Session{State: queue.Off}
	return r, true
}

// LoopSession is the loop's part of the record, what the loop core decides
// on. It is empty when the session runs another workflow: a loop state
// left under a queue or a plan is over, and must not be cancelled, resumed
// or snapshotted as if it ran.
func (r Record) LoopSession() loop.Session {
	if r.Workflow != Loop {
		return loop.Session{}
	}
	return loop.Session{State: r.Loop, History: r.LoopHistory, Reflections: r.LoopReflections, Consensus: r.LoopCheckpoint, Findings: r.LoopFindings}
}

// WithLoop returns r with s as its loop.
func (r Record) WithLoop(s loop.Session) Record {
	r.Loop, r.LoopHistory, r.LoopReflections, r.LoopCheckpoint, r.LoopFindings = s.State, s.History, s.Reflections, s.Consensus, s.Findings
	return r
}

// Runs returns r recorded as running workflow w (which CheckStart let
// start), created at now when it is new.
func (r Record) Runs(w Workflow, now time.Time) Record {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.Workflow = w
	return r
}
