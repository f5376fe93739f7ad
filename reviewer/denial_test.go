package reviewer

import "testing"

// TestDenialMarkdown: a refused call is said as code spans, whose fences
// outrun any backquotes the tool's input holds.
func TestDenialMarkdown(t *testing.T) {
	tests := []struct {
		d    Denial
		want string
	}{
		{Denial{Tool: "Bash", Input: "go test ./..."}, "`Bash` `go test ./...`"},
		{Denial{Tool: "Edit"}, "`Edit`"},
		{Denial{Tool: "Bash", Input: "echo `date`"}, "`Bash` `` echo `date` ``"},
		{Denial{Tool: "Bash", Input: "a ``b`` c"}, "`Bash` ``` a ``b`` c ```"},
	}
	for _, tt := range tests {
		if got := tt.d.Markdown(); got != tt.want {
			t.Errorf("%+v.Markdown() = %q, want %q", tt.d, got, tt.want)
		}
	}
}
