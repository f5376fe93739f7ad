package plan

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzStateView reads arbitrary bytes as a plan's state.json, the file an
// agent or a user may edit by hand. A view StateFromView takes up is one
// drover writes back unchanged (the view of the state it gives is read as
// that same state, and passes rule 8); a refusal names state.json and the
// plan. As an edit of a running plan, the view is read without a panic, is
// no edit when it is drover's own view, and refuses only fields a view
// has.
func FuzzStateView(f *testing.F) {
	models := []string{"opus", "sonnet"}
	running := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	running.MaxReviews = 3
	f.Add(View(running, models))
	f.Add(View(State{PlanID: "p1", Phase: PhaseNewPlan, MaxReviews: 2, BudgetUSD: 1.5, TDD: true, Standalone: true}, models))
	f.Add([]byte(`{"phase":"code-review","next_phase":null,"current_task":"../x","phase_iteration":-4,"max_reviews":-1,"review_model":"sonnet","consecutive_clean":-2,"tdd":true,"budget_usd":-1}`))
	f.Add([]byte(`{"phase":"complete-task","next_phase":"nap","current_task":null,"phase_iteration":null,"max_reviews":null,"review_model":"","consecutive_clean":0,"tdd":false}`))
	f.Add([]byte(`{"phase":"plan-review","next_phase":"post-plan-review","standalone":true,"session_id":"other"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const id = "p1"
		s, err := StateFromView(id, data, models, 3)
		if err != nil {
			if !strings.Contains(err.Error(), "state.json of plan "+id) {
				t.Fatalf("error %q does not name the state.json of plan %s", err, id)
			}
		} else {
			out := View(s, models)
			back, err := StateFromView(id, out, models, 3)
			if err != nil {
				t.Fatalf("drover's own view of %+v does not read back: %v\n%s", s, err, out)
			}
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("view round trip changed the state\nfirst:  %+v\nsecond: %+v\nview: %s", s, back, out)
			}
			if problem, err := CheckView(out, tm); problem != "" || err != nil {
				t.Fatalf("drover's own view fails rule 8: %q, %v\n%s", problem, err, out)
			}
			if _, edited := ReadEdit(s, Facts{PlanID: id, View: out, Models: models}); edited {
				t.Fatalf("drover's own view reads as an edit:\n%s", out)
			}
		}
		e, edited := ReadEdit(running, Facts{PlanID: running.PlanID, View: data, Models: models, SessionID: "s1"})
		if !edited {
			return
		}
		known := append([]string{"plan_id", "budget_usd", "standalone"}, viewFields...)
		for _, name := range e.Refused {
			found := false
			for _, k := range known {
				found = found || k == name
			}
			if !found {
				t.Fatalf("the edit refuses %q, which is no field of a view", name)
			}
		}
		if e.MaxReviews != nil && *e.MaxReviews < 0 {
			t.Fatalf("the edit takes max_reviews %d", *e.MaxReviews)
		}
	})
}
