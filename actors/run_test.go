package actors

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestExpand(t *testing.T) {
	vars := map[string][]string{"packages": {"./a/...", "./b/..."}, "prompt": {"do it"}}
	cases := []struct {
		tmpl    string
		want    []string
		wantErr string
	}{
		{"go test {{packages}}", []string{"go", "test", "./a/...", "./b/..."}, ""},
		{"sh -c 'go vet {{packages}}'", []string{"sh", "-c", "go vet ./a/... ./b/..."}, ""},
		{"agent --p={{prompt}}", []string{"agent", "--p=do it"}, ""},
		{"go test ./...", []string{"go", "test", "./..."}, ""},
		{"{{prompt}} x", nil, "executable"},
		{"go test {{pkgs}}", nil, "unknown placeholder(s) {{pkgs}}"},
		{"   ", nil, "empty"},
		{"go 'test", nil, "quote"},
	}
	for _, c := range cases {
		got, err := expand(c.tmpl, vars, nil)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("expand(%q) error %v, want one with %q", c.tmpl, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("expand(%q) = %q, %v; want %q", c.tmpl, got, err, c.want)
		}
	}
}

func TestAgentSpec(t *testing.T) {
	claude, err := agentSpec(api.RunOptions{}, "r1", "t1", 2, "/wt", "the prompt")
	if err != nil || claude.Bin != "claude" || claude.Prompt != "the prompt" || !slices.Contains(claude.Args, "--dangerously-skip-permissions") || !slices.Contains(claude.Env, "DROVER_ITERATION=2") {
		t.Errorf("default agent: %+v, %v", claude, err)
	}
	custom, err := agentSpec(api.RunOptions{Agent: "my-agent --task {{task}} -p {{prompt}}"}, "r1", "t1", 1, "/wt", "hi")
	if err != nil || custom.Bin != "my-agent" || custom.Prompt != "" || !slices.Equal(custom.Args, []string{"--task", "t1", "-p", "hi"}) {
		t.Errorf("custom agent with {{prompt}}: %+v, %v", custom, err)
	}
	last, err := agentSpec(api.RunOptions{Agent: "my-agent"}, "r1", "t1", 1, "/wt", "hi")
	if err != nil || last.Prompt != "hi" || len(last.Args) != 0 {
		t.Errorf("custom agent without {{prompt}}: %+v, %v", last, err)
	}
}

func TestJudgeIteration(t *testing.T) {
	pass := &api.TestResult{Command: "go test ./x/...", Passed: true}
	fail := &api.TestResult{Command: "go test ./x/...", Passed: false, Output: "--- FAIL: TestX"}
	cases := []struct {
		name     string
		in       iterationDone
		done     bool
		feedback string
	}{
		{"passed and committed", iterationDone{test: pass, committed: true}, true, ""},
		{"tests fail", iterationDone{test: fail, committed: true}, false, "--- FAIL: TestX"},
		{"not committed", iterationDone{test: pass}, false, "no commit"},
		{"dirty", iterationDone{test: pass, committed: true, dirty: true}, false, "uncommitted"},
		{"agent failed", iterationDone{test: pass, committed: true}, false, "agent run failed"},
		{"drover failed", iterationDone{err: errors.New("no work tree")}, false, "no work tree"},
		{"review passed", iterationDone{test: pass, committed: true, review: &reviewer.Result{Outcome: reviewer.Pass}}, true, ""},
		{"review failed", iterationDone{test: pass, committed: true, review: &reviewer.Result{Outcome: reviewer.Fail, Findings: []reviewer.Finding{{Severity: "blocking", File: "x.go", Line: 3, Summary: "off by one"}}}}, false, "- blocking (x.go:3): off by one"},
		{"review did not run", iterationDone{test: pass, committed: true, review: &reviewer.Result{Outcome: reviewer.Failed, Err: errors.New("timed out")}}, false, "review could not run (timed out)"},
	}
	cases[4].in.agent.Err = errors.New("exit 1")
	for _, c := range cases {
		done, fb := judgeIteration(&c.in)
		if done != c.done || !strings.Contains(fb, c.feedback) {
			t.Errorf("%s: done %v feedback %q; want %v with %q", c.name, done, fb, c.done, c.feedback)
		}
	}
}

