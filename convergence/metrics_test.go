package convergence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/drover-dev/drover/internal/transcript"
)

// jsonl builds a transcript the way Claude Code writes one: tool_use blocks
// with ids on assistant lines, tool_result blocks on user lines.
type jsonl struct {
	buf bytes.Buffer
	n   int
}

func (j *jsonl) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	j.buf.Write(b)
	j.buf.WriteByte('\n')
}

func (j *jsonl) call(name string, input map[string]any, out string, isErr bool) *jsonl {
	j.n++
	id := fmt.Sprintf("toolu_%03d", j.n)
	j.line(map[string]any{"type": "assistant", "uuid": "a" + id, "message": map[string]any{"id": "msg_" + id, "content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input},
	}}})
	j.line(map[string]any{"type": "user", "uuid": "u" + id, "message": map[string]any{"content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr},
	}}})
	return j
}

func (j *jsonl) bash(cmd, out string, isErr bool) *jsonl {
	if isErr {
		out = "Exit code 1\n" + out
	}
	return j.call("Bash", map[string]any{"command": cmd}, out, isErr)
}

func (j *jsonl) edit(path string) *jsonl {
	return j.call("Edit", map[string]any{"file_path": path, "old_string": "a", "new_string": "b"}, "The file "+path+" has been updated.", false)
}

