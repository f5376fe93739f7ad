package run

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

// tmpl is the built-in texts.
var tmpl = templates.Defaults()

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
		got, err := Expand(c.tmpl, vars, nil)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Expand(%q) error %v, want one with %q", c.tmpl, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Expand(%q) = %q, %v; want %q", c.tmpl, got, err, c.want)
		}
	}
}

func TestJudgeIteration(t *testing.T) {
	pass := &api.TestResult{Command: "go test ./x/...", Passed: true}
	fail := &api.TestResult{Command: "go test ./x/...", Passed: false, Output: "--- FAIL: TestX"}
	cases := []struct {
		name     string
		in       IterationDone
		done     bool
		feedback string
	}{
		{"passed and committed", IterationDone{Test: pass, Committed: true}, true, ""},
		{"tests fail", IterationDone{Test: fail, Committed: true}, false, "--- FAIL: TestX"},
		{"not committed", IterationDone{Test: pass}, false, "no commit"},
		{"dirty", IterationDone{Test: pass, Committed: true, Dirty: " M x.go\n?? y.go\n"}, false, "?? y.go"},
		{"agent failed", IterationDone{Test: pass, Committed: true}, false, "agent run failed"},
		{"drover failed", IterationDone{Err: errors.New("no work tree")}, false, "no work tree"},
		{"review passed", IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Pass}}, true, ""},
		{"review failed", IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Fail, Findings: []reviewer.Finding{{Severity: "blocking", File: "x.go", Line: 3, Summary: "off by one"}}}}, false, "- blocking (x.go:3): off by one"},
		{"review did not run", IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Failed, Err: errors.New("timed out")}}, false, "review could not run (timed out)"},
		{"review failed with a refused call", IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Fail, Findings: []reviewer.Finding{{Severity: "blocking", Summary: "untested"}}, Denials: []reviewer.Denial{{Tool: "Bash", Input: "go test ./..."}}}}, false, "- blocking: untested\nThe reviewer's CLI refused it 1 tool call(s), so its review may rest on checks it could not make: run them yourself.\n- `Bash` `go test ./...`"},
		{"review did not run after a refused call", IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Failed, Err: errors.New("no verdict"), Denials: []reviewer.Denial{{Tool: "Edit", Input: "x.go"}}}}, false, "the work is unreviewed.\nThe reviewer's CLI refused it 1 tool call(s)"},
	}
	cases[4].in.AgentErr = errors.New("exit 1")
	for _, c := range cases {
		done, fb := Judge(tmpl, c.in)
		if done != c.done || !strings.Contains(fb, c.feedback) {
			t.Errorf("%s: done %v feedback %q; want %v with %q", c.name, done, fb, c.done, c.feedback)
		}
	}
}

func TestResumeKeepsDoneTasks(t *testing.T) {
	rec := api.Run{State: api.RunFailed, Report: "boom", Suite: &api.TestResult{}, Tasks: []api.RunTask{
		{ID: "a", State: api.TaskDone, Iteration: 2, Runs: 2},
		{ID: "b", State: api.TaskRunning, Iteration: 1, Runs: 1, Paused: "NATS at nats://127.0.0.1:4222 is unreachable"},
		{ID: "c", State: api.TaskFailed, Iteration: 3, Runs: 3, Error: "not done"},
		{ID: "d", State: api.TaskNeedsReview, Conflict: []string{"x.go"}, Error: "merge conflict"},
		{ID: "e", State: api.TaskPending},
	}}
	got := Resume(rec, time.Unix(0, 0))
	want := []api.RunTask{
		{ID: "a", State: api.TaskDone, Iteration: 2, Runs: 2},
		{ID: "b", State: api.TaskPending, Iteration: 1, Runs: 1},
		{ID: "c", State: api.TaskPending, Runs: 3},
		{ID: "d", State: api.TaskDone},
		{ID: "e", State: api.TaskPending},
	}
	if got.State != api.RunRunning || got.Report != "" || got.Suite != nil {
		t.Errorf("resumed run: state %s report %q suite %v", got.State, got.Report, got.Suite)
	}
	for i := range want {
		g := got.Tasks[i]
		if g.ID != want[i].ID || g.State != want[i].State || g.Iteration != want[i].Iteration || g.Runs != want[i].Runs || g.Error != "" || g.Conflict != nil || g.Paused != "" {
			t.Errorf("task %s: %+v, want %+v", want[i].ID, g, want[i])
		}
	}
	if rec.Tasks[1].State != api.TaskRunning {
		t.Errorf("Resume changed its argument")
	}
}

