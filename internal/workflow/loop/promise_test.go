package loop

import (
	"strings"
	"testing"
)

func TestPromiseKept(t *testing.T) {
	tests := []struct {
		name    string
		message string
		phrase  string
		want    bool
	}{
		// Kept: the tag alone on its line.
		{"alone", "<promise>DONE</promise>", "DONE", true},
		{"alone after the work summary", "All tests pass and the parser handles unicode.\n\n<promise>DONE</promise>\n", "DONE", true},
		{"surrounding spaces on the line", "  <promise>DONE</promise> \t", "DONE", true},
		{"spaces inside the tag", "<promise>  DONE </promise>", "DONE", true},
		{"case folded", "<promise>done</promise>", "DONE", true},
		{"whitespace collapsed on both sides", "<promise>all   tests\tpass</promise>", " ALL TESTS  PASS ", true},
		{"unicode case folding", "<promise>été fini</promise>", "ÉTÉ FINI", true},
		{"CRLF line ends", "Finished.\r\n<promise>DONE</promise>\r\n", "DONE", true},
		{"promise in an earlier paragraph, text after it (peers §3.1)", "<promise>DONE</promise>\n\nSummary of the work:\n- lexer\n- parser\n", "DONE", true},
		{"after a closed fence", "```go\nfmt.Println(\"<promise>DONE</promise>\")\n```\n<promise>DONE</promise>", "DONE", true},
		{"after a closed tilde fence", "~~~\nx\n~~~\n<promise>DONE</promise>", "DONE", true},
		{"three-space indent is not code", "   <promise>DONE</promise>", "DONE", true},
		{"backtick in a backtick info string is not a fence", "``` a`b\n<promise>DONE</promise>", "DONE", true},
		{"seed 004 promise-match-03, tag on its own line", "The task is complete.\n<promise>DONE</promise>", "DONE", true},
		{"seed 004 e2e phrase with spaces", "<promise>ALL TESTS PASS</promise>", "ALL TESTS PASS", true},
		{"alone on its line after a negated line", "I must not write this yet:\n<promise>DONE</promise>", "DONE", true},

		// Kept: the tag inside a sentence (issue 12).
		{"seed 004 promise-match-03 as written: tag after a sentence", "The task is complete. <promise>DONE</promise>", "DONE", true},
		{"after a sentence, issue 12", "All tests pass. <promise>DONE</promise>", "DONE", true},
		{"after a colon", "All tests pass: <promise>DONE</promise>", "DONE", true},
		{"before a sentence", "<promise>DONE</promise> All tests pass.", "DONE", true},
		{"inside a sentence with a full stop after it", "The work is finished <promise>DONE</promise>.", "DONE", true},
		{"a negation in an earlier sentence of the line", "Nothing is left that does not pass. <promise>DONE</promise>", "DONE", true},
		{"after in the sentence before the tag reports work done", "All tests pass after the fix: <promise>DONE</promise>", "DONE", true},
		{"bold", "**<promise>DONE</promise>**", "DONE", true},
		{"list item", "- <promise>DONE</promise>", "DONE", true},
		{"two tags on one line", "<promise>DONE</promise> <promise>DONE</promise>", "DONE", true},
		{"a code span elsewhere on the line", "Ran `go test ./...` and it passes. <promise>DONE</promise>", "DONE", true},
		{"an unclosed backtick is literal", "A lone ` backtick. <promise>DONE</promise>", "DONE", true},
		{"an HTML comment elsewhere on the line", "Done. <!-- note --> <promise>DONE</promise>", "DONE", true},
		{"after a multi-line HTML comment closes", "<!-- notes\nstill a comment\n--> <promise>DONE</promise>", "DONE", true},
		{"quotation marks elsewhere on the line", "The \"parser\" works. <promise>DONE</promise>", "DONE", true},
		{"a line after a quotation and a blank line", "> The task was:\n\n<promise>DONE</promise>", "DONE", true},
		{"a list item ends the quotation's paragraph", "> Quoted.\n- <promise>DONE</promise>", "DONE", true},
		{"a heading ends the quotation's paragraph", "> Quoted.\n# Result\n<promise>DONE</promise>", "DONE", true},
		{"after an empty quotation line", ">\n<promise>DONE</promise>", "DONE", true},

		// Kept: the bare phrase, alone on its line and written exactly.
		{"bare phrase (claude-code#81827)", "DONE", "DONE", true},
		{"bare phrase on its own line", "Work finished.\nDONE\n", "DONE", true},
		{"bare phrase with spaces around it", "  DONE \t", "DONE", true},
		{"bare phrase, whitespace collapsed", "ALL  TESTS\tPASS", "ALL TESTS PASS", true},
		{"tag split over lines: its middle line is the bare phrase", "<promise>\nDONE\n</promise>", "DONE", true},

		// Not kept: negated or deferred in its sentence.
		{"negated (peers §3.1)", "I will not output <promise>DONE</promise> yet", "DONE", false},
		{"negated by a contraction", "I won't say <promise>DONE</promise> before the tests pass.", "DONE", false},
		{"negated by a typographic contraction", "I can’t write <promise>DONE</promise> now.", "DONE", false},
		{"never", "I never print <promise>DONE</promise> early.", "DONE", false},
		{"not yet", "Not yet: <promise>DONE</promise>", "DONE", false},
		{"no", "There is no <promise>DONE</promise> here.", "DONE", false},
		{"deferred by once", "I'll output <promise>DONE</promise> once the tests pass.", "DONE", false},
		{"deferred by until", "Holding <promise>DONE</promise> until CI is green.", "DONE", false},
		{"deferred by if", "If everything passes, write <promise>DONE</promise>.", "DONE", false},
		{"deferred by after, after the tag", "<promise>DONE</promise> comes after the tests pass.", "DONE", false},
		{"mentioned in passing", "When finished I will print <promise>DONE</promise>.", "DONE", false},

		// Not kept: quoted.
		{"quotation", "> <promise>DONE</promise>", "DONE", false},
		{"indented quotation", "   > <promise>DONE</promise>", "DONE", false},
		{"quotation without a space", "><promise>DONE</promise>", "DONE", false},
		{"negated on the line before, quoted", "I must not write this yet:\n> <promise>DONE</promise>", "DONE", false},
		{"a line right after a quotation continues it", "> The instructions say:\n<promise>DONE</promise>", "DONE", false},
		{"a sentence right after a quotation continues it", "> Quoted.\nAll done. <promise>DONE</promise>", "DONE", false},
		{"in quotation marks", "Say \"<promise>DONE</promise>\" to finish.", "DONE", false},
		{"inside a quoted sentence", "He wrote \"all done <promise>DONE</promise> now\"", "DONE", false},
		{"in typographic quotation marks", "The line “<promise>DONE</promise>” ends it.", "DONE", false},
		{"in single quotes", "The line '<promise>DONE</promise>' ends it.", "DONE", false},
		{"bare phrase quoted", "> DONE", "DONE", false},

		// Not kept: code.
		{"inline code", "`<promise>DONE</promise>`", "DONE", false},
		{"inline code inside a sentence", "Write `<promise>DONE</promise>` at the end.", "DONE", false},
		{"double-backtick code span", "Use ``a ` <promise>DONE</promise>`` here.", "DONE", false},
		{"fenced code block", "Example:\n```\n<promise>DONE</promise>\n```\n", "DONE", false},
		{"fenced code block with an info string", "```text\n<promise>DONE</promise>\n```", "DONE", false},
		{"tilde fence", "~~~\n<promise>DONE</promise>\n~~~", "DONE", false},
		{"indented fence", "   ```\n<promise>DONE</promise>\n   ```", "DONE", false},
		{"unclosed fence", "```\n<promise>DONE</promise>\n", "DONE", false},
		{"a shorter run does not close a fence", "````\n```\n<promise>DONE</promise>\n````", "DONE", false},
		{"the other character does not close a fence", "~~~\n```\n<promise>DONE</promise>\n~~~", "DONE", false},
		{"indented code block", "Example:\n\n    <promise>DONE</promise>\n", "DONE", false},
		{"tab-indented code block", "\t<promise>DONE</promise>", "DONE", false},
		{"fenced inside a sentence", "```\nAll done. <promise>DONE</promise>\n```", "DONE", false},
		{"bare phrase in a fence", "```\nDONE\n```", "DONE", false},
		{"bare phrase in inline code", "`DONE`", "DONE", false},

		// Not kept: HTML comments.
		{"in an HTML comment", "<!-- <promise>DONE</promise> -->", "DONE", false},
		{"in a multi-line HTML comment", "<!--\n<promise>DONE</promise>\n-->", "DONE", false},
		{"in an HTML comment opened on an earlier line", "Notes <!-- for later\nAll done. <promise>DONE</promise>\n-->", "DONE", false},
		{"in an HTML comment never closed", "<!-- draft\n<promise>DONE</promise>", "DONE", false},
		{"bare phrase in a multi-line comment", "<!--\nDONE\n-->", "DONE", false},

		// Not kept: not the phrase, or not a well-formed tag.
		{"bare phrase in a sentence", "I am DONE", "DONE", false},
		{"bare phrase in another case", "Done", "DONE", false},
		{"bare phrase with a full stop", "DONE.", "DONE", false},
		{"bare phrase emphasized", "**DONE**", "DONE", false},
		{"other phrase", "<promise>NOT DONE</promise>", "DONE", false},
		{"phrase is a prefix", "<promise>DONE SOON</promise>", "DONE", false},
		{"nested tags", "<promise><promise>DONE</promise></promise>", "DONE", false},
		{"unclosed tag", "<promise>DONE", "DONE", false},
		{"upper-case tag", "<PROMISE>DONE</PROMISE>", "DONE", false},
		{"empty tag and empty phrase", "<promise></promise>", "", false},
		{"blank phrase", "<promise> </promise>", "  ", false},
		{"empty message (a turn that ended on a tool call)", "", "DONE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PromiseKept(tt.message, tt.phrase); got != tt.want {
				t.Errorf("PromiseKept(%q, %q) = %v, want %v", tt.message, tt.phrase, got, tt.want)
			}
		})
	}
}

