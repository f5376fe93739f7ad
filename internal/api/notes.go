package api

import "time"

// NotesWorkflow is the workflow element of the notes routes
// (WorkflowPath(id, NotesWorkflow, verb)): verb "set" changes the notes
// with NoteArgs, "show" reads them; both answer Notes.
const NotesWorkflow = "notes"

// NoteArgs are the arguments of drover note. A nil Question or Doing leaves
// that note alone, a pointer to "" clears it; Decision adds one decision;
// Clear empties every note first.
type NoteArgs struct {
	Question *string `json:"question,omitempty"`
	Doing    *string `json:"doing,omitempty"`
	Decision string  `json:"decision,omitempty"`
	Clear    bool    `json:"clear,omitempty"`
}

// Notes is the answer to every notes command: the session's notes and,
// in Message, the text the agent gets back after a compaction.
type Notes struct {
	SessionID string         `json:"session_id"`
	Question  string         `json:"question,omitempty"`
	Doing     string         `json:"doing,omitempty"`
	Decisions []NoteDecision `json:"decisions"`
	UpdatedAt time.Time      `json:"updated_at,omitzero"`
	// Snapshot is the context snapshot file written at each PreCompact.
	Snapshot string `json:"snapshot"`
	Message  string `json:"message"`
}

// NoteDecision is one recorded decision.
type NoteDecision struct {
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}
