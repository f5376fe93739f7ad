package loop

import (
	"slices"
	"strings"
	"unicode"

	"github.com/drover-dev/drover/internal/mdfence"
)

// The promise tag, as the agent is told to write it.
const (
	openTag  = "<promise>"
	closeTag = "</promise>"
)

// PromiseKept reports whether message keeps the completion promise phrase.
// Phrases are compared with their runs of whitespace collapsed and their
// ends trimmed; an empty phrase is never kept.
//
// The tag form <promise>TEXT</promise> (TEXT equal to phrase, case
// folded) is explicit wherever it stands in the prose: alone on its line,
// or inside a sentence ("All tests pass. <promise>DONE</promise>", seed
// 004's promise-match-03). A tag inside a sentence does not count when
// the sentence, on its line, negates or defers it ("I will not output
// <promise>DONE</promise> yet", "... once the tests pass"), or when it
// stands in quotation marks.
//
// The bare phrase, untagged, counts only as a line of its own, written
// exactly (case and all): "DONE", not "Done." nor "I am DONE".
//
// Nothing counts, tagged or bare, in a fenced (``` or ~~~) or indented
// code block, an inline code span, a quotation ("> ..." and the lines that
// continue its paragraph), or an HTML comment, which may span lines. Every
// line is looked at, so a promise in an earlier paragraph counts even when
// text follows it.
func PromiseKept(message, phrase string) bool {
	want := normalize(phrase)
	if want == "" {
		return false
	}
	var (
		fence     mdfence.Fence
		inFence   bool
		inComment bool
		inQuote   bool // the last line was a quotation with text: a lazy continuation follows
	)
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if inComment {
			_, rest, closed := strings.Cut(line, "-->")
			if !closed {
				continue
			}
			inComment = false
			var kept bool
			if kept, inComment = proseKeeps(rest, want); kept {
				return true
			}
			continue
		}
		if inFence {
			inFence = !fence.Closes(line)
			continue
		}
		if strings.TrimSpace(line) == "" {
			inQuote = false
			continue
		}
		if f, ok := mdfence.Open(line); ok {
			fence, inFence, inQuote = f, true, false
			continue
		}
		if q, ok := quoted(line); ok {
			inQuote = strings.TrimSpace(q) != ""
			continue
		}
		if inQuote && !interrupts(line) {
			// CommonMark's lazy continuation: the line goes on with the
			// quotation's paragraph, and is part of the quotation.
			continue
		}
		inQuote = false
		if mdfence.IndentWidth(line) >= 4 {
			// An indented code block, or the continuation of something
			// that is not a line of its own either way.
			continue
		}
		if normalize(line) == want {
			return true // the bare phrase, alone on its line
		}
		var kept bool
		if kept, inComment = proseKeeps(line, want); kept {
			return true
		}
	}
	return false
}

// proseKeeps reports whether a line of prose keeps the promise want, and
// whether an HTML comment opened on it is still open at its end.
func proseKeeps(line, want string) (kept, commentOpen bool) {
	text, commentOpen := stripInline(line)
	if inner, ok := promiseText(text); ok {
		// The tag alone on its line: the form the agent is asked for.
		return strings.EqualFold(normalize(inner), want), commentOpen
	}
	for i := 0; ; {
		j := strings.Index(text[i:], openTag)
		if j < 0 {
			return false, commentOpen
		}
		start := i + j
		from := start + len(openTag)
		k := strings.Index(text[from:], closeTag)
		if k < 0 {
			return false, commentOpen
		}
		inner := text[from : from+k]
		if strings.Contains(inner, openTag) {
			// An open tag that is never closed: look at the one inside.
			i = from
			continue
		}
		end := from + k + len(closeTag)
		if strings.EqualFold(normalize(inner), want) && standsAsPromise(text[:start], text[end:]) {
			return true, commentOpen
		}
		i = end
	}
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
		// Two tags on one line: not the tag alone; each is judged as a
		// tag inside a sentence.
		return "", false
	}
	return inner, true
}

