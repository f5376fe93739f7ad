package plan

import "testing"

// TestCloseFences: a write-up cut inside any CommonMark fence (backticks or
// tildes, three or more) is closed with a fence of the same kind, so the
// findings after it in the review file stay outside the code block.
func TestCloseFences(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no fence", "all fine", "all fine"},
		{"closed backticks", "```go\nx\n```\nok", "```go\nx\n```\nok"},
		{"open backticks", "see\n```go\nx := 1", "see\n```go\nx := 1\n```"},
		{"open tildes", "see\n~~~\nx := 1", "see\n~~~\nx := 1\n~~~"},
		{"long fence holds a short one", "````md\n```\ninner\n```\ncut", "````md\n```\ninner\n```\ncut\n````"},
		{"tildes hold backticks", "~~~\n```\ncut", "~~~\n```\ncut\n~~~"},
		{"closed long fence", "~~~~\nx\n~~~~~\nok", "~~~~\nx\n~~~~~\nok"},
		{"closing fence too short", "~~~~\nx\n~~~", "~~~~\nx\n~~~\n~~~~"},
		{"indented four is no fence", "    ```\ncode", "    ```\ncode"},
		{"inline backticks are no fence", "use ``` `x` ``` here", "use ``` `x` ``` here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := closeFences(tt.in); got != tt.want {
				t.Errorf("closeFences(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
