//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/test/fakemodel"
	"github.com/drover-dev/drover/test/othercli"
)

// agentCLI is what the end-to-end tests of the Codex CLI and the Gemini CLI
// as drover's agent need to know about each: how its model calls the
// shell. The scripted drover commands name no session: drover finds it
// (Codex's CODEX_THREAD_ID, the GEMINI_SESSION_ID the test exports).
type agentCLI struct {
	cli othercli.CLI
	// shellTool and cmdArg are the shell tool's name and its command
	// argument.
	shellTool, cmdArg string
}

var (
	codexAgent  = agentCLI{cli: othercli.Codex, shellTool: "exec_command", cmdArg: "cmd"}
	geminiAgent = agentCLI{cli: othercli.Gemini, shellTool: "run_shell_command", cmdArg: "command"}
	otherAgents = []agentCLI{codexAgent, geminiAgent}
)

// bin returns the pinned CLI, skips under -short, and fails with the
// install instruction when the CLI is missing.
func (a agentCLI) bin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skipping tests that run the real %s CLI", a.cli.Name)
	}
	bin, err := a.cli.Find()
	if err != nil {
		t.Fatalf("%v\n(run `go test -short` to skip the end-to-end tests)", err)
	}
	return bin
}

// shell is a tool call of the CLI's shell tool running cmd.
// Codex runs it in a non-login shell: a login shell's profile would reset
// PATH, and drover with it. The Gemini CLI refuses commands with command
// substitution, so scripts use parameter expansion instead.
func (a agentCLI) shell(cmd string) []fakemodel.ToolCall {
	input := map[string]any{a.cmdArg: cmd}
	if a.cli.Name == "codex" {
		input["login"] = false
	}
	return []fakemodel.ToolCall{{Name: a.shellTool, Input: input}}
}

// hookPromptRE is how Codex 0.169 hands a Stop hook's block reason to the
// model: a user message wrapping it in a hook_prompt element.
var hookPromptRE = regexp.MustCompile(`(?s)^<hook_prompt hook_run_id="[^"]*">(.*)</hook_prompt>$`)

// blockReasons returns the stop hook block reasons the model received in
// reqs, in order. Codex wraps each in <hook_prompt>; the Gemini CLI sends
// it as a plain user message, told from the run's prompt by coming after
// it (the prompt is the only content of the first request).
func (a agentCLI) blockReasons(reqs []fakemodel.Request) []string {
	var out []string
	for _, r := range reqs {
		if r.LastIsToolResult || r.JSONMode {
			continue
		}
		switch a.cli.Name {
		case "codex":
			if m := hookPromptRE.FindStringSubmatch(r.LastUserText); m != nil {
				out = append(out, m[1])
			}
		case "gemini":
			if len(r.Messages) > 1 {
				out = append(out, r.LastUserText)
			}
		}
	}
	return out
}