// mentioned reports what PromiseKept promises at the least: some line of
// message holds the tagged phrase, or is the bare phrase.
func mentioned(message, phrase string) bool {
	want := normalize(phrase)
	if want == "" {
		return false
	}
	for _, line := range strings.Split(message, "\n") {
		if normalize(line) == want {
			return true
		}
		for rest := line; ; {
			_, after, ok := strings.Cut(rest, openTag)
			if !ok {
				break
			}
			inner, _, ok := strings.Cut(after, closeTag)
			if ok && strings.EqualFold(normalize(inner), want) {
				return true
			}
			rest = after
		}
	}
	return false
}

func FuzzPromiseKept(f *testing.F) {
	f.Add("<promise>DONE</promise>", "DONE")
	f.Add("The task is complete. <promise>DONE</promise>", "DONE")
	f.Add("I will not output <promise>DONE</promise> yet", "DONE")
	f.Add("```\n<promise>DONE</promise>\n```\n<promise>done</promise>", "Done")
	f.Add("> <promise>DONE</promise>", "DONE")
	f.Add("    <promise>ALL TESTS PASS</promise>", "all tests pass")
	f.Add("~~~~\n~~~\n<promise>x</promise>\n~~~~\r\n<promise> x </promise>", "X")
	f.Add("> quoted\nAll done. <promise>DONE</promise>", "DONE")
	f.Add("<!-- a\n<promise>DONE</promise>\n--> `x` <promise>DONE</promise>", "DONE")
	f.Add("DONE", "DONE")
	f.Fuzz(func(t *testing.T, message, phrase string) {
		kept := PromiseKept(message, phrase)
		if kept && !mentioned(message, phrase) {
			t.Fatalf("kept, but no line of %q holds <promise>%s</promise> or is the phrase", message, phrase)
		}
		if !kept {
			return
		}
		// Text after a kept promise cannot take it back.
		if !PromiseKept(message+"\n\nmore words\n", phrase) {
			t.Fatalf("appending text un-kept the promise in %q", message)
		}
		// Quoted line by line, nothing is kept.
		lines := strings.Split(message, "\n")
		for i, l := range lines {
			lines[i] = "> " + l
		}
		if PromiseKept(strings.Join(lines, "\n"), phrase) {
			t.Fatalf("a quotation of %q kept the promise", message)
		}
		// Inside a fence longer than any backtick run in it, nothing is
		// kept.
		longest := 0
		for i := 0; i < len(message); {
			n := run(message[i:], '`')
			longest = max(longest, n)
			i += max(n, 1)
		}
		fence := strings.Repeat("`", max(3, longest+1))
		if PromiseKept(fence+"\n"+message+"\n"+fence, phrase) {
			t.Fatalf("a fenced copy of %q kept the promise", message)
		}
	})
}
