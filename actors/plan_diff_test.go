package actors

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// git runs git in the fixture's root, failing the test on an error.
func (f *planFixture) git(args ...string) {
	f.t.Helper()
	mustGit(f.t, f.root, args...)
}

// mustGit runs git in dir with a committer name, failing tb on an error.
func mustGit(tb testing.TB, dir string, args ...string) {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// The re-check diff a reviewer gets holds what is under review and none
// of drover's bookkeeping: a project that commits its plan folders (as
// the post-review instructions ask) changes state.json, reviews.jsonl and
// the review files between two reviews, and other plans change too.
func TestRecheckDiffHoldsOnlyWhatIsUnderReview(t *testing.T) {
	tests := []struct {
		name string
		// start begins the plan in session sid, with its next review
		// due at the next stop.
		start func(f *planFixture, sid string)
		// post is the post-review phase advanced to after review 1.
		post     string
		keep     []string
		leaveOut []string
	}{
		{
			name: "plan review",
			start: func(f *planFixture, sid string) {
				f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
			},
			post:     "post-review",
			keep:     []string{"plans/demo/plan.md", "a second step", "plans/demo/task-1.md", "a sharper task"},
			leaveOut: []string{"state.json", "reviews.jsonl", "plan-review-1.md", "post-review-1.md", "plans/other/", "main.go"},
		},
		{
			name: "code review",
			start: func(f *planFixture, sid string) {
				f.write("demo", plan.ViewFile, `{"phase":"complete-task","next_phase":"code-review","current_task":"1","phase_iteration":0,"max_reviews":8,"review_model":"opus","consecutive_clean":0,"tdd":false}`)
				f.mustPlan(sid, "continue", api.PlanArgs{PlanID: "demo"})
			},
			post:     "post-code-review",
			keep:     []string{"main.go", "func main"},
			leaveOut: []string{".drover", "state.json", "reviews.jsonl", "review-1.md", "plans/other/", "a second step", "a sharper task"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixture(t)
			const sid = "plan-diff"
			f.git("init", "-q", "-b", "main")
			f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n")
			f.write("demo", "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | first |\n")
			f.write("demo", "task-1.md", "# Task 1\n")
			f.write("other", "plan.md", "# Other\n")
			if err := os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.start(f, sid)
			f.git("add", "-A")
			f.git("commit", "-q", "-m", "plan")
			f.fakeScript("verdicts", "FAIL\nPASS\n")

			if r := f.stop(sid, "stop-1"); !r.Output.IsBlock() {
				t.Fatalf("first stop: %+v", r)
			}
			f.waitReview(sid)
			if r := f.stop(sid, "stop-2"); !strings.Contains(r.Output.Reason, "post-review-done") {
				t.Fatalf("stop after review 1: %+v", r)
			}
			// The post-review: the plan changes, and everything is
			// committed, drover's files with it; meanwhile another plan
			// and the code change too.
			f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n\nThen a second step.\n")
			f.write("demo", "task-1.md", "# Task 1\n\nWith a sharper task.\n")
			f.write("demo", "plan-post-review-1.md", "Added a second step.\n")
			f.write("demo", "task-1-post-review-1.md", "Added a second step.\n")
			f.write("other", "plan.md", "# Other\n\nChanged.\n")
			if err := os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f.git("add", "-A")
			f.git("commit", "-q", "-m", "post-review 1")
			f.mustPlan(sid, "advance", api.PlanArgs{Phase: tc.post})
			if r := f.stop(sid, "stop-3"); !r.Output.IsBlock() {
				t.Fatalf("stop-3 did not start review 2: %+v", r)
			}
			f.waitReview(sid)

			prompt := f.fakeFile("prompt-2")
			if !strings.Contains(prompt, "not the first review") {
				t.Fatalf("review 2's prompt is not a re-check:\n%s", prompt)
			}
			for _, s := range tc.keep {
				if !strings.Contains(prompt, s) {
					t.Errorf("the re-check diff lacks %q:\n%s", s, prompt)
				}
			}
			i := strings.Index(prompt, "diff --git")
			if i < 0 {
				t.Fatalf("review 2's prompt has no diff:\n%s", prompt)
			}
			diff := prompt[i:]
			for _, s := range tc.leaveOut {
				if strings.Contains(diff, s) {
					t.Errorf("the re-check diff holds %q:\n%s", s, diff)
				}
			}
		})
	}
}
