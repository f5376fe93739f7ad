package convergence

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// hist builds a history from pass rates (-1 unknown) and error hashes
// ("" none), numbered from 1.
func hist(rates []float64, hashes ...string) []Metrics {
	var h []Metrics
	for i, r := range rates {
		m := UnknownMetrics(i + 1)
		m.TestPassRate = r
		if i < len(hashes) {
			m.ErrorHash = hashes[i]
		}
		h = append(h, m)
	}
	return h
}

func TestClassify(t *testing.T) {
	withBuild := func(h []Metrics, ok bool) []Metrics {
		h[len(h)-1].BuildOK = &ok
		return h
	}
	withLint := func(h []Metrics, n int) []Metrics {
		h[len(h)-1].LintIssues = n
		return h
	}
	cases := []struct {
		name    string
		history []Metrics
		budget  Budget
		th      Thresholds
		want    Status
	}{
		{"nothing measured", nil, Budget{}, Thresholds{}, Exploring},
		{"nothing measured, out of iterations", nil, Budget{MaxIterations: 3, Iteration: 3}, Thresholds{}, BudgetExhausted},
		{"done beats out of budget", hist([]float64{0.5, 0.96}), Budget{MaxIterations: 2, Iteration: 2}, Thresholds{}, ConvergedSuccess},
		{"a broken build is not success", withBuild(hist([]float64{1}), false), Budget{}, Thresholds{}, Exploring},
		{"lint ignored by default", withLint(hist([]float64{1}), 3), Budget{}, Thresholds{}, ConvergedSuccess},
		{"lint required and dirty", withLint(hist([]float64{1}), 3), Budget{}, Thresholds{RequireLintClean: true}, Exploring},
		{"lint required and clean", withLint(hist([]float64{1}), 0), Budget{}, Thresholds{RequireLintClean: true}, ConvergedSuccess},
		{"custom success rate", hist([]float64{0.9}), Budget{}, Thresholds{SuccessPassRate: 0.9}, ConvergedSuccess},
		{"out of time", hist([]float64{0.5}), Budget{MaxMinutes: 30, Elapsed: 31 * time.Minute}, Thresholds{}, BudgetExhausted},
		{"out of money", hist([]float64{0.5}), Budget{MaxUSD: 5, CostUSD: 5.02}, Thresholds{}, BudgetExhausted},
		{"iteration taken from the history", hist([]float64{0.1, 0.2, 0.3, 0.4, 0.5}), Budget{MaxIterations: 5}, Thresholds{}, BudgetExhausted},
		{"under budget", hist([]float64{0.1, 0.5}), Budget{MaxIterations: 5, MaxMinutes: 60, MaxUSD: 10, Iteration: 2, Elapsed: time.Minute, CostUSD: 1}, Thresholds{}, Progressing},
		{"same failure, no pass rates", hist([]float64{-1, -1, -1}, "h", "h", "h"), Budget{}, Thresholds{}, Thrashing},
		{"same first failure, others getting fixed", hist([]float64{0.5, 0.6, 0.7}, "h", "h", "h"), Budget{}, Thresholds{}, Progressing},
		{"same failure twice is not yet thrashing", hist([]float64{0.5, 0.5}, "h", "h"), Budget{}, Thresholds{}, Exploring},
		{"same failure twice with thrash_repeats 2", hist([]float64{0.5, 0.5}, "h", "h"), Budget{}, Thresholds{ThrashRepeats: 2}, Thrashing},
		{"an older different failure does not count", hist([]float64{0.5, 0.5, 0.5, 0.5}, "g", "h", "h", "h"), Budget{}, Thresholds{}, Thrashing},
		{"falling", hist([]float64{0.8, 0.7, 0.6, 0.5}), Budget{}, Thresholds{}, StuckPlateau},
		{"flat", hist([]float64{0.4, 0.4, 0.4, 0.4}), Budget{}, Thresholds{}, StuckPlateau},
		{"a plateau needs window+1 iterations", hist([]float64{0.4, 0.4, 0.4}), Budget{}, Thresholds{}, Exploring},
		{"wider window", hist([]float64{0.4, 0.41, 0.42, 0.43, 0.44}), Budget{}, Thresholds{PlateauWindow: 4}, StuckPlateau},
		{"rising", hist([]float64{0.2, 0.4, 0.6, 0.8}), Budget{}, Thresholds{}, Progressing},
		{"rising with an unknown in between", hist([]float64{0.2, -1, 0.6}), Budget{}, Thresholds{}, Progressing},
		{"one pass rate", hist([]float64{-1, 0.3}), Budget{}, Thresholds{}, Exploring},
		{"no pass rate", hist([]float64{-1, -1}), Budget{}, Thresholds{}, Exploring},
		{"small move", hist([]float64{0.60, 0.62}), Budget{}, Thresholds{}, Exploring},
		{"different failures each time", hist([]float64{0.2, 0.4, 0.6}, "a", "b", "c"), Budget{}, Thresholds{}, Exploring},
	}
	var reasons bytes.Buffer
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := Classify(c.history, c.budget, c.th)
			if got != c.want {
				t.Errorf("Classify = %s (%s), want %s", got, why, c.want)
			}
			if why == "" {
				t.Error("no reason given")
			}
			fmt.Fprintf(&reasons, "%s: %s: %s\n", c.name, got, why)
		})
	}
	golden(t, "testdata/classify.golden", reasons.Bytes())
}

func TestBudgetExhausted(t *testing.T) {
	cases := []struct {
		b    Budget
		want bool
		why  string
	}{
		{Budget{}, false, ""},
		{Budget{MaxIterations: 10, Iteration: 9}, false, ""},
		{Budget{MaxIterations: 10, Iteration: 10}, true, "iteration 10 reached the budget of 10 iterations"},
		{Budget{MaxMinutes: 1.5, Elapsed: 90 * time.Second}, true, "1m30s elapsed reached the budget of 1.5 minutes"},
		{Budget{MaxUSD: 2, CostUSD: 2}, true, "$2.00 spent reached the budget of $2.00"},
		{Budget{MaxUSD: 2, CostUSD: 1.99}, false, ""},
	}
	for _, c := range cases {
		got, why := c.b.Exhausted()
		if got != c.want || why != c.why {
			t.Errorf("%+v.Exhausted() = %v, %q; want %v, %q", c.b, got, why, c.want, c.why)
		}
	}
}

func TestThresholds(t *testing.T) {
	if got := (Thresholds{}).WithDefaults(); got != DefaultThresholds() {
		t.Errorf("zero thresholds with defaults = %+v", got)
	}
	custom := Thresholds{SuccessPassRate: 1, PlateauWindow: 5, MinImprovement: 0.1, ThrashRepeats: 4, MinToolCalls: 20, RequireLintClean: true}
	if got := custom.WithDefaults(); got != custom {
		t.Errorf("set fields changed: %+v", got)
	}
	if err := DefaultThresholds().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if err := (Thresholds{}).Validate(); err != nil {
		t.Errorf("zero value invalid: %v", err)
	}
	err := Thresholds{SuccessPassRate: 1.5, PlateauWindow: -1, MinImprovement: -0.1, ThrashRepeats: 1, MinToolCalls: -3}.Validate()
	for _, name := range []string{"success_pass_rate", "plateau_window", "min_improvement", "thrash_repeats", "min_tool_calls"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate did not name %s: %v", name, err)
		}
	}
}

func TestStatusesAndOutcomes(t *testing.T) {
	if len(Statuses()) != 6 || len(Outcomes()) != 5 {
		t.Errorf("Statuses %v, Outcomes %v", Statuses(), Outcomes())
	}
}
