package templates

// The names of the texts of the agent's notes (drover note): what the
// context snapshot puts back into the model's context after a compaction,
// and what drover note prints.
const (
	// NotesContext brings the agent's notes back after a compaction (and
	// is what drover note prints); {{notes}} is made of the three below.
	NotesContext = "notes_context"
	// NotesQuestion, NotesDoing and NotesDecision are one line each of
	// NotesContext: the pending question, the item in progress, and one
	// decision.
	NotesQuestion = "notes_question"
	NotesDoing    = "notes_doing"
	NotesDecision = "notes_decision"
	// NotesNone is what drover note prints in a session without notes.
	NotesNone = "notes_none"
)