func TestResumeRunKeepsDoneTasks(t *testing.T) {
	rec := api.Run{State: api.RunFailed, Report: "boom", Suite: &api.TestResult{}, Tasks: []api.RunTask{
		{ID: "a", State: api.TaskDone, Iteration: 2, Runs: 2},
		{ID: "b", State: api.TaskRunning, Iteration: 1, Runs: 1},
		{ID: "c", State: api.TaskFailed, Iteration: 3, Runs: 3, Error: "not done"},
		{ID: "d", State: api.TaskNeedsReview, Conflict: []string{"x.go"}, Error: "merge conflict"},
		{ID: "e", State: api.TaskPending},
	}}
	got := resumeRun(rec, time.Unix(0, 0))
	want := []api.RunTask{
		{ID: "a", State: api.TaskDone, Iteration: 2, Runs: 2},
		{ID: "b", State: api.TaskPending, Runs: 1},
		{ID: "c", State: api.TaskPending, Runs: 3},
		{ID: "d", State: api.TaskDone},
		{ID: "e", State: api.TaskPending},
	}
	if got.State != api.RunRunning || got.Report != "" || got.Suite != nil {
		t.Errorf("resumed run: state %s report %q suite %v", got.State, got.Report, got.Suite)
	}
	for i := range want {
		g := got.Tasks[i]
		if g.ID != want[i].ID || g.State != want[i].State || g.Iteration != want[i].Iteration || g.Runs != want[i].Runs || g.Error != "" || g.Conflict != nil {
			t.Errorf("task %s: %+v, want %+v", want[i].ID, g, want[i])
		}
	}
	if rec.Tasks[1].State != api.TaskRunning {
		t.Errorf("resumeRun changed its argument")
	}
}