// standsAsPromise reports whether a tag between before and after (the rest
// of its line) is said, not mentioned: it is not in quotation marks, and
// its sentence neither negates nor defers it.
func standsAsPromise(before, after string) bool {
	b := strings.TrimRightFunc(before, unicode.IsSpace)
	a := strings.TrimLeftFunc(after, unicode.IsSpace)
	if strings.HasSuffix(b, openTag) || strings.HasPrefix(a, closeTag) {
		return false // a tag inside another: nested tags are a mention
	}
	if strings.Count(before, `"`)%2 == 1 || strings.Count(before, "“") > strings.Count(before, "”") {
		return false // inside a quotation
	}
	for _, q := range [][2]string{{"'", "'"}, {"‘", "’"}} {
		if strings.HasSuffix(before, q[0]) && strings.HasPrefix(after, q[1]) {
			return false
		}
	}
	prev, next := wordsOf(lastSentence(before)), wordsOf(firstSentence(after))
	for _, w := range append(slices.Clip(prev), next...) {
		if negation(w) || deferral(w) {
			return false
		}
	}
	if len(prev) > 0 && prev[len(prev)-1] == "no" {
		return false // "no <promise>DONE</promise> here"
	}
	// After the tag, "after" defers it ("<promise>DONE</promise> after
	// the tests pass"); before it, it reports work done ("All tests pass
	// after the fix: <promise>DONE</promise>").
	return !slices.Contains(next, "after")
}

// deferral reports whether w, in the tag's sentence, makes it a promise
// for later: "I will output <promise>DONE</promise> once the tests pass",
// "When finished I will print <promise>DONE</promise>".
func deferral(w string) bool {
	switch w {
	case "yet", "until", "till", "unless", "if", "when", "whenever", "once", "before", "later", "eventually":
		return true
	}
	return false
}

// negation reports whether w denies: not, never, cannot, nor, or a
// contraction ending in n't (don't, won't, isn't, ...).
func negation(w string) bool {
	switch w {
	case "not", "never", "cannot", "nor":
		return true
	}
	return strings.HasSuffix(w, "n't")
}

// wordsOf splits s into lower-case words of letters and apostrophes (a
// typographic apostrophe becomes ').
func wordsOf(s string) []string {
	s = strings.ReplaceAll(strings.ToLower(s), "’", "'")
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
}

// lastSentence returns the end of s after its last sentence break (., !
// or ? then a space).
func lastSentence(s string) string {
	for i := len(s) - 1; i > 0; i-- {
		if unicode.IsSpace(rune(s[i])) && strings.ContainsRune(".!?", rune(s[i-1])) {
			return s[i:]
		}
	}
	return s
}

// firstSentence returns the start of s up to its first sentence break
// (., ! or ? then a space or the end).
func firstSentence(s string) string {
	for i := 0; i < len(s); i++ {
		if strings.ContainsRune(".!?", rune(s[i])) && (i+1 == len(s) || unicode.IsSpace(rune(s[i+1]))) {
			return s[:i]
		}
	}
	return s
}

// stripInline returns line with its code spans and HTML comments replaced
// by a space each, and whether a comment opened on the line is still open
// at its end. A backtick run with no closing run of the same length is
// literal text, as in CommonMark.
func stripInline(line string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(line); {
		switch {
		case line[i] == '`':
			n := run(line[i:], '`')
			if end := closingRun(line[i+n:], n); end >= 0 {
				b.WriteByte(' ')
				i += n + end + n
				continue
			}
			b.WriteString(line[i : i+n])
			i += n
		case strings.HasPrefix(line[i:], "<!--"):
			end := strings.Index(line[i+4:], "-->")
			if end < 0 {
				return b.String(), true
			}
			b.WriteByte(' ')
			i += 4 + end + 3
		default:
			b.WriteByte(line[i])
			i++
		}
	}
	return b.String(), false
}

// closingRun returns the index in s of the first run of exactly n
// backticks, or -1.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := run(s[i:], '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// quoted returns the text after a block quotation's marker: at most three
// spaces, then >.
func quoted(line string) (string, bool) {
	if mdfence.IndentWidth(line) > 3 {
		return "", false
	}
	return strings.CutPrefix(strings.TrimLeft(line, " \t"), ">")
}

// interrupts reports whether line starts a block that ends a paragraph,
// and so a quotation's lazy continuation: an ATX heading, a thematic
// break, or a bullet list item.
func interrupts(line string) bool {
	if mdfence.IndentWidth(line) > 3 {
		return false
	}
	t := strings.TrimLeft(line, " \t")
	if strings.HasPrefix(t, "#") {
		n := run(t, '#')
		return n <= 6 && (n == len(t) || t[n] == ' ' || t[n] == '\t')
	}
	if len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && (t[1] == ' ' || t[1] == '\t') {
		return true
	}
	compact := strings.Join(strings.Fields(t), "")
	return len(compact) >= 3 && (run(compact, '-') == len(compact) || run(compact, '*') == len(compact) || run(compact, '_') == len(compact))
}

// normalize collapses runs of whitespace to one space and trims the ends.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// run counts the leading bytes of s equal to c.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}
