package convergence

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
)

type failurePatterns struct {
	strong, weak, skip *regexp.Regexp
	traceback          *regexp.Regexp

	uuid, isoTime, clock, slashDate     *regexp.Regexp
	tempPath, hex0x, hexWord            *regexp.Regexp
	lineCol, pyLine, duration           *regexp.Regexp
	goroutine, port, pid, spaces, blank *regexp.Regexp
}

var failPatterns = sync.OnceValue(func() *failurePatterns {
	return &failurePatterns{
		// Lines that name a failure: a test, a compile error, a panic.
		strong: regexp.MustCompile(strings.Join([]string{
			`^\s*--- FAIL: `,          // go test
			`^FAILED \S`,              // pytest short summary
			`^(?:ERROR|FAILED) \S+::`, // pytest collection errors
			`^\s*● `,                  // jest
			`^\s*(?:FAIL|×|✗|✕)\s+\S.*(?:>|›)`, // vitest, bun
			`^\s*\(fail\) `,                        // bun
			`^---- \S+ stdout ----`,                // cargo test
			`panicked at`,                          // rust
			`^panic: `,                             // go
			`^\S+\.[A-Za-z]{1,5}:\d+:\d+: \S`,      // compilers: go, gcc, clang, eslint
			`^error(?:\[E\d+\])?: `,                // rustc
			`\berror TS\d+:`,                       // tsc
			`^\s*\d+\) \S`,                         // mocha "1) suite"
			`^Traceback \(most recent call last\)`, // python
		}, "|")),
		// Lines that say something went wrong, when no strong line does.
		weak: regexp.MustCompile(`(?i)\berror\b|\bexception\b|cannot find|not found|no such file|\bfail(?:ed|ure)?\b|assert|undefined|panic|fatal|denied|timed? ?out`),
		// Lines that only echo a status (test summaries are caught by
		// ParseTestSummary).
		skip:      regexp.MustCompile(`^(?:Exit code \d+|Error: Exit code \d+|FAIL|PASS|ok|exit status \d+|FAIL\s+\S+\s+\S+|=+.*(?:FAILURES|ERRORS|short test summary info).*=+)\s*$`),
		traceback: regexp.MustCompile(`^Traceback \(most recent call last\)`),

		uuid:      regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`),
		isoTime:   regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?`),
		clock:     regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`),
		slashDate: regexp.MustCompile(`\b\d{4}/\d{2}/\d{2}\b`),
		tempPath:  regexp.MustCompile(`(?:/private)?/var/folders/[^\s'"()\[\]{},;]+|/(?:var/)?tmp/[^\s'"()\[\]{},;]+|[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\[^\s'"()\[\]{},;]+|\$TMPDIR/[^\s'"()\[\]{},;]+`),
		hex0x:     regexp.MustCompile(`0x[0-9a-fA-F]+`),
		hexWord:   regexp.MustCompile(`\b[0-9a-f]{7,}\b`),
		lineCol:   regexp.MustCompile(`(\.[A-Za-z][A-Za-z0-9]{0,9})(?::\d+)+\b`),
		pyLine:    regexp.MustCompile(`\bline \d+`),
		duration:  regexp.MustCompile(`\b(?:\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h))+\b`),
		goroutine: regexp.MustCompile(`\bgoroutine \d+`),
		port:      regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1?\]|0\.0\.0\.0):\d+`),
		pid:       regexp.MustCompile(`\b(pid|PID)[ =:]+\d+`),
		spaces:    regexp.MustCompile(`[ \t]+`),
		blank:     regexp.MustCompile(`\n{2,}`),
	}
})

// maxFailure bounds a FirstFailure excerpt.
const maxFailure = 500

// FirstFailure picks the line of a command's output that names its first
// failure (a failing test, a compile error, a panic, a Python exception), or
// failing that the first line that says something went wrong, and returns
// it with the next two non-blank lines, which usually carry the message.
// Status-only lines ("Exit code 1", "FAIL", "ok") are never picked. It
// returns "" when nothing looks like a failure.
func FirstFailure(output string) string {
	fp := failPatterns()
	ls := lines(output)
	pick := -1
	for i, l := range ls {
		if fp.strong.MatchString(l) {
			pick = i
			break
		}
	}
	if pick < 0 {
		for i, l := range ls {
			if fp.weak.MatchString(l) && !statusLine(fp, l) {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		return ""
	}
	if fp.traceback.MatchString(ls[pick]) {
		// The exception is the first unindented line after the frames.
		for j := pick + 1; j < len(ls); j++ {
			if l := ls[j]; l != "" && l[0] != ' ' && l[0] != '\t' {
				return clipFailure(l)
			}
		}
	}
	out := []string{strings.TrimSpace(ls[pick])}
	for j := pick + 1; j < len(ls) && len(out) < 3; j++ {
		l := strings.TrimSpace(ls[j])
		if l == "" || statusLine(fp, l) {
			continue
		}
		out = append(out, l)
	}
	return clipFailure(strings.Join(out, "\n"))
}

// statusLine reports lines that only give a status or counts ("Exit code
// 1", "FAIL", "3 passed, 1 failed in 0.2s"): they change as other tests get
// fixed, so they must not be part of a failure's identity.
func statusLine(fp *failurePatterns, l string) bool {
	l = strings.TrimSpace(l)
	if fp.skip.MatchString(l) {
		return true
	}
	_, counts := ParseTestSummary(l)
	return counts
}

func clipFailure(s string) string {
	if len(s) <= maxFailure {
		return s
	}
	cut := maxFailure
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a rune
		cut--
	}
	return s[:cut]
}

// NormalizeFailure rewrites a failure so that the same failure reads the
// same from one run to the next: terminal escapes, line and column numbers,
// temporary paths (including t.TempDir and go-build directories),
// durations, clock times and timestamps, UUIDs, hex addresses and long hex
// ids, goroutine ids, pids and local ports are replaced by placeholders, and
// blank space is collapsed. What the failure says is kept: test names,
// messages, expected and actual values, file names.
func NormalizeFailure(s string) string {
	fp := failPatterns()
	s = strings.Join(lines(s), "\n")
	s = fp.uuid.ReplaceAllString(s, "<uuid>")
	s = fp.isoTime.ReplaceAllString(s, "<time>")
	s = fp.slashDate.ReplaceAllString(s, "<date>")
	s = fp.clock.ReplaceAllString(s, "<time>")
	s = fp.tempPath.ReplaceAllString(s, "<tmp>")
	s = fp.port.ReplaceAllString(s, "$1:<port>")
	s = fp.hex0x.ReplaceAllString(s, "<hex>")
	s = fp.hexWord.ReplaceAllStringFunc(s, func(w string) string {
		if strings.ContainsAny(w, "0123456789") && strings.ContainsAny(w, "abcdef") {
			return "<hex>"
		}
		return w
	})
	s = fp.lineCol.ReplaceAllString(s, "$1")
	s = fp.pyLine.ReplaceAllString(s, "line <n>")
	s = fp.duration.ReplaceAllString(s, "<dur>")
	s = fp.goroutine.ReplaceAllString(s, "goroutine <n>")
	s = fp.pid.ReplaceAllString(s, "$1 <n>")
	s = fp.spaces.ReplaceAllString(s, " ")
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSpace(l)
	}
	s = fp.blank.ReplaceAllString(strings.Join(ls, "\n"), "\n")
	return strings.Trim(s, "\n")
}

// ErrorHash is a short hash of the normalized failure (see
// NormalizeFailure): the same failure at other line numbers, temp paths or
// timings hashes the same, a different failure differently. It is "" for
// an empty failure.
func ErrorHash(firstFailure string) string {
	n := NormalizeFailure(firstFailure)
	if n == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(n))
	return hex.EncodeToString(sum[:6])
}
