package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs `make demo`'s program as a newcomer would see it, so the
// demo cannot rot unnoticed: it needs the pinned CLI like the e2e tests, and
// fails rather than skips when the CLI is missing (only -short skips it).
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the demo, which runs the real Claude Code CLI")
	}
	var out bytes.Buffer
	if err := run(t.Context(), &out, false); err != nil {
		t.Fatalf("demo: %v\noutput so far:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"1. Queue two tasks from the terminal",
		"2. In Claude Code: /drover:do with a third task",
		"3. What happened, turn by turn",
		"4. The result",
		"Hello, drover!",
		"Goodbye, and thanks for the commits.",
		"reviewed before it may stop",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q\n%s", want, got)
		}
	}
	// Three tasks worked means three task commits in the printed git log,
	// and the status shows the queue ended (state off, nothing pending).
	log := got[strings.Index(got, "$ git log --oneline"):]
	log = log[:strings.Index(log, "$ cat CHANGES.md")]
	if n := strings.Count(strings.TrimSpace(log), "\n"); n < 3 {
		t.Errorf("git log in the demo shows %d commits after the first, want at least 3:\n%s", n, log)
	}
	status := got[strings.Index(got, "$ drover status"):strings.Index(got, "$ git log --oneline")]
	// WORKFLOW STATE HEALTH ITERATION PENDING DONE STUCK: a queue, off,
	// idle (or ended, once the CLI's SessionEnd came), 0 pending, 3 done,
	// 0 stuck.
	if !regexp.MustCompile(`queue\s+off\s+(idle|ended)\s+\d+\s+0\s+3\s+0\s`).MatchString(status) {
		t.Errorf("drover status in the demo does not show the queue off with 3 done:\n%s", status)
	}
}