// newAgentProject sets up a project for sc with the CLI a as the agent,
// the way a user does: its scratch home configured for the fake model,
// `drover init --cli` run in the project and its files committed (so that
// drover's commit gate sees a clean tree), and the trust step init prints
// taken: for Codex, its config.toml lines appended to $CODEX_HOME/config.toml
// as printed; for the Gemini CLI, the folder trusted.
func newAgentProject(t *testing.T, a agentCLI, sc *fakemodel.Scenario) *queueProject {
	t.Helper()
	p := newProjectFor(t, a.bin(t), sc)
	var err error
	switch a.cli.Name {
	case "codex":
		p.env = append(p.env, "CODEX_HOME="+othercli.CodexHome(p.home))
		err = othercli.SetupCodex(p.home, p.model.ResponsesURL())
	case "gemini":
		err = othercli.SetupGemini(p.home)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := p.drover("init", "--cli", a.cli.Name)
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "drover init --cli "+a.cli.Name)
	switch a.cli.Name {
	case "codex":
		err = appendFile(filepath.Join(othercli.CodexHome(p.home), "config.toml"), codexTrustLines(t, out))
	case "gemini":
		if w := strconv.Quote(p.root) + `: "TRUST_FOLDER"`; !strings.Contains(out, w) {
			t.Errorf("drover init --cli gemini does not print the trust step %q:\n%s", w, out)
		}
		err = othercli.TrustGeminiFolder(p.home, p.root)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// codexTrustLines returns the config.toml lines `drover init --cli codex`
// printed for the user to append: from the project's trust table to the
// last hook's trusted_hash.
func codexTrustLines(t *testing.T, out string) string {
	t.Helper()
	start := strings.Index(out, "\n[projects.")
	end := strings.LastIndex(out, "trusted_hash = ")
	if start < 0 || end < start {
		t.Fatalf("drover init --cli codex printed no config.toml trust lines:\n%s", out)
	}
	line, _, _ := strings.Cut(out[end:], "\n")
	return out[start:end] + line + "\n"
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runAgent runs the CLI a headless in the project on prompt (in session
// sid, for the Gemini CLI; Codex picks its own) and returns what it printed.
func (p *queueProject) runAgent(a agentCLI, sid, prompt string) othercli.Result {
	p.t.Helper()
	args := othercli.CodexExec(prompt)
	env := slices.Clone(p.env)
	if a.cli.Name == "gemini" {
		// As drover init tells Gemini CLI users: the CLI gives its tools
		// no session id, so start it with one, exported for the commands.
		args = othercli.GeminiPrompt(prompt, sid)
		env = append(env, "GEMINI_SESSION_ID="+sid)
	}
	res, err := othercli.Run{
		CLI:     a.cli,
		Bin:     p.cliBin,
		Dir:     p.root,
		Home:    p.home,
		BaseURL: p.model.URL(),
		Args:    args,
		Env:     env,
		Timeout: cliTimeout,
	}.Exec(p.t.Context())
	p.t.Logf("%s %q: exit %d after %s\nstdout:\n%s\nstderr:\n%s", a.cli.Name, prompt, res.ExitCode, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

// agentSession returns the session the run used: the test's sid for the
// Gemini CLI, Codex's thread id (its requests' session-id header) for Codex.
func agentSession(t *testing.T, a agentCLI, sid string, reqs []fakemodel.Request) string {
	t.Helper()
	if a.cli.Name == "gemini" {
		return sid
	}
	if len(reqs) == 0 || reqs[0].SessionID == "" {
		t.Fatal("Codex sent no session-id")
	}
	return reqs[0].SessionID
}

// queueTexts are the tasks of the queue scenario; the second is one the
// scripted agent cannot finish.
var queueTexts = []string{
	"alpha: write the first line",
	"beta: STUCK rename the module (ask the user which name)",
	"gamma: write the third line",
}

// agentQueueScenario is queue.yaml's model for another CLI, with a stuck
// task: the agent queues three tasks and starts the queue with drover
// commands (a headless run has no slash commands); on each "Next
// task" it runs one shell command that either does the task (append it to
// work.log, append the work summary, commit, rename to .done.md) or, for a
// task marked STUCK, notes why and renames it to .stuck.md; the first
// review queues a task with `drover add`, the second is clean.
func agentQueueScenario(a agentCLI) *fakemodel.Scenario {
	no, yes := false, true
	return &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{Name: "start", When: fakemodel.Match{LastUserContains: "QUEUE-START", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Queueing the tasks.", ToolCalls: a.shell(
				"drover add '" + queueTexts[0] + "' && " +
					"drover add '" + queueTexts[1] + "' && " +
					"drover do '" + queueTexts[2] + "'")}},
		{Name: "finished", When: fakemodel.Match{LastUserMatches: `task-(finished|stuck) `, LastIsToolResult: &yes},
			Answer: fakemodel.Answer{Text: "Task handled; stopping for the next one."}},
		{Name: "review-added", When: fakemodel.Match{LastUserContains: "[drover] Added task", NotContains: "[drover] Started session", LastIsToolResult: &yes},
			Answer: fakemodel.Answer{Text: "Review found one issue and queued it."}},
		{Name: "work", When: fakemodel.Match{LastUserMatches: `Next task: (?P<task>\S+\.md)`},
			Answer: fakemodel.Answer{Text: "Working on {{task}}.", ToolCalls: a.shell(
				`t='{{task}}'; n=${t##*/}; n=${n%.md}; if grep -q STUCK "$t"; then ` +
					`printf '\nneeds a decision from the user\n' >> "$t" && mv "$t" "${t%.md}.stuck.md" && echo "task-stuck $n.md"; ` +
					`else cat "$t" >> work.log && ` +
					`printf '\n---\n## Work Summary\n- appended the task to work.log\n' >> "$t" && ` +
					`git add -A && git commit -q -m "work: $n" && ` +
					`mv "$t" "${t%.md}.done.md" && echo "task-finished $n.md"; fi`)}},
		{Name: "review-adds-task", When: fakemodel.Match{LastUserContains: "Spawn a review subagent", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Reviewing: work.log has no closing line.", ToolCalls: a.shell(
				"drover add 'review: work.log needs a closing line'")}},
		{Name: "review-clean", When: fakemodel.Match{LastUserContains: "Spawn a review subagent", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Review clean: nothing to add."}},
	}}
}

// TestAgentQueue runs the queue scenario of TestQueueDoAddReview with the
// Codex CLI and the Gemini CLI as the agent, in one headless run each of a
// project set up with `drover init --cli`: three tasks, the second stuck, a review that queues a fourth, a clean
// review, and the session off at the end.
func TestAgentQueue(t *testing.T) {
	t.Parallel()
	for _, a := range otherAgents {
		t.Run(a.cli.Name, func(t *testing.T) {
			t.Parallel()
			sid := newSessionID(t)
			p := newAgentProject(t, a, agentQueueScenario(a))
			res := p.runAgent(a, sid, "QUEUE-START")
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Review clean: nothing to add.") {
				t.Fatalf("exit %d, stdout %q; want 0 and the clean review", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Turns()
			sid = agentSession(t, a, sid, reqs)
			sessDir := filepath.Join(p.root, ".drover", "sessions", sid)

			done := doneTasks(t, sessDir)
			if len(done) != 3 {
				t.Fatalf("done tasks %q, want 3 (alpha, gamma, the review's)", done)
			}
			tasks := make([]string, 3)
			for i, d := range done {
				tasks[i] = strings.TrimSuffix(d, ".done.md") + ".md"
			}
			stuck, _ := filepath.Glob(filepath.Join(sessDir, "*.stuck.md"))
			if len(stuck) != 1 {
				t.Fatalf("stuck tasks %q, want 1", stuck)
			}
			if got := readFile(t, stuck[0]); got != queueTexts[1]+"\n\nneeds a decision from the user\n" {
				t.Errorf("stuck task %s = %q, want its text and the agent's note", stuck[0], got)
			}

			// What the model was told at each stop, in order.
			reasons := a.blockReasons(reqs)
			b := filepath.Base
			want := []string{
				"loop " + b(strings.TrimSuffix(stuck[0], ".stuck.md")+".md"),
				"loop " + b(tasks[1]),
				"review",
				"review-found " + b(tasks[2]),
				"review",
			}
			if got := kinds(reasons); !slices.Equal(got, want) {
				t.Fatalf("block reasons received:\n%q\nwant:\n%q", got, want)
			}
			for i, r := range reasons {
				if w := "Iteration: " + strconv.Itoa(i+1); kind(r) != "review" && !strings.Contains(r, w) {
					t.Errorf("block %d does not say %q:\n%s", i+1, w, r)
				}
				if kind(r) == "review" && !strings.Contains(r, "drover add --session "+sid) {
					t.Errorf("review block %d lacks the session's add command:\n%s", i+1, r)
				}
			}

			wantLog := queueTexts[0] + "\n" + queueTexts[2] + "\nreview: work.log needs a closing line\n"
			if got := readFile(t, filepath.Join(p.root, "work.log")); got != wantLog {
				t.Errorf("work.log = %q, want %q", got, wantLog)
			}
			wantSubjects := []string{"initial commit", "drover init --cli " + a.cli.Name}
			for _, task := range tasks {
				wantSubjects = append(wantSubjects, "work: "+strings.TrimSuffix(b(task), ".md"))
			}
			if got := p.subjects(); !slices.Equal(got, wantSubjects) {
				t.Errorf("git log: %q, want %q", got, wantSubjects)
			}
			if dirty := p.git("status", "--porcelain"); dirty != "" {
				t.Errorf("the work tree is not clean:\n%s", dirty)
			}
			// Six stops: alpha, beta (stuck), gamma, review, the review's
			// task, the clean review; the last one allowed.
			p.wantSession(sid, "off", 6, 0, 3, 1)
		})
	}
}

// agentLoopScenario is loop-promise.yaml for another CLI: the agent starts
// the loop with `drover loop start` and keeps its promise in iteration 3,
// after showing it in a code block and a quotation (iteration 1) and in a
// negation (iteration 2), none of which counts.
func agentLoopScenario(a agentCLI) *fakemodel.Scenario {
	no, yes := false, true
	return &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{Name: "start", When: fakemodel.Match{LastUserContains: "LOOP-START", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Starting the loop.", ToolCalls: a.shell(
				`drover loop start "make the lexer handle unicode" --max-iterations 5 --completion-promise "ALL DONE"`)}},
		{Name: "iteration-1", When: fakemodel.Match{LastIsToolResult: &yes,
			LastUserMatches: `# drover loop: iteration 1 of 5[\s\S]*Read your notes in the tracker (?P<tracker>/\S+/loop\.md)\.`}, Times: 1,
			Answer: fakemodel.Answer{Text: "Starting on the lexer.", ToolCalls: a.shell(
				`printf '%s\n' '- iteration 1: the lexer splits multi-byte runes' >> '{{tracker}}' && echo note-written`)}},
		{Name: "noted", When: fakemodel.Match{LastUserContains: "note-written", LastIsToolResult: &yes}, Times: 1,
			Answer: fakemodel.Answer{Text: "Not finished: the lexer still splits multi-byte runes.\n\nWhen it is done I will end with this line:\n\n```\n<promise>ALL DONE</promise>\n```\n\n> <promise>ALL DONE</promise>\n"}},
		{Name: "iteration-2", When: fakemodel.Match{LastUserContains: "# drover loop: iteration 2 of 5", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "I will not output <promise>ALL DONE</promise> yet: two lexer cases still fail."}},
		{Name: "iteration-3", When: fakemodel.Match{LastUserContains: "# drover loop: iteration 3 of 5", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "The lexer handles multi-byte runes and every case passes.\n<promise>ALL DONE</promise>"}},
	}}
}

// TestAgentLoopPromise runs TestLoopCompletesOnPromise's loop with the
// Codex CLI and the Gemini CLI as the agent: three iterations, the last
// answer keeps the promise, and the stop after it is allowed.
func TestAgentLoopPromise(t *testing.T) {
	t.Parallel()
	for _, a := range otherAgents {
		t.Run(a.cli.Name, func(t *testing.T) {
			t.Parallel()
			sid := newSessionID(t)
			p := newAgentProject(t, a, agentLoopScenario(a))
			res := p.runAgent(a, sid, "LOOP-START")
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "<promise>ALL DONE</promise>") {
				t.Fatalf("exit %d, stdout %q; want 0 and the answer with the promise", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Turns()
			sid = agentSession(t, a, sid, reqs)
			if got, want := ruleNames(reqs), []string{"start", "iteration-1", "noted", "iteration-2", "iteration-3"}; !slices.Equal(got, want) {
				t.Fatalf("model requests answered by %q, want %q", got, want)
			}
			if got, want := loopBlocks(a.blockReasons(reqs)), []string{"2/5 developer exploring", "3/5 developer exploring"}; !slices.Equal(got, want) {
				t.Errorf("block reasons %q, want %q", got, want)
			}
			st := p.loopStatus(sid)
			if st.Active || st.Iteration != 3 || st.MaxIterations != 5 || st.Outcome != "done" || st.CompletionPromise != "ALL DONE" {
				t.Errorf("loop status %+v; want inactive, iteration 3 of 5, outcome done, promise ALL DONE", st)
			}
			if got := readFile(t, st.Tracker); !strings.Contains(got, "- iteration 1: the lexer splits multi-byte runes") {
				t.Errorf("the tracker lacks the agent's note:\n%s", got)
			}
			if _, err := os.Stat(st.Tracker); err != nil {
				t.Error(err)
			}
		})
	}
}

// agentPlanScenario is plan-pass.yaml for another CLI as the agent, with
// Claude Code as the reviewer (drover's reviewers are claude today): the
// agent starts plan demo-plan with `drover plan new`, writes plan.md,
// stops; at each "reviewer is running" block it runs `drover plan wait`;
// at the post-review block it amends the plan, writes the post-review
// file, commits and runs `drover plan post-review-done`. Both reviews
// pass.
func agentPlanScenario(a agentCLI) *fakemodel.Scenario {
	no, yes := false, true
	return &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{Name: "review-pass", When: fakemodel.Match{HasTool: "StructuredOutput", LastIsToolResult: &no, LastUserContains: "You are an independent reviewer"},
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{Name: "StructuredOutput", Input: map[string]any{
				"review": "Read the work and checked it against the task.", "verdict": "PASS", "findings": []any{}}}}}},
		{Name: "start", When: fakemodel.Match{LastUserContains: "PLAN-START", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Starting the plan.", ToolCalls: a.shell("drover plan new demo-plan")}},
		{Name: "write-plan", When: fakemodel.Match{LastIsToolResult: &yes, LastUserMatches: `Write the plan to (?P<path>/\S+/plan\.md) \(`}, Times: 1,
			Answer: fakemodel.Answer{Text: "Writing the plan.", ToolCalls: a.shell(
				`printf '# Demo plan\n\nGoal: make the lexer handle unicode.\n\n## Design\n- split input on runes, not bytes\n' > '{{path}}' && echo plan-written`)}},
		{Name: "plan-written", When: fakemodel.Match{LastIsToolResult: &yes, LastUserContains: "plan-written"}, Times: 1,
			Answer: fakemodel.Answer{Text: "The plan is written."}},
		{Name: "wait", When: fakemodel.Match{LastIsToolResult: &no, LastUserMatches: `\[drover\] An independent reviewer \(\w+\) is running the plan review`},
			Answer: fakemodel.Answer{ToolCalls: a.shell("drover plan wait")}},
		{Name: "waited", When: fakemodel.Match{LastIsToolResult: &yes, LastUserMatches: `The plan review (?P<n>\d+) \(\w+\) of plan demo-plan is done: (?P<verdict>\w+)`},
			Answer: fakemodel.Answer{Text: "Review {{n}} is done: {{verdict}}."}},
		{Name: "post-review", When: fakemodel.Match{LastIsToolResult: &no,
			LastUserMatches: `\[drover\] A plan review \(iteration (?P<n>\d+)\) has been written to (?P<dir>/\S+)/plan-review-\d+\.md [\s\S]*then create (?P<post>/\S+) documenting`},
			Answer: fakemodel.Answer{ToolCalls: a.shell(
				`printf '\n- review {{n}}: testing covered by go test ./lexer/...\n' >> '{{dir}}/plan.md' && ` +
					`printf '# Post-review {{n}}\n\nAdded the testing section to plan.md.\n' > '{{post}}' && ` +
					`git add -A && git commit -qm 'plan: post-review {{n}}' && ` +
					"drover plan post-review-done")}},
		{Name: "post-review-done", When: fakemodel.Match{LastIsToolResult: &yes, LastUserContains: "post-plan-review recorded"},
			Answer: fakemodel.Answer{Text: "Post-review done."}},
	}}
}

// TestAgentPlanReview runs one plan review cycle (TestPlanReviews/pass)
// with the Codex CLI and the Gemini CLI as the agent and the real Claude
// Code CLI as drover's reviewer, on the same scripted model server (one
// port, both protocols): review 1 (opus) passes, the agent performs the
// post-review, review 2 (sonnet) passes, and the cycle ends with the plan
// moved on to create-tasks.
func TestAgentPlanReview(t *testing.T) {
	t.Parallel()
	for _, a := range otherAgents {
		t.Run(a.cli.Name, func(t *testing.T) {
			t.Parallel()
			claude := claudeBin(t)
			sid := newSessionID(t)
			p := newAgentProject(t, a, agentPlanScenario(a))
			// The supervisor, started by the agent's first drover command,
			// inherits the agent's environment and runs the reviewer as
			// plain `claude`: put it on PATH, offline like claudecli's.
			for i, kv := range p.env {
				if strings.HasPrefix(kv, "PATH=") {
					p.env[i] = "PATH=" + droverDir + string(os.PathListSeparator) + filepath.Dir(claude) + string(os.PathListSeparator) + os.Getenv("PATH")
				}
			}
			p.env = append(p.env,
				"ANTHROPIC_BASE_URL="+p.model.URL(),
				"ANTHROPIC_API_KEY=dummy",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"DISABLE_AUTOUPDATER=1",
				"IS_SANDBOX=1",
			)
			res := p.runAgent(a, sid, "PLAN-START")
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Review 2 is done: PASS.") {
				t.Fatalf("exit %d, stdout %q; want 0 and the second review's answer", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Turns()
			var agent, revs []fakemodel.Request
			for _, r := range reqs {
				if r.HasTool("StructuredOutput") {
					revs = append(revs, r)
				} else {
					agent = append(agent, r)
				}
			}
			sid = agentSession(t, a, sid, agent)
			dir := filepath.Join(p.root, ".drover", "plans", "demo-plan")

			want := []string{"wait 1 opus", "post-review 1 opus: PASS, 0 blocking", "wait 2 sonnet"}
			if got := planBlocks(a.blockReasons(agent)); !slices.Equal(got, want) {
				t.Fatalf("block reasons:\n%q\nwant:\n%q", got, want)
			}
			if len(revs) != 2 || !strings.HasPrefix(revs[0].Model, "claude-opus-") || !strings.HasPrefix(revs[1].Model, "claude-sonnet-") {
				t.Errorf("reviewer requests %d, models %q; want opus then sonnet", len(revs), ruleNames(revs))
			}
			for n := 1; n <= 2; n++ {
				body := readFile(t, filepath.Join(dir, "plan-review-"+strconv.Itoa(n)+".md"))
				if !strings.Contains(body, "Verdict: PASS") {
					t.Errorf("plan-review-%d.md lacks the verdict:\n%s", n, body)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "plan-post-review-1.md")); err != nil {
				t.Errorf("the agent's post-review file: %v", err)
			}
			st := p.planStatus(sid)
			if st.Phase != "plan-review" || deref(st.NextPhase) != "create-tasks" || st.PhaseIteration != 2 || st.ConsecutiveClean != 2 || st.ReviewRunning {
				t.Errorf("plan status %+v (next %s); want plan-review done, next create-tasks, iteration 2, 2 clean", st, deref(st.NextPhase))
			}
			if st.Totals.Runs != 2 || st.Totals.FailedRuns != 0 {
				t.Errorf("totals %+v; want 2 reviewer runs, none failed", st.Totals)
			}
			if got := p.subjects(); !slices.Equal(got, []string{"initial commit", "drover init --cli " + a.cli.Name, "plan: post-review 1"}) {
				t.Errorf("git log: %q", got)
			}
		})
	}
}

// agentBudgetScenario is loop-usd.yaml for another CLI: the agent starts a
// loop with a $0.50 budget and never finishes; each answer in the loop
// reports output tokens worth $0.30 at drover's list price of the CLI's
// model (gpt-5.5 as GPT-5, $10 per million output tokens; gemini-2.5-flash,
// $2.50), so the first iteration stays under the budget and the second
// spends it. Output tokens, not input: a large prompt count would make
// either CLI compact its history. The answer that starts the loop reports
// none.
func agentBudgetScenario(a agentCLI) *fakemodel.Scenario {
	no, yes := false, true
	out := 30000
	if a.cli.Name == "gemini" {
		out = 120000
	}
	spend := &fakemodel.Usage{OutputTokens: out}
	return &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{Name: "start", When: fakemodel.Match{LastUserContains: "LOOP-START", LastIsToolResult: &no}, Times: 1,
			Answer: fakemodel.Answer{Text: "Starting the loop.", Usage: &fakemodel.Usage{}, ToolCalls: a.shell(
				`drover loop start "tidy the changelog" --max-iterations 5 --max-usd 0.5`)}},
		{Name: "iteration", When: fakemodel.Match{LastIsToolResult: &yes, LastUserMatches: `# drover loop: iteration (?P<n>1) of (?P<max>\d+)`}, Times: 1,
			Answer: fakemodel.Answer{Text: "Iteration {{n}} of {{max}}: still working.", Usage: spend}},
		{Name: "iteration", When: fakemodel.Match{LastIsToolResult: &no, LastUserMatches: `# drover loop: iteration (?P<n>\d+) of (?P<max>\d+)`},
			Answer: fakemodel.Answer{Text: "Iteration {{n}} of {{max}}: still working.", Usage: spend}},
	}}
}

