//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// denialMarks are what the CLI (2.1.197) puts in place of a slash command's
// prompt when a shell block does not go through, whether its permission
// check refused the block or the block exited non-zero: the error is shown
// to the user as <local-command-stderr> and the model is never asked.
var denialMarks = []string{"permission check failed", "requires approval", "local-command-stderr"}

// permRun is what one default-mode run of a slash command produced: the
// CLI's stream-json events and the model requests it sent.
type permRun struct {
	res      claudecli.Result
	mode     string
	denials  int
	userText []string
	reqs     []fakemodel.Request
}

// claudeDefaultMode runs `claude --print` with the plugin in pluginDir in
// the default permission mode: unlike every other e2e test, without
// --dangerously-skip-permissions, so that a shell block of a slash command
// runs only if its allowed-tools admit it.
func (p *queueProject) claudeDefaultMode(pluginDir string, args ...string) permRun {
	p.t.Helper()
	before := len(p.model.Messages())
	res, err := claudecli.Run{
		Bin:       p.cliBin,
		Dir:       p.root,
		Home:      p.home,
		BaseURL:   p.model.URL(),
		PluginDir: pluginDir,
		Args:      append([]string{"--verbose", "--output-format", "stream-json"}, args...),
		// IS_SANDBOX, which the harness sets so that
		// --dangerously-skip-permissions may run as root, is off: the CLI
		// runs as a user's would.
		Env:     append(slices.Clone(p.env), "IS_SANDBOX=0"),
		Timeout: cliTimeout,
	}.Exec(p.t.Context())
	p.t.Logf("claude %q: exit %d after %s\nstdout:\n%s\nstderr:\n%s", args, res.ExitCode, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	if err != nil {
		p.t.Fatal(err)
	}
	run := permRun{res: res, reqs: since(p.model.Messages(), before)}
	for line := range strings.Lines(res.Stdout) {
		var ev struct {
			Type              string            `json:"type"`
			PermissionMode    string            `json:"permissionMode"`
			PermissionDenials []json.RawMessage `json:"permission_denials"`
			Message           struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			p.t.Fatalf("stream-json line %q: %v", line, err)
		}
		switch ev.Type {
		case "system":
			if ev.PermissionMode != "" {
				run.mode = ev.PermissionMode
			}
		case "user":
			run.userText = append(run.userText, string(ev.Message.Content))
		case "result":
			run.denials += len(ev.PermissionDenials)
		}
	}
	return run
}

// commandRequest returns the model request that carried the expanded
// prompt of slash command name, or false if the model never saw it.
func (r permRun) commandRequest(name string) (fakemodel.Request, bool) {
	for _, q := range r.reqs {
		if strings.Contains(q.LastUserText, "<command-name>/drover:"+name+"</command-name>") {
			return q, true
		}
	}
	return fakemodel.Request{}, false
}

// TestSlashCommandsRunWithoutPermissionPrompt runs every slash command of
// the plugin with the real CLI in the default permission mode, where the
// CLI checks a command's shell block against its allowed-tools and refuses
// (in --print mode: without asking the model at all) what they do not
// admit. Each command's prompt must reach the model with drover's own
// output in place of the block, and drover's state must show that the
// command ran; in /drover:status's turn the model's own `drover` Bash call
// must run too. A control command whose heredoc is followed by
// `2>&1 || true`, as the plugin's were, proves that this mode does refuse.
func TestSlashCommandsRunWithoutPermissionPrompt(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	p := newQueueProject(t, &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{
			// A command that turned a workflow on gets its first Stop
			// blocked; an API error ends the run there, since only the
			// command's own prompt matters here.
			Name: "end-at-block",
			When: fakemodel.Match{LastUserContains: "Stop hook feedback"},
			Answer: fakemodel.Answer{Error: &fakemodel.APIError{
				Status: 400, Type: "invalid_request_error", Message: "scripted end of run",
			}},
		},
		{
			// allowed-tools also admits the model's own drover calls in
			// the command's turn, such as the `drover plan` commands that
			// /drover:plan tells it to run.
			Name:  "model-runs-drover",
			When:  fakemodel.Match{LastIsToolResult: &no, LastUserContains: "<command-name>/drover:status</command-name>"},
			Times: 1,
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
				Name:  "Bash",
				Input: map[string]any{"command": "drover status --json", "description": "Show drover's state"},
			}}},
		},
		{
			Name:   "tool-ran",
			When:   fakemodel.Match{LastIsToolResult: &yes},
			Answer: fakemodel.Answer{Text: "OK."},
		},
		{
			Name:   "command",
			When:   fakemodel.Match{LastIsToolResult: &no, LastUserContains: "<command-name>/drover:"},
			Answer: fakemodel.Answer{Text: "OK."},
		},
	}})
	plugin := filepath.Join(moduleRoot, "plugin")
	sessions := filepath.Join(p.root, ".drover", "sessions")
	queueSID, doSID, loopSID := newSessionID(t), newSessionID(t), newSessionID(t)
	// Quotes, $, backquotes, a command substitution, shell operators and a
	// second line: what a heredoc must pass through unchanged.
	const nasty = `it's "quoted": keep $HOME, ` + "`date`" + ` and $(id) as typed; a && b || c > out
second line`

	cases := []struct {
		name string
		// session is the CLI's session flag; args follow the command name.
		session []string
		args    string
		// before prepares the project; it may be nil.
		before func(t *testing.T)
		// want are parts of drover's output the prompt must hold.
		want []string
		// blocked says that the command turns a workflow on, so that the
		// Stop after its answer is blocked.
		blocked bool
		// after checks drover's state after the run; it may be nil.
		after func(t *testing.T, run permRun)
	}{
		{
			name:    "status",
			session: []string{"--session-id", newSessionID(t)},
			want:    []string{"No drover state in " + p.root},
			after: func(t *testing.T, run permRun) {
				i := slices.IndexFunc(run.reqs, func(r fakemodel.Request) bool { return r.LastIsToolResult })
				if i < 0 {
					t.Fatal("the model's Bash call `drover status --json` sent no tool result back")
				}
				got := run.reqs[i].LastUserText
				var st statusJSON
				if err := json.Unmarshal([]byte(got), &st); err != nil || st.Project != p.root {
					t.Errorf("the model's `drover status --json` did not run without a prompt; its result:\n%s", got)
				}
			},
		},
		{
			name:    "templates",
			session: []string{"--session-id", newSessionID(t)},
			want:    []string{"[drover] Wrote ", "[drover] Edit the files in " + filepath.Join(p.root, ".drover", "templates")},
			after: func(t *testing.T, _ permRun) {
				if m, _ := filepath.Glob(filepath.Join(p.root, ".drover", "templates", "*")); len(m) == 0 {
					t.Error("/drover:templates wrote no file into .drover/templates")
				}
			},
		},
		{
			name:    "add",
			session: []string{"--session-id", queueSID},
			args:    nasty,
			want:    []string{"[drover] Added task " + filepath.Join(sessions, queueSID)},
			after: func(t *testing.T, _ permRun) {
				p.wantSession(queueSID, "off", 0, 1, 0, 0)
				tasks := pendingTasks(t, filepath.Join(sessions, queueSID))
				if len(tasks) != 1 || readFile(t, tasks[0]) != nasty+"\n" {
					t.Errorf("pending tasks %q, want one holding %q", tasks, nasty+"\n")
				}
			},
		},
		{
			name:    "start",
			session: []string{"--resume", queueSID},
			want:    []string{"[drover] Started session " + queueSID},
			blocked: true,
			after:   func(t *testing.T, _ permRun) { p.wantSession(queueSID, "on", 1, 1, 0, 0) },
		},
		{
			name:    "stop",
			session: []string{"--resume", queueSID},
			want:    []string{"[drover] Stopped session " + queueSID},
			after:   func(t *testing.T, _ permRun) { p.wantSession(queueSID, "off", 1, 1, 0, 0) },
		},
		{
			name:    "unstick",
			session: []string{"--resume", queueSID},
			before: func(t *testing.T) {
				// The agent gave up on the task.
				tasks := pendingTasks(t, filepath.Join(sessions, queueSID))
				if len(tasks) != 1 {
					t.Fatalf("pending tasks %q, want 1", tasks)
				}
				if err := os.Rename(tasks[0], stuckName(tasks[0])); err != nil {
					t.Fatal(err)
				}
				p.wantSession(queueSID, "off", 1, 0, 0, 1)
			},
			want:    []string{"[drover] Unstuck " + filepath.Join(sessions, queueSID), "[drover] Started session " + queueSID},
			blocked: true,
			after:   func(t *testing.T, _ permRun) { p.wantSession(queueSID, "on", 1, 1, 0, 0) },
		},
		{
			name:    "do",
			session: []string{"--session-id", doSID},
			args:    nasty,
			want:    []string{"[drover] Added task " + filepath.Join(sessions, doSID), "[drover] Started session " + doSID},
			blocked: true,
			after: func(t *testing.T, _ permRun) {
				p.wantSession(doSID, "on", 1, 1, 0, 0)
				tasks := pendingTasks(t, filepath.Join(sessions, doSID))
				if len(tasks) != 1 || readFile(t, tasks[0]) != nasty+"\n" {
					t.Errorf("pending tasks %q, want one holding %q", tasks, nasty+"\n")
				}
			},
		},
		{
			name:    "loop",
			session: []string{"--session-id", loopSID},
			args:    `"count to three; then say $DONE" --max-iterations 4 --completion-promise "ALL DONE"`,
			want: []string{
				"[drover] Started a loop in session " + loopSID + ": up to 4 iteration(s).",
				"## Task\n\ncount to three; then say $DONE",
			},
			blocked: true,
			after: func(t *testing.T, _ permRun) {
				if s := p.session(loopSID); s.Workflow != "loop" || s.State != "on" {
					t.Errorf("loop session: workflow %s, state %s; want loop, on", s.Workflow, s.State)
				}
			},
		},
		{
			name:    "cancel",
			session: []string{"--resume", loopSID},
			want:    []string{"[drover] Cancelled the loop of session " + loopSID},
			after: func(t *testing.T, _ permRun) {
				if s := p.session(loopSID); s.Workflow != "loop" || s.State != "off" {
					t.Errorf("loop session after /drover:cancel: workflow %s, state %s; want loop, off", s.Workflow, s.State)
				}
			},
		},
		{
			name:    "plan",
			session: []string{"--session-id", newSessionID(t)},
			args:    "new p1",
			want:    []string{"[drover] Started plan p1 in " + filepath.Join(p.root, ".drover", "plans", "p1"), "[drover] Plan p1: write the plan."},
			blocked: true,
			after: func(t *testing.T, _ permRun) {
				if _, err := os.Stat(filepath.Join(p.root, ".drover", "plans", "p1", "state.json")); err != nil {
					t.Errorf("/drover:plan new p1 made no plan: %v", err)
				}
			},
		},
		{
			// A drover error reaches the model too: the block's exit status
			// is the `true` after the heredoc's.
			name:    "plan",
			session: []string{"--session-id", newSessionID(t)},
			args:    "frobnicate",
			want:    []string{`drover: unknown command "frobnicate" for "drover plan"`},
		},
		{
			// The same for a one-line block, through its `|| true`.
			name:    "start",
			session: []string{"--session-id", newSessionID(t)},
			want:    []string{"no pending tasks in "},
		},
		{
			// The flags of drover note reach it through the heredoc as
			// typed: $HOME and $(id) stay text.
			name:    "note",
			session: []string{"--session-id", newSessionID(t)},
			args:    `--question "keep $HOME and $(id) as typed?" --doing 'item 1'`,
			want:    []string{"Pending question to the user: keep $HOME and $(id) as typed?", "item 1"},
		},
		{
			name:    "cleanup",
			session: []string{"--session-id", newSessionID(t)},
			args:    "30",
			want:    []string{"[drover] Deleted 0 session(s) older than 30 day(s)"},
		},
	}

	// Every command of the plugin is here, so that a new one is proved too.
	files, err := filepath.Glob(filepath.Join(plugin, "commands", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var have, tested []string
	for _, f := range files {
		have = append(have, strings.TrimSuffix(filepath.Base(f), ".md"))
	}
	for _, c := range cases {
		tested = append(tested, c.name)
	}
	slices.Sort(have)
	slices.Sort(tested)
	tested = slices.Compact(tested)
	if !slices.Equal(have, tested) {
		t.Fatalf("plugin commands %q, tested %q: give every command a case", have, tested)
	}

	for _, c := range cases {
		if t.Failed() {
			// Each case builds on the state the earlier ones left.
			return
		}
		if c.before != nil {
			c.before(t)
		}
		prompt := "/drover:" + c.name
		if c.args != "" {
			prompt += " " + c.args
		}
		run := p.claudeDefaultMode(plugin, append(slices.Clone(c.session), prompt)...)
		if run.mode != "default" {
			t.Errorf("/drover:%s ran in permission mode %q, want default", c.name, run.mode)
		}
		for _, u := range run.userText {
			if slices.ContainsFunc(denialMarks, func(m string) bool { return strings.Contains(u, m) }) {
				t.Errorf("/drover:%s: the CLI stopped at its shell block instead of asking the model: %s", c.name, u)
			}
		}
		if run.denials != 0 {
			t.Errorf("/drover:%s: the result lists %d permission denial(s)", c.name, run.denials)
		}
		req, ok := run.commandRequest(c.name)
		if !ok {
			t.Errorf("/drover:%s: the model never received the command's prompt", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(req.LastUserText, w) {
				t.Errorf("the /drover:%s prompt lacks drover's %q:\n%s", c.name, w, req.LastUserText)
			}
		}
		for _, bad := range []string{"```!", "!`drover", "DROVER_PROMPT_END", "DROVER_ARGS_END"} {
			if strings.Contains(req.LastUserText, bad) {
				t.Errorf("the /drover:%s prompt still holds its shell block (%q):\n%s", c.name, bad, req.LastUserText)
			}
		}
		wantCode, wantOut := 0, "OK."
		if c.blocked {
			wantCode, wantOut = 1, "API Error: 400"
		}
		if run.res.ExitCode != wantCode || !strings.Contains(run.res.Stdout, wantOut) {
			t.Errorf("/drover:%s: exit %d, want %d with %q on stdout", c.name, run.res.ExitCode, wantCode, wantOut)
		}
		if c.after != nil {
			c.after(t, run)
		}
	}

	// The control: the same CLI and mode refuse a drover command whose
	// heredoc is followed by `2>&1 || true`, and the model never hears of it.
	denied, err := filepath.Abs(filepath.Join("testdata", "denied-plugin"))
	if err != nil {
		t.Fatal(err)
	}
	run := p.claudeDefaultMode(denied, "--session-id", newSessionID(t), "/denied:add a task")
	if run.mode != "default" {
		t.Errorf("the control ran in permission mode %q, want default", run.mode)
	}
	if len(run.reqs) != 0 {
		t.Errorf("the control's prompt reached the model (%d requests): its shell block was not refused", len(run.reqs))
	}
	if !slices.ContainsFunc(run.userText, func(u string) bool {
		return strings.Contains(u, "Shell command permission check failed") && strings.Contains(u, "cannot be statically analyzed")
	}) {
		t.Errorf("the CLI did not report refusing the control's shell block; it said %q", run.userText)
	}
}
