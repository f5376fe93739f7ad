//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/fakemodel"
)

// planReview is one review the plan tests expect: the model alias drover
// passes with --model, the model name the CLI sends the API for it, the
// verdict, and the blocking findings.
type planReview struct {
	alias, apiModel, verdict string
	blocking                 int
}

// TestPlanReviews runs the plan workflow end to end with the real CLI in
// both roles: the agent (`/drover:plan new demo-plan` in a session with
// drover's plugin) and the independent reviewer, which the supervisor
// starts from PATH as `claude --print --json-schema ...` at each stop. The
// supervisor is started by the slash command's shell block, so it inherits
// the CLI's environment and its reviewers reach the scripted model too.
//
// The scripted agent writes plan.md and stops; each stop starts a review
// and blocks with "run drover plan wait" (review.hold 0s); after the wait
// the next stop gets the review's answer: a post-review to perform (the agent amends the
// plan, writes the post-review file, commits, runs drover plan
// post-review-done, stops), or, after two clean reviews in a row, an
// allowed stop with the plan moved on to create-tasks.
//
//   - pass: both reviews pass (opus, then sonnet).
//   - held: as pass, with review.hold: the stop that starts a review is
//     held and gets the review's answer, with no wait in between.
//   - fail-then-pass: review 1 (opus) fails with a blocking finding;
//     reviews 2 (sonnet, a re-check naming the finding) and 3 (opus) pass.
//   - max-reviews: review.max_reviews 1 in the project's config, the
//     reviewer always fails: after the post-review of review 1 the stop
//     is a hard stop that leaves the plan where it is.
//
// Every reviewer runs with hooks off: a hook of the scratch HOME's user
// settings logs every event it sees, and none is the reviewer's; drover
// never hears of the reviewer's session either.
func TestPlanReviews(t *testing.T) {
	t.Parallel()
	opus := planReview{alias: "opus", apiModel: "claude-opus-", verdict: "PASS"}
	sonnet := planReview{alias: "sonnet", apiModel: "claude-sonnet-", verdict: "PASS"}
	opusFail := opus
	opusFail.verdict, opusFail.blocking = "FAIL", 1
	for _, c := range []struct {
		name, scenario string
		// config is .drover/config.yaml, when set; env is more of the
		// CLI's environment (and so of its hooks and supervisor).
		config  string
		env     []string
		reviews []planReview
		blocks  []string
		// stdout is the agent's last answer.
		stdout string
		// Where the plan ends.
		phase, next      string
		iteration, clean int
		maxReviews       int
		model            string
		// message is drover's systemMessage on the allowed last stop;
		// {dir} stands for the plan folder.
		message string
	}{
		{
			name: "pass", scenario: "plan-pass.yaml",
			reviews: []planReview{opus, sonnet},
			blocks:  []string{"wait 1 opus", "post-review 1 opus: PASS, 0 blocking", "wait 2 sonnet"},
			stdout:  "Review 2 is done: PASS.",
			phase:   "plan-review", next: "create-tasks", iteration: 2, clean: 2, maxReviews: 8, model: "opus",
			message: "[drover] The plan review of plan demo-plan passed: 2 clean review(s) in a row (iteration 2; 2 end the cycle). Next: create-tasks.",
		},
		{
			// review.hold: each Stop that starts a review is held while
			// the reviewer runs and answered with its answer, so the
			// agent never runs drover plan wait.
			name: "held", scenario: "plan-pass.yaml",
			env:     []string{"DROVER_REVIEW_HOLD=2m"},
			reviews: []planReview{opus, sonnet},
			blocks:  []string{"post-review 1 opus: PASS, 0 blocking"},
			stdout:  "Post-review done.",
			phase:   "plan-review", next: "create-tasks", iteration: 2, clean: 2, maxReviews: 8, model: "opus",
			message: "[drover] The plan review of plan demo-plan passed: 2 clean review(s) in a row (iteration 2; 2 end the cycle). Next: create-tasks.",
		},
		{
			name: "fail-then-pass", scenario: "plan-fail.yaml",
			reviews: []planReview{opusFail, sonnet, opus},
			blocks: []string{
				"wait 1 opus", "post-review 1 opus: FAIL, 1 blocking",
				"wait 2 sonnet", "post-review 2 sonnet: PASS, 0 blocking",
				"wait 3 opus",
			},
			stdout: "Review 3 is done: PASS.",
			phase:  "plan-review", next: "create-tasks", iteration: 3, clean: 2, maxReviews: 8, model: "sonnet",
			message: "[drover] The plan review of plan demo-plan passed: 2 clean review(s) in a row (iteration 3; 2 end the cycle). Next: create-tasks.",
		},
		{
			name: "max-reviews", scenario: "plan-max.yaml",
			config:  "review:\n  max_reviews: 1\n",
			reviews: []planReview{opusFail},
			blocks:  []string{"wait 1 opus", "post-review 1 opus: FAIL, 1 blocking"},
			stdout:  "Post-review done.",
			phase:   "post-plan-review", next: "plan-review", iteration: 1, clean: 0, maxReviews: 1, model: "sonnet",
			message: "[drover] The plan review of plan demo-plan reached its limit of 1 review(s) without 2 clean reviews in a row; the last review is {dir}/plan-review-1.md. Stopped for your decision: raise the limit with `drover plan set-max-reviews N`",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newQueueProject(t, loadScenario(t, c.scenario))
			p.reviewerCLIOnPath()
			probe := writeHookProbe(t, p.home)
			if c.config != "" {
				if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sid := newSessionID(t)
			res := p.claudeEnv(c.env, "--session-id", sid, "/drover:plan new demo-plan")
			if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != c.stdout {
				t.Fatalf("exit %d, stdout %q; want 0 and %q", res.ExitCode, res.Stdout, c.stdout)
			}
			dir := filepath.Join(p.root, ".drover", "plans", "demo-plan")
			reqs := p.model.Messages()

			// The agent: its first prompt is drover's answer to the
			// slash command, then the blocks, in order.
			if w := "[drover] Started plan demo-plan in " + dir + " (at most " + fmt.Sprint(c.maxReviews) + " review(s) per review cycle)."; len(reqs) == 0 || reqs[0].SessionID != sid || !strings.Contains(reqs[0].LastUserText, w) {
				t.Fatalf("the first request is not the agent's /drover:plan prompt with %q", w)
			}
			reasons := blockReasons(reqs, sid)
			if got := planBlocks(reasons); !slices.Equal(got, c.blocks) {
				t.Fatalf("block reasons:\n%q\nwant:\n%q", got, c.blocks)
			}
			for i, r := range reasons {
				m := planPostRE.FindStringSubmatch(r)
				if m == nil {
					if w := "Run `drover plan wait`"; !strings.Contains(r, w) {
						t.Errorf("block %d lacks %q:\n%s", i+1, w, r)
					}
					continue
				}
				n := m[1]
				for _, w := range []string{
					"has been written to " + filepath.Join(dir, "plan-review-"+n+".md"),
					"then create " + filepath.Join(dir, "plan-post-review-"+n+".md") + " documenting",
					"run `drover plan post-review-done`, then stop",
				} {
					if !strings.Contains(r, w) {
						t.Errorf("post-review block %d lacks %q:\n%s", i+1, w, r)
					}
				}
			}

			// The reviewers: one request each, with the StructuredOutput
			// tool, the models alternating, each its own session.
			var revs []fakemodel.Request
			for _, r := range reqs {
				if r.HasTool("StructuredOutput") {
					revs = append(revs, r)
				} else if r.SessionID != sid {
					t.Errorf("request %d from session %s, neither the agent's nor a reviewer's: %s", r.Seq, r.SessionID, r.Summary())
				}
			}
			if len(revs) != len(c.reviews) {
				t.Fatalf("%d reviewer requests, want %d", len(revs), len(c.reviews))
			}
			reviewers := map[string]bool{}
			for i, r := range revs {
				want := c.reviews[i]
				n := i + 1
				if !strings.HasPrefix(r.Model, want.apiModel) {
					t.Errorf("review %d asked model %q, want %s*", n, r.Model, want.apiModel)
				}
				if r.SessionID == "" || r.SessionID == sid || reviewers[r.SessionID] {
					t.Errorf("review %d ran in session %q; want a fresh one (agent %s)", n, r.SessionID, sid)
				}
				reviewers[r.SessionID] = true
				for _, w := range []string{
					"You are an independent reviewer with no prior context. Review the plan in " + dir + "/plan.md (plan demo-plan).",
					fmt.Sprintf("drover saves your answer as %s (review %d).", filepath.Join(dir, fmt.Sprintf("plan-review-%d.md", n)), n),
				} {
					if !strings.Contains(r.LastUserText, w) {
						t.Errorf("review %d's prompt lacks %q:\n%s", n, w, r.LastUserText)
					}
				}
				// From the second review on it is a re-check of the
				// previous findings and the diff since (the post-review's
				// commit).
				recheck := strings.Contains(r.LastUserText, "## Re-check, do not start over")
				if recheck != (n > 1) {
					t.Errorf("review %d's prompt holds a re-check: %t", n, recheck)
				}
				if n > 1 && !strings.Contains(r.LastUserText, fmt.Sprintf("+- review %d: testing covered by go test ./lexer/...", n-1)) {
					t.Errorf("review %d's re-check lacks the post-review's change:\n%s", n, r.LastUserText)
				}
				if n > 1 && c.reviews[i-1].blocking > 0 {
					if w := "- [blocking] plan.md:3: The plan never says how the unicode lexer is tested"; !strings.Contains(r.LastUserText, w) {
						t.Errorf("review %d does not re-check the previous blocking finding %q:\n%s", n, w, r.LastUserText)
					}
				}

				// The review file drover wrote from the answer.
				body := readFile(t, filepath.Join(dir, fmt.Sprintf("plan-review-%d.md", n)))
				for _, w := range []string{
					fmt.Sprintf("# Plan review, iteration %d\n", n),
					"Reviewer: " + want.alias + " (independent, no prior context)",
					"Verdict: " + want.verdict,
					fmt.Sprintf("Findings: %d blocking", want.blocking),
				} {
					if !strings.Contains(body, w) {
						t.Errorf("plan-review-%d.md lacks %q:\n%s", n, w, body)
					}
				}
				if want.blocking > 0 && !strings.Contains(body, "The plan never says how the unicode lexer is tested") {
					t.Errorf("plan-review-%d.md does not name the blocking finding:\n%s", n, body)
				}
			}
			mustNotExist(t, filepath.Join(dir, fmt.Sprintf("plan-review-%d.md", len(c.reviews)+1)))
			posts := 0
			for _, b := range c.blocks {
				if strings.HasPrefix(b, "post-review ") {
					posts++
					if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("plan-post-review-%d.md", posts))); err != nil {
						t.Errorf("the agent's post-review file: %v", err)
					}
				}
			}

			// Where the plan stands: the status and the state.json view.
			st := p.planStatus(sid)
			if st.PlanID != "demo-plan" || st.PlanDir != dir || !st.Active || st.Phase != c.phase || st.NextPhase == nil || *st.NextPhase != c.next ||
				st.PhaseIteration != c.iteration || st.ConsecutiveClean != c.clean || st.MaxReviews != c.maxReviews || st.ReviewModel != c.model ||
				st.ReviewRunning || st.CurrentTask != nil || st.TDD {
				t.Errorf("plan status %+v (next %v); want phase %s, next %s, iteration %d, %d clean, max %d, next model %s, no review running",
					st, deref(st.NextPhase), c.phase, c.next, c.iteration, c.clean, c.maxReviews, c.model)
			}
			last := c.reviews[len(c.reviews)-1]
			if r := st.LastReview; r == nil || r.Iteration != len(c.reviews) || r.Model != last.alias || r.Verdict != last.verdict || r.Blocking != last.blocking || r.Session != sid {
				t.Errorf("last_review %+v; want review %d by %s: %s, %d blocking, session %s", r, len(c.reviews), last.alias, last.verdict, last.blocking, sid)
			}
			if st.Totals.Runs != len(c.reviews) || st.Totals.FailedRuns != 0 || st.Totals.SessionRuns != len(c.reviews) {
				t.Errorf("totals %+v; want %d runs, none failed, all this session's", st.Totals, len(c.reviews))
			}
			var view struct {
				Phase            string  `json:"phase"`
				NextPhase        *string `json:"next_phase"`
				PhaseIteration   int     `json:"phase_iteration"`
				ConsecutiveClean int     `json:"consecutive_clean"`
				ReviewRunning    bool    `json:"review_running"`
			}
			if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "state.json"))), &view); err != nil {
				t.Fatalf("state.json: %v", err)
			}
			if view.Phase != c.phase || deref(view.NextPhase) != c.next || view.PhaseIteration != c.iteration || view.ConsecutiveClean != c.clean || view.ReviewRunning {
				t.Errorf("state.json %+v (next %s); want the status's phase %s, next %s, iteration %d, %d clean", view, deref(view.NextPhase), c.phase, c.next, c.iteration, c.clean)
			}
			if msg := strings.ReplaceAll(c.message, "{dir}", dir); !strings.Contains(p.transcript(sid), msg) {
				t.Errorf("the transcript lacks drover's message %q", msg)
			}

			// No hook ran in a reviewer: drover knows only the agent's
			// session, and the probe hook saw only the agent.
			if ss := p.status().Sessions; len(ss) != 1 || ss[0].ID != sid || ss[0].Workflow != "plan" {
				t.Errorf("drover status lists sessions %+v; want only the agent's %s, in workflow plan", ss, sid)
			} else if ss[0].CostUSD <= 0 {
				// Every case runs at least one real reviewer, and the real
				// CLI prices the scripted model's token usage.
				t.Errorf("drover status shows cost $%v for the plan session; want the reviewers' cost, above 0", ss[0].CostUSD)
			}
			seen := probeSessions(t, probe)
			if !seen[sid] {
				t.Errorf("the probe hook never saw the agent's session %s (saw %v): it proves nothing", sid, seen)
			}
			for id := range reviewers {
				if seen[id] {
					t.Errorf("a hook ran in reviewer session %s", id)
				}
			}
		})
	}
}

