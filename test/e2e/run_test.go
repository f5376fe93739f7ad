//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// runTimeout bounds one `drover run` of these tests: four scripted CLI
// runs in three waves and a few `go test`s. It only stops a hang.
const runTimeout = 4 * time.Minute

// runTasks are the task ids of the graphs in testdata/run-graph*.yaml.
var runTasks = []string{"a", "b", "c", "d"}

// runProject is a queueProject holding a tiny Go module, whose supervisor
// runs the real CLI as the headless agent of `drover run`.
type runProject struct {
	*queueProject
	// environ is the environment of the supervisor (and so of every
	// agent it starts) and of the drover commands the test runs.
	environ []string
}

// newRunProject sets up the project and starts its supervisor with what
// the agents need: the scripted model's address, the offline CLI settings,
// the pinned CLI first on PATH, and the test's Go build cache (the scratch
// HOME would make every `go test` compile the standard library again).
// scenario names the scripted model's file in testdata.
func newRunProject(t *testing.T, scenario string) *runProject {
	t.Helper()
	return newRunProjectWith(t, loadScenario(t, scenario))
}

// newRunProjectWith is newRunProject with the scenario sc, and extra
// entries for the supervisor's environment.
func newRunProjectWith(t *testing.T, sc *fakemodel.Scenario, extra ...string) *runProject {
	t.Helper()
	q := newQueueProject(t, sc)
	if err := os.WriteFile(filepath.Join(q.root, "go.mod"), []byte("module example.com/runproj\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q.git("add", "go.mod")
	q.git("commit", "-q", "-m", "add go.mod")

	gocache, err := exec.CommandContext(t.Context(), "go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	var parent []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DROVER_") {
			parent = append(parent, kv)
		}
	}
	sep := string(os.PathListSeparator)
	p := &runProject{queueProject: q}
	p.environ = claudecli.Environ(parent, q.home, q.model.URL(), append([]string{
		"PATH=" + filepath.Dir(q.cliBin) + sep + droverDir + sep + os.Getenv("PATH"),
		"XDG_RUNTIME_DIR=" + q.run,
		"GOCACHE=" + strings.TrimSpace(string(gocache)),
		"GOTOOLCHAIN=local",
	}, extra...))
	if out, errs, code := p.exec(time.Minute, "serve", "--detach"); code != 0 {
		t.Fatalf("drover serve --detach exited %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	return p
}

// exec runs drover in the project with the supervisor's environment and
// returns its stdout, its stderr and its exit code.
func (p *runProject) exec(timeout time.Duration, args ...string) (string, string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Dir = p.root
	cmd.Env = p.environ
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	p.t.Logf("drover %q:\nstdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		p.t.Fatalf("drover %q: %v", args, ctx.Err())
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		p.t.Fatalf("running drover %q: %v", args, err)
	}
	return out.String(), errb.String(), 0
}

// startRun runs `drover run` on a graph of testdata, waits for it to end,
// and returns what it printed, its exit code and the run's id.
func (p *runProject) startRun(graph string) (string, int, string) {
	p.t.Helper()
	file, err := filepath.Abs(filepath.Join("testdata", graph))
	if err != nil {
		p.t.Fatal(err)
	}
	out, _, code := p.exec(runTimeout, "run", file)
	first, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "run" || !strings.HasSuffix(f[1], ":") {
		p.t.Fatalf("drover run printed no run id first:\n%s", out)
	}
	return out, code, strings.TrimSuffix(f[1], ":")
}

// runStatus is `drover run status ID --json`.
func (p *runProject) runStatus(id string) api.Run {
	p.t.Helper()
	out, errs, code := p.exec(time.Minute, "run", "status", id, "--json")
	if code != 0 {
		p.t.Fatalf("drover run status exited %d: %s", code, errs)
	}
	var r api.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		p.t.Fatalf("drover run status --json: %v\n%s", err, out)
	}
	return r
}

// stamp is the time (ns) the scripted agent of task noted as its start or
// end, or 0 when it noted none.
func (p *runProject) stamp(kind, task string) int64 {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.root, ".git", "e2e", kind+"-"+task))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		p.t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		p.t.Fatalf("%s stamp of task %s: %v", kind, task, err)
	}
	return n
}

// ruleUses maps the scenario's rule names to how often each answered.
func (p *runProject) ruleUses() map[string]int {
	sc := loadScenario(p.t, "run-agent.yaml")
	m := map[string]int{}
	for i, n := range p.model.Used() {
		m[sc.Rules[i].Name] = n
	}
	return m
}

