package actors

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
)

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
	for _, bad := range []api.RunOptions{{Agent: "x {{nope}}"}, {TestCommand: "go test {{prompt}}"}, {SuiteCommand: "make {{packages}}"}} {
		if _, err := runOptions(bad); err == nil {
			t.Errorf("runOptions(%+v) accepted a bad template", bad)
		}
	}
}