// TestPlanStandaloneCodeReview runs seed 001's standalone code review with
// the real CLI as the agent and as the reviewer. Run 1, `/drover:plan
// continue solo`, takes over a plan from its state.json (a task list
// reviewed, next_phase null: drover says to ask the user). Run 2,
// `/drover:plan code-review 1`, prints the action's prompt from its
// template; the agent runs the `drover plan code-review 1` it names and
// stops, and one review runs (opus passes), as seed 001's standalone
// code-review performs one review: no post-review follows, and next_phase
// is left null instead of moving the plan on to the next task.
func TestPlanStandaloneCodeReview(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "plan-standalone.yaml"))
	p.reviewerCLIOnPath()
	dir := filepath.Join(p.root, ".drover", "plans", "solo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"plan.md":   "# Solo\n\nGoal: trim the lexer's input.\n",
		"tasks.md":  "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | trim the input |\n| 2 | pending | document it |\n",
		"task-1.md": "# Task 1\n\n- [x] trim leading spaces\n",
		"task-2.md": "# Task 2\n\n- [ ] document trimming\n",
		"state.json": `{"phase":"tasks-review","next_phase":null,"current_task":null,"phase_iteration":2,"max_reviews":8,` +
			`"review_model":"opus","consecutive_clean":2,"tdd":false}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.git("add", "-A")
	p.git("commit", "-qm", "plan solo: tasks reviewed")

	sid := newSessionID(t)
	res := p.claude("--session-id", sid, "/drover:plan continue solo")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "The plan waits for your decision." {
		t.Fatalf("run 1: exit %d, stdout %q; want 0 and the question to the user", res.ExitCode, res.Stdout)
	}
	before := len(p.model.Messages())
	res = p.claude("--resume", sid, "/drover:plan code-review 1")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review 1 is done: PASS." {
		t.Fatalf("run 2: exit %d, stdout %q; want 0 and review 1's verdict", res.ExitCode, res.Stdout)
	}
	reqs := since(p.model.Messages(), before)
	var agent []fakemodel.Request
	var revs []fakemodel.Request
	for _, r := range reqs {
		if r.HasTool("StructuredOutput") {
			revs = append(revs, r)
		} else {
			agent = append(agent, r)
		}
	}
	// The slash command's prompt: the code-review action's template, with
	// the plan's values.
	if len(agent) == 0 {
		t.Fatal("no agent request in run 2")
	}
	for _, w := range []string{
		"[drover] Plan solo: a standalone code review of task 1 (" + filepath.Join(dir, "task-1.md") + ").",
		"run `drover plan code-review 1`, then stop",
		"one review, no post-review loop",
	} {
		if !strings.Contains(agent[0].LastUserText, w) {
			t.Errorf("the /drover:plan code-review prompt lacks %q:\n%s", w, agent[0].LastUserText)
		}
	}
	reasons := blockReasons(reqs, sid)
	want := []string{
		"[drover] An independent reviewer (opus) is running the code review of task 1 (iteration 1 of at most 8)",
	}
	if len(reasons) != len(want) {
		t.Fatalf("run 2 block reasons:\n%q\nwant %d starting with:\n%q", reasons, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(reasons[i], w) {
			t.Errorf("block %d:\n%s\nwant it to start with:\n%s", i+1, reasons[i], w)
		}
	}
	if len(revs) != 1 {
		t.Fatalf("%d reviewer requests, want 1", len(revs))
	}
	for i, apiModel := range []string{"claude-opus-"} {
		if !strings.HasPrefix(revs[i].Model, apiModel) || !strings.Contains(revs[i].LastUserText, "Review the implementation of task 1 of plan solo") {
			t.Errorf("review %d: model %q, prompt:\n%s", i+1, revs[i].Model, revs[i].LastUserText)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "task-1-review-1.md")); err != nil {
		t.Errorf("task-1-review-1.md: %v", err)
	}
	for _, f := range []string{"task-1-post-review-1.md", "task-1-review-2.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: a standalone review is one review, with no post-review", f)
		}
	}

	// The plan stays where it was: no next task, no all-code review.
	st := p.planStatus(sid)
	if st.PlanID != "solo" || st.Phase != "code-review" || st.NextPhase != nil || deref(st.CurrentTask) != "1" ||
		st.PhaseIteration != 1 || st.ConsecutiveClean != 1 || st.Standalone || st.ReviewRunning {
		t.Errorf("plan status %+v (next %s, task %s); want code-review, next_phase null, task 1, iteration 1, 1 clean, no longer standalone",
			st, deref(st.NextPhase), deref(st.CurrentTask))
	}
	var view struct {
		Phase     string  `json:"phase"`
		NextPhase *string `json:"next_phase"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "state.json"))), &view); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if view.Phase != "code-review" || view.NextPhase != nil {
		t.Errorf("state.json phase %s, next %s; want code-review and null", view.Phase, deref(view.NextPhase))
	}
	if w := "[drover] The standalone code review of task 1 of plan solo is done: an independent reviewer (opus: PASS, 0 blocking, 0 minor finding(s)) wrote it to " + filepath.Join(dir, "task-1-review-1.md") + ". A standalone review is one review: no post-review follows, and the plan stays where it is (phase code-review, next_phase is null)."; !strings.Contains(p.transcript(sid), w) {
		t.Errorf("the transcript lacks drover's message %q", w)
	}
}

