package session

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover/internal/workflow/queue"
)

// Notes are what the agent recorded with drover note so that a compaction
// does not lose them (seed 003's context snapshot): the question it waits
// for the user to answer, the item it is working on, and the decisions it
// took. Only the agent knows them, so only it can record them; drover keeps
// them with the session's record, writes them into context-snapshot.json at
// PreCompact and puts them back into the model's context after the
// compaction.
type Notes struct {
	// Question is the pending question to the user ("" none).
	Question string `json:"question,omitempty"`
	// Doing is the item in progress ("" none).
	Doing string `json:"doing,omitempty"`
	// Decisions are the most recent decisions, oldest first, at most
	// MaxDecisions.
	Decisions []Decision `json:"decisions,omitempty"`
	UpdatedAt time.Time  `json:"updated_at,omitzero"`
}

// Decision is one decision the agent recorded.
type Decision struct {
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// MaxDecisions bounds the decisions a session keeps; older ones are
// dropped, as the seed's snapshot keeps only the recent context.
const MaxDecisions = 10

// MaxNoteBytes bounds one note's text: notes go into every context
// snapshot, and a note is a line or two, not a document.
const MaxNoteBytes = 2000

// NoteChange is one drover note command. A nil Question or Doing leaves
// that note as it is; a pointer to "" clears it. Clear empties every note
// first, so Clear with a new note replaces them all.
type NoteChange struct {
	Question *string
	Doing    *string
	Decision string
	Clear    bool
}

// ErrBadNote marks a note change that is refused (empty, too long).
var ErrBadNote = errors.New("bad note")

// noteError is an ErrBadNote whose text says what is wrong on its own.
type noteError string

func badNote(format string, args ...any) error { return noteError(fmt.Sprintf(format, args...)) }

func (e noteError) Error() string { return string(e) }

func (noteError) Is(target error) bool { return target == ErrBadNote }

// Empty reports whether no note is recorded.
func (n Notes) Empty() bool {
	return n.Question == "" && n.Doing == "" && len(n.Decisions) == 0
}

// Apply returns n changed by c at now. A change that changes nothing
// (no flag at all) and a note that is not text or is longer than
// MaxNoteBytes are refused with ErrBadNote.
func (n Notes) Apply(c NoteChange, now time.Time) (Notes, error) {
	if c.Question == nil && c.Doing == nil && strings.TrimSpace(c.Decision) == "" && !c.Clear {
		return n, badNote("nothing to note: give --question, --decision, --doing or --clear")
	}
	check := func(flag, s string) (string, error) {
		s = strings.TrimSpace(s)
		if !utf8.ValidString(s) {
			return "", badNote("--%s is not UTF-8 text", flag)
		}
		if len(s) > MaxNoteBytes {
			return "", badNote("--%s is %d bytes, more than the %d a note may hold: write a line, and keep the details in a file", flag, len(s), MaxNoteBytes)
		}
		return s, nil
	}
	next := n
	next.Decisions = append([]Decision(nil), n.Decisions...)
	if c.Clear {
		next = Notes{}
	}
	if c.Question != nil {
		q, err := check("question", *c.Question)
		if err != nil {
			return n, err
		}
		next.Question = q
	}
	if c.Doing != nil {
		d, err := check("doing", *c.Doing)
		if err != nil {
			return n, err
		}
		next.Doing = d
	}
	if strings.TrimSpace(c.Decision) != "" {
		d, err := check("decision", c.Decision)
		if err != nil {
			return n, err
		}
		next.Decisions = append(next.Decisions, Decision{Text: d, At: now})
		if len(next.Decisions) > MaxDecisions {
			next.Decisions = next.Decisions[len(next.Decisions)-MaxDecisions:]
		}
	}
	next.UpdatedAt = now
	if next.Empty() {
		next.Decisions = nil
	}
	return next, nil
}

// WithNotes returns the record of session id (known: the store has it)
// after its notes became n at now. A session the store did not know is
// recorded as one without a workflow, so that its notes are kept.
func (r Record) WithNotes(id string, known bool, n Notes, now time.Time) Record {
	r.ID = id
	if !known || r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.Notes = n
	return r
}

// SnapshotVersion is the version of the context snapshot's schema.
const SnapshotVersion = 1

// ContextSnapshot is context-snapshot.json in the session's folder: seed
// 003's snapshot, written at every PreCompact, with the seed's field names.
// ActiveSkill is the workflow that runs (queue, loop or plan), null when
// none does; CurrentStep is where it stands; PendingQuestion and
// InProgressItem are the agent's notes (the item falls back to the
// workflow's current task); RecentContext holds the decisions.
type ContextSnapshot struct {
	Version         int            `json:"version"`
	Timestamp       time.Time      `json:"timestamp"`
	SessionID       string         `json:"sessionId"`
	ActiveSkill     *string        `json:"activeSkill"`
	CurrentStep     *string        `json:"currentStep"`
	PendingQuestion *string        `json:"pendingQuestion"`
	InProgressItem  *string        `json:"inProgressItem"`
	RecentContext   []ContextEntry `json:"recentContext"`
}

// ContextEntry is one item of a snapshot's recent context.
type ContextEntry struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	// At is when it was recorded.
	At time.Time `json:"at,omitzero"`
}

// Snapshot returns r's context snapshot at now. item is the workflow's
// current item as the caller found it (a queue's next task file), used
// when the agent noted none.
func (r Record) Snapshot(now time.Time, item string) ContextSnapshot {
	s := ContextSnapshot{Version: SnapshotVersion, Timestamp: now.UTC(), SessionID: r.ID, RecentContext: []ContextEntry{}}
	if r.Active() {
		w := string(r.Workflow)
		s.ActiveSkill = &w
		if step := r.step(); step != "" {
			s.CurrentStep = &step
		}
		if r.Workflow == Plan && r.Plan.CurrentTask != "" && item == "" {
			item = "task-" + r.Plan.CurrentTask
		}
	} else {
		item = ""
	}
	if q := r.Notes.Question; q != "" {
		s.PendingQuestion = &q
	}
	if d := r.Notes.Doing; d != "" {
		item = d
	}
	if item != "" {
		s.InProgressItem = &item
	}
	for _, d := range r.Notes.Decisions {
		s.RecentContext = append(s.RecentContext, ContextEntry{Type: "decision", Content: d.Text, At: d.At})
	}
	return s
}

// step is where the running workflow stands, in a few words.
func (r Record) step() string {
	switch r.Workflow {
	case Queue:
		if r.Queue.State == queue.Review {
			return "review"
		}
		return "iteration " + strconv.Itoa(r.Queue.Iteration)
	case Loop:
		return "iteration " + strconv.Itoa(r.Loop.Iteration) + " of " + strconv.Itoa(r.Loop.MaxIterations)
	case Plan:
		s := r.Plan.PlanID + "/" + string(r.Plan.Phase)
		if r.Plan.CurrentTask != "" {
			s += " task-" + r.Plan.CurrentTask
		}
		return s
	}
	return ""
}
