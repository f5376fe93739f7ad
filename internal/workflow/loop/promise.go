package loop

import "strings"

// The promise tag, as the agent is told to write it.
const (
	openTag  = "<promise>"
	closeTag = "</promise>"
)

// PromiseKept reports whether message keeps the completion promise phrase:
// some line of message is <promise>TEXT</promise> and nothing else (spaces
// around it are fine), with TEXT equal to phrase once both have their runs
// of whitespace collapsed and trimmed and their case folded.
//
// What does not count, because each has ended loops that were not done
// (peers §3.1): untagged text ("DONE"); a tag with anything else on its
// line ("I will not output <promise>DONE</promise> yet"); a line in a
// fenced (``` or ~~~) or indented code block; a quotation ("> ..."); an
// empty phrase. Every line is looked at, so a promise in an earlier
// paragraph counts even when text follows it.
func PromiseKept(message, phrase string) bool {
	want := normalize(phrase)
	if want == "" {
		return false
	}
	var fence fenceLine
	inFence := false
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if inFence {
			inFence = !closes(line, fence)
			continue
		}
		if f, ok := opensFence(line); ok {
			fence, inFence = f, true
			continue
		}
		if indentWidth(line) >= 4 {
			// An indented code block, or the continuation of something
			// that is not a line of its own either way.
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), ">") {
			continue
		}
		if text, ok := promiseText(line); ok && strings.EqualFold(normalize(text), want) {
			return true
		}
	}
	return false
}

// promiseText returns TEXT when line, trimmed, is exactly one
// <promise>TEXT</promise>.
func promiseText(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if len(t) < len(openTag)+len(closeTag) || !strings.HasPrefix(t, openTag) || !strings.HasSuffix(t, closeTag) {
		return "", false
	}
	inner := t[len(openTag) : len(t)-len(closeTag)]
	if strings.Contains(inner, openTag) || strings.Contains(inner, closeTag) {
		// Two tags on one line: a mention, not a promise.
		return "", false
	}
	return inner, true
}

// normalize collapses runs of whitespace to one space and trims the ends.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// fenceLine is the opening line of a fenced code block: its character and
// how many of them.
type fenceLine struct {
	char byte
	n    int
}

// opensFence reports whether line opens a fenced code block, as CommonMark
// has it: at most three spaces, then three or more backticks or tildes (a
// backtick fence's info string may not hold a backtick).
func opensFence(line string) (fenceLine, bool) {
	if indentWidth(line) > 3 {
		return fenceLine{}, false
	}
	t := strings.TrimLeft(line, " \t")
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return fenceLine{}, false
	}
	c := t[0]
	n := run(t, c)
	if n < 3 {
		return fenceLine{}, false
	}
	if c == '`' && strings.IndexByte(t[n:], '`') >= 0 {
		return fenceLine{}, false
	}
	return fenceLine{char: c, n: n}, true
}

// closes reports whether line closes the fenced block f opened: at most
// three spaces, at least as many of the same character, then only spaces.
func closes(line string, f fenceLine) bool {
	if indentWidth(line) > 3 {
		return false
	}
	t := strings.TrimLeft(line, " \t")
	n := run(t, f.char)
	return n >= f.n && strings.TrimSpace(t[n:]) == ""
}

// run counts the leading bytes of s equal to c.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// indentWidth is the column of line's first character that is not a space
// or tab, with tab stops every four columns.
func indentWidth(line string) int {
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