// reviews returns the scripted model's requests from drover's reviewers
// (the CLI under --json-schema) by the task they reviewed.
func (p *runProject) reviews() map[string][]fakemodel.Request {
	p.t.Helper()
	re := regexp.MustCompile(`You are an independent reviewer of task "(\w+)" of a drover run`)
	out := map[string][]fakemodel.Request{}
	for _, r := range p.model.Messages() {
		if !r.HasTool("StructuredOutput") {
			continue
		}
		m := re.FindStringSubmatch(r.LastUserText)
		if m == nil {
			p.t.Errorf("a StructuredOutput request that is not a task review: %s", r.Summary())
			continue
		}
		out[m[1]] = append(out[m[1]], r)
	}
	return out
}

// checkReviewed asserts that each of tasks was reviewed once, by the real
// CLI as the configured reviewer with its first model (opus), after its
// agent's work was committed, and that the run recorded the pass.
func (p *runProject) checkReviewed(r api.Run, tasks ...string) {
	p.t.Helper()
	reviews := p.reviews()
	for _, id := range tasks {
		got := reviews[id]
		if len(got) != 1 {
			p.t.Errorf("task %s was reviewed %d times, want once", id, len(got))
			continue
		}
		if !strings.HasPrefix(got[0].Model, "claude-opus-") {
			p.t.Errorf("the review of task %s asked model %q, want opus first", id, got[0].Model)
		}
		if end := p.stamp("end", id); end == 0 || got[0].Time.UnixNano() < end {
			p.t.Errorf("task %s was reviewed before its agent committed", id)
		}
		var task api.RunTask
		for _, t := range r.Tasks {
			if t.ID == id {
				task = t
			}
		}
		if lr := task.LastReview; task.Reviews != 1 || lr == nil || lr.Outcome != api.ReviewPass || lr.Model != "opus" || lr.Iteration != 1 {
			p.t.Errorf("task %s: %d reviews, last %+v; want one pass by opus of iteration 1", id, task.Reviews, lr)
		}
	}
	if n := len(reviews); n != len(tasks) {
		p.t.Errorf("%d tasks were reviewed, want %d", n, len(tasks))
	}
}

// TestRunWavesWithCLI runs `drover run` with the real CLI as the agent on
// four tasks in three waves: each agent writes its task's Go test file
// (Write) and commits it (Bash) in its own work tree; drover runs the
// task's package tests there, has the real CLI review the task as the
// configured reviewer, merges each wave into main and runs `go test ./...`
// as the checkpoint.
func TestRunWavesWithCLI(t *testing.T) {
	p := newRunProject(t, "run-agent.yaml")
	out, code, id := p.startRun("run-graph.yaml")
	if code != 0 || !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("drover run exited %d; want 0 and %q in:\n%s", code, "run "+id+" done", out)
	}
	for _, w := range []string{
		"each task reviewed by claude (opus, sonnet in turn)",
		"wave 1 merged into main; suite passed", "wave 3 merged into main; suite passed",
		"task d (wave 3): done, iteration 1, developer, tests passed, review pass (opus), $",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("drover run did not print %q", w)
		}
	}

	// Every task's agent started and ended (the scripted model's stamps).
	start, end := map[string]int64{}, map[string]int64{}
	for _, task := range runTasks {
		start[task], end[task] = p.stamp("start", task), p.stamp("end", task)
		if start[task] == 0 || end[task] == 0 {
			t.Fatalf("the agent of task %s left no start or end stamp", task)
		}
	}
	// Waves in order.
	if end["a"] > start["b"] || end["a"] > start["c"] {
		t.Errorf("wave 2 started before task a ended")
	}
	if end["b"] > start["d"] || end["c"] > start["d"] {
		t.Errorf("wave 3 started before wave 2 ended")
	}
	// b and c ran at the same time: each waited for the other to start.
	if !(start["b"] < end["c"] && start["c"] < end["b"]) {
		t.Errorf("tasks b and c did not overlap: b %d..%d, c %d..%d", start["b"], end["b"], start["c"], end["c"])
	}
	// One agent session per task, each through the four scripted steps
	// once, and one reviewer session per task.
	for name, n := range p.ruleUses() {
		if n != len(runTasks) {
			t.Errorf("rule %s answered %d times, want %d", name, n, len(runTasks))
		}
	}
	sessions := map[string]bool{}
	for _, r := range p.model.Messages() {
		sessions[r.SessionID] = true
	}
	if len(sessions) != 2*len(runTasks) {
		t.Errorf("the model saw %d CLI sessions, want %d (an agent and a reviewer per task)", len(sessions), 2*len(runTasks))
	}

	r := p.runStatus(id)
	p.checkReviewed(r, runTasks...)
	if r.State != api.RunDone || r.Waves != 3 || r.Merged != 3 || r.Target != "main" {
		t.Errorf("run: state %s, %d of %d waves merged into %s; want done, 3 of 3 into main", r.State, r.Merged, r.Waves, r.Target)
	}
	if r.Suite == nil || !r.Suite.Passed || r.Suite.Command != "go test ./..." {
		t.Errorf("last checkpoint: %+v; want `go test ./...` passed", r.Suite)
	} else {
		for _, task := range runTasks {
			if w := "ok  \texample.com/runproj/pkg/" + task; !strings.Contains(r.Suite.Output, w) {
				t.Errorf("the last checkpoint did not test pkg/%s:\n%s", task, r.Suite.Output)
			}
		}
	}
	branch := map[string]string{}
	for _, task := range r.Tasks {
		branch[task.ID] = task.Branch
		wantTest := "go test ./pkg/" + task.ID + "/..."
		if task.State != api.TaskDone || task.Iteration != 1 || task.LastTest == nil || !task.LastTest.Passed || task.LastTest.Command != wantTest {
			t.Errorf("task %s: state %s, iteration %d, last test %+v; want done in 1 iteration, %q passed", task.ID, task.State, task.Iteration, task.LastTest, wantTest)
		}
		// The agent's stream-json was read as it came: its three scripted
		// tool calls (Bash, Write, Bash) and its cost.
		if task.ToolCalls != 3 || task.CostUSD <= 0 {
			t.Errorf("task %s: %d tool calls, $%v; want the agent's 3 and its cost", task.ID, task.ToolCalls, task.CostUSD)
		}
	}

	// The branches were merged onto main, each wave's on top of the last.
	for _, task := range runTasks {
		b := branch[task]
		if got := p.git("log", "-1", "--format=%s", b); got != "task "+task {
			t.Errorf("tip of %s is %q, want the agent's commit %q", b, got, "task "+task)
		}
		if _, err := claudecli.Git(t.Context(), p.root, "merge-base", "--is-ancestor", b, "main"); err != nil {
			t.Errorf("%s is not merged into main: %v", b, err)
		}
		p.git("cat-file", "-e", "main:pkg/"+task+"/"+task+"_test.go")
	}
	for _, pair := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		if _, err := claudecli.Git(t.Context(), p.root, "merge-base", "--is-ancestor", branch[pair[0]], branch[pair[1]]); err != nil {
			t.Errorf("task %s's branch does not start from task %s's work", pair[1], pair[0])
		}
	}
	if got := p.git("branch", "--show-current"); got != "main" {
		t.Errorf("the main work tree is on %q, want main", got)
	}
}

