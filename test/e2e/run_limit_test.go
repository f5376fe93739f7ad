//go:build unix

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/test/fakemodel"
)

// TestRunWaitsOutRateLimitWithCLI: the scripted model answers the first
// request of task a's agent with a 429 that says when to try again; the
// real CLI, told not to retry (CLAUDE_CODE_MAX_RETRIES=0; it would retry
// ten times over minutes), gives up and reports the API error. drover
// takes it for a rate limit: task a waits for the time the error named
// without spending an iteration, task e goes on meanwhile, and a's first
// iteration is then worked again and the run is done.
func TestRunWaitsOutRateLimitWithCLI(t *testing.T) {
	sc := loadScenario(t, "run-agent.yaml")
	limit := fakemodel.Rule{
		Name: "limit", Times: 1,
		When: fakemodel.Match{LastUserContains: `working on task "a" of a drover run`, LastIsToolResult: new(false)},
		Answer: fakemodel.Answer{Error: &fakemodel.APIError{
			Status: 429, Type: "rate_limit_error",
			Message: "Number of requests has exceeded your rate limit. Please try again in 2 seconds.",
			Headers: map[string]string{"retry-after": "2"},
		}},
	}
	sc.Rules = append([]fakemodel.Rule{limit}, sc.Rules...)
	p := newRunProjectWith(t, sc, "CLAUDE_CODE_MAX_RETRIES=0")
	graph, err := filepath.Abs(filepath.Join("testdata", "run-limit-graph.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := p.exec(runTimeout, "run", graph, "--no-review")
	if code != 0 || !strings.Contains(out, " done") {
		t.Fatalf("drover run exited %d:\n%s", code, out)
	}
	if got := p.model.Used()[0]; got != 1 {
		t.Errorf("the 429 was answered %d times, want once: the CLI retried it", got)
	}
	first, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "run" {
		t.Fatalf("drover run printed no run id first:\n%s", out)
	}
	r := p.runStatus(strings.TrimSuffix(f[1], ":"))
	if r.State != api.RunDone {
		t.Fatalf("run %s: %s", r.State, r.Report)
	}
	for _, task := range r.Tasks {
		limits := 0
		if task.ID == "a" {
			limits = 1
		}
		if task.State != api.TaskDone || task.Iteration != 1 || task.Runs != limits+1 || task.Limits != limits || task.Waiting() {
			t.Errorf("task %s: %+v; want done in its first iteration, after %d limits", task.ID, task, limits)
		}
	}
}
