package plan

import "testing"

func TestStateFromViewKeepsTheBudget(t *testing.T) {
	cases := []struct {
		name string
		view string
		want float64
	}{
		{"budget", `{"phase":"new-plan","next_phase":"plan-review","budget_usd":1.25}`, 1.25},
		{"none", `{"phase":"new-plan","next_phase":"plan-review"}`, 0},
		{"negative is dropped", `{"phase":"new-plan","next_phase":"plan-review","budget_usd":-3}`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := StateFromView("p", []byte(c.view), nil, 8)
			if err != nil {
				t.Fatal(err)
			}
			if s.BudgetUSD != c.want {
				t.Errorf("budget %v, want %v", s.BudgetUSD, c.want)
			}
		})
	}
}

func TestStateFromViewKeepsAStandaloneCycle(t *testing.T) {
	cases := []struct {
		view string
		want bool
	}{
		{`{"phase":"post-code-review","next_phase":"code-review","current_task":"1","standalone":true}`, true},
		{`{"phase":"code-review","next_phase":"post-code-review","current_task":"1","standalone":true}`, true},
		{`{"phase":"code-review","next_phase":null,"standalone":true}`, false},
		{`{"phase":"post-code-review","next_phase":"code-review","current_task":"1"}`, false},
	}
	for _, c := range cases {
		s, err := StateFromView("p", []byte(c.view), nil, 8)
		if err != nil {
			t.Fatal(err)
		}
		if s.Standalone != c.want {
			t.Errorf("%s: standalone %v, want %v", c.view, s.Standalone, c.want)
		}
	}
}