// TestAgentLoopDollarBudget runs TestLoopDollarBudget's loop with the Codex
// CLI and the Gemini CLI as the agent: drover prices the tokens each CLI
// writes to its own transcript (a Codex rollout, a Gemini chat file), the
// second iteration's answer spends the $0.50 budget, and the stop after it
// is allowed with the loop ended on max_usd. `drover status --json` shows
// the session's spend.
func TestAgentLoopDollarBudget(t *testing.T) {
	t.Parallel()
	for _, a := range otherAgents {
		t.Run(a.cli.Name, func(t *testing.T) {
			t.Parallel()
			sid := newSessionID(t)
			p := newAgentProject(t, a, agentBudgetScenario(a))
			res := p.runAgent(a, sid, "LOOP-START")
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Iteration 2 of 5: still working.") {
				t.Fatalf("exit %d, stdout %q; want 0 and the answer to iteration 2", res.ExitCode, res.Stdout)
			}
			reqs := p.model.Turns()
			sid = agentSession(t, a, sid, reqs)
			if got, want := ruleNames(reqs), []string{"start", "iteration", "iteration"}; !slices.Equal(got, want) {
				t.Fatalf("model requests answered by %q, want %q (the start, one per iteration)", got, want)
			}
			if w := "Budget: iteration 1 of 5; $0.00 of $0.50"; !strings.Contains(reqs[1].LastUserText, w) {
				t.Errorf("the first iteration's prompt lacks %q:\n%s", w, reqs[1].LastUserText)
			}
			reasons := a.blockReasons(reqs)
			if got, want := loopBlocks(reasons), []string{"2/5 developer exploring"}; !slices.Equal(got, want) {
				t.Fatalf("block reasons %q, want %q", got, want)
			}
			if w := "Budget: iteration 2 of 5; $0.30 of $0.50"; !strings.Contains(reasons[0], w) {
				t.Errorf("the block lacks %q:\n%s", w, reasons[0])
			}
			st := p.loopStatus(sid)
			if st.Active || st.Iteration != 2 || st.Outcome != "max_usd" || st.Status != "budget_exhausted" ||
				st.StatusReason != "$0.60 spent reached the budget of $0.50" || fmt.Sprintf("%.2f", st.CostUSD) != "0.60" {
				t.Errorf("loop status %+v; want inactive at iteration 2, outcome max_usd, status budget_exhausted, $0.60 spent", st)
			}
			s := p.session(sid)
			if s.Workflow != "loop" || s.State != "off" || fmt.Sprintf("%.2f", s.CostUSD) != "0.60" {
				t.Errorf("drover status: session %s is %s %s at $%v; want the loop off at $0.60", sid, s.Workflow, s.State, s.CostUSD)
			}
		})
	}
}