func TestResumeKeepsBudgets(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	resumed := created.Add(20 * time.Minute) // the last resume
	saved := created.Add(30 * time.Minute)   // the last save before the end
	now := created.Add(2 * time.Hour)
	last := &api.TestResult{Command: "go test ./a", Output: "--- FAIL: TestA\nFAIL\n"}
	tasks := func() []api.RunTask {
		return []api.RunTask{
			// Started before the last resume, worked 5 minutes before it.
			{ID: "early", State: api.TaskRunning, Iteration: 2, Runs: 3, Role: "debugger", Status: "progressing", LastTest: last,
				CostUSD: 0.9, BudgetFromUSD: 0.1, StartedAt: created, WorkedBefore: 5 * time.Minute, Feedback: "tests failed"},
			// Started after the last resume, between iterations.
			{ID: "late", State: api.TaskPending, Iteration: 1, Runs: 1, Role: "developer", CostUSD: 0.5, StartedAt: resumed.Add(4 * time.Minute)},
			// Failed 2 minutes after it started.
			{ID: "failed", State: api.TaskFailed, Iteration: 3, Runs: 3, Role: "architect", CostUSD: 1.5, Error: "budget",
				StartedAt: resumed.Add(time.Minute), EndedAt: resumed.Add(3 * time.Minute), Feedback: "old"},
			{ID: "new", State: api.TaskPending},
		}
	}
	type want struct {
		state       api.TaskState
		iteration   int
		interrupted bool
		role        string
		budgetFrom  float64
		worked      time.Duration
		feedback    string
	}
	wantTasks := map[string]want{
		"early":  {api.TaskPending, 2, true, "debugger", 0.1, 15 * time.Minute, "tests failed"},
		"late":   {api.TaskPending, 1, false, "developer", 0, 6 * time.Minute, ""},
		"failed": {api.TaskPending, 0, false, "", 1.5, 0, ""},
		"new":    {api.TaskPending, 0, false, "", 0, 0, ""},
	}
	cases := []struct {
		name       string
		state      api.RunState
		runWorked  time.Duration
		budgetFrom float64
	}{
		// A crash: the run's budgets go on, counting the 10 minutes worked
		// since the last resume, not the time no supervisor worked it.
		{"crashed", api.RunRunning, 10*time.Minute + 20*time.Minute, 0.2},
		// A failed run resumed by a person begins its budgets again.
		{"failed", api.RunFailed, 0, 2.9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := api.Run{State: c.state, CostUSD: 2.9, BudgetFromUSD: 0.2, WorkedBefore: 20 * time.Minute,
				CreatedAt: created, ResumedAt: resumed, UpdatedAt: saved, Tasks: tasks()}
			got := Resume(rec, now)
			if got.WorkedBefore != c.runWorked || got.BudgetFromUSD != c.budgetFrom || !got.ResumedAt.Equal(now) {
				t.Errorf("run budget: worked %s from $%v resumed %s; want %s from $%v resumed %s", got.WorkedBefore, got.BudgetFromUSD, got.ResumedAt, c.runWorked, c.budgetFrom, now)
			}
			for _, g := range got.Tasks {
				w := wantTasks[g.ID]
				if g.State != w.state || g.Iteration != w.iteration || g.Interrupted != w.interrupted || g.Role != w.role ||
					g.BudgetFromUSD != w.budgetFrom || g.WorkedBefore != w.worked || g.Feedback != w.feedback {
					t.Errorf("task %s: %+v; want %+v", g.ID, g, w)
				}
			}
			// The minutes of early go on from 15: 5 more are its budget of 20.
			early := got.Tasks[0]
			if why := TaskBudgetSpent(tmpl, api.RunOptions{TaskMaxMinutes: 20}, TaskClock(early, got.ResumedAt), now.Add(4*time.Minute), 0); why != "" {
				t.Errorf("early within its minutes: %q", why)
			}
			if why := TaskBudgetSpent(tmpl, api.RunOptions{TaskMaxMinutes: 20}, TaskClock(early, got.ResumedAt), now.Add(5*time.Minute), 0); !strings.Contains(why, "20m0s elapsed") {
				t.Errorf("early past its minutes: %q", why)
			}
			if d := IterationDeadline(api.RunOptions{TaskMaxMinutes: 20, MaxMinutes: 60}, TaskClock(early, got.ResumedAt), RunClock(got)); !d.Equal(now.Add(5 * time.Minute)) {
				t.Errorf("deadline of early: %s, want %s", d, now.Add(5*time.Minute))
			}
			if el := now.Sub(RunClock(got)); el != c.runWorked {
				t.Errorf("run worked %s at its resume, want %s", el, c.runWorked)
			}
		})
	}
}

