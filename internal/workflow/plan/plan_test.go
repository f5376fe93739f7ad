package plan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

func TestStopReviewInFlight(t *testing.T) {
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1))
	next, out, effects, err := Stop(s, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	started, ok := find[StartReview](effects)
	if !ok || next.Review == nil || !out.IsBlock() {
		t.Fatalf("the review did not start: %+v %s", next.Review, out.Kind())
	}

	// Still running: wait, change nothing, start nothing.
	again, out2, effects2, err := Stop(next, facts(func(f *Facts) { f.ReviewInFlight = true; f.View = View(next, nil) }), tm)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, next) || out2 != out || len(effects2) != 0 {
		t.Errorf("a stop while the review runs changed %s / %s / %v", formatState(again), out2.Kind(), effects2)
	}

	// Lost (the supervisor restarted): started again, same iteration and model.
	again, out3, effects3, err := Stop(next, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	restarted, ok := find[StartReview](effects3)
	if !ok || !reflect.DeepEqual(restarted, started) || !reflect.DeepEqual(again, next) || !out3.IsBlock() {
		t.Errorf("a lost review was not restarted as it was: %+v vs %+v", restarted, started)
	}
}

// TestStopHookActiveDoesNotStopReviews: the review loop is bounded by
// max_reviews, so stop_hook_active (set on every stop after a block) must not
// end it, or the loop would never get past the first post-review.
func TestStopHookActiveDoesNotStopReviews(t *testing.T) {
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1))
	r := stop(t, s, facts(hookActive), fail)
	if r.started == nil || !r.out.IsBlock() || r.state.Iteration != 2 {
		t.Fatalf("with stop_hook_active: started %v, %s, %s", r.started != nil, r.out.Kind(), formatState(r.state))
	}
}

func TestAllCodeReviewAfterTheLastTask(t *testing.T) {
	lastTask := tasksMD("| Id | Status |\n|---|---|\n| 1 | done |\n| 2 | Done ✅ |\n| 3 | in progress |\n")
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("3"), iter(3), model(3), clean(1))
	s.Ledger.Add(3, []reviewer.Finding{{Severity: "minor", Summary: "old"}})
	r := stop(t, s, facts(lastTask), pass)
	want := st(phase(PhaseCodeReview, PhaseAllCodeReview), task("3"))
	if formatState(r.state) != formatState(want) || r.state.Ledger.Cycle != s.Ledger.Cycle+1 || len(r.state.Ledger.Findings) != 0 || r.state.ReviewHead != "" {
		t.Fatalf("after the last task: %s ledger %+v, want %s in a new cycle", formatState(r.state), r.state.Ledger, formatState(want))
	}
	// The message counts the clean reviews of the cycle that passed, not
	// those of the new one.
	if r.out.IsBlock() || !strings.Contains(r.out.SystemMessage, "passed: 2 clean review(s) in a row (iteration 4; 2 end the cycle). Next: all-code-review.") {
		t.Errorf("output %s", formatOutput(r.out))
	}
	// The next stop starts the all-code review, strongest model first.
	r = stop(t, r.state, facts(lastTask), fail)
	if r.started == nil || r.started.Kind != KindAllCode || r.started.Iteration != 1 || r.started.Model != "opus" {
		t.Fatalf("all-code review: %+v", r.started)
	}
	if strings.Contains(r.started.Prompt, "Re-check") {
		t.Error("the first review of a new cycle was asked to re-check")
	}
}

func TestTDDVariantIsKept(t *testing.T) {
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1), clean(1), tdd)
	if r := stop(t, s, facts(), pass); r.state.NextPhase != PhaseCompleteTaskTDD {
		t.Errorf("code review: next %s, want complete-task-tdd", r.state.NextPhase)
	}
	s = st(phase(PhasePostTasksReview, PhaseTasksReview), iter(1), model(1), clean(1), tdd)
	if r := stop(t, s, facts(), pass); r.state.NextPhase != PhaseCompleteTaskTDD {
		t.Errorf("tasks review: next %s, want complete-task-tdd", r.state.NextPhase)
	}
}

