package dashboard

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func loopPoints() []LoopPoint {
	return []LoopPoint{
		{Iteration: 1, TestPassRate: 0.25, TestsPassed: 1, TestsFailed: 3, LintIssues: 6, Status: "exploring", Role: "developer", CostUSD: 0.1},
		{Iteration: 2, TestPassRate: 0.5, TestsPassed: 2, TestsFailed: 2, LintIssues: 3, Status: "progressing", Role: "developer", CostUSD: 0.25},
		{Iteration: 3, TestPassRate: 1, TestsPassed: 4, LintIssues: 0, Status: "converged_success", Role: "debugger", CostUSD: 0.4, Outcome: "converged"},
	}
}

func twoWaveRun() api.Run {
	passed := &api.TestResult{Command: "go test", Passed: true, At: t0.Add(9 * time.Minute)}
	return api.Run{
		ID: "r-1", Target: "main", State: api.RunDone, Waves: 2, Merged: 2, CostUSD: 1.5,
		CreatedAt: t0, UpdatedAt: t0.Add(10 * time.Minute), Suite: passed,
		Tasks: []api.RunTask{
			{ID: "b", Wave: 1, State: api.TaskDone, Iteration: 2, Role: "debugger", LastTest: passed, CostUSD: 0.5, StartedAt: t0, EndedAt: t0.Add(4 * time.Minute),
				LastReview: &api.TaskReview{Outcome: api.ReviewPass, Minor: 1}},
			{ID: "a", Wave: 1, State: api.TaskDone, Iteration: 1, Role: "developer", CostUSD: 0.25, StartedAt: t0, EndedAt: t0.Add(2 * time.Minute)},
			{ID: "c", Wave: 2, State: api.TaskDone, Iteration: 1, Role: "developer", CostUSD: 0.75, StartedAt: t0.Add(5 * time.Minute), EndedAt: t0.Add(9 * time.Minute)},
		},
	}
}

func TestCharts(t *testing.T) {
	running := twoWaveRun()
	running.State = api.RunRunning
	running.Tasks[2].State, running.Tasks[2].EndedAt = api.TaskRunning, time.Time{}
	running.Tasks = append(running.Tasks, api.RunTask{ID: "d", Wave: 2, State: api.TaskPending})
	for _, tc := range []struct {
		name string
		svg  string
	}{
		{"loop.svg", string(LoopChart(loopPoints()))},
		{"loop-empty.svg", string(LoopChart(nil))},
		{"run-waves.svg", string(RunWaves(twoWaveRun(), t0.Add(time.Hour)))},
		{"run-waves-running.svg", string(RunWaves(running, t0.Add(7*time.Minute)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goldenfile.Check(t, filepath.Join("testdata", tc.name), []byte(tc.svg), *update)
		})
	}
}

func TestPages(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	ev := &api.Event{ID: 7, Kind: api.EventLoopIteration, Session: "s-loop", Time: t0}
	for _, tc := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"sessions.html", func(b *bytes.Buffer) error {
			return r.Sessions(b, SessionsView{Project: "demo", LastEventID: 7, Runs: []api.Run{twoWaveRun()}, Sessions: []SessionRow{
				{SessionStatus: api.SessionStatus{ID: "s-loop", Workflow: "loop", State: "active", Health: "working", Iteration: 3, CostUSD: 0.4, SpentUSD: 0.4, BudgetUSD: 2}, LastEvent: ev},
				{SessionStatus: api.SessionStatus{ID: "s-plan", Workflow: "plan", State: "active", Health: "stale", Iteration: 1, CostUSD: 0.1, SpentUSD: 0.3}},
				{SessionStatus: api.SessionStatus{ID: "s-q", Workflow: "queue", State: "stopped", Health: "idle"}},
			}})
		}},
		{"sessions-empty.html", func(b *bytes.Buffer) error { return r.Sessions(b, SessionsView{Project: "demo"}) }},
		{"loop.html", func(b *bytes.Buffer) error {
			return r.Loop(b, LoopView{Session: "s-loop", Points: loopPoints(), Status: api.LoopStatus{SessionID: "s-loop", Iteration: 3, MaxIterations: 10, Status: "converged_success", Role: "debugger", CostUSD: 0.4, MaxUSD: 2}})
		}},
		{"plan.html", func(b *bytes.Buffer) error {
			return r.Plan(b, PlanView{Session: "s-plan", Status: api.PlanStatus{PlanID: "p1", Phase: "plan-review", Cycle: 1, OpenFindings: 0, Totals: api.PlanTotals{CostUSD: 0.3}}, Reviews: []PlanReviewItem{
				{PlanReviewRun: api.PlanReviewRun{Time: t0, Kind: "plan", Iteration: 1, Model: "opus", Outcome: "answered", Verdict: "fail", Findings: 3, Blocking: 1, CostUSD: 0.2}, File: "plan-review-1.md"},
				{PlanReviewRun: api.PlanReviewRun{Time: t0.Add(time.Minute), Kind: "plan", Iteration: 2, Model: "opus", Outcome: "answered", Verdict: "pass", CostUSD: 0.1}, File: "plan-review-2.md"},
			}})
		}},
		{"run.html", func(b *bytes.Buffer) error { return r.Run(b, RunView{Run: twoWaveRun(), Now: t0.Add(time.Hour)}) }},
		{"runs.html", func(b *bytes.Buffer) error { return r.Runs(b, RunsView{Runs: []api.Run{twoWaveRun()}}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", tc.name), b.Bytes(), *update)
		})
	}
}