// TestRunStopsOnFailingSuiteWithCLI is TestRunWavesWithCLI with b and c
// adding to one package: each passes its targeted tests, but merged they
// declare Name twice, so wave 2's checkpoint fails and the run stops
// there with a report, before task d.
func TestRunStopsOnFailingSuiteWithCLI(t *testing.T) {
	p := newRunProject(t, "run-agent.yaml")
	out, code, id := p.startRun("run-graph-clash.yaml")
	if code == 0 {
		t.Fatalf("a run whose checkpoint fails exited 0:\n%s", out)
	}
	for _, w := range []string{"wave 1 merged into main; suite passed", "run " + id + " failed", "wave 2 checkpoint failed", "Name redeclared"} {
		if !strings.Contains(out, w) {
			t.Errorf("drover run did not print %q", w)
		}
	}

	r := p.runStatus(id)
	if r.State != api.RunFailed || r.Merged != 1 || r.Active {
		t.Errorf("run: state %s, %d waves merged, active %t; want failed after wave 1, not active", r.State, r.Merged, r.Active)
	}
	for _, w := range []string{"wave 2 checkpoint failed", "`go test ./...` does not pass on main", "Name redeclared"} {
		if !strings.Contains(r.Report, w) {
			t.Errorf("the report lacks %q:\n%s", w, r.Report)
		}
	}
	if r.Suite == nil || r.Suite.Passed {
		t.Errorf("last checkpoint: %+v; want a failed one", r.Suite)
	}
	want := map[string]api.TaskState{"a": api.TaskDone, "b": api.TaskDone, "c": api.TaskDone, "d": api.TaskPending}
	for _, task := range r.Tasks {
		if task.State != want[task.ID] {
			t.Errorf("task %s is %s, want %s", task.ID, task.State, want[task.ID])
		}
		if task.ID == "d" && task.Runs != 0 {
			t.Errorf("task d ran %d times after the failed checkpoint", task.Runs)
		}
	}
	if s := p.stamp("start", "d"); s != 0 {
		t.Error("the agent of task d ran after the failed checkpoint")
	}
	if n := p.ruleUses()["start"]; n != 3 {
		t.Errorf("%d agents started, want 3 (a, b, c)", n)
	}
	p.checkReviewed(r, "a", "b", "c")
	// The wave was merged; the suite found the clash on main.
	for _, f := range []string{"pkg/shared/b_test.go", "pkg/shared/c_test.go"} {
		p.git("cat-file", "-e", "main:"+f)
	}
}
