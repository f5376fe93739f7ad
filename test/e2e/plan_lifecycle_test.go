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

// lifecycleReview is one reviewer run TestPlanFullLifecycle expects: the
// review file drover writes from its answer, the model alias and the model
// name the CLI sends the API for it, and the verdict.
type lifecycleReview struct {
	file, alias, apiModel, verdict string
}

// lifecycleWaitRE matches the block that sends the agent to drover plan
// wait, whatever the review.
var lifecycleWaitRE = regexp.MustCompile(`^\[drover\] An independent reviewer \((\w+)\) is running the (.+?) \(iteration (\d+) of at most 8\)`)

// lifecyclePostRE matches a post-review block, whatever the review.
var lifecyclePostRE = regexp.MustCompile(`^\[drover\] An? (.+?) \(iteration (\d+)\) has been written to (\S+) from an independent reviewer's answer \((\w+): (\w+), (\d+) blocking`)

// lifecycleBlock sums up a block reason of any review: "wait NAME N MODEL",
// "post NAME N MODEL: VERDICT, B blocking", or "other: FIRST LINE".
func lifecycleBlock(reason string) string {
	if m := lifecycleWaitRE.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("wait %s %s %s", m[2], m[3], m[1])
	}
	if m := lifecyclePostRE.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("post %s %s %s: %s, %s blocking", m[1], m[2], m[4], m[5], m[6])
	}
	return "other: " + firstLine(reason)
}

