// Package argsplit splits a command-line string the way a POSIX shell
// splits words, without running a shell: slash commands hand drover their
// arguments as one string ($ARGUMENTS), and `/drover:loop "fix it"
// --max-iterations 5` must mean what it would mean in a terminal.
package argsplit

import (
	"errors"
	"strings"
)

// ErrUnterminated is returned for a quote that is never closed.
var ErrUnterminated = errors.New("argsplit: unterminated quote")

// Split returns the words of s: runs of non-blank characters, where single
// quotes keep everything literally, double quotes keep everything but \"
// and \\, and a backslash outside quotes escapes the next character.
// Nothing is expanded ($VAR, globs and backquotes are plain text).
func Split(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, ErrUnterminated
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, ErrUnterminated
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
