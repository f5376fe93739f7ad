// Package mdfence reads CommonMark fenced code blocks line by line: which
// line opens one and which closes it. It is shared by the readers that must
// not look inside code (a promise phrase, a review write-up cut short).
package mdfence

import "strings"

// Fence is the opening line of a fenced code block: its character (a
// backtick or a tilde) and how many of them.
type Fence struct {
	Char byte
	N    int
}

// Open reports whether line opens a fenced code block, as CommonMark has
// it: at most three spaces, then three or more backticks or tildes (a
// backtick fence's info string may not hold a backtick).
func Open(line string) (Fence, bool) {
	if IndentWidth(line) > 3 {
		return Fence{}, false
	}
	t := strings.TrimLeft(line, " \t")
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return Fence{}, false
	}
	c := t[0]
	n := run(t, c)
	if n < 3 {
		return Fence{}, false
	}
	if c == '`' && strings.IndexByte(t[n:], '`') >= 0 {
		return Fence{}, false
	}
	return Fence{Char: c, N: n}, true
}

// Closes reports whether line closes the fenced block f opened: at most
// three spaces, at least as many of the same character, then only spaces.
func (f Fence) Closes(line string) bool {
	if IndentWidth(line) > 3 {
		return false
	}
	t := strings.TrimLeft(strings.TrimRight(line, "\r\n"), " \t")
	n := run(t, f.Char)
	return n >= f.N && strings.TrimSpace(t[n:]) == ""
}

// String is the line that closes f: its character, as many times.
func (f Fence) String() string { return strings.Repeat(string(f.Char), f.N) }

// Unclosed returns the fence a Markdown text leaves open at its end, if
// any: a text cut in the middle of a code block.
func Unclosed(text string) (Fence, bool) {
	var (
		f    Fence
		open bool
	)
	for line := range strings.Lines(text) {
		if open {
			open = !f.Closes(line)
			continue
		}
		f, open = Open(line)
	}
	return f, open
}

// run counts the leading bytes of s equal to c.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// IndentWidth is the column of line's first character that is not a space
// or tab, with tab stops every four columns.
func IndentWidth(line string) int {
	w := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}