func (j *jsonl) iteration(t *testing.T) transcript.Iteration {
	t.Helper()
	it, err := transcript.Summarize(context.Background(), bytes.NewReader(j.buf.Bytes()), transcript.SinceIteration)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

const (
	goFail = "--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4\nFAIL\nFAIL\texample.com/calc\t0.003s\nok  \texample.com/calc/parse\t0.010s\nFAIL"
	goPass = "ok  \texample.com/calc\t0.002s\nok  \texample.com/calc/parse\t(cached)"
)

func TestMetricsFrom(t *testing.T) {
	cases := []struct {
		name string
		j    *jsonl
		want Metrics
	}{
		{
			name: "go tests fixed within the iteration",
			j:    new(jsonl).bash("go test ./...", goFail, true).edit("/project/calc.go").bash("go test ./...", goPass, false),
			want: Metrics{TestPassRate: 1, TestsPassed: 2, TestFramework: "go-packages", BuildOK: ptr(true), LintIssues: -1,
				LastOutcome: OutcomeOK, ToolCalls: 3, ToolErrors: 1, FilesChanged: 1},
		},
		{
			name: "go tests still failing",
			j:    new(jsonl).edit("/project/calc.go").bash("go test ./...", goFail, true),
			want: Metrics{TestPassRate: 0.5, TestsPassed: 1, TestsFailed: 1, TestFramework: "go-packages", BuildOK: ptr(true), LintIssues: -1,
				FirstFailure: "--- FAIL: TestAdd (0.00s)\ncalc_test.go:12: Add(2, 2) = 5, want 4",
				ErrorHash:    ErrorHash("--- FAIL: TestAdd (0.00s)\ncalc_test.go:12: Add(2, 2) = 5, want 4"),
				LastOutcome:  OutcomeTestsFailed, ToolCalls: 2, ToolErrors: 1, FilesChanged: 1},
		},
		{
			name: "a narrow rerun does not hide the full run",
			j: new(jsonl).
				bash("pytest", "FAILED tests/test_calc.py::test_add - assert 5 == 4\n==== 1 failed, 3 passed in 0.12s ====", true).
				edit("/project/calc.py").
				bash("pytest tests/test_calc.py::test_add", "==== 1 passed in 0.01s ====", false),
			want: Metrics{TestPassRate: 0.75, TestsPassed: 3, TestsFailed: 1, TestFramework: "pytest", LintIssues: -1,
				FirstFailure: "FAILED tests/test_calc.py::test_add - assert 5 == 4", ErrorHash: ErrorHash("FAILED tests/test_calc.py::test_add - assert 5 == 4"),
				LastOutcome: OutcomeTestsFailed, ToolCalls: 3, ToolErrors: 1, FilesChanged: 1},
		},
		{
			name: "the full suite rerun and passing",
			j: new(jsonl).
				bash("pytest", "FAILED tests/test_calc.py::test_add - assert 5 == 4\n==== 1 failed, 3 passed in 0.12s ====", true).
				bash("pytest", "==== 4 passed in 0.12s ====", false),
			want: Metrics{TestPassRate: 1, TestsPassed: 4, TestFramework: "pytest", LintIssues: -1,
				LastOutcome: OutcomeOK, ToolCalls: 2, ToolErrors: 1},
		},
		{
			name: "go build fails",
			j:    new(jsonl).bash("go build ./...", "# example.com/calc\n./calc.go:7:9: undefined: sum", true),
			want: Metrics{TestPassRate: -1, BuildOK: ptr(false), LintIssues: -1,
				FirstFailure: "./calc.go:7:9: undefined: sum", ErrorHash: ErrorHash("./calc.go:7:9: undefined: sum"),
				LastOutcome: OutcomeBuildFailed, ToolCalls: 1, ToolErrors: 1},
		},
		{
			name: "go test cannot build the package",
			j: new(jsonl).bash("go test ./...",
				"# example.com/calc [example.com/calc.test]\n./calc_test.go:5:2: undefined: Sum\nFAIL\texample.com/calc [build failed]\nFAIL", true),
			want: Metrics{TestPassRate: 0, TestsFailed: 1, TestFramework: "go-packages", BuildOK: ptr(false), LintIssues: -1,
				FirstFailure: "./calc_test.go:5:2: undefined: Sum", ErrorHash: ErrorHash("./calc_test.go:5:2: undefined: Sum"),
				LastOutcome: OutcomeBuildFailed, ToolCalls: 1, ToolErrors: 1},
		},
		{
			name: "lint runs: the last one counts, silence is clean",
			j: new(jsonl).
				bash("golangci-lint run", "calc.go:7:2: Error return value of `f.Close` is not checked (errcheck)\n1 issues:\n* errcheck: 1", true).
				edit("/project/calc.go").
				bash("golangci-lint run", "", false),
			want: Metrics{TestPassRate: -1, LintIssues: 0, LastOutcome: OutcomeNone, ToolCalls: 3, ToolErrors: 1, FilesChanged: 1},
		},
		{
			name: "no test or build: the last failing command gives the failure",
			j: new(jsonl).bash("python hello.py",
				"Traceback (most recent call last):\n  File \"/project/hello.py\", line 1, in <module>\n    print(nme)\nNameError: name 'nme' is not defined", true),
			want: Metrics{TestPassRate: -1, LintIssues: -1, LastOutcome: OutcomeNone, ToolCalls: 1, ToolErrors: 1,
				FirstFailure: "NameError: name 'nme' is not defined", ErrorHash: ErrorHash("NameError: name 'nme' is not defined")},
		},
		{
			name: "a failing command followed by a good one is not a failure",
			j:    new(jsonl).bash("python hello.py", "NameError: name 'nme' is not defined", true).bash("python hello.py", "hello", false),
			want: Metrics{TestPassRate: -1, LintIssues: -1, LastOutcome: OutcomeNone, ToolCalls: 2, ToolErrors: 1},
		},
		{
			name: "a test command that fails before any test runs",
			j:    new(jsonl).bash("bun test", "Cannot find module 'foo'", true),
			want: Metrics{TestPassRate: -1, LintIssues: -1, LastOutcome: OutcomeTestsFailed, ToolCalls: 1, ToolErrors: 1,
				FirstFailure: "Cannot find module 'foo'", ErrorHash: ErrorHash("Cannot find module 'foo'")},
		},
		{
			name: "a script whose output has a test summary is a test run",
			j:    new(jsonl).bash("./ci.sh", "Tests:       4 passed, 4 total", false),
			want: Metrics{TestPassRate: 1, TestsPassed: 4, TestFramework: "jest", LintIssues: -1, LastOutcome: OutcomeOK, ToolCalls: 1},
		},
		{
			name: "no commands at all",
			j:    new(jsonl).edit("/project/a.go").edit("/project/b.go").edit("/project/a.go"),
			want: Metrics{TestPassRate: -1, LintIssues: -1, LastOutcome: OutcomeNone, ToolCalls: 3, FilesChanged: 2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MetricsFrom(c.j.iteration(t))
			if !reflect.DeepEqual(got, c.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(c.want)
				t.Errorf("MetricsFrom =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestMetricsJSON(t *testing.T) {
	var m Metrics
	if err := json.Unmarshal([]byte(`{"iteration": 9, "test_pass_rate": 0.6, "lint_score": 0.8}`), &m); err != nil {
		t.Fatal(err)
	}
	want := UnknownMetrics(9)
	want.TestPassRate = 0.6
	if !reflect.DeepEqual(m, want) {
		t.Errorf("absent fields: got %+v, want %+v", m, want)
	}
	if err := json.Unmarshal([]byte(`{"iteration": 2}`), &m); err != nil || m.TestPassRate != -1 {
		t.Errorf("absent pass rate must be unknown, got %v (%v)", m.TestPassRate, err)
	}

	full := Metrics{Iteration: 3, TestPassRate: 0.5, TestsPassed: 1, TestsFailed: 1, TestFramework: "go", BuildOK: ptr(true),
		LintIssues: 0, ErrorHash: "abc", FirstFailure: "x", LastOutcome: OutcomeTestsFailed, ToolCalls: 12, ToolErrors: 2, FilesChanged: 3}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, full) {
		t.Errorf("round trip: %s -> %+v (%v)", b, back, err)
	}
	if err := json.Unmarshal([]byte(`{"iteration": "x"}`), &back); err == nil {
		t.Error("a wrong type must be an error")
	}
}

// TestMetricsFromOutputHint: seed 004's transcripts carry a command's
// output in input.output_hint, with no result and so no exit status. The
// output alone decides: a test summary gives the counts, a failure it
// names makes the run fail, and quiet output passes.
func TestMetricsFromOutputHint(t *testing.T) {
	tests := []struct {
		name, cmd, hint string
		outcome         Outcome
		failure         string
		passRate        float64
	}{
		{"seed 004 reflect-test-failure-02", "bun test", "FAIL src/auth.test.ts > login > should validate email\nExpected: true\nReceived: false",
			OutcomeTestsFailed, "FAIL src/auth.test.ts > login > should validate email\nExpected: true\nReceived: false", -1},
		{"seed 004 reflect-thrash-detect-04", "bun test", "Cannot find module 'foo'", OutcomeTestsFailed, "Cannot find module 'foo'", -1},
		{"a passing summary", "go test ./...", "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \tx\t0.01s", OutcomeOK, "", 1},
		{"a failing summary", "go test ./...", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:3: boom\nFAIL\nFAIL\tx\t0.01s", OutcomeTestsFailed, "--- FAIL: TestA (0.00s)\na_test.go:3: boom", 0},
		{"quiet output passes", "bun test", "all good", OutcomeOK, "", -1},
		{"not a test command: only the failure", "echo x", "Error: no such file", OutcomeNone, "Error: no such file", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
				map[string]any{"type": "tool_use", "name": "Bash", "input": map[string]any{"command": tt.cmd, "output_hint": tt.hint}},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			it, err := transcript.Summarize(context.Background(), bytes.NewReader(append(line, '\n')), transcript.SinceIteration)
			if err != nil {
				t.Fatal(err)
			}
			m := MetricsFrom(it)
			if m.LastOutcome != tt.outcome || m.FirstFailure != tt.failure || m.TestPassRate != tt.passRate {
				t.Errorf("outcome %s, failure %q, pass rate %v; want %s, %q, %v", m.LastOutcome, m.FirstFailure, m.TestPassRate, tt.outcome, tt.failure, tt.passRate)
			}
		})
	}
}
