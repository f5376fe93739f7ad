package plan

import (
	"strings"
	"testing"

	"github.com/drover-dev/drover/reviewer"
)

// TestReviewFile pins the review file drover writes from a reviewer's
// answer (the reviewer's own review, then the findings; the tool calls its
// CLI refused it, if any) and what the stop that applies the answer says,
// where the agent and the user hear of those refusals.
func TestReviewFile(t *testing.T) {
	const review = "I read plan.md, task-1.md and config.go, and ran `go test ./...`: it passes.\n\nThe config is read in one place, as the task asks, but the error from Open is dropped:\n\n```go\nf, _ := os.Open(path)\n```"
	goTest := []reviewer.Denial{{Tool: "Bash", Input: "go test ./..."}}
	tests := []struct {
		name   string
		s      State
		answer ReviewOutcome
		mods   []func(*Facts)
	}{
		{
			name:   "the reviewer's review then the findings",
			s:      st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")),
			answer: ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fail.Findings, Review: "\n" + review + "\n\n"},
		},
		{
			name:   "a clean review with its write-up",
			s:      st(phase(PhaseNewPlan, PhasePlanReview)),
			answer: ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Review: "The plan names every file it changes and how each is tested."},
		},
		{
			name:   "a write-up cut inside a code block",
			s:      st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")),
			answer: ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fail.Findings[:1], Review: "The loop is wrong:\n\n```go\nfor i := 0; i <= n; i++ {..."},
		},
		{
			name:   "no write-up",
			s:      st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")),
			answer: ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fail.Findings},
		},
		{
			name: "refused tool calls",
			s:    st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")),
			answer: ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fail.Findings, Review: "I could not run the tests.", Denials: []reviewer.Denial{
				{Tool: "Bash", Input: "go test ./..."},
				{Tool: "Bash", Input: "echo `date`"},
				{Tool: "mcp__db__query"},
			}},
		},
		{
			name:   "refused tool calls on the review that passes the cycle",
			s:      st(phase(PhasePostPlanReview, PhasePlanReview), iter(1), model(1), clean(1)),
			answer: ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Review: "Still fine.", Denials: goTest},
		},
		{
			name:   "a parallel review",
			s:      st(phase(PhaseNewPlan, PhasePlanReview)),
			answer: ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Reviewers: 2, PassVotes: 1, Findings: fail.Findings[:1], Review: "### opus\n\nLooks complete.\n\n### sonnet\n\nThe plan has no test section."},
			mods:   []func(*Facts){models("opus", "sonnet"), func(f *Facts) { f.Parallel = true }},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := stop(t, tt.s, facts(tt.mods...), &tt.answer)
			w, ok := find[WriteReview](r.effects)
			if !ok {
				t.Fatalf("no review file written: %+v", r.effects)
			}
			var b strings.Builder
			b.WriteString("=== " + strings.TrimPrefix(w.Path, planDir+"/") + " ===\n")
			b.Write(w.Data)
			b.WriteString("=== the stop ===\n")
			b.WriteString(formatOutput(r.out))
			golden(t, b.String())
		})
	}
}

// TestReviewFailedWithDenials: a run that gave no verdict after its CLI
// refused it tool calls says so beside the failure.
func TestReviewFailedWithDenials(t *testing.T) {
	o := failedRun("reviewer: the CLI reported an error: subtype \"error_max_turns\"")
	o.Denials = []reviewer.Denial{{Tool: "Bash", Input: "go test ./..."}}
	r := stop(t, st(phase(PhaseNewPlan, PhasePlanReview)), facts(), o)
	if r.out.IsBlock() || !strings.Contains(r.out.SystemMessage, "did not produce a verdict") ||
		!strings.Contains(r.out.SystemMessage, "refused it 1 tool call(s) (`Bash` `go test ./...`)") {
		t.Errorf("stop after a failed run with a refused call:\n%s", formatOutput(r.out))
	}
}

// TestReviewerMissing: with a reviewer CLI that cannot start, a stop that
// would start a review allows instead, says which CLI and which config key,
// and leaves no review in flight; a review in flight that was lost (a
// restart) is dropped the same way, and not started again on resume.
func TestReviewerMissing(t *testing.T) {
	missing := func(f *Facts) {
		f.ReviewerMissing = &MissingReviewer{Command: "claude", Key: "review.cli", Reason: "executable file not found in $PATH"}
	}
	lost := func(s *State) {
		s.Review = &InFlight{Kind: KindCode, Iteration: 1, Model: "opus", Task: "1", Head: "abc123"}
	}
	tests := []struct {
		name string
		s    State
		f    Facts
	}{
		{"plan review", st(phase(PhaseNewPlan, PhasePlanReview)), facts(missing)},
		{"code review", st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts(missing)},
		{"a custom reviewer", st(phase(PhasePostTasksReview, PhaseTasksReview), iter(1), model(1)), facts(func(f *Facts) {
			f.ReviewerMissing = &MissingReviewer{Command: "./tools/reviewer", Key: "review.command", Reason: "no such file or directory"}
		})},
		{"a lost review in flight", st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), lost), facts(missing)},
		{"a broken folder still blocks", st(phase(PhaseNewPlan, PhasePlanReview)), facts(missing, addFiles("notes.md"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, out, effects, err := Stop(tt.s, tt.f, tm)
			if err != nil {
				t.Fatal(err)
			}
			checkEffects(t, next, tt.f, effects)
			if _, started := find[StartReview](effects); started || next.Review != nil {
				t.Errorf("a review started or stays in flight: %+v, %+v", effects, next.Review)
			}
			if next.Iteration != tt.s.Iteration || next.NextPhase != tt.s.NextPhase || next.ModelIndex != tt.s.ModelIndex {
				t.Errorf("the plan moved: %s, was %s", formatState(next), formatState(tt.s))
			}
			if strings.Contains(out.Reason, "is running") {
				t.Errorf("the agent is told a reviewer runs:\n%s", out.Reason)
			}
			golden(t, formatState(next)+"\n"+formatOutput(out))

			// Resuming after a restart starts no reviewer either.
			pending, err := Pending(tt.s, tt.f, tm)
			if err != nil {
				t.Fatal(err)
			}
			if _, started := find[StartReview](pending); started {
				t.Errorf("Pending starts a reviewer that cannot start: %+v", pending)
			}
		})
	}
}
