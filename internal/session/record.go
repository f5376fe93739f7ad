// Package session defines the persisted record of one agent session: which
// workflow it runs, that workflow's state, and the decisions recently given
// to hook requests (so a retried request gets the same answer).
//
// It is the engine's, not plumbing: a Record composes the states of the
// workflow cores (internal/workflow/queue, loop and plan, and the loop's
// convergence history), so this package sits above them and below the
// actors that own the records and the store that keeps them. The rules it
// holds are the ones across workflows: which one runs (Active), which one
// holds the session against starting another (Holder, CheckStart), how a
// session comes to run one (Runs), which one drover stop ends
// (StopTarget), how adding a task makes a session known (TaskAdded), the
// loop's view of the record (LoopSession, WithLoop), and the replay of
// recorded decisions.
package session

import (
	"hash/fnv"
	"strings"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

// Workflow names which workflow a session runs.
type Workflow string

// The workflows.
const (
	None  Workflow = ""
	Queue Workflow = "queue"
	Loop  Workflow = "loop"
	Plan  Workflow = "plan"
)

// MaxHistory bounds the loop metrics and reflections a record keeps.
const MaxHistory = loop.MaxHistory

// MaxRecorded bounds how many recent decisions a record keeps for replay.
const MaxRecorded = 32

// Record is the stored state of one session.
type Record struct {
	ID       string        `json:"id"`
	Workflow Workflow      `json:"workflow"`
	Queue    queue.Session `json:"queue"`
	// Loop is the loop workflow's state; LoopHistory and LoopReflections
	// are its last MaxHistory iterations, for convergence and reflections.
	Loop            loop.State               `json:"loop"`
	LoopHistory     []convergence.Metrics    `json:"loop_history,omitempty"`
	LoopReflections []convergence.Reflection `json:"loop_reflections,omitempty"`
	// LoopCheckpoint is the consensus of the last checkpoint review, kept
	// until it has gone into a block reason.
	LoopCheckpoint string `json:"loop_checkpoint,omitempty"`
	// LoopFindings is the consensus of the last checkpoint review, kept
	// after delivery: the open findings the context snapshot puts back
	// after a compaction.
	LoopFindings string `json:"loop_findings,omitempty"`
	// LoopTranscript is where the loop's last Stop stopped reading the
	// session's transcript, so that the next reads only what was added.
	LoopTranscript *TranscriptRead `json:"loop_transcript,omitempty"`
	// Plan is the session's plan workflow state (one plan at a time).
	Plan plan.State `json:"plan"`
	// Notes are the agent's notes for the context snapshot (drover note),
	// whatever workflow runs.
	Notes     Notes     `json:"notes,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LastHookAt is when the session last sent a hook, committed with
	// that hook's decision: what Health reads to tell a working session
	// from one whose agent went quiet.
	LastHookAt time.Time `json:"last_hook_at,omitzero"`
	// EndedAt is when the session's SessionEnd came; a later hook (a
	// resumed session) clears it.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Events counts every hook event applied to this session; tests use it
	// to prove nothing was counted twice.
	Events int `json:"events"`
	// Recorded holds the decisions of the most recent requests, oldest first.
	Recorded []Recorded `json:"recorded,omitempty"`
	// Continuations counts the Stops blocked in a row since the agent
	// last stopped or the user last prompted: what stands in for the
	// stop_hook_active of a CLI whose flag cannot be trusted
	// (hook.Input.ReentryUntrusted).
	Continuations int `json:"continuations,omitempty"`
	// Answered is the length and FNV-1a hash of the cumulative last
	// message (hook.Input.CumulativeMessage) of the Stop last blocked:
	// the part of the next Stop's message that the agent already said.
	// Zero when the last Stop was let go.
	Answered MessagePrefix `json:"answered,omitzero"`
}

// MessagePrefix identifies the start of a message by its length and hash,
// without keeping the text.
type MessagePrefix struct {
	Len int    `json:"len"`
	Sum uint64 `json:"sum"`
}

// PrefixOf returns the MessagePrefix of all of msg.
func PrefixOf(msg string) MessagePrefix {
	h := fnv.New64a()
	_, _ = h.Write([]byte(msg))
	return MessagePrefix{Len: len(msg), Sum: h.Sum64()}
}

// NewPart returns what cumulative message msg adds to the message r last
// blocked (Answered): the text after it, less the newline that joins
// them, when msg still starts with it; else msg whole (a new prompt
// started it over).
func (r Record) NewPart(msg string) string {
	if n := r.Answered.Len; n > 0 && n <= len(msg) && PrefixOf(msg[:n]) == r.Answered {
		return strings.TrimPrefix(msg[n:], "\n")
	}
	return msg
}

// Continued returns the count of consecutive continuations once hook
// event e with input in got out: one more for a blocked Stop, none for a
// Stop let go or a prompt the user sent. A prompt that is the reason of
// the last Stop block is that continuation arriving as a prompt (Gemini
// CLI fires BeforeAgent for it), not the user's, and keeps the count.
func (r Record) Continued(e hook.Event, in hook.Input, out hook.Output) int {
	switch e {
	case hook.Stop:
		if out.IsBlock() {
			return r.Continuations + 1
		}
		return 0
	case hook.UserPromptSubmit:
		if b := r.lastBlock(); r.Continuations > 0 && b != "" && b == strings.TrimSpace(in.Prompt) {
			return r.Continuations
		}
		return 0
	}
	return r.Continuations
}

// lastBlock is the reason of the last recorded Stop decision when it was
// a block, else "".
func (r Record) lastBlock() string {
	for i := len(r.Recorded) - 1; i >= 0; i-- {
		if r.Recorded[i].Event == hook.Stop {
			if o := r.Recorded[i].Output; o.IsBlock() {
				return strings.TrimSpace(o.Reason)
			}
			return ""
		}
	}
	return ""
}

// Recorded is one request id and the decision it got.
type Recorded struct {
	RequestID string      `json:"request_id"`
	Event     hook.Event  `json:"event"`
	Output    hook.Output `json:"output"`
}

// Active reports whether the session's workflow is running: a queue that
// is on or in review, a loop not yet ended, a plan not yet complete. An
// active session is one the agent is being kept at, so drover cleanup keeps
// its files unless forced.
func (r Record) Active() bool {
	switch r.Workflow {
	case Queue:
		return r.Queue.Active()
	case Loop:
		return r.Loop.Active
	case Plan:
		return r.Plan.Active() && r.Plan.Phase != plan.PhaseComplete
	}
	return false
}

// Lookup returns the decision recorded for requestID on event e, if any.
// A retry is the same event; an id reused for another event is a new
// request, and must not get, say, a Stop's block as the answer to a
// UserPromptSubmit (where a block erases the user's prompt).
func (r Record) Lookup(requestID string, e hook.Event) (hook.Output, bool) {
	if requestID == "" {
		return hook.Output{}, false
	}
	for i := len(r.Recorded) - 1; i >= 0; i-- {
		if r.Recorded[i].RequestID == requestID && r.Recorded[i].Event == e {
			return r.Recorded[i].Output, true
		}
	}
	return hook.Output{}, false
}

// Remember returns r with the decision for requestID appended, keeping at
// most MaxRecorded entries. An empty requestID is not remembered.
func (r Record) Remember(requestID string, e hook.Event, out hook.Output) Record {
	if requestID == "" {
		return r
	}
	rec := make([]Recorded, 0, len(r.Recorded)+1)
	rec = append(rec, r.Recorded...)
	rec = append(rec, Recorded{RequestID: requestID, Event: e, Output: out})
	if len(rec) > MaxRecorded {
		rec = rec[len(rec)-MaxRecorded:]
	}
	r.Recorded = rec
	return r
}