// TestPlanFullLifecycle takes one plan through every phase of seed 001 with
// the real CLI as the agent and as every reviewer, in one session: six
// runs, each a slash command that ends at an allowed stop (the user stops
// of the seed), the first `/drover:plan new`, the others
// `/drover:plan continue`, which routes by next_phase.
//
//  1. new-plan: plan reviews 1 (opus, FAIL), 2 (sonnet), 3 (opus) with a
//     post-plan-review after the first two; next create-tasks.
//  2. create-tasks (tasks.md and task-1.md, task-2.md): tasks reviews 1
//     (opus) and 2 (sonnet); next complete-task.
//  3. complete-task 1: code reviews 1 (opus, FAIL), 2 (sonnet), 3 (opus);
//     next complete-task, as task 2 is left.
//  4. complete-task 2: code reviews 1 (opus), 2 (sonnet); no task left,
//     so a new cycle: next all-code-review, iteration 0, opus again.
//  5. nothing to do but stop: all-code reviews 1 (opus), 2 (sonnet); next
//     complete.
//  6. continue finishes the plan: phase complete, next_phase null.
//
// Each review cycle starts with opus and alternates; each stop that starts
// a review blocks with `drover plan wait`, and each review short of two
// clean ones in a row blocks with the post-review to perform, the files
// to read and write, and `drover plan post-review-done` to report it.
func TestPlanFullLifecycle(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "plan-lifecycle.yaml"))
	p.reviewerCLIOnPath()
	dir := filepath.Join(p.root, ".drover", "plans", "demo-plan")
	sid := newSessionID(t)

	rev := func(file, alias, verdict string) lifecycleReview {
		return lifecycleReview{file: file, alias: alias, apiModel: "claude-" + alias + "-", verdict: verdict}
	}
	type where struct {
		phase, next, task string
		iteration, clean  int
		model             string
		passed            string // drover's message on the allowed stop
		reviewsOf         string // the prompt that names the reviewed work
	}
	runs := []struct {
		prompt, stdout string
		blocks         []string
		reviews        []lifecycleReview
		where          where
	}{
		{
			prompt: "/drover:plan new demo-plan", stdout: "The plan review 3 is done: PASS.",
			blocks: []string{
				"wait plan review 1 opus", "post plan review 1 opus: FAIL, 1 blocking",
				"wait plan review 2 sonnet", "post plan review 2 sonnet: PASS, 0 blocking",
				"wait plan review 3 opus",
			},
			reviews: []lifecycleReview{rev("plan-review-1.md", "opus", "FAIL"), rev("plan-review-2.md", "sonnet", "PASS"), rev("plan-review-3.md", "opus", "PASS")},
			where: where{
				phase: "plan-review", next: "create-tasks", iteration: 3, clean: 2, model: "sonnet",
				passed:    "[drover] The plan review of plan demo-plan passed: 2 clean review(s) in a row (iteration 3; 2 end the cycle). Next: create-tasks.",
				reviewsOf: "Review the plan in " + dir + "/plan.md (plan demo-plan).",
			},
		},
		{
			prompt: "/drover:plan continue", stdout: "The tasks review 2 is done: PASS.",
			blocks: []string{
				"wait tasks review 1 opus", "post tasks review 1 opus: PASS, 0 blocking",
				"wait tasks review 2 sonnet",
			},
			reviews: []lifecycleReview{rev("tasks-review-1.md", "opus", "PASS"), rev("tasks-review-2.md", "sonnet", "PASS")},
			where: where{
				phase: "tasks-review", next: "complete-task", iteration: 2, clean: 2, model: "opus",
				passed:    "[drover] The tasks review of plan demo-plan passed: 2 clean review(s) in a row (iteration 2; 2 end the cycle). Next: complete-task.",
				reviewsOf: "Review the task breakdown of plan demo-plan: " + dir + "/tasks.md and the task files " + dir + "/task-1.md, " + dir + "/task-2.md,",
			},
		},
		{
			prompt: "/drover:plan continue", stdout: "The code review 3 is done: PASS.",
			blocks: []string{
				"wait code review of task 1 1 opus", "post code review of task 1 1 opus: FAIL, 1 blocking",
				"wait code review of task 1 2 sonnet", "post code review of task 1 2 sonnet: PASS, 0 blocking",
				"wait code review of task 1 3 opus",
			},
			reviews: []lifecycleReview{rev("task-1-review-1.md", "opus", "FAIL"), rev("task-1-review-2.md", "sonnet", "PASS"), rev("task-1-review-3.md", "opus", "PASS")},
			where: where{
				phase: "code-review", next: "complete-task", task: "1", iteration: 3, clean: 2, model: "sonnet",
				passed:    "[drover] The code review of task 1 of plan demo-plan passed: 2 clean review(s) in a row (iteration 3; 2 end the cycle). Next: complete-task.",
				reviewsOf: "Review the implementation of task 1 of plan demo-plan: read the plan (" + dir + "/plan.md) and the task (" + dir + "/task-1.md)",
			},
		},
		{
			prompt: "/drover:plan continue", stdout: "The code review 2 is done: PASS.",
			blocks: []string{
				"wait code review of task 2 1 opus", "post code review of task 2 1 opus: PASS, 0 blocking",
				"wait code review of task 2 2 sonnet",
			},
			reviews: []lifecycleReview{rev("task-2-review-1.md", "opus", "PASS"), rev("task-2-review-2.md", "sonnet", "PASS")},
			// No task left: the all-code review is a new cycle, at
			// iteration 0 with the first model.
			where: where{
				phase: "code-review", next: "all-code-review", task: "2", iteration: 0, clean: 0, model: "opus",
				passed:    "[drover] The code review of task 2 of plan demo-plan passed: 2 clean review(s) in a row (iteration 2; 2 end the cycle). Next: all-code-review.",
				reviewsOf: "Review the implementation of task 2 of plan demo-plan: read the plan (" + dir + "/plan.md) and the task (" + dir + "/task-2.md)",
			},
		},
		{
			prompt: "/drover:plan continue", stdout: "The all-code review 2 is done: PASS.",
			blocks: []string{
				"wait all-code review 1 opus", "post all-code review 1 opus: PASS, 0 blocking",
				"wait all-code review 2 sonnet",
			},
			reviews: []lifecycleReview{rev("all-code-review-1.md", "opus", "PASS"), rev("all-code-review-2.md", "sonnet", "PASS")},
			where: where{
				phase: "all-code-review", next: "complete", task: "2", iteration: 2, clean: 2, model: "opus",
				passed:    "[drover] The all-code review of plan demo-plan passed: 2 clean review(s) in a row (iteration 2; 2 end the cycle). Next: complete.",
				reviewsOf: "Review the whole implementation of plan demo-plan across all its tasks: read " + dir + "/plan.md, " + dir + "/tasks.md and the task files " + dir + "/task-1.md, " + dir + "/task-2.md,",
			},
		},
		{
			prompt: "/drover:plan continue", stdout: "The plan is complete.",
			where: where{phase: "complete", task: "2", iteration: 2, clean: 2, model: "opus"},
		},
	}

	var models []string
	for i, run := range runs {
		n := i + 1
		args := []string{"--resume", sid, run.prompt}
		if n == 1 {
			args = []string{"--session-id", sid, run.prompt}
		}
		before := len(p.model.Messages())
		res := p.claude(args...)
		if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != run.stdout {
			t.Fatalf("run %d (%s): exit %d, stdout %q; want 0 and %q", n, run.prompt, res.ExitCode, res.Stdout, run.stdout)
		}
		reqs := since(p.model.Messages(), before)

		// The blocks the agent got: wait for each review, and perform
		// the post-review of each one that did not end the cycle.
		reasons := blockReasons(reqs, sid)
		got := make([]string, len(reasons))
		for j, r := range reasons {
			got[j] = lifecycleBlock(r)
		}
		if !slices.Equal(got, run.blocks) {
			t.Fatalf("run %d: block reasons:\n%q\nwant:\n%q", n, got, run.blocks)
		}
		for j, r := range reasons {
			m := lifecyclePostRE.FindStringSubmatch(r)
			if m == nil {
				if w := "Run `drover plan wait` (it returns when the review is done), then stop again"; !strings.Contains(r, w) {
					t.Errorf("run %d: block %d lacks %q:\n%s", n, j+1, w, r)
				}
				continue
			}
			// Seed 001's names: plan-review-N.md is answered in
			// plan-post-review-N.md, task-T-review-N.md in
			// task-T-post-review-N.md, and so on.
			name := run.reviews[atoi(t, m[2])-1].file
			review := filepath.Join(dir, name)
			post := filepath.Join(dir, strings.Replace(name, "-review-", "-post-review-", 1))
			for _, w := range []string{
				"has been written to " + review + " ",
				"then create " + post + " documenting",
				"run `drover plan post-review-done`, then stop",
				dir + "/state.json is a view that drover writes: read it, do not edit it.",
			} {
				if !strings.Contains(r, w) {
					t.Errorf("run %d: post-review block %d lacks %q:\n%s", n, j+1, w, r)
				}
			}
			// The agent wrote the post-review file the block named.
			if _, err := os.Stat(post); err != nil {
				t.Errorf("run %d: the agent's post-review file: %v", n, err)
			}
		}

		// The reviewers: one request each, a fresh session each, the
		// model alternating from opus at the start of the cycle.
		var revs []fakemodel.Request
		for _, r := range reqs {
			if r.HasTool("StructuredOutput") {
				revs = append(revs, r)
			} else if r.SessionID != sid {
				t.Errorf("run %d: request %d from session %s, neither the agent's nor a reviewer's: %s", n, r.Seq, r.SessionID, r.Summary())
			}
		}
		if len(revs) != len(run.reviews) {
			t.Fatalf("run %d: %d reviewer requests, want %d", n, len(revs), len(run.reviews))
		}
		for j, r := range revs {
			want := run.reviews[j]
			models = append(models, want.alias)
			if !strings.HasPrefix(r.Model, want.apiModel) {
				t.Errorf("run %d: review %d asked model %q, want %s*", n, j+1, r.Model, want.apiModel)
			}
			if r.SessionID == "" || r.SessionID == sid {
				t.Errorf("run %d: review %d ran in session %q; want its own", n, j+1, r.SessionID)
			}
			for _, w := range []string{
				"You are an independent reviewer with no prior context. " + run.where.reviewsOf,
				"drover saves your answer as " + filepath.Join(dir, want.file) + " (",
			} {
				if !strings.Contains(r.LastUserText, w) {
					t.Errorf("run %d: review %d's prompt lacks %q:\n%s", n, j+1, w, r.LastUserText)
				}
			}
			if recheck := strings.Contains(r.LastUserText, "## Re-check, do not start over"); recheck != (j > 0) {
				t.Errorf("run %d: review %d's prompt holds a re-check: %t", n, j+1, recheck)
			}
			body := readFile(t, filepath.Join(dir, want.file))
			for _, w := range []string{"Reviewer: " + want.alias + " (independent, no prior context)", "Verdict: " + want.verdict} {
				if !strings.Contains(body, w) {
					t.Errorf("%s lacks %q:\n%s", want.file, w, body)
				}
			}
		}
		if len(run.reviews) > 0 {
			last := run.reviews[len(run.reviews)-1].file
			next := strings.TrimSuffix(last, fmt.Sprint(len(run.reviews))+".md") + fmt.Sprint(len(run.reviews)+1) + ".md"
			mustNotExist(t, filepath.Join(dir, next))
		}

		// Where the plan stands after the run.
		w := run.where
		st := p.planStatus(sid)
		if st.PlanID != "demo-plan" || st.Phase != w.phase || deref(st.NextPhase) != orNull(w.next) || deref(st.CurrentTask) != orNull(w.task) ||
			st.PhaseIteration != w.iteration || st.ConsecutiveClean != w.clean || st.ReviewModel != w.model || st.MaxReviews != 8 ||
			st.ReviewRunning || st.Standalone || st.TDD {
			t.Errorf("run %d: plan status %+v (next %s, task %s); want phase %s, next %s, task %s, iteration %d, %d clean, next model %s, max 8",
				n, st, deref(st.NextPhase), deref(st.CurrentTask), w.phase, orNull(w.next), orNull(w.task), w.iteration, w.clean, w.model)
		}
		if w.passed != "" && !strings.Contains(p.transcript(sid), w.passed) {
			t.Errorf("run %d: the transcript lacks drover's message %q", n, w.passed)
		}
	}

	// Every cycle started with opus and alternated, in the order the
	// model server received the reviewers' requests.
	want := []string{"opus", "sonnet", "opus", "opus", "sonnet", "opus", "sonnet", "opus", "opus", "sonnet", "opus", "sonnet"}
	if !slices.Equal(models, want) {
		t.Errorf("reviewer models %q, want %q", models, want)
	}

	// The plan folder: every file seed 001 names, drover's reviews and the
	// agent's post-reviews, and the final state.json.
	for _, name := range []string{
		"plan.md", "tasks.md", "task-1.md", "task-2.md",
		"plan-review-1.md", "plan-post-review-1.md", "plan-review-2.md", "plan-post-review-2.md", "plan-review-3.md",
		"tasks-review-1.md", "tasks-post-review-1.md", "tasks-review-2.md",
		"task-1-review-1.md", "task-1-post-review-1.md", "task-1-review-2.md", "task-1-post-review-2.md", "task-1-review-3.md",
		"task-2-review-1.md", "task-2-post-review-1.md", "task-2-review-2.md",
		"all-code-review-1.md", "all-code-post-review-1.md", "all-code-review-2.md",
	} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("plan folder: %v", err)
		}
	}
	for _, name := range []string{"plan-post-review-3.md", "tasks-post-review-2.md", "task-1-post-review-3.md", "task-2-post-review-2.md", "all-code-post-review-2.md"} {
		mustNotExist(t, filepath.Join(dir, name))
	}
	for _, c := range []struct{ file, has string }{
		{"plan-review-1.md", "The plan never says how the unicode lexer is tested"},
		{"task-1-review-1.md", "`feature-1.txt:1`: Task 1 has no test for multi-byte runes"},
	} {
		if body := readFile(t, filepath.Join(dir, c.file)); !strings.Contains(body, c.has) {
			t.Errorf("%s does not name the blocking finding %q:\n%s", c.file, c.has, body)
		}
	}
	var view struct {
		PlanID           string  `json:"plan_id"`
		Phase            string  `json:"phase"`
		NextPhase        *string `json:"next_phase"`
		CurrentTask      *string `json:"current_task"`
		PhaseIteration   int     `json:"phase_iteration"`
		MaxReviews       int     `json:"max_reviews"`
		ReviewModel      string  `json:"review_model"`
		ConsecutiveClean int     `json:"consecutive_clean"`
		TDD              bool    `json:"tdd"`
		ReviewRunning    bool    `json:"review_running"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "state.json"))), &view); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if view.PlanID != "demo-plan" || view.Phase != "complete" || view.NextPhase != nil || deref(view.CurrentTask) != "2" || view.PhaseIteration != 2 ||
		view.MaxReviews != 8 || view.ReviewModel != "opus" || view.ConsecutiveClean != 2 || view.TDD || view.ReviewRunning {
		t.Errorf("state.json %+v (next %s, task %s); want phase complete, next_phase null, task 2, iteration 2, max 8, model opus, 2 clean, no tdd, no review running",
			view, deref(view.NextPhase), deref(view.CurrentTask))
	}
	if got := p.git("log", "-1", "--format=%s"); got != "post-review: all-code review 1" {
		t.Errorf("the last commit is %q, want the all-code post-review's", got)
	}
}

// orNull is what deref prints for an empty field.
func orNull(s string) string {
	if s == "" {
		return "<null>"
	}
	return s
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q is not a number: %v", s, err)
	}
	return n
}
