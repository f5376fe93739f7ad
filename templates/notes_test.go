package templates

// notesNames are the texts of the agent's notes (notes.go).
var notesNames = []string{NotesContext, NotesQuestion, NotesDoing, NotesDecision, NotesNone}

// notesContent pins what each of them must say and which placeholders it
// must use: the session actor fills them in.
var notesContent = []struct {
	name    string
	phrases []string
}{
	{NotesContext, []string{"[drover] Your notes in session {{session_id}}", "{{notes}}", "drover note"}},
	{NotesQuestion, []string{"Pending question to the user: {{question}}"}},
	{NotesDoing, []string{"In progress: {{doing}}"}},
	{NotesDecision, []string{"Decided: {{decision}}"}},
	{NotesNone, []string{"No notes in session {{session_id}}", "drover note --question", "--decision", "--doing"}},
}