func TestNewWaves(t *testing.T) {
	g, err := rungraph.Parse([]byte("tasks:\n  - {id: a, description: A}\n  - {id: b, description: B, depends-on: [a]}\n  - {id: c, description: C}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec := New("run-1", "t.yaml", "", api.RunOptions{}, "main", g, time.Unix(0, 0))
	var got []string
	for _, task := range rec.Tasks {
		got = append(got, task.ID+":"+string(rune('0'+task.Wave))+":"+task.Branch)
	}
	want := []string{"a:1:drover/run-1/a", "c:1:drover/run-1/c", "b:2:drover/run-1/b"}
	if rec.Waves != 2 || !slices.Equal(got, want) {
		t.Errorf("newRun: %d waves, tasks %q; want 2 and %q", rec.Waves, got, want)
	}
}

func TestOptionsDefaultsAndChecks(t *testing.T) {
	def := config.Defaults().Run
	o, err := Options(api.RunOptions{}, def, tmpl)
	if err != nil || o.Concurrency != 2 || o.MaxIterations != 3 || o.TestCommand != "go test {{packages}}" || o.SuiteCommand != "go test ./..." || o.IterationTimeout != time.Hour || o.Agent != "" || o.NoReview {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	// The configuration gives the defaults; the options win over it.
	cfg := config.Run{Concurrency: 5, MaxIterations: 7, Agent: "my-agent {{prompt}}", TestCommand: "make test {{packages}}", SuiteCommand: "make check", IterationTimeout: time.Minute, TaskMaxUSD: "3", Review: false}
	o, err = Options(api.RunOptions{MaxIterations: 2}, cfg, tmpl)
	want := api.RunOptions{Concurrency: 5, MaxIterations: 2, Agent: "my-agent {{prompt}}", TestCommand: "make test {{packages}}", SuiteCommand: "make check", IterationTimeout: time.Minute, TaskMaxUSD: 3, NoReview: true}
	if err != nil || o != want {
		t.Errorf("from config: %+v, %v; want %+v", o, err, want)
	}
	if o, err := Options(api.RunOptions{TaskMaxUSD: 1}, cfg, tmpl); err != nil || o.TaskMaxUSD != 1 {
		t.Errorf("--task-max-usd 1 over run.task_max_usd 3: %+v, %v", o, err)
	}
	// run.review false does not turn off a reviewer given for the run.
	if o, err := Options(api.RunOptions{Reviewer: "claude"}, cfg, tmpl); err != nil || o.NoReview {
		t.Errorf("--reviewer with run.review false: %+v, %v", o, err)
	}
	for _, agent := range []string{"codex", "gemini:gemini-2.5-pro", "claude:opus", "my-agent --opt=a:b {{prompt}}"} {
		if _, err := Options(api.RunOptions{Agent: agent}, def, tmpl); err != nil {
			t.Errorf("agent %q: %v", agent, err)
		}
	}
	for _, bad := range []api.RunOptions{{Agent: "x {{nope}}"}, {Agent: "codex:-m"}, {Agent: "gemini:two words"}, {TestCommand: "go test {{prompt}}"}, {SuiteCommand: "make {{packages}}"}, {MaxUSD: -1}, {TaskMaxUSD: -1}, {TaskMaxMinutes: -0.5}, {MaxMinutes: -2}, {Reviewer: "rev 'x"}, {Reviewer: "rev", NoReview: true}} {
		if _, err := Options(bad, def, tmpl); err == nil {
			t.Errorf("Options(%+v) accepted it", bad)
		}
	}
	// The executor: local stays unwritten; nats takes run.nats.url and
	// refuses credentials in it, which are the configuration's.
	nats := def
	nats.Executor, nats.NATS.URL = "nats", "nats://10.0.0.1:4222"
	if o, err := Options(api.RunOptions{}, nats, tmpl); err != nil || o.Executor != "nats" || o.NATS != "nats://10.0.0.1:4222" {
		t.Errorf("run.executor nats: %+v, %v", o, err)
	}
	if o, err := Options(api.RunOptions{Executor: "nats", NATS: "nats://w:4222"}, def, tmpl); err != nil || o.NATS != "nats://w:4222" {
		t.Errorf("--executor nats --nats: %+v, %v", o, err)
	}
	if o, err := Options(api.RunOptions{}, def, tmpl); err != nil || o.Executor != "" || o.NATS != "" {
		t.Errorf("local: %+v, %v", o, err)
	}
	for bad, want := range map[api.RunOptions]string{
		{Executor: "ssh"}:                          `executor "ssh": not one of local, nats`,
		{Executor: "nats"}:                         "executor nats: no NATS URL (drover run --nats URL, or run.nats.url)",
		{Executor: "nats", NATS: "nats://u:p@h:1"}: "nats URL of host h:1: holds credentials; they go in run.nats.user, run.nats.password, run.nats.token, run.nats.nkey or run.nats.creds",
		{Executor: "nats", NATS: "h"}:              `nats URL "h": not a URL with a host (nats://host:4222)`,
	} {
		if _, err := Options(bad, def, tmpl); err == nil || err.Error() != want {
			t.Errorf("Options(%+v) = %v, want %q", bad, err, want)
		}
	}
	for bad, want := range map[api.RunOptions]string{
		{Reviewer: "rev", NoReview: true}: "a reviewer command and no review at once: choose one",
		{TaskMaxMinutes: -0.5}:            "task max minutes -0.5 is not a budget (0 for none)",
		{MaxUSD: math.Inf(1)}:             "max usd +Inf is not a budget (0 for none)",
	} {
		if _, err := Options(bad, def, tmpl); err == nil || err.Error() != want {
			t.Errorf("Options(%+v) = %v, want %q", bad, err, want)
		}
	}
}

func TestTaskPromptGolden(t *testing.T) {
	full := rungraph.Task{ID: "parser", Description: "Accept Unicode letters.", Files: []string{"lex/lexer.go"}, Tests: []string{"./lex/..."}}
	bare := rungraph.Task{ID: "docs", Description: "Write the docs."}
	noTests := rungraph.Task{ID: "guide", Description: "Write the guide.", Files: []string{"docs/guide.md"}, NoTests: true}
	o := api.RunOptions{TestCommand: "go test -race {{packages}}", SuiteCommand: "make test"}
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
		{"run_task_no_tests", noTests, 1, router.Developer, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checks, err := TestsOf(o, c.task, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := TaskPrompt(templates.Defaults(), c.task, "drover/run-1/"+c.task.ID, checks, c.iteration, 3, c.role, c.feedback)
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
			// A run has no tracker, unlike the loop whose role texts
			// speak of one.
			if strings.Contains(strings.ToLower(got), "tracker") {
				t.Errorf("the prompt of a run speaks of a tracker:\n%s", got)
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
		if got := RouteIteration(router.DefaultRules(), c.iteration, c.history, c.status); got != c.want {
			t.Errorf("RouteIteration(%d, %v, %q) = %s, want %s", c.iteration, c.history, c.status, got, c.want)
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
			m := IterationMetrics(4, c.tr)
			if m.Iteration != 4 || m.LastOutcome != c.outcome || m.TestPassRate != c.rate || (m.ErrorHash != "") != c.hashed {
				t.Errorf("iterationMetrics = %+v; want outcome %s, rate %v, hashed %v", m, c.outcome, c.rate, c.hashed)
			}
		})
	}
	// The same failure hashes the same, so Classify can see thrashing.
	a, b := IterationMetrics(1, &api.TestResult{Output: goFail}), IterationMetrics(2, &api.TestResult{Output: goFail})
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
		got := RunBudgetSpent(tmpl, o, c.elapsed, c.cost)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("RunBudgetSpent(tmpl, %s, %v) = %q, want %q", c.elapsed, c.cost, got, c.want)
		}
	}
	if got := RunBudgetSpent(tmpl, api.RunOptions{}, 100*time.Hour, 1000); got != "" {
		t.Errorf("no run budget, yet %q", got)
	}
	if got := TaskBudgetSpent(tmpl, o, start, start.Add(9*time.Minute), 100); got != "" {
		t.Errorf("task within budget: %q", got)
	}
	if got := TaskBudgetSpent(tmpl, o, start, start.Add(10*time.Minute), 0); !strings.Contains(got, "10 minutes (--task-max-minutes)") {
		t.Errorf("task past budget: %q", got)
	}
	usd := api.RunOptions{TaskMaxUSD: 1.5}
	if got := TaskBudgetSpent(tmpl, usd, start, start.Add(100*time.Hour), 1.49); got != "" {
		t.Errorf("task within its dollar budget: %q", got)
	}
	if got := TaskBudgetSpent(tmpl, usd, start, start, 1.5); !strings.Contains(got, "$1.50 (--task-max-usd) is spent: its agents cost $1.50") {
		t.Errorf("task past its dollar budget: %q", got)
	}
	// A budget finer than cents is named as given.
	if got := RunBudgetSpent(tmpl, api.RunOptions{MaxUSD: 0.015}, time.Minute, 0.02); !strings.Contains(got, "the run budget of $0.015 (--max-usd) is spent: the agents cost $0.02") {
		t.Errorf("run past a budget of $0.015: %q", got)
	}
	if got := TaskBudgetSpent(tmpl, api.RunOptions{TaskMaxUSD: 0.025}, start, start, 0.03); !strings.Contains(got, "the task budget of $0.025 (--task-max-usd)") {
		t.Errorf("task past a budget of $0.025: %q", got)
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
		if got := IterationDeadline(d.o, d.taskStart, start); !got.Equal(d.want) {
			t.Errorf("IterationDeadline(%+v, %s) = %s, want %s", d.o, d.taskStart, got, d.want)
		}
	}
}

func TestRouteIterationByConfiguredRules(t *testing.T) {
	cfg := config.Defaults()
	cfg.Loop.Routes = "phase=initial -> architect; last_outcome=tests_failed -> developer; anything -> debugger"
	set, err := NewSettings(cfg, api.RunOptions{NoReview: true})
	if err != nil {
		t.Fatal(err)
	}
	failed := []convergence.Metrics{{LastOutcome: convergence.OutcomeTestsFailed}}
	ok := []convergence.Metrics{{LastOutcome: convergence.OutcomeOK}}
	for _, c := range []struct {
		iteration int
		history   []convergence.Metrics
		want      router.Role
	}{{1, nil, router.Architect}, {2, failed, router.Developer}, {2, ok, router.Debugger}} {
		if got := RouteIteration(set.Rules, c.iteration, c.history, "exploring"); got != c.want {
			t.Errorf("iteration %d after %v: %s, want %s", c.iteration, c.history, got, c.want)
		}
	}
}

func TestTaskReview(t *testing.T) {
	at := time.Unix(100, 0)
	cases := []struct {
		in   reviewer.Result
		want api.TaskReview
	}{
		{reviewer.Result{Model: "opus", Outcome: reviewer.Pass, CostUSD: 0.1}, api.TaskReview{Model: "opus", Outcome: api.ReviewPass, CostUSD: 0.1, Iteration: 2, At: at}},
		{
			reviewer.Result{Model: "sonnet", Outcome: reviewer.Fail, Findings: []reviewer.Finding{{Severity: "blocking"}, {Severity: "minor"}, {Severity: "odd"}}},
			api.TaskReview{Model: "sonnet", Outcome: api.ReviewFail, Blocking: 2, Minor: 1, Iteration: 2, At: at},
		},
		{reviewer.Result{Outcome: reviewer.Failed, Err: errors.New("timed out")}, api.TaskReview{Outcome: api.ReviewFailed, Error: "timed out", Iteration: 2, At: at}},
		{
			reviewer.Result{Outcome: reviewer.Pass, Denials: []reviewer.Denial{{Tool: "Bash", Input: "go test ./..."}, {Tool: "Edit"}}},
			api.TaskReview{Outcome: api.ReviewPass, Denied: []string{"`Bash` `go test ./...`", "`Edit`"}, Iteration: 2, At: at},
		},
	}
	for _, c := range cases {
		if got := TaskReview(c.in, 2, at); !reflect.DeepEqual(*got, c.want) {
			t.Errorf("TaskReview(%+v) = %+v, want %+v", c.in, *got, c.want)
		}
	}
}

// The targeted tests of a task become its test command: as written for
// another runner, checked against the work tree for go test, quoted for
// the shell; a task with none runs the suite.
func TestTestCommand(t *testing.T) {
	tree := fstest.MapFS{ // a module whose root is no package
		"go.mod": {Data: []byte("module m\n")}, "README.md": {Data: []byte("x\n")},
		"lex/lex.go": {Data: []byte("package lex\n")}, "lex/testdata/in.txt": {Data: []byte("x\n")},
	}
	goTest := api.RunOptions{TestCommand: "go test -race {{packages}}", SuiteCommand: "go test ./..."}
	other := api.RunOptions{TestCommand: "pytest {{packages}}", SuiteCommand: "pytest"}
	cases := []struct {
		name string
		o    api.RunOptions
		task rungraph.Task
		want string
	}{
		{"go: package dir", goTest, rungraph.Task{Tests: []string{"lex"}}, "go test -race ./lex"},
		{"go: testdata file", goTest, rungraph.Task{Files: []string{"lex/testdata/in.txt"}}, "go test -race ./lex"},
		{"go: root README falls back to the suite", goTest, rungraph.Task{Files: []string{"README.md"}}, "go test ./..."},
		{"other runner: as written", other, rungraph.Task{Files: []string{"README.md", "lex/testdata/in.txt"}}, "pytest . lex/testdata"},
		{"other runner: quoted for the shell", other, rungraph.Task{Tests: []string{"tests/it's here.py", "a;rm -rf x"}}, `pytest 'tests/it'\''s here.py' 'a;rm -rf x'`},
		{"a shell command as written", api.RunOptions{TestCommand: "make lint && go test {{packages}} | tee log"}, rungraph.Task{Tests: []string{"x/y"}}, "make lint && go test x/y | tee log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := TestCommand(c.o, Tests(c.o, c.task, tree))
			if err != nil || got != c.want {
				t.Errorf("TestCommand = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	for _, bad := range []api.RunOptions{{TestCommand: "go test {{prompt}}"}, {TestCommand: "  "}} {
		if got, err := TestCommand(bad, []string{"x"}); err == nil {
			t.Errorf("TestCommand(%q) = %q, want an error", bad.TestCommand, got)
		}
	}
	for _, bad := range []string{"", "make {{packages}}"} {
		if got, err := SuiteCommand(api.RunOptions{SuiteCommand: bad}); err == nil {
			t.Errorf("SuiteCommand(%q) = %q, want an error", bad, got)
		}
	}
	if got, err := SuiteCommand(api.RunOptions{SuiteCommand: "echo boom; exit 1"}); err != nil || got != "echo boom; exit 1" {
		t.Errorf("SuiteCommand = %q, %v; want it as written", got, err)
	}
}

// How a task is checked after each iteration: its targeted tests, the
// suite when there is nothing narrower, and nothing when its graph says
// tests: [].
func TestTestsOf(t *testing.T) {
	tree := fstest.MapFS{"go.mod": {Data: []byte("module m\n")}, "lex/lex.go": {Data: []byte("package lex\n")}}
	o := api.RunOptions{TestCommand: "go test {{packages}}", SuiteCommand: "make test"}
	cases := []struct {
		name string
		task rungraph.Task
		want TaskTests
	}{
		{"listed tests", rungraph.Task{Tests: []string{"lex"}}, TaskTests{Tests: []string{"./lex"}, Command: "go test ./lex"}},
		{"derived from the files", rungraph.Task{Files: []string{"lex/lex.go"}}, TaskTests{Tests: []string{"./lex/..."}, Command: "go test ./lex/..."}},
		{"nothing to derive: the suite", rungraph.Task{Files: []string{"README.md"}}, TaskTests{Command: "make test", Suite: true}},
		{"tests: []: nothing runs", rungraph.Task{Files: []string{"lex/lex.go"}, NoTests: true}, TaskTests{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := TestsOf(o, c.task, tree)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("TestsOf = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	if _, err := TestsOf(api.RunOptions{SuiteCommand: "make test"}, rungraph.Task{Tests: []string{"x"}}, tree); err == nil {
		t.Error("TestsOf without a test command: no error")
	}
	if got, err := TestsOf(api.RunOptions{}, rungraph.Task{NoTests: true}, tree); err != nil || got.Command != "" {
		t.Errorf("TestsOf of a task without tests, no commands: %+v, %v", got, err)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"./lex/...": "./lex/...", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'", "x*": "'x*'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestClipLines(t *testing.T) {
	tests := []struct{ in, want string }{
		{" M a.go\n M b.go\n", " M a.go\n M b.go"},
		{"1\n2\n3\n4\n5\n", "1\n2\n... and 3 more"},
	}
	for _, tt := range tests {
		if got := clipLines(tmpl, tt.in, 2); got != tt.want {
			t.Errorf("clipLines(%q, 2) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
