package convergence

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/transcript"
)

func TestReflectLowSignal(t *testing.T) {
	for _, c := range []struct {
		calls int
		th    Thresholds
		want  bool
	}{
		{9, Thresholds{}, false},
		{10, Thresholds{}, true},
		{0, Thresholds{}, false},
		{4, Thresholds{MinToolCalls: 4}, true},
	} {
		_, ok := Reflect(transcript.Iteration{ToolCalls: c.calls}, UnknownMetrics(1), nil, c.th)
		if ok != c.want {
			t.Errorf("%d tool calls with %+v: reflection = %v, want %v", c.calls, c.th, ok, c.want)
		}
	}
}

func TestReflectThrashing(t *testing.T) {
	it := transcript.Iteration{ToolCalls: 12}
	m := UnknownMetrics(4)
	m.FirstFailure = "--- FAIL: TestAdd (0.00s)"
	m.ErrorHash = ErrorHash(m.FirstFailure)
	other := ErrorHash("--- FAIL: TestSub (0.00s)")
	refl := func(iter int, hash string) Reflection { return Reflection{Iteration: iter, ErrorHash: hash} }
	cases := []struct {
		name  string
		hash  string
		prior []Reflection
		th    Thresholds
		want  bool
	}{
		{"two before on the same failure", m.ErrorHash, []Reflection{refl(1, other), refl(2, m.ErrorHash), refl(3, m.ErrorHash)}, Thresholds{}, true},
		{"in any order", m.ErrorHash, []Reflection{refl(3, m.ErrorHash), refl(1, other), refl(2, m.ErrorHash)}, Thresholds{}, true},
		{"the last one differs", m.ErrorHash, []Reflection{refl(1, m.ErrorHash), refl(2, m.ErrorHash), refl(3, other)}, Thresholds{}, false},
		{"not enough history", m.ErrorHash, []Reflection{refl(3, m.ErrorHash)}, Thresholds{}, false},
		{"four needed", m.ErrorHash, []Reflection{refl(1, other), refl(2, m.ErrorHash), refl(3, m.ErrorHash)}, Thresholds{ThrashRepeats: 4}, false},
		{"no failure now", "", []Reflection{refl(2, ""), refl(3, "")}, Thresholds{}, false},
		{"matched on failure text", m.ErrorHash, []Reflection{
			{Iteration: 2, ErrorHash: "abc123", Failures: []string{"--- FAIL: TestAdd (0.31s)"}},
			{Iteration: 3, ErrorHash: "abc123", Failures: []string{"2 of 3 tests fail", "first failure: --- FAIL: TestAdd (1.02s)"}},
		}, Thresholds{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := m
			mm.ErrorHash = c.hash
			r, ok := Reflect(it, mm, c.prior, c.th)
			if !ok || r.Thrashing != c.want {
				t.Errorf("thrashing = %v (ok %v), want %v", r.Thrashing, ok, c.want)
			}
		})
	}
}

func TestReflectPriorSummary(t *testing.T) {
	var prior []Reflection
	for i := 12; i >= 1; i-- {
		r := Reflection{Iteration: i, Approach: fmt.Sprintf("step %d", i), Successes: []string{"ok"}}
		if i%3 == 0 {
			r.Failures = []string{"1 of 2 tests fail"}
			r.Thrashing = i == 3
		}
		prior = append(prior, r)
	}
	r, ok := Reflect(transcript.Iteration{ToolCalls: 10}, UnknownMetrics(13), prior, Thresholds{})
	if !ok {
		t.Fatal("no reflection")
	}
	want := "Iterations 1-4: 1 with failures, 1 thrashing. Iteration 5 (step 5): ok. Iteration 6 (step 6): ok; failed: 1 of 2 tests fail."
	if !strings.HasPrefix(r.PriorSummary, want) || !strings.HasSuffix(r.PriorSummary, "Iteration 12 (step 12): ok; failed: 1 of 2 tests fail.") {
		t.Errorf("summary = %q", r.PriorSummary)
	}
	if strings.Count(r.PriorSummary, "Iteration ") != 8 {
		t.Errorf("want 8 iterations in full: %q", r.PriorSummary)
	}
	r, _ = Reflect(transcript.Iteration{ToolCalls: 10}, UnknownMetrics(1), nil, Thresholds{})
	if r.PriorSummary != "" {
		t.Errorf("first iteration has a prior summary %q", r.PriorSummary)
	}
}

func TestReflectionJSON(t *testing.T) {
	b, err := Reflection{Iteration: 1, Approach: "ran `a > b && c`"}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"successes": []`, `"failures": []`, "`a > b && c`", `"prior_iterations_summary": ""`, `"thrashing": false`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s:\n%s", want, s)
		}
	}
	if !strings.HasSuffix(s, "}\n") {
		t.Errorf("no final newline: %q", s)
	}
	var back Reflection
	if err := json.Unmarshal(b, &back); err != nil || back.Approach != "ran `a > b && c`" {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

// TestReflectRichIteration renders a reflection of an iteration that
// changed code, ran tests, a build and a linter, against a golden file.
func TestReflectRichIteration(t *testing.T) {
	j := new(jsonl)
	for i := range 4 {
		j.call("Read", map[string]any{"file_path": fmt.Sprintf("/project/pkg/file%d.go", i)}, "package pkg", false)
	}
	j.call("Grep", map[string]any{"pattern": "Add"}, "calc.go", false)
	j.bash("go test ./...", goFail, true).edit("/project/calc.go").edit("/project/calc_test.go")
	j.bash("go build ./...", "", false)
	j.bash("go test ./...", "--- FAIL: TestSub (0.00s)\n    calc_test.go:30: Sub(3, 1) = 4, want 2\nFAIL\nFAIL\texample.com/calc\t0.003s\nok  \texample.com/calc/parse\t0.010s", true)
	j.bash("golangci-lint run ./...", "calc.go:7:2: Error return value of `f.Close` is not checked (errcheck)\n1 issues:\n* errcheck: 1", true)
	it := j.iteration(t)
	m := MetricsFrom(it)
	m.Iteration = 3
	prior := []Reflection{
		{Iteration: 1, Approach: "wrote Add and Sub", Successes: []string{"the build passes"}, Failures: []string{"2 of 2 tests fail (go)"}},
		{Iteration: 2, Approach: "fixed Add", Successes: []string{"1 of 2 tests pass (go)"}, Failures: []string{"1 of 2 tests fail (go)"}, ErrorHash: m.ErrorHash},
	}
	r, ok := Reflect(it, m, prior, Thresholds{})
	if !ok {
		t.Fatalf("no reflection for %d tool calls", it.ToolCalls)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/reflections/rich.json", b)
}
