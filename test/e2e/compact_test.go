//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// TestCompactionRestoresQueueContext: after `/compact` the model's context
// is a summary that knows nothing of the queue (the scripted summary says
// so); drover's SessionStart hook (source "compact") puts the session's
// state and next task back, and the model finishes the queue from there.
// PreCompact's output reaches the summary request as extra instructions.
//
// /compact needs a prompt of its own and then another prompt to see its
// effect in the same process, so the CLI runs with stream-json input and
// gets the prompts one at a time.
func TestCompactionRestoresQueueContext(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "compact.yaml"))
	sid := newSessionID(t)
	cli := p.startStream("--session-id", sid)

	cli.send("hello there")
	cli.send("and again")
	// The queue starts between two turns, as a user would start it from
	// another terminal: no Stop loop before the compaction.
	task := p.addTasks(sid, "the task to remember across the compaction")[0]
	p.drover("start", "--session", sid)

	before := len(p.model.Messages())
	cli.send("/compact")
	compactReqs := since(p.model.Messages(), before)
	if len(compactReqs) != 1 || compactReqs[0].RuleName != "summary" {
		t.Fatalf("/compact sent %d model requests (%v), want one summary request", len(compactReqs), ruleNames(compactReqs))
	}
	// PreCompact printed drover's context; the CLI passed it on as
	// compaction instructions.
	for _, w := range []string{"[drover] Active session: " + sid, "State: on | Iteration: 0", "Next task: " + task} {
		if !strings.Contains(compactReqs[0].LastUserText, w) {
			t.Errorf("the summary request lacks PreCompact's %q:\n%s", w, compactReqs[0].LastUserText)
		}
	}

	before = len(p.model.Messages())
	final := cli.send("go on")
	if code := cli.close(); code != 0 {
		t.Errorf("the CLI exited %d, want 0", code)
	}
	if !strings.Contains(final, `"result":"Review clean: nothing to add."`) {
		t.Errorf("the last result is not the clean review: %s", final)
	}
	reqs := since(p.model.Messages(), before)
	if len(reqs) == 0 {
		t.Fatal("no model request after the compaction")
	}
	after := reqs[0]
	all := allText(after)
	if !strings.Contains(all, "SUMMARY: the user greeted twice") {
		t.Fatalf("the first request after /compact does not carry the summary:\n%s", all)
	}
	if strings.Contains(all, "hello-tool-ran") {
		t.Errorf("the first request after /compact still holds the compacted turns:\n%s", all)
	}
	ctx, ok := sessionStartContext(after)
	if !ok {
		t.Fatalf("the first request after /compact has no SessionStart context; its messages:\n%s", describe(after))
	}
	for _, w := range []string{
		"[drover] Active session: " + sid,
		"State: on | Iteration: 0",
		"Tasks: 1 pending, 0 done, 0 stuck",
		"# drover Work Loop",
		"Next task: " + task,
	} {
		if !strings.Contains(ctx, w) {
			t.Errorf("the SessionStart(compact) context lacks %q:\n%s", w, ctx)
		}
	}
	if got := kinds(blockReasons(reqs, sid)); len(got) != 1 || got[0] != "review" {
		t.Errorf("block reasons after the compaction %q, want only the review", got)
	}
	p.wantSession(sid, "off", 2, 0, 1, 0)
	if _, err := os.Stat(doneName(task)); err != nil {
		t.Errorf("the task was not finished: %v", err)
	}
}

// sessionStartContext returns the text of the message through which the
// CLI handed SessionStart's additionalContext to the model.
func sessionStartContext(r fakemodel.Request) (string, bool) {
	for _, m := range r.Messages {
		if i := strings.Index(m.Text, "SessionStart hook additional context: "); i >= 0 {
			return m.Text[i:], true
		}
	}
	return "", false
}

func allText(r fakemodel.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func describe(r fakemodel.Request) string {
	var b strings.Builder
	for i, m := range r.Messages {
		fmt.Fprintf(&b, "[%d] %s: %.300q\n", i, m.Role, m.Text)
	}
	return b.String()
}

func ruleNames(reqs []fakemodel.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.RuleName
	}
	return out
}

// streamCLI is one `claude --print --input-format stream-json` process that
// takes prompts one at a time: the way to give one process several turns,
// as an interactive session has.
type streamCLI struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	cancel context.CancelFunc
	stderr lockedBuffer
	closed bool
}

// lockedBuffer collects the CLI's stderr, which exec writes from its own
// goroutine while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startStream starts the CLI in the project with drover's plugin and
// args; it is killed (with everything it started) when the test ends.
func (p *queueProject) startStream(args ...string) *streamCLI {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), cliTimeout)
	full := append([]string{
		"--print", "--plugin-dir", filepath.Join(moduleRoot, "plugin"), "--dangerously-skip-permissions",
		"--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
	}, args...)
	cmd := exec.CommandContext(ctx, p.cliBin, full...)
	cmd.Dir = p.root
	cmd.Env = claudecli.Environ(os.Environ(), p.home, p.model.URL(), p.env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	s := &streamCLI{t: p.t, cmd: cmd, lines: make(chan string, 1024), cancel: cancel}
	cmd.Stderr = &s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting claude: %v", err)
	}
	s.stdin = stdin
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	p.t.Cleanup(func() { s.close() })
	return s
}

// send writes one user prompt and waits for the CLI's result line for it,
// which it returns. Everything the CLI printed meanwhile is logged.
func (s *streamCLI) send(prompt string) string {
	s.t.Helper()
	msg, err := json.Marshal(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": []map[string]string{{"type": "text", "text": prompt}}},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.stdin.Write(append(msg, '\n')); err != nil {
		s.t.Fatalf("sending %q to claude: %v", prompt, err)
	}
	timeout := time.NewTimer(cliTimeout)
	defer timeout.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("claude exited before answering %q; stderr:\n%s", prompt, s.stderr.String())
			}
			s.t.Logf("claude (%q): %.400s", prompt, line)
			var head struct {
				Type    string `json:"type"`
				IsError bool   `json:"is_error"`
			}
			if json.Unmarshal([]byte(line), &head) == nil && head.Type == "result" {
				if head.IsError {
					s.t.Errorf("claude's result for %q is an error: %s", prompt, line)
				}
				return line
			}
		case <-timeout.C:
			s.t.Fatalf("no result from claude for %q within %s", prompt, cliTimeout)
		}
	}
}

// close ends the input, waits for the CLI to exit and returns its exit
// code; whatever it left running is killed.
func (s *streamCLI) close() int {
	if s.closed {
		return s.cmd.ProcessState.ExitCode()
	}
	s.closed = true
	_ = s.stdin.Close()
	for range s.lines {
	}
	err := s.cmd.Wait()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cancel()
	if err != nil {
		s.t.Logf("claude: %v; stderr:\n%s", err, s.stderr.String())
	}
	return s.cmd.ProcessState.ExitCode()
}
