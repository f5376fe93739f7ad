package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
)

// effectNames lists the effects by type, for goldens.
func effectNames(effects []Effect) string {
	names := make([]string, 0, len(effects))
	for _, e := range effects {
		names = append(names, strings.TrimPrefix(fmt.Sprintf("%T", e), "plan."))
	}
	return strings.Join(names, " ")
}

// TestCommand is the plan verbs as a table: the state, the facts, the verb
// and its arguments in; the new state, the message (golden), the effects
// and whether the state is to be committed out.
func TestCommand(t *testing.T) {
	waiting := func(s *State) { s.Phase, s.NextPhase, s.Iteration = PhaseCodeReview, PhasePostCodeReview, 1 }
	withReview := func(s *State) { s.Review = &InFlight{Kind: KindCode, Iteration: 1, Model: "opus", Task: "1"} }
	session := func(f *Facts) { f.SessionID = "s1"; f.DefaultMaxReviews = 8 }
	budget := func(usd float64) func(*State) { return func(s *State) { s.BudgetUSD = usd } }
	tests := []struct {
		name    string
		in      State
		facts   Facts
		verb    string
		args    api.PlanArgs
		want    string // formatState of the new state; "" for any
		effects string // effectNames
		refused string // the command is refused with this in the error
	}{
		{name: "new", in: State{}, facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: planID},
			want: `{"Phase":"new-plan","Next":"plan-review","Task":"","Iter":0,"Max":8,"Model":0,"Clean":0,"TDD":false,"Running":false}`, effects: "MakeFolder CancelReview WriteView"},
		{name: "new without plan.md, test-first, with a budget", in: State{}, facts: facts(session, noDir), verb: "new", args: api.PlanArgs{PlanID: planID, TDD: true, BudgetUSD: 2.5, MaxReviews: ptr(3)},
			want: `{"Phase":"new-plan","Next":"plan-review","Task":"","Iter":0,"Max":3,"Model":0,"Clean":0,"TDD":true,"Running":false}`, effects: "MakeFolder CancelReview WriteView"},
		{name: "new sets another plan aside", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), func(s *State) { s.PlanID = "old" }), facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: planID},
			effects: "MakeFolder CancelReview WriteView"},
		{name: "new refuses a bad id", in: State{}, facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: "../x"}, refused: `"../x" is not a valid plan id`},
		{name: "new refuses negative reviews", in: State{}, facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: planID, MaxReviews: ptr(-1)}, refused: "max reviews -1 is negative"},
		{name: "new refuses a negative budget", in: State{}, facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: planID, BudgetUSD: -1}, refused: "budget_usd must be a dollar amount of 0 or more"},
		{name: "new refuses another session's plan", in: State{}, facts: facts(session, viewOf("{}")), verb: "new", args: api.PlanArgs{PlanID: planID}, refused: "plan p1 already exists (" + planDir + "/state.json); take it up with drover plan continue p1"},
		{name: "new starts its own plan over", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts: facts(session, viewOf("{}")), verb: "new", args: api.PlanArgs{PlanID: planID},
			want: `{"Phase":"new-plan","Next":"plan-review","Task":"","Iter":0,"Max":8,"Model":0,"Clean":0,"TDD":false,"Running":false}`, effects: "MakeFolder CancelReview WriteView"},
		{name: "new refuses while a review runs", in: st(phase(PhaseCompleteTask, PhaseCodeReview), withReview), facts: facts(session), verb: "new", args: api.PlanArgs{PlanID: planID}, refused: "a review is running"},

		{name: "advance complete-task", in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "complete-task", Task: "1"},
			want: `{"Phase":"complete-task","Next":"code-review","Task":"1","Iter":0,"Max":8,"Model":0,"Clean":0,"TDD":false,"Running":false}`, effects: "WriteView"},
		{name: "advance with reviews off", in: st(phase(PhaseCreateTasks, PhaseNone), maxRev(0)), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "complete-task", Task: "1"}, effects: "WriteView"},
		{name: "advance at the review limit", in: st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(8)), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "post-code-review"}, effects: "WriteView"},
		{name: "advance next-task", in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "next-task"}, effects: "WriteView"},
		{name: "advance complete", in: st(phase(PhaseAllCodeReview, PhaseComplete), task("3")), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "complete"}, effects: "WriteView"},
		{name: "advance refuses a review", in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "plan-review"}, refused: `plan advance: unknown phase "plan-review"`},
		{name: "advance refuses the wrong post-review", in: st(waiting, task("1")), facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "post-plan-review"}, refused: "the plan waits for post-code-review, not post-plan-review"},
		{name: "advance without a plan", in: State{}, facts: facts(session), verb: "advance", args: api.PlanArgs{Phase: "complete"}, refused: "plan advance complete: session s1 has no plan; start one with drover plan new"},

		{name: "set max_reviews", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "max_reviews", Value: " 3 "}, effects: "WriteView"},
		{name: "set review_model", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "review_model", Value: "sonnet"},
			want: `{"Phase":"next-task","Next":"","Task":"","Iter":0,"Max":8,"Model":1,"Clean":0,"TDD":false,"Running":false}`, effects: "WriteView"},
		{name: "set budget_usd", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session, func(f *Facts) { f.SpentUSD = 0.4 }), verb: "set", args: api.PlanArgs{Key: "budget_usd", Value: "$1.5"}, effects: "WriteView"},
		{name: "set budget_usd to none", in: st(phase(PhaseNextTask, PhaseNone), budget(2)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "budget_usd", Value: "0"}, effects: "WriteView"},
		{name: "set tdd", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "tdd", Value: "true"}, effects: "WriteView"},
		{name: "set next_phase null stops the reviews", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), withReview), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "next_phase", Value: "null"},
			want: `{"Phase":"complete-task","Next":"","Task":"1","Iter":0,"Max":8,"Model":0,"Clean":0,"TDD":false,"Running":false}`, effects: "CancelReview WriteView"},
		{name: "set refuses an unknown model", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "review_model", Value: "haiku"}, refused: "review_model must be one of review.models (opus, sonnet)"},
		{name: "set refuses another plan", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{PlanID: "p2", Key: "tdd", Value: "true"}, refused: "the plan of session s1 is p1, not p2"},
		{name: "set refuses an unknown key", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "set", args: api.PlanArgs{Key: "colour", Value: "red"}, refused: `plan set: unknown key "colour"`},

		{name: "stop-reviews", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts: facts(session), verb: "stop-reviews", effects: "WriteView"},
		{name: "stop-reviews without a plan", in: State{}, facts: facts(session), verb: "stop-reviews", refused: "session s1 has no plan"},
		{name: "add-task", in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(session), verb: "add-task", args: api.PlanArgs{Task: "2"}, effects: "WriteView"},
		{name: "review code", in: st(phase(PhaseNextTask, PhaseNone), task("1")), facts: facts(session), verb: "review", args: api.PlanArgs{Phase: "code-review"}, effects: "WriteView"},
		{name: "review plan with reviews off", in: st(phase(PhaseNextTask, PhaseNone), maxRev(0)), facts: facts(session), verb: "review", args: api.PlanArgs{Phase: "plan-review"}, effects: "WriteView"},
		{name: "review refuses an unknown kind", in: st(phase(PhaseNextTask, PhaseNone)), facts: facts(session), verb: "review", args: api.PlanArgs{Phase: "style-review"}, refused: `plan review: unknown review "style-review"`},
		{name: "action", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(session), verb: "action", args: api.PlanArgs{Phase: "create-tasks"}},
		{name: "action without a plan", in: State{}, facts: facts(session), verb: "action", args: api.PlanArgs{Phase: "create-tasks"}, refused: "plan create-tasks: session s1 has no plan; start one with /drover:plan new <plan-id>"},
		{name: "continue", in: st(phase(PhaseCodeReview, PhaseComplete), task("3")), facts: facts(session), verb: "continue",
			want: `{"Phase":"complete","Next":"","Task":"3","Iter":0,"Max":8,"Model":0,"Clean":0,"TDD":false,"Running":false}`, effects: "WriteView"},
		{name: "unknown verb", in: st(), facts: facts(session), verb: "frobnicate", refused: `unknown plan command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, d, effects, err := Command(tt.in, tt.facts, tm, tt.verb, tt.args)
			if tt.refused != "" {
				var r *Refusal
				if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("error %v, want a refusal with %q", err, tt.refused)
				}
				if formatState(next) != formatState(tt.in) || effects != nil || d != (Decision{}) {
					t.Errorf("a refused command changed the state or asked for effects: %s %v %+v", formatState(next), effects, d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && formatState(next) != tt.want {
				t.Errorf("state\n %s\nwant\n %s", formatState(next), tt.want)
			}
			if got := effectNames(effects); got != tt.effects {
				t.Errorf("effects %q, want %q", got, tt.effects)
			}
			if d.Changed == (formatState(next) == formatState(tt.in) && next.BudgetUSD == tt.in.BudgetUSD && next.PlanID == tt.in.PlanID) {
				t.Errorf("Changed %v for %s -> %s", d.Changed, formatState(tt.in), formatState(next))
			}
			golden(t, "state: "+formatState(next)+"\neffects: "+effectNames(effects)+"\n--- message ---\n"+d.Message+"\n")
		})
	}
}

func TestAdopt(t *testing.T) {
	f := facts(models("opus", "sonnet"), func(f *Facts) { f.SessionID = "s2"; f.DefaultMaxReviews = 5 })
	view := View(st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(1), model(1), func(s *State) { s.BudgetUSD = 3 }), nil)
	next, d, effects, err := Adopt(State{}, f, tm, planID, view)
	if err != nil {
		t.Fatal(err)
	}
	if next.Phase != PhaseCodeReview || next.NextPhase != PhasePostCodeReview || next.CurrentTask != "2" || next.MaxReviews != 8 || next.ModelIndex != 1 || next.BudgetUSD != 3 || !d.Changed {
		t.Errorf("adopted %s budget %v changed %v", formatState(next), next.BudgetUSD, d.Changed)
	}
	if d.Message != "[drover] Session s2 now drives plan p1, picked up from its state.json." || effectNames(effects) != "CancelReview WriteView" || next.Owner != "s2" {
		t.Errorf("message %q, effects %s", d.Message, effectNames(effects))
	}
	for _, c := range []struct {
		name string
		in   State
		id   string
		view []byte
		want string
	}{
		{"no view", State{}, planID, nil, "plan p1 has no state.json in " + planDir},
		{"bad id", State{}, "../p", view, `"../p" is not a valid plan id`},
		{"review running", st(func(s *State) { s.PlanID, s.Review = "other", &InFlight{Kind: KindPlan, Iteration: 1} }), planID, view, "a review is running"},
		{"unknown phase", State{}, planID, []byte(`{"phase":"x"}`), "has no known phase"},
	} {
		if _, _, _, err := Adopt(c.in, f, tm, c.id, c.view); !errors.As(err, new(*Refusal)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal with %q", c.name, err, c.want)
		}
	}
}

func TestStatus(t *testing.T) {
	s := st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(2), model(1), clean(1), func(s *State) {
		s.Review = &InFlight{Kind: KindCode, Iteration: 3, Model: "opus", Task: "1"}
		s.Ledger.Findings = []reviewer.LedgerEntry{{Finding: reviewer.Finding{Severity: "blocking", Summary: "x"}, FirstReview: 1, LastReview: 2}}
		s.Ledger.Latest = 2
	})
	st := Status(s, facts(func(f *Facts) { f.SessionID = "s1"; f.CleanStreak = 3 }), "hi")
	if st.SessionID != "s1" || st.PlanID != planID || st.PlanDir != planDir || !st.Active || st.Phase != "code-review" || *st.NextPhase != "post-code-review" || *st.CurrentTask != "1" ||
		st.PhaseIteration != 2 || st.ReviewModel != "sonnet" || st.CleanStreak != 3 || !st.ReviewRunning || st.Review.Iteration != 3 || st.OpenFindings != 1 || st.Message != "hi" {
		t.Errorf("status %+v", st)
	}
	if got := Findings(s); len(got) != 1 || !got[0].Open || !got[0].Current {
		t.Errorf("findings %+v", got)
	}
	if none := Status(State{}, facts(func(f *Facts) { f.SessionID = "s1" }), ""); none.PlanID != "" || none.Active || none.SessionID != "s1" {
		t.Errorf("status without a plan %+v", none)
	}
}