func TestMaxReviewsZeroThroughTheEnd(t *testing.T) {
	last := tasksMD("| Id | Status |\n|---|---|\n| 1 | done |\n")
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), maxRev(0))
	r := stop(t, s, facts(last), nil)
	if r.started != nil || r.state.NextPhase != PhaseAllCodeReview {
		t.Fatalf("code review skipped to %s (started %v)", r.state.NextPhase, r.started != nil)
	}
	r = stop(t, r.state, facts(last), nil)
	if r.started != nil || r.state.NextPhase != PhaseComplete || r.state.Phase != PhaseAllCodeReview {
		t.Fatalf("all-code review skipped to %s", formatState(r.state))
	}
	n, route, _, err := Next(r.state, facts(last), tm)
	if err != nil || route.Action != ActionDone || n.Phase != PhaseComplete || n.NextPhase != PhaseNone {
		t.Fatalf("next after the last skip: %s %s %v", formatState(n), route.Action, err)
	}
}

func TestModelResetsAtEachNewCycle(t *testing.T) {
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(2), model(2), clean(1))
	r := stop(t, s, facts(), pass) // second clean: advance to the next task
	if r.state.NextPhase != PhaseCompleteTask || r.state.ModelIndex != 3 {
		t.Fatalf("after the cycle: %s", formatState(r.state))
	}
	n, _, err := CompleteTask(r.state, facts(), tm, "2", false)
	if err != nil {
		t.Fatal(err)
	}
	r = stop(t, n, facts(), fail)
	if r.started.Model != "opus" || r.started.Iteration != 1 || r.started.ReviewFile != planDir+"/task-2-review-1.md" {
		t.Errorf("the new cycle's first review: %+v", r.started)
	}
}

// TestRecheckFromTheSecondReview: each review after the first is asked to
// re-check the previous findings and the diff since, not the world.
func TestRecheckFromTheSecondReview(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	r := stop(t, s, facts(func(f *Facts) { f.Head = "c1" }), fail)
	if strings.Contains(r.started.Prompt, "Re-check") {
		t.Error("the first review was asked to re-check")
	}
	if r.state.ReviewHead != "c1" {
		t.Errorf("ReviewHead %q, want the head at the start of the answered review", r.state.ReviewHead)
	}
	s, _, err := PostReviewDone(r.state, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	r = stop(t, s, facts(func(f *Facts) { f.Head = "c2"; f.DiffSinceReview = "+\tif err != nil { return err }" }), pass)
	for _, want := range []string{"Re-check", "[blocking] config.go:42: the error from Open is ignored", "[minor] config.go: name the constant", "+\tif err != nil { return err }"} {
		if !strings.Contains(r.started.Prompt, want) {
			t.Errorf("second prompt lacks %q:\n%s", want, r.started.Prompt)
		}
	}
	golden(t, r.started.Prompt+"\n")
}

// TestConvergesOnRandomNits: a reviewer that keeps finding random minor nits
// (and says FAIL) ends the cycle in the minimum of two reviews under the
// default policy, and never under strict counting.
func TestConvergesOnRandomNits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nits := func() *ReviewOutcome {
		var fs []reviewer.Finding
		for i := range 1 + rng.IntN(4) {
			fs = append(fs, reviewer.Finding{Severity: "minor", File: fmt.Sprintf("f%d.go", rng.IntN(5)), Summary: fmt.Sprintf("nit %d-%d", i, rng.IntN(100))})
		}
		return &ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fs}
	}
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			f := facts(func(f *Facts) { f.StrictReviews = strict })
			s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
			reviews := 0
			for s.NextPhase == PhaseCodeReview {
				r := stop(t, s, f, nits())
				if r.started == nil {
					break // the limit
				}
				reviews++
				if r.out.IsBlock() {
					var err error
					if s, _, err = PostReviewDone(r.state, f, tm); err != nil {
						t.Fatal(err)
					}
					continue
				}
				s = r.state
			}
			want, next := 2, PhaseCompleteTask
			if strict {
				want, next = 8, PhaseCodeReview
			}
			if reviews != want || s.NextPhase != next {
				t.Fatalf("%d reviews, next %s; want %d, %s", reviews, s.NextPhase, want, next)
			}
		})
	}
}