// planPostRE matches a post-review block and captures its iteration, the
// reviewer's model and its summary.
var planPostRE = regexp.MustCompile(`^\[drover\] A plan review \(iteration (\d+)\) has been written to \S+ from an independent reviewer's answer \((\w+): (\w+, \d+ blocking)`)

// planWaitRE matches the block that sends the agent to drover plan wait.
var planWaitRE = regexp.MustCompile(`^\[drover\] An independent reviewer \((\w+)\) is running the plan review \(iteration (\d+) of at most \d+\)`)

// planBlock sums up a plan block reason: "wait N MODEL",
// "post-review N MODEL: VERDICT, B blocking", or "other: FIRST LINE".
func planBlock(reason string) string {
	if m := planWaitRE.FindStringSubmatch(reason); m != nil {
		return "wait " + m[2] + " " + m[1]
	}
	if m := planPostRE.FindStringSubmatch(reason); m != nil {
		return "post-review " + m[1] + " " + m[2] + ": " + m[3]
	}
	return "other: " + firstLine(reason)
}

func planBlocks(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = planBlock(r)
	}
	return out
}

// planStatusJSON is the part of `drover plan status --json` the tests
// check, under seed 001's field names.
type planStatusJSON struct {
	SessionID        string  `json:"session_id"`
	PlanID           string  `json:"plan_id"`
	PlanDir          string  `json:"plan_dir"`
	Active           bool    `json:"active"`
	Phase            string  `json:"phase"`
	NextPhase        *string `json:"next_phase"`
	CurrentTask      *string `json:"current_task"`
	PhaseIteration   int     `json:"phase_iteration"`
	MaxReviews       int     `json:"max_reviews"`
	ReviewModel      string  `json:"review_model"`
	ConsecutiveClean int     `json:"consecutive_clean"`
	TDD              bool    `json:"tdd"`
	Standalone       bool    `json:"standalone"`
	ReviewRunning    bool    `json:"review_running"`
	LastReview       *struct {
		Session   string `json:"session"`
		Iteration int    `json:"iteration"`
		Model     string `json:"model"`
		Verdict   string `json:"verdict"`
		Blocking  int    `json:"blocking"`
	} `json:"last_review"`
	Totals struct {
		Runs        int `json:"runs"`
		FailedRuns  int `json:"failed_runs"`
		SessionRuns int `json:"session_runs"`
	} `json:"totals"`
}

