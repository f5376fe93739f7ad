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
		// Kept.
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

		// Not kept.
		{"seed 004 promise-match-03 as written: tag after a sentence", "The task is complete. <promise>DONE</promise>", "DONE", false},
		{"bare phrase without a tag (claude-code#81827)", "DONE", "DONE", false},
		{"bare phrase on its own line", "Work finished.\nDONE\n", "DONE", false},
		{"negated (peers §3.1)", "I will not output <promise>DONE</promise> yet", "DONE", false},
		{"negated on the line before", "I must not write this yet:\n> <promise>DONE</promise>", "DONE", false},
		{"mentioned in passing", "When finished I will print <promise>DONE</promise>.", "DONE", false},
		{"inline code", "`<promise>DONE</promise>`", "DONE", false},
		{"bold", "**<promise>DONE</promise>**", "DONE", false},
		{"list item", "- <promise>DONE</promise>", "DONE", false},
		{"quotation", "> <promise>DONE</promise>", "DONE", false},
		{"indented quotation", "   > <promise>DONE</promise>", "DONE", false},
		{"quotation without a space", "><promise>DONE</promise>", "DONE", false},
		{"fenced code block", "Example:\n```\n<promise>DONE</promise>\n```\n", "DONE", false},
		{"fenced code block with an info string", "```text\n<promise>DONE</promise>\n```", "DONE", false},
		{"tilde fence", "~~~\n<promise>DONE</promise>\n~~~", "DONE", false},
		{"indented fence", "   ```\n<promise>DONE</promise>\n   ```", "DONE", false},
		{"unclosed fence", "```\n<promise>DONE</promise>\n", "DONE", false},
		{"a shorter run does not close a fence", "````\n```\n<promise>DONE</promise>\n````", "DONE", false},
		{"the other character does not close a fence", "~~~\n```\n<promise>DONE</promise>\n~~~", "DONE", false},
		{"indented code block", "Example:\n\n    <promise>DONE</promise>\n", "DONE", false},
		{"tab-indented code block", "\t<promise>DONE</promise>", "DONE", false},
		{"other phrase", "<promise>NOT DONE</promise>", "DONE", false},
		{"phrase is a prefix", "<promise>DONE SOON</promise>", "DONE", false},
		{"two tags on one line", "<promise>DONE</promise> <promise>DONE</promise>", "DONE", false},
		{"nested tags", "<promise><promise>DONE</promise></promise>", "DONE", false},
		{"unclosed tag", "<promise>DONE", "DONE", false},
		{"upper-case tag", "<PROMISE>DONE</PROMISE>", "DONE", false},
		{"empty tag and empty phrase", "<promise></promise>", "", false},
		{"blank phrase", "<promise> </promise>", "  ", false},
		{"empty message (a turn that ended on a tool call)", "", "DONE", false},
		{"tag split over lines", "<promise>\nDONE\n</promise>", "DONE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PromiseKept(tt.message, tt.phrase); got != tt.want {
				t.Errorf("PromiseKept(%q, %q) = %v, want %v", tt.message, tt.phrase, got, tt.want)
			}
		})
	}
}

// ownLine reports what PromiseKept promises at the least: some line of
// message is the tagged phrase and nothing else.
func ownLine(message, phrase string) bool {
	want := normalize(phrase)
	for _, line := range strings.Split(message, "\n") {
		l := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		inner, ok := strings.CutPrefix(l, openTag)
		if !ok {
			continue
		}
		inner, ok = strings.CutSuffix(inner, closeTag)
		if ok && want != "" && strings.EqualFold(normalize(inner), want) {
			return true
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
	f.Fuzz(func(t *testing.T, message, phrase string) {
		kept := PromiseKept(message, phrase)
		if kept && !ownLine(message, phrase) {
			t.Fatalf("kept, but no line of %q is <promise>%s</promise> alone", message, phrase)
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