func TestHardStop(t *testing.T) {
	s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(8), model(8))
	// A broken folder still blocks at the hard stop (seed step 6).
	r := stop(t, s, facts(addFiles("notes.md")), nil)
	if !r.out.IsBlock() || !strings.Contains(r.out.Reason, "Invalid filename: notes.md") || !strings.Contains(r.out.SystemMessage, "limit of 8") {
		t.Errorf("hard stop with a broken folder: %s", formatOutput(r.out))
	}
	// The user raises the limit: the next stop reviews again.
	n, _, err := SetMaxReviews(s, facts(), tm, 10)
	if err != nil {
		t.Fatal(err)
	}
	r = stop(t, n, facts(), fail)
	if r.started == nil || r.started.Iteration != 9 {
		t.Fatalf("after raising the limit: %+v", r.started)
	}
}

func TestStopTemplateErrorChangesNothing(t *testing.T) {
	cases := []struct {
		s State
		f Facts
	}{
		{st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts()},
		{st(phase(PhaseNextTask, PhaseNone)), facts(files("x.md"))},
		{st(phase(PhaseNextTask, PhaseNone)), facts(viewOf("garbage"))},
		{st(phase(PhaseNextTask, PhaseNone)), facts(noDir)},
		{st(phase(PhaseCompleteTask, PhaseCodeReview), maxRev(0)), facts()},
	}
	for i, c := range cases {
		got, out, effects, err := Stop(c.s, c.f, templates.Set{})
		if err == nil {
			t.Errorf("case %d: no error with an empty template set (%s)", i, out.Kind())
		}
		if !reflect.DeepEqual(got, c.s) || effects != nil {
			t.Errorf("case %d: on error the state became %s with effects %v", i, formatState(got), effects)
		}
	}
}

func TestStopUsesOverrides(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "plan_review_code.md"), []byte("MY REVIEW of {{task}} into {{review_file}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	over, err := templates.Load(d)
	if err != nil {
		t.Fatal(err)
	}
	_, _, effects, err := Stop(st(phase(PhaseCompleteTask, PhaseCodeReview), task("2")), facts(), over)
	if err != nil {
		t.Fatal(err)
	}
	sr, _ := find[StartReview](effects)
	if sr.Prompt != "MY REVIEW of 2 into "+planDir+"/task-2-review-1.md" {
		t.Errorf("prompt %q", sr.Prompt)
	}
}

func TestView(t *testing.T) {
	s := st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(3), model(3), clean(1), tdd)
	s.Review = &InFlight{Kind: KindCode, Iteration: 4}
	golden(t, string(View(s, nil)))
	if problem, err := CheckView(View(State{}, nil), tm); problem != "" || err != nil {
		t.Errorf("the view of an empty state is not valid: %q %v", problem, err)
	}
}

func TestOutcomeOf(t *testing.T) {
	r := InFlight{Kind: KindCode, Iteration: 3, Model: "sonnet", Task: "2"}
	o := OutcomeOf(r, reviewer.Result{Outcome: reviewer.Fail, Verdict: "FAIL", CostUSD: 0.5, Findings: fail.Findings}, "/x.log")
	if o.Kind != KindCode || o.Iteration != 3 || o.Model != "sonnet" || o.Verdict != "FAIL" || o.Err != "" || o.LogPath != "" || len(o.Findings) != 2 {
		t.Errorf("pass-through: %+v", o)
	}
	o = OutcomeOf(r, reviewer.Result{Outcome: reviewer.Failed, Err: fmt.Errorf("boom")}, "/x.log")
	if o.Outcome != reviewer.Failed || o.Err != "boom" || o.LogPath != "/x.log" {
		t.Errorf("failure: %+v", o)
	}
	if o := OutcomeOf(r, reviewer.Result{}, ""); o.Outcome != reviewer.Failed {
		t.Errorf("a zero result is %q, want failed", o.Outcome)
	}
}

// TestCleanStreak: review.clean_streak sets how many clean reviews in a row
// end a cycle.
func TestCleanStreak(t *testing.T) {
	cases := []struct {
		name   string
		streak int
		want   int // clean reviews until the plan advances
	}{
		{"default is two", 0, 2},
		{"one", 1, 1},
		{"two", 2, 2},
		{"three", 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := facts(func(f *Facts) { f.CleanStreak = c.streak })
			s := st(phase(PhaseNewPlan, PhasePlanReview))
			reviews := 0
			for s.NextPhase == PhasePlanReview || s.NextPhase == PhasePostPlanReview {
				if s.NextPhase == PhasePostPlanReview {
					var err error
					if s, _, err = PostReviewDone(s, f, tm); err != nil {
						t.Fatal(err)
					}
					continue
				}
				r := stop(t, s, f, pass)
				if r.started == nil {
					t.Fatalf("no review started at %s", formatState(s))
				}
				reviews++
				s = r.state
				if reviews > 10 {
					t.Fatal("the cycle does not end")
				}
			}
			if reviews != c.want || s.NextPhase != PhaseCreateTasks {
				t.Errorf("clean_streak %d: %d clean reviews, next %s; want %d, create-tasks", c.streak, reviews, s.NextPhase, c.want)
			}
		})
	}
}

