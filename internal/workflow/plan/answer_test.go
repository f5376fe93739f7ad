package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
)

// inFlight returns s after the stop that starts its review, with the view
// written, and the StartReview of that stop.
func inFlight(t *testing.T, s State, f Facts) (State, Facts, StartReview) {
	t.Helper()
	next, _, effects, err := Stop(s, f, tm)
	if err != nil {
		t.Fatal(err)
	}
	sr, ok := find[StartReview](effects)
	if !ok || next.Review == nil {
		t.Fatalf("no review started: %+v", effects)
	}
	f.View = View(next, f.Models)
	return next, f, sr
}

// answerOf is o as the reviewer of sr answered it, with its run log line.
func answerOf(s State, sr StartReview, o ReviewOutcome) Answered {
	o.Kind, o.Iteration, o.Model = sr.Kind, sr.Iteration, sr.Model
	res := reviewer.Result{Outcome: o.Outcome, Verdict: o.Verdict, Findings: o.Findings, CostUSD: 0.5, ExitCode: 0}
	if o.Err != "" {
		res.Err, res.ExitCode = errors.New(o.Err), 1
	}
	return Answered{Outcome: o, Run: RunRecord(*s.Review, s.PlanID, "s1", res, time.Unix(1700000000, 0))}
}

// withoutRecords is s without what only the two-step path keeps: the hook
// answer for the next stop and the runs.
func withoutRecords(s State) State {
	s.Answer, s.LastRun, s.Runs = nil, nil, nil
	return s
}

// TestReviewAnsweredThenFiled: the two decisions of a reviewer's answer end
// where one Stop with the answer as a fact ends (the seed's rules), and
// in between nothing but the answer is recorded.
func TestReviewAnsweredThenFiled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      State
		answer ReviewOutcome
		// file is whether the answer has a review file to write.
		file bool
	}{
		{"pass", st(phase(PhaseNewPlan, PhasePlanReview)), *pass, true},
		{"fail with findings", st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1)), *fail, true},
		{"second clean review advances", st(phase(PhasePostPlanReview, PhasePlanReview), iter(1), model(1), clean(1)), *pass, true},
		{"no verdict", st(phase(PhaseNewPlan, PhasePlanReview)), *failedRun("the reviewer exited with code 1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f, sr := inFlight(t, tc.s, facts())
			a := answerOf(s, sr, tc.answer)

			answered, effects, err := ReviewAnswered(s, f, tm, a)
			if err != nil {
				t.Fatal(err)
			}
			if answered.Review == nil || answered.Review.Answered == nil || !reflect.DeepEqual(*answered.Review.Answered, a) {
				t.Fatalf("the answer was not recorded: %+v", answered.Review)
			}
			recorded := answered
			recorded.Review = s.Review
			if !reflect.DeepEqual(recorded, s) {
				t.Errorf("recording the answer changed more than the review in flight: %s", formatState(answered))
			}
			if len(effects) != 1 {
				t.Fatalf("effects %+v, want the one WriteReview", effects)
			}
			w, ok := effects[0].(WriteReview)
			if !ok || w.Kind != sr.Kind || w.Iteration != sr.Iteration || w.Task != sr.Task {
				t.Fatalf("effect %+v, want the WriteReview of review %d", effects[0], sr.Iteration)
			}
			if tc.file != (w.Path == sr.ReviewFile && len(w.Data) > 0) || !tc.file && w.Path != "" {
				t.Fatalf("WriteReview to %q (%d bytes), review file %q, want a file: %v", w.Path, len(w.Data), sr.ReviewFile, tc.file)
			}
			if again, more, _ := ReviewAnswered(answered, f, tm, a); !reflect.DeepEqual(again, answered) || more != nil {
				t.Errorf("a second answer changed the state or asked for effects: %+v", more)
			}
			if again, _, _, _ := Stop(answered, f, tm); again.Review == nil || again.Review.Answered == nil {
				t.Errorf("a stop before the review file was written dropped the answer")
			}

			fl := Filing{Kind: w.Kind, Iteration: w.Iteration, Task: w.Task}
			filed, effects, err := ReviewFiled(answered, f, tm, fl)
			if err != nil {
				t.Fatal(err)
			}
			// The one-step Stop with the answer as a fact.
			o := a.Outcome
			f.Review = &o
			want, out, wantEffects, err := Stop(s, f, tm)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(withoutRecords(filed), withoutRecords(want)) {
				t.Errorf("filed state %s, Stop with the answer gives %s", formatState(filed), formatState(want))
			}
			if hasOut := out != (hook.Output{}); hasOut != (filed.Answer != nil) || hasOut && *filed.Answer != out {
				t.Errorf("the answer for the next stop is %+v, want %+v", filed.Answer, out)
			}
			if filed.LastRun == nil || !reflect.DeepEqual(*filed.LastRun, a.Run) || !reflect.DeepEqual(filed.Runs, []api.PlanReviewRun{a.Run}) {
				t.Errorf("runs %+v, last %+v, want the answer's run", filed.Runs, filed.LastRun)
			}
			if rr, ok := find[RecordRuns](effects); !ok || rr.Path != planDir+"/"+RunsFile || !reflect.DeepEqual(rr.Runs, filed.Runs) {
				t.Errorf("effects %+v, want the runs logged", effects)
			}
			if _, ok := find[WriteReview](effects); ok {
				t.Errorf("the filed answer asks for its review file again")
			}
			if view, wantView := find2[WriteView](effects, wantEffects); view != wantView {
				t.Errorf("WriteView %v, Stop with the answer: %v", view, wantView)
			}
			if again, more, _ := ReviewFiled(filed, f, tm, fl); !reflect.DeepEqual(again, filed) || more != nil {
				t.Errorf("a second filing changed the state or asked for effects: %+v", more)
			}
		})
	}
}