func TestNewRunWaves(t *testing.T) {
	g, err := rungraph.Parse([]byte("tasks:\n  - {id: a, description: A}\n  - {id: b, description: B, depends-on: [a]}\n  - {id: c, description: C}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRun("run-1", "t.yaml", "", api.RunOptions{}, "main", g, time.Unix(0, 0))
	var got []string
	for _, task := range rec.Tasks {
		got = append(got, task.ID+":"+string(rune('0'+task.Wave))+":"+task.Branch)
	}
	want := []string{"a:1:drover/run-1/a", "c:1:drover/run-1/c", "b:2:drover/run-1/b"}
	if rec.Waves != 2 || !slices.Equal(got, want) {
		t.Errorf("newRun: %d waves, tasks %q; want 2 and %q", rec.Waves, got, want)
	}
}

func TestRunOptionsDefaultsAndChecks(t *testing.T) {
	o, err := runOptions(api.RunOptions{})
	if err != nil || o.Concurrency != DefaultRunConcurrency || o.MaxIterations != DefaultRunMaxIterations || o.TestCommand != DefaultTestCommand || o.SuiteCommand != DefaultSuiteCommand {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range []api.RunOptions{{Agent: "x {{nope}}"}, {TestCommand: "go test {{prompt}}"}, {SuiteCommand: "make {{packages}}"}, {MaxUSD: -1}, {TaskMaxMinutes: -0.5}, {MaxMinutes: -2}} {
		if _, err := runOptions(bad); err == nil {
			t.Errorf("runOptions(%+v) accepted a bad template", bad)
		}
	}
}

func TestTaskPromptGolden(t *testing.T) {
	full := rungraph.Task{ID: "parser", Description: "Accept Unicode letters.", Files: []string{"lex/lexer.go"}, Tests: []string{"./lex/..."}}
	bare := rungraph.Task{ID: "docs", Description: "Write the docs."}
	cases := []struct {
		name      string
		task      rungraph.Task
		iteration int
		role      router.Role
		feedback  string
	}{
		{"run_task_first", full, 1, router.Developer, ""},
		{"run_task_retry", full, 2, router.Debugger, "The targeted tests failed (`go test ./lex/...`):\n--- FAIL: TestIdent"},
		{"run_task_bare_architect", bare, 3, router.Architect, "There is no commit on this branch yet."},
		{"run_task_unknown_role", bare, 1, router.Role("tester"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := taskPrompt(templates.Defaults(), c.task, "drover/run-1/"+c.task.ID, c.iteration, 3, c.role, c.feedback)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("taskPrompt:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(got, "{{") || strings.Contains(got, "\n\n\n") {
				t.Errorf("prompt has a placeholder or a run of blank lines:\n%s", got)
			}
		})
	}
}

func TestRouteIteration(t *testing.T) {
	failed := convergence.Metrics{LastOutcome: convergence.OutcomeTestsFailed}
	build := convergence.Metrics{LastOutcome: convergence.OutcomeBuildFailed}
	ok := convergence.Metrics{LastOutcome: convergence.OutcomeOK}
	cases := []struct {
		iteration int
		history   []convergence.Metrics
		status    string
		want      router.Role
	}{
		{1, nil, "", router.Developer},
		{1, []convergence.Metrics{failed}, "thrashing", router.Developer},
		{2, []convergence.Metrics{failed}, "exploring", router.Debugger},
		{2, []convergence.Metrics{build}, "exploring", router.Debugger},
		{2, []convergence.Metrics{ok}, "exploring", router.Developer},
		{2, nil, "", router.Developer},
		{4, []convergence.Metrics{failed}, string(convergence.StuckPlateau), router.Architect},
	}
	for _, c := range cases {
		if got := routeIteration(c.iteration, c.history, c.status); got != c.want {
			t.Errorf("routeIteration(%d, %v, %q) = %s, want %s", c.iteration, c.history, c.status, got, c.want)
		}
	}
}

func TestIterationMetrics(t *testing.T) {
	goFail := "exit status 1\n=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:9: got 41\n=== RUN   TestB\n--- PASS: TestB (0.00s)\nFAIL\n"
	cases := []struct {
		name    string
		tr      *api.TestResult
		outcome convergence.Outcome
		rate    float64
		hashed  bool
	}{
		{"no tests ran", nil, convergence.OutcomeNone, -1, false},
		{"passed, no summary", &api.TestResult{Passed: true}, convergence.OutcomeOK, -1, false},
		{"go -v failure", &api.TestResult{Output: goFail}, convergence.OutcomeTestsFailed, 0.5, true},
		{"bare failure", &api.TestResult{Output: "exit status 1\n"}, convergence.OutcomeTestsFailed, -1, true},
		{"build failure", &api.TestResult{Output: "# x\nx.go:3:5: undefined: y\nFAIL\tx [build failed]\n"}, convergence.OutcomeBuildFailed, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := iterationMetrics(4, c.tr)
			if m.Iteration != 4 || m.LastOutcome != c.outcome || m.TestPassRate != c.rate || (m.ErrorHash != "") != c.hashed {
				t.Errorf("iterationMetrics = %+v; want outcome %s, rate %v, hashed %v", m, c.outcome, c.rate, c.hashed)
			}
		})
	}
	// The same failure hashes the same, so Classify can see thrashing.
	a, b := iterationMetrics(1, &api.TestResult{Output: goFail}), iterationMetrics(2, &api.TestResult{Output: goFail})
	if st, _ := convergence.Classify([]convergence.Metrics{a, b, a}, convergence.Budget{}, convergence.Thresholds{}); a.ErrorHash != b.ErrorHash || st != convergence.Thrashing {
		t.Errorf("three equal failures: hashes %s %s, status %s; want equal hashes and thrashing", a.ErrorHash, b.ErrorHash, st)
	}
}

func TestBudgets(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	o := api.RunOptions{TaskMaxMinutes: 10, MaxMinutes: 30, MaxUSD: 2}
	runCases := []struct {
		elapsed time.Duration
		cost    float64
		want    string
	}{
		{29 * time.Minute, 1.99, ""},
		{30 * time.Minute, 0, "30 minutes (--max-minutes)"},
		{time.Minute, 2, "$2.00 (--max-usd)"},
	}
	for _, c := range runCases {
		got := runBudgetSpent(o, c.elapsed, c.cost)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("runBudgetSpent(%s, %v) = %q, want %q", c.elapsed, c.cost, got, c.want)
		}
	}
	if got := runBudgetSpent(api.RunOptions{}, 100*time.Hour, 1000); got != "" {
		t.Errorf("no run budget, yet %q", got)
	}
	if got := taskBudgetSpent(o, start, start.Add(9*time.Minute)); got != "" {
		t.Errorf("task within budget: %q", got)
	}
	if got := taskBudgetSpent(o, start, start.Add(10*time.Minute)); !strings.Contains(got, "10 minutes (--task-max-minutes)") {
		t.Errorf("task past budget: %q", got)
	}
	deadlines := []struct {
		o         api.RunOptions
		taskStart time.Time
		want      time.Time
	}{
		{api.RunOptions{}, start, time.Time{}},
		{o, start, start.Add(10 * time.Minute)},
		{o, start.Add(25 * time.Minute), start.Add(30 * time.Minute)},
		{api.RunOptions{MaxMinutes: 1.5}, start, start.Add(90 * time.Second)},
	}
	for _, d := range deadlines {
		if got := iterationDeadline(d.o, d.taskStart, start); !got.Equal(d.want) {
			t.Errorf("iterationDeadline(%+v, %s) = %s, want %s", d.o, d.taskStart, got, d.want)
		}
	}
}

func TestReviewerSpec(t *testing.T) {
	cases := []struct {
		opt     string
		cli     string
		command []string
		wantErr string
	}{
		{"", "", nil, ""},
		{"claude", reviewer.CLIClaude, nil, ""},
		{"my-rev --json {{prompt}}", reviewer.CLICustom, []string{"my-rev", "--json", "{{prompt}}"}, ""},
		{"my-rev 'x", "", nil, "quote"},
	}
	for _, c := range cases {
		spec, err := reviewerSpec(c.opt, "review it")
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("reviewerSpec(%q) error %v, want one with %q", c.opt, err, c.wantErr)
			}
			continue
		}
		switch {
		case err != nil:
			t.Errorf("reviewerSpec(%q): %v", c.opt, err)
		case c.cli == "" && spec != nil:
			t.Errorf("reviewerSpec(%q) = %+v, want none", c.opt, spec)
		case c.cli != "" && (spec == nil || spec.CLI != c.cli || !slices.Equal(spec.Command, c.command) || spec.Prompt != "review it"):
			t.Errorf("reviewerSpec(%q) = %+v, want CLI %s command %q", c.opt, spec, c.cli, c.command)
		}
	}
	if _, err := runOptions(api.RunOptions{Reviewer: "rev 'x"}); err == nil {
		t.Errorf("runOptions accepted a broken reviewer command")
	}
}