// TestParallelUnanimousPass: a clean review that several reviewers at once
// all passed is the whole clean streak; anything less counts as one review.
func TestParallelUnanimousPass(t *testing.T) {
	minorOnly := []reviewer.Finding{{Severity: "minor", Summary: "a nit"}}
	cases := []struct {
		name      string
		streak    int
		answer    ReviewOutcome
		wantClean int
		advance   bool
	}{
		{"all of two pass", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 2, PassVotes: 2}, 2, true},
		{"all of three pass, streak 3", 3, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 3, PassVotes: 3}, 3, true},
		{"all pass with minor nits", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 2, PassVotes: 2, Findings: minorOnly}, 2, true},
		{"majority pass is one review", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 3, PassVotes: 2}, 1, false},
		{"one reviewer failed to run", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 2, PassVotes: 1}, 1, false},
		{"a single reviewer is one review", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 1, PassVotes: 1}, 1, false},
		{"all pass but a blocking finding", 0, ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS", Reviewers: 2, PassVotes: 2, Findings: fail.Findings}, 0, false},
		{"all fail", 0, ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Reviewers: 2, PassVotes: 0, Findings: fail.Findings}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := facts(func(f *Facts) { f.CleanStreak = c.streak })
			r := stop(t, st(phase(PhaseNewPlan, PhasePlanReview)), f, &c.answer)
			if c.advance {
				if r.state.NextPhase != PhaseCreateTasks || r.out.IsBlock() {
					t.Fatalf("did not advance: %s, %s", formatState(r.state), formatOutput(r.out))
				}
				return
			}
			if r.state.NextPhase != PhasePostPlanReview || r.state.ConsecutiveClean != c.wantClean {
				t.Errorf("got %s; want post-plan-review with consecutive_clean %d", formatState(r.state), c.wantClean)
			}
		})
	}
}

// TestPlanBudget: once the plan's reviewer runs cost its budget, no review
// starts and the stop is allowed with a message naming budget and spend.
func TestPlanBudget(t *testing.T) {
	cases := []struct {
		name   string
		budget float64
		spent  float64
		starts bool
	}{
		{"no budget", 0, 100, true},
		{"under budget", 0.9, 0.5, true},
		{"budget reached", 1, 1, false},
		{"budget passed", 0.9, 1.0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(2), model(2))
			s.BudgetUSD = c.budget
			r := stop(t, s, facts(func(f *Facts) { f.SpentUSD = c.spent }), nil)
			if c.starts {
				if r.started == nil || !r.out.IsBlock() {
					t.Fatalf("the review did not start: %s", formatOutput(r.out))
				}
				return
			}
			if r.started != nil || r.out.IsBlock() || r.state.Review != nil {
				t.Fatalf("a review started past the budget: %s", formatOutput(r.out))
			}
			want := fmt.Sprintf("budget of $%.2f is spent ($%.2f so far)", c.budget, c.spent)
			if !strings.Contains(r.out.SystemMessage, want) || r.state.NextPhase != PhaseCodeReview || r.state.Iteration != 2 {
				t.Errorf("past the budget: %s, %s; want a message with %q and the plan unchanged", formatState(r.state), formatOutput(r.out), want)
			}
		})
	}
}

// TestViewCarriesTheBudget: state.json shows a plan budget, and only when
// there is one (views of plans without a budget stay as they were).
func TestViewCarriesTheBudget(t *testing.T) {
	s := st(phase(PhaseNewPlan, PhasePlanReview))
	if strings.Contains(string(View(s, nil)), "budget_usd") {
		t.Errorf("a view without a budget names one:\n%s", View(s, nil))
	}
	s.BudgetUSD = 2.5
	v := View(s, nil)
	if !strings.Contains(string(v), `"budget_usd": 2.5`) || !validView(v) {
		t.Errorf("the view of a plan with a budget:\n%s", v)
	}
}

