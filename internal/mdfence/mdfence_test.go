package mdfence

import "testing"

func TestUnclosed(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the fence left open, "" when none
	}{
		{"prose", "text\nmore", ""},
		{"two is no fence", "``\nx", ""},
		{"backticks", "```go\nx", "```"},
		{"tildes", "~~~\nx", "~~~"},
		{"closed", "```\nx\n```\n", ""},
		{"closed by longer", "```\nx\n`````  \n", ""},
		{"other char does not close", "~~~\nx\n```\n", "~~~"},
		{"shorter does not close", "`````\nx\n````\n", "`````"},
		{"closing fence with text", "```\nx\n``` no\n", "```"},
		{"backtick in info string", "``` a`b\nx", ""},
		{"tilde info may hold backticks", "~~~ a`b\nx", "~~~"},
		{"three spaces", "   ```\nx", "```"},
		{"four spaces", "    ```\nx", ""},
		{"CRLF", "```\r\nx\r\n```\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, open := Unclosed(tt.in)
			got := ""
			if open {
				got = f.String()
			}
			if got != tt.want {
				t.Errorf("Unclosed(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