// find2 reports whether E is among a and among b.
func find2[E Effect](a, b []Effect) (bool, bool) {
	_, inA := find[E](a)
	_, inB := find[E](b)
	return inA, inB
}

// TestReviewFileThatCannotBeWrittenIsAFailedRun: the filing's error makes
// the run a failed one, not counted, and the run log says why, keeping the
// verdict the reviewer gave.
func TestReviewFileThatCannotBeWrittenIsAFailedRun(t *testing.T) {
	s, f, sr := inFlight(t, st(phase(PhaseNewPlan, PhasePlanReview)), facts())
	a := answerOf(s, sr, *pass)
	a.Runs = []api.PlanReviewRun{a.Run, a.Run}
	a.Runs[1].Model = "sonnet"
	answered, _, err := ReviewAnswered(s, f, tm, a)
	if err != nil {
		t.Fatal(err)
	}
	const why = `writing review file: writing "plan-review-1.md": is a directory`
	filed, effects, err := ReviewFiled(answered, f, tm, Filing{Kind: sr.Kind, Iteration: sr.Iteration, Err: why})
	if err != nil {
		t.Fatal(err)
	}
	if filed.Review != nil || filed.Iteration != 0 || filed.ConsecutiveClean != 0 || filed.NextPhase != PhasePlanReview || filed.ModelIndex != 0 {
		t.Errorf("a run without its review file was counted: %s", formatState(filed))
	}
	if filed.Answer == nil || filed.Answer.IsBlock() || !strings.Contains(filed.Answer.SystemMessage, why) || !strings.Contains(filed.Answer.SystemMessage, "not counted") {
		t.Errorf("answer for the next stop: %+v", filed.Answer)
	}
	if l := filed.LastRun; l == nil || l.Outcome != string(reviewer.Failed) || l.Verdict != "PASS" || l.Error != why {
		t.Errorf("last run %+v", l)
	}
	if len(filed.Runs) != 2 || filed.Runs[1].Model != "sonnet" || filed.Runs[0].Outcome != string(reviewer.Failed) || filed.Runs[1].Error != why {
		t.Errorf("runs %+v, want each reviewer's run, failed", filed.Runs)
	}
	if rr, ok := find[RecordRuns](effects); !ok || len(rr.Runs) != 2 {
		t.Errorf("effects %+v", effects)
	}
	// The next stop gives the warning, and the one after runs review 1
	// again.
	next, out, _, err := Stop(filed, facts(viewOf(string(View(filed, nil)))), tm)
	if err != nil || out != *filed.Answer {
		t.Fatalf("the stop after: %+v (%v)", out, err)
	}
	_, _, effects, err = Stop(next, facts(), tm)
	if again, ok := find[StartReview](effects); err != nil || !ok || again.Iteration != 1 {
		t.Errorf("review 1 did not run again: %+v (%v)", effects, err)
	}
}

// TestFilingOfAnotherReviewChangesNothing: a filing the state does not
// wait for (a late one, one of a cancelled review) is dropped.
func TestFilingOfAnotherReviewChangesNothing(t *testing.T) {
	s, f, sr := inFlight(t, st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts())
	answered, _, err := ReviewAnswered(s, f, tm, answerOf(s, sr, *fail))
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range []Filing{
		{Kind: KindCode, Iteration: 2, Task: "1"},
		{Kind: KindCode, Iteration: 1, Task: "2"},
		{Kind: KindPlan, Iteration: 1},
	} {
		if got, effects, err := ReviewFiled(answered, f, tm, fl); err != nil || !reflect.DeepEqual(got, answered) || effects != nil {
			t.Errorf("filing %+v changed the state or asked for %v (%v)", fl, effects, err)
		}
	}
	if got, effects, _ := ReviewFiled(s, f, tm, Filing{Kind: KindCode, Iteration: 1, Task: "1"}); !reflect.DeepEqual(got, s) || effects != nil {
		t.Errorf("a filing before the answer changed the state: %+v", effects)
	}
	other := answerOf(s, sr, *pass)
	other.Outcome.Iteration = 2
	if got, effects, _ := ReviewAnswered(s, f, tm, other); !reflect.DeepEqual(got, s) || effects != nil {
		t.Errorf("an answer to another review was recorded: %+v", effects)
	}
}