// TestPastCycleLedgers checks that a cycle's findings outlive it, labelled
// with what the cycle reviewed, while a cycle without findings leaves
// nothing behind and the oldest go past MaxPastLedgers.
func TestPastCycleLedgers(t *testing.T) {
	f := facts()
	review := func(s State, answer *ReviewOutcome) State {
		t.Helper()
		r := stop(t, s, f, answer)
		if _, ok := r.state.NextPhase.PostReviewKind(); !ok {
			return r.state
		}
		n, _, err := PostReviewDone(r.state, f, tm)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Plan cycle (1): FAIL, then two clean reviews.
	s := st(phase(PhaseNewPlan, PhasePlanReview))
	for _, a := range []*ReviewOutcome{fail, pass, pass} {
		s = review(s, a)
	}
	if s.NextPhase != PhaseCreateTasks || len(s.PastLedgers) != 0 {
		t.Fatalf("after the plan cycle: %s, past %+v", formatState(s), s.PastLedgers)
	}
	s, _, err := CreateTasks(s, f, tm)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PastLedgers) != 1 || s.Ledger.Cycle != 2 || len(s.Ledger.Findings) != 0 || s.LedgerKind != "" {
		t.Fatalf("after create-tasks: cycle %d, ledger %+v, past %+v", s.Ledger.Cycle, s.Ledger, s.PastLedgers)
	}
	p := s.PastLedgers[0]
	if p.Kind != KindPlan || p.Task != "" || p.Ledger.Cycle != 1 || len(p.Ledger.Findings) != 2 || p.Ledger.Latest != 3 || len(p.Ledger.Open()) != 0 {
		t.Errorf("plan cycle's ledger: %+v", p)
	}

	// Tasks cycle (2): clean at once, so nothing is kept.
	s = review(review(s, pass), pass)
	if s, _, err = CompleteTask(s, f, tm, "1", false); err != nil {
		t.Fatal(err)
	}
	if len(s.PastLedgers) != 1 {
		t.Fatalf("a cycle without findings was kept: %+v", s.PastLedgers)
	}
	// Code cycle of task 1 (3): FAIL, then clean.
	for _, a := range []*ReviewOutcome{fail, pass, pass} {
		s = review(s, a)
	}
	if s, _, err = CompleteTask(s, f, tm, "2", false); err != nil {
		t.Fatal(err)
	}
	if len(s.PastLedgers) != 2 || s.PastLedgers[1].Kind != KindCode || s.PastLedgers[1].Task != "1" || s.PastLedgers[1].Ledger.Cycle != 3 {
		t.Errorf("code cycle's ledger: %+v", s.PastLedgers)
	}

	// The oldest go first past the cap.
	for i := range MaxPastLedgers {
		s.Ledger = reviewer.Ledger{Cycle: 100 + i}
		s.Ledger.Add(1, fail.Findings)
		s = newCycle(s)
	}
	if len(s.PastLedgers) != MaxPastLedgers || s.PastLedgers[0].Ledger.Cycle != 100 {
		t.Errorf("%d past ledgers, oldest cycle %d", len(s.PastLedgers), s.PastLedgers[0].Ledger.Cycle)
	}
}

// TestParallelAnswerNamesEveryReviewer: a parallel review's answer comes
// from all the models that ran at once, so the review file and the block
// message name them all, not the model the alternation would have picked.
func TestParallelAnswerNamesEveryReviewer(t *testing.T) {
	in := InFlight{Kind: KindPlan, Iteration: 1, Model: "opus"}
	s := st(phase(PhaseNewPlan, PhasePlanReview))
	s.Review = &in
	o := OutcomeOf(in, reviewer.Result{Model: "opus,sonnet,haiku", Outcome: reviewer.Fail, Verdict: "FAIL", Findings: fail.Findings}, "")
	if o.Model != "opus,sonnet,haiku" {
		t.Fatalf("OutcomeOf().Model = %q, want the models that ran", o.Model)
	}
	o.Reviewers, o.PassVotes = 3, 1
	f := facts()
	f.Review = &o
	_, out, effects, err := Stop(s, f, tm)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := find[WriteReview](effects)
	if !ok {
		t.Fatal("no review file written")
	}
	if !strings.Contains(string(w.Data), "Reviewer: opus,sonnet,haiku") {
		t.Errorf("review file does not name every reviewer:\n%s", w.Data)
	}
	if !strings.Contains(out.Reason, "opus,sonnet,haiku: FAIL") {
		t.Errorf("block message does not name every reviewer: %s", out.Reason)
	}
}