func (p *queueProject) planStatus(sid string) planStatusJSON {
	p.t.Helper()
	out := p.drover("plan", "status", "--session", sid, "--json")
	var st planStatusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		p.t.Fatalf("drover plan status --json: %v\n%s", err, out)
	}
	if st.SessionID != sid {
		p.t.Fatalf("drover plan status --session %s answered for session %q", sid, st.SessionID)
	}
	return st
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// writeHookProbe puts hooks in home's user settings, which every CLI run
// with that HOME loads (the agent and the reviewers alike), that append
// each event's input to a log; it returns the log's path.
func writeHookProbe(t *testing.T, home string) string {
	t.Helper()
	log := filepath.Join(home, "hook-probe.jsonl")
	entry := []map[string]any{{"hooks": []map[string]any{{
		"type":    "command",
		"command": fmt.Sprintf("{ cat; echo; } >> '%s'", log),
	}}}}
	settings := map[string]any{"hooks": map[string]any{
		"SessionStart": entry, "UserPromptSubmit": entry, "PreToolUse": entry, "Stop": entry,
	}}
	data, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

// probeSessions returns the session ids in the probe hook's log.
func probeSessions(t *testing.T, log string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for line := range strings.Lines(readFile(t, log)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var in struct {
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("probe hook log line %q: %v", line, err)
		}
		seen[in.SessionID] = true
	}
	return seen
}

// reviewerCLIOnPath puts the pinned CLI on the PATH the supervisor
// inherits, as it runs the reviewer as plain `claude`.
func (p *queueProject) reviewerCLIOnPath() {
	for i, kv := range p.env {
		if strings.HasPrefix(kv, "PATH=") {
			p.env[i] = "PATH=" + droverDir + string(os.PathListSeparator) + filepath.Dir(p.cliBin) + string(os.PathListSeparator) + os.Getenv("PATH")
		}
	}
}