// TestPending: what a stored state waits for, for each kind of effect.
func TestPending(t *testing.T) {
	started, startFacts, sr := inFlight(t, st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1)), facts())
	answered, _, err := ReviewAnswered(started, startFacts, tm, answerOf(started, sr, *fail))
	if err != nil {
		t.Fatal(err)
	}
	file, err := reviewFile(answered, startFacts, tm)
	if err != nil || file.Path == "" {
		t.Fatalf("review file %+v (%v)", file, err)
	}
	filed, _, err := ReviewFiled(answered, startFacts, tm, Filing{Kind: sr.Kind, Iteration: sr.Iteration, Task: sr.Task})
	if err != nil {
		t.Fatal(err)
	}
	quiet := st(phase(PhaseCreateTasks, PhaseNone))
	fresh := st(phase(PhaseNewPlan, PhasePlanReview))
	viewOfState := func(s State) func(*Facts) { return viewOf(string(View(s, nil))) }
	running := func(f *Facts) { f.ReviewInFlight = true }

	for _, tc := range []struct {
		name string
		s    State
		f    Facts
		want []Effect
	}{
		{"no plan", State{}, facts(), nil},
		{"nothing waits", quiet, facts(viewOfState(quiet)), nil},
		{"a view that differs", quiet, facts(viewOf("{}")), []Effect{WriteView{Path: planDir + "/state.json", Data: View(quiet, nil)}}},
		{"a review whose reviewer runs", started, facts(viewOfState(started), running), nil},
		{"a review with no reviewer is started again, as it was", started, facts(viewOfState(started)), []Effect{sr}},
		{"an answered review's file is written again", answered, facts(viewOfState(answered)), []Effect{file}},
		{"an answered review is not run again", answered, facts(viewOfState(answered), running), []Effect{file}},
		{"the last runs are logged unless they are", filed, facts(viewOfState(filed)), []Effect{RecordRuns{Path: planDir + "/" + RunsFile, Runs: filed.Runs}}},
		{"the folder of a plan just started is made", fresh, facts(noDir), []Effect{MakeFolder{Path: planDir}, WriteView{Path: planDir + "/state.json", Data: View(fresh, nil)}}},
		{"a folder removed later is not", quiet, facts(noDir), nil},
		{"the facts of another plan", quiet, facts(func(f *Facts) { f.PlanID = "p2" }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pending(tc.s, tc.f, tm)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Pending:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestAnsweredStateSurvivesTheStore: the answer is part of the committed
// state, so it must come back from its JSON as it went in.
func TestAnsweredStateSurvivesTheStore(t *testing.T) {
	s, f, sr := inFlight(t, st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts())
	a := answerOf(s, sr, *fail)
	a.Outcome.Reviewers, a.Outcome.PassVotes, a.Outcome.CostUSD = 2, 1, 1.25
	a.Runs = []api.PlanReviewRun{a.Run}
	answered, _, err := ReviewAnswered(s, f, tm, a)
	if err != nil {
		t.Fatal(err)
	}
	filed, _, err := ReviewFiled(answered, f, tm, Filing{Kind: sr.Kind, Iteration: sr.Iteration, Task: sr.Task})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []State{answered, filed} {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("state after a round trip through JSON:\n got %+v\nwant %+v", back, s)
		}
	}
}

func TestRunRecord(t *testing.T) {
	r := InFlight{Kind: KindCode, Iteration: 2, Model: "sonnet", Task: "3"}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	res := reviewer.Result{Outcome: reviewer.Fail, Verdict: "FAIL", ExitCode: 0, Duration: 1500 * time.Millisecond, CostUSD: 0.25,
		Findings: []reviewer.Finding{{Severity: "blocking", Summary: "a"}, {Severity: "minor", Summary: "b"}, {Severity: "major", Summary: "c"}}}
	got := RunRecord(r, "p1", "s1", res, now)
	want := api.PlanReviewRun{Time: now.UTC(), Session: "s1", Plan: "p1", Kind: "code", Task: "3", Iteration: 2, Model: "sonnet",
		Outcome: "fail", Verdict: "FAIL", DurationMS: 1500, Findings: 3, Blocking: 2, CostUSD: 0.25}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RunRecord:\n got %+v\nwant %+v", got, want)
	}
	res = reviewer.Result{Model: "opus+sonnet", Outcome: reviewer.Failed, ExitCode: -1, Err: errors.New("timed out")}
	if got := RunRecord(r, "p1", "s1", res, now); got.Model != "opus+sonnet" || got.Error != "timed out" || got.ExitCode != -1 {
		t.Errorf("RunRecord of a failed run: %+v", got)
	}
}