// TestSavedAnswerIsGivenOnce: an Answer saved with the state is the next
// stop's answer, given once; a command that changes the plan drops it.
func TestSavedAnswerIsGivenOnce(t *testing.T) {
	answer := hook.Block("read plan-review-1.md")
	s := st(phase(PhasePlanReview, PhasePostPlanReview), iter(1), model(1))
	s.Answer = &answer
	next, out, _, err := Stop(s, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	if out != answer || next.Answer != nil {
		t.Fatalf("first stop: %s, answer left %v", formatOutput(out), next.Answer)
	}
	if _, out, _, _ := Stop(next, facts(), tm); out.IsBlock() {
		t.Errorf("the answer was given twice: %s", formatOutput(out))
	}

	if kept := DropAnswer(s, s); kept.Answer == nil {
		t.Error("DropAnswer dropped the answer of an unchanged plan")
	}
	moved := s
	moved.Phase, moved.NextPhase = PhasePostPlanReview, PhasePlanReview
	if dropped := DropAnswer(s, moved); dropped.Answer != nil {
		t.Error("DropAnswer kept the answer of a plan that moved on")
	}
}

// TestParallelWaitNamesEveryReviewer: while a parallel review runs, the
// agent is told that all the models review, not only the first.
func TestParallelWaitNamesEveryReviewer(t *testing.T) {
	f := facts(models("opus", "sonnet", "haiku"), func(f *Facts) { f.Parallel = true })
	r := stop(t, st(phase(PhaseNewPlan, PhasePlanReview)), f, nil)
	if r.started == nil || !strings.Contains(r.out.Reason, "(opus,sonnet,haiku)") {
		t.Errorf("parallel review wait: %s", formatOutput(r.out))
	}
	f.Parallel = false
	if r := stop(t, st(phase(PhaseNewPlan, PhasePlanReview)), f, nil); !strings.Contains(r.out.Reason, "(opus)") {
		t.Errorf("alternating review wait: %s", formatOutput(r.out))
	}
}

// TestStopThatWaitsForTheUser: a stop let through while the plan waits for
// the user (max_reviews spent, or the plan budget) says so with a
// WaitForUser effect, whichever limit it was; a stop that blocks, a
// standalone cycle that just ends, and a plan with reviews left do not.
func TestStopThatWaitsForTheUser(t *testing.T) {
	waiting := func(extra ...func(*State)) State {
		return st(append([]func(*State){phase(PhasePostCodeReview, PhaseCodeReview), task("2"), iter(3), model(3), maxRev(3)}, extra...)...)
	}
	budget := func(s *State) { s.BudgetUSD, s.MaxReviews = 1, 8 }
	spent := func(f *Facts) { f.SpentUSD = 1.5 }
	want := &WaitForUser{Plan: planID, Kind: KindCode, Task: "2", Phase: PhasePostCodeReview, Iteration: 3}
	cases := []struct {
		name string
		s    State
		f    Facts
		want *WaitForUser
	}{
		{"max_reviews spent", waiting(), facts(), want},
		{"the plan budget spent", waiting(budget), facts(spent), want},
		{"max_reviews spent, blocked by a broken folder", waiting(), facts(addFiles("notes.md")), nil},
		{"the budget spent, blocked by a broken folder", waiting(budget), facts(spent, addFiles("notes.md")), nil},
		{"a standalone cycle that ends at max_reviews", waiting(standalone), facts(), nil},
		{"budget and reviews left", waiting(budget), facts(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := stop(t, c.s, c.f, nil)
			got, ok := find[WaitForUser](r.effects)
			switch {
			case c.want == nil && ok:
				t.Errorf("effects %s, want no WaitForUser", effectNames(r.effects))
			case c.want != nil && (!ok || got != *c.want):
				t.Errorf("effects %s (%+v), want %+v", effectNames(r.effects), got, *c.want)
			}
		})
	}
}
