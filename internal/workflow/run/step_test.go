package run

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/router"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// graph: a and c in wave 1 (c first in the file), b after a in wave 2.
func graph(t *testing.T) rungraph.Graph {
	t.Helper()
	g, err := rungraph.Parse([]byte("tasks:\n  - {id: c, description: C}\n  - {id: a, description: A}\n  - {id: b, description: B, depends-on: [a]}\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func facts(t *testing.T, review bool) Facts {
	t.Helper()
	set, err := NewSettings(config.Defaults(), api.RunOptions{NoReview: !review})
	if err != nil {
		t.Fatal(err)
	}
	return Facts{Settings: set, Templates: tmpl}
}

func fresh(t *testing.T, o api.RunOptions) State {
	t.Helper()
	if o.Concurrency == 0 {
		o.Concurrency = 2
	}
	if o.MaxIterations == 0 {
		o.MaxIterations = 3
	}
	return Restore(New("run-1", "g.yaml", "", o, "main", graph(t), t0), t0)
}

// passed is an iteration that finished its task.
func passed(task string, iteration int, cost float64) IterationDone {
	return IterationDone{Task: task, Iteration: iteration, Base: "base0", Progress: Progress{CostUSD: cost, ToolCalls: 3, Finished: true},
		Test: &api.TestResult{Command: "go test ./" + task, Passed: true}, Committed: true, Branch: "drover/run-1/" + task}
}

func starts(effects []Effect) []string {
	var out []string
	for _, e := range effects {
		if s, ok := e.(StartIteration); ok {
			out = append(out, s.Task)
		}
	}
	return out
}

// step runs Step and checks what holds for every step: the input state is
// not changed, a step with effects commits now.
func step(t *testing.T, s State, ev Event, f Facts, now time.Time) (State, Decision, []Effect) {
	t.Helper()
	g := graph(t)
	before := s.clone()
	next, d, effects := Step(s, ev, g.Order(), f, now)
	if !reflect.DeepEqual(s.Run, before.Run) || s.Stop != before.Stop || s.Merging != before.Merging || len(s.History) != len(before.History) || len(s.Live) != len(before.Live) {
		t.Fatalf("Step(%T) changed its input state", ev)
	}
	if len(effects) > 0 && d.Commit != CommitNow {
		t.Fatalf("Step(%T) has effects %v but commits %v", ev, effects, d.Commit)
	}
	return next, d, effects
}

// A run's life: the first wave's tasks start (up to the concurrency),
// each done task lets the next start, a done wave is merged and checked,
// the next wave starts, and the last checkpoint ends the run.
func TestStepWorksWavesInOrder(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{Concurrency: 1})
	s, d, eff := step(t, s, Begin{}, f, t0)
	if got := starts(eff); len(got) != 1 || got[0] != "c" || d.Finished || d.Commit != CommitNow {
		t.Fatalf("begin: starts %v, decision %+v", got, d)
	}
	if c := s.Task("c"); c.State != api.TaskRunning || c.Iteration != 1 || c.Runs != 1 || c.Role != string(router.Developer) || !c.StartedAt.Equal(t0) {
		t.Errorf("task c after its start: %+v", c)
	}
	s, _, eff = step(t, s, IterationDone(passed("c", 1, 0.5)), f, t0.Add(time.Minute))
	if got := starts(eff); len(got) != 1 || got[0] != "a" {
		t.Fatalf("after c: starts %v", got)
	}
	if c := s.Task("c"); c.State != api.TaskDone || c.CostUSD != 0.5 || c.ToolCalls != 3 || c.Base != "base0" || s.Run.CostUSD != 0.5 {
		t.Errorf("task c done: %+v, run cost %v", c, s.Run.CostUSD)
	}
	s, _, eff = step(t, s, IterationDone(passed("a", 1, 0.25)), f, t0.Add(2*time.Minute))
	want := []Effect{CheckWave{Wave: 1, Branches: []string{"drover/run-1/c", "drover/run-1/a"}}}
	if !reflect.DeepEqual(eff, want) || !s.Merging || !s.Busy() {
		t.Fatalf("wave 1 done: effects %v, merging %v; want %v", eff, s.Merging, want)
	}
	// Nothing starts while the wave is merged.
	if _, _, eff := step(t, s, Begin{}, f, t0.Add(2*time.Minute)); len(eff) != 0 {
		t.Errorf("effects while merging: %v", eff)
	}
	suite := &api.TestResult{Command: "go test ./...", Passed: true}
	s, _, eff = step(t, s, WaveChecked{Wave: 1, Suite: suite}, f, t0.Add(3*time.Minute))
	if got := starts(eff); s.Run.Merged != 1 || s.Merging || len(got) != 1 || got[0] != "b" || s.Run.Suite != suite {
		t.Fatalf("wave 1 checked: merged %d, starts %v", s.Run.Merged, got)
	}
	s, _, eff = step(t, s, IterationDone(passed("b", 1, 0.25)), f, t0.Add(4*time.Minute))
	s, d, _ = step(t, s, WaveChecked{Wave: 2, Suite: suite}, f, t0.Add(5*time.Minute))
	if s.Run.State != api.RunDone || !d.Finished || s.Run.Report != "all 3 tasks done in 2 waves and merged into main; cost $1.00" {
		t.Errorf("the end: %s %q, finished %v", s.Run.State, s.Run.Report, d.Finished)
	}
	_ = eff
}

// What an iteration that did not finish its task leads to.
func TestStepIterationOutcomes(t *testing.T) {
	failing := func(it int) IterationDone {
		m := passed("c", it, 0.1)
		m.Test = &api.TestResult{Command: "go test ./c", Output: "--- FAIL: TestC\nFAIL\n"}
		return m
	}
	cases := []struct {
		name      string
		opts      api.RunOptions
		iteration int
		done      IterationDone
		state     api.TaskState
		err       string
		feedback  string
	}{
		{"retried with feedback", api.RunOptions{}, 1, failing(1), api.TaskPending, "", "The targeted tests failed (`go test ./c`):\n--- FAIL: TestC"},
		{"out of iterations", api.RunOptions{MaxIterations: 1}, 1, failing(1), api.TaskFailed, "not done after 1 iterations: The targeted tests failed (`go test ./c`):", ""},
		{"drover's own trouble", api.RunOptions{}, 1, IterationDone{Task: "c", Iteration: 1, Err: errors.New("no work tree")}, api.TaskFailed, "no work tree", ""},
		{"task dollars spent", api.RunOptions{TaskMaxUSD: 0.1}, 1, failing(1), api.TaskFailed, "the task budget of $0.10 (--task-max-usd) is spent: its agents cost $0.10 after 1 iterations; the last: The targeted tests failed", ""},
		{"not committed", api.RunOptions{}, 1, IterationDone{Task: "c", Iteration: 1, Test: &api.TestResult{Passed: true}}, api.TaskPending, "", "There is no commit on this branch yet."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fresh(t, c.opts)
			s, _, _ = step(t, s, Begin{}, facts(t, false), t0)
			s, _, eff := step(t, s, c.done, facts(t, false), t0.Add(time.Minute))
			task := s.Task("c")
			state := task.State
			if state == api.TaskRunning && task.Iteration == 2 {
				state = api.TaskPending // retried at once
			}
			if state != c.state || !strings.HasPrefix(task.Error, c.err) || !strings.HasPrefix(task.Feedback, c.feedback) {
				t.Errorf("task %s, error %q, feedback %q; want %s, %q, %q", task.State, task.Error, task.Feedback, c.state, c.err, c.feedback)
			}
			if c.state == api.TaskPending {
				// The tests failed: the debugger; else the developer.
				role := router.Developer
				if c.done.Test != nil && !c.done.Test.Passed {
					role = router.Debugger
				}
				want := StartIteration{Task: "c", Iteration: 2, Role: role, Base: task.Base, Branch: "drover/run-1/c", Feedback: task.Feedback, Attempt: 2}
				if len(eff) != 1 || !reflect.DeepEqual(eff[0], want) {
					t.Errorf("the next iteration: %+v, want %+v", eff, want)
				}
			}
		})
	}
}

// Three iterations failing the same way thrash: the task fails rather
// than spend its last iterations on the same.
func TestStepEndsThrashingTask(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{MaxIterations: 10})
	s, _, _ = step(t, s, Begin{}, f, t0)
	for it := 1; it <= 3; it++ {
		m := passed("c", it, 0)
		m.Test = &api.TestResult{Command: "go test ./c", Output: "--- FAIL: TestC\n    c_test.go:9: got 41\nFAIL\n"}
		s, _, _ = step(t, s, m, f, t0.Add(time.Duration(it)*time.Minute))
	}
	if c := s.Task("c"); c.State != api.TaskFailed || c.Status != string(convergence.Thrashing) || !strings.HasPrefix(c.Error, "thrashing after 3 iterations: ") {
		t.Errorf("task c: %s %s %q", c.State, c.Status, c.Error)
	}
}

// A configured loop.success_pass_rate reaches a run's tasks as it reaches
// loops: tests at a pass rate of 0.85 are converged_success at 0.8, not at
// the default 0.95.
func TestStepUsesTheLoopThresholds(t *testing.T) {
	out := "=== RUN   TestA\n"
	for i := 0; i < 17; i++ {
		out += "--- PASS: TestP (0.00s)\n"
	}
	for i := 0; i < 3; i++ {
		out += "--- FAIL: TestF (0.00s)\n"
	}
	for _, c := range []struct {
		rate float64
		want convergence.Status
	}{{0.8, convergence.ConvergedSuccess}, {0.95, convergence.Exploring}} {
		cfg := config.Defaults()
		cfg.Loop.SuccessPassRate = c.rate
		set, err := NewSettings(cfg, api.RunOptions{NoReview: true})
		if err != nil {
			t.Fatal(err)
		}
		if set.Thresholds != loopconf.Thresholds(cfg.Loop) {
			t.Errorf("thresholds %+v, want the loop's %+v", set.Thresholds, loopconf.Thresholds(cfg.Loop))
		}
		f := Facts{Settings: set, Templates: tmpl}
		s, _, _ := step(t, fresh(t, api.RunOptions{}), Begin{}, f, t0)
		m := passed("c", 1, 0)
		m.Test = &api.TestResult{Command: "go test ./c", Output: out}
		s, _, _ = step(t, s, m, f, t0.Add(time.Minute))
		if got := s.Task("c").Status; got != string(c.want) {
			t.Errorf("loop.success_pass_rate %v: status %s, want %s", c.rate, got, c.want)
		}
	}
}

// An agent's progress is counted as it comes, saved soon rather than at
// once, and ends the agents when it spends a budget: the task's agent
// once, for its dollars; all of them, for the run's.
func TestStepAgentProgress(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{TaskMaxUSD: 1, MaxUSD: 2})
	s, _, _ = step(t, s, Begin{}, f, t0)
	s, d, eff := step(t, s, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 0.5, ToolCalls: 2}}, f, t0)
	if d.Commit != CommitSoon || len(eff) != 0 || s.Task("c").CostUSD != 0.5 || s.Task("c").ToolCalls != 2 || s.Run.CostUSD != 0.5 {
		t.Fatalf("progress: %+v %v; task %+v", d, eff, s.Task("c"))
	}
	s, _, eff = step(t, s, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 1.2, ToolCalls: 3}}, f, t0)
	if !reflect.DeepEqual(eff, []Effect{EndIteration{Task: "c"}}) || s.Task("c").CostUSD != 1.2 {
		t.Fatalf("task budget spent: %v, cost %v", eff, s.Task("c").CostUSD)
	}
	if _, _, eff := step(t, s, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 1.3}}, f, t0); len(eff) != 0 {
		t.Errorf("the task's agent is ended twice: %v", eff)
	}
	// A stale report (another iteration) counts nothing.
	if s2, _, _ := step(t, s, AgentProgress{Task: "c", Iteration: 7, Progress: Progress{CostUSD: 9}}, f, t0); s2.Run.CostUSD != s.Run.CostUSD {
		t.Errorf("a stale report was counted")
	}
	// Progress of a stopping run is saved at once.
	stopping := s
	stopping.Stop = "cancelled"
	if _, d, _ := step(t, stopping, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 1.25}}, f, t0); d.Commit != CommitNow {
		t.Errorf("progress of a stopping run: commit %v, want CommitNow", d.Commit)
	}
	s, _, eff = step(t, s, AgentProgress{Task: "a", Iteration: 1, Progress: Progress{CostUSD: 0.9}}, f, t0)
	if len(eff) != 1 || !strings.Contains(eff[0].(EndIterations).Reason, "the run budget of $2.00 (--max-usd) is spent: the agents cost $2.10") || s.Stop == "" {
		t.Fatalf("run budget spent: %v", eff)
	}
	// Once every agent ended, the run fails and says why.
	s, _, _ = step(t, s, IterationDone{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 1.3}, AgentErr: errors.New("killed")}, f, t0.Add(time.Second))
	if s.Run.State != api.RunRunning || s.Task("c").State != api.TaskFailed || !strings.HasPrefix(s.Task("c").Error, "stopped with the run: the run budget") {
		t.Fatalf("c ended: run %s, task %+v", s.Run.State, s.Task("c"))
	}
	s, d, eff = step(t, s, IterationDone{Task: "a", Iteration: 1, Progress: Progress{CostUSD: 0.9}, AgentErr: errors.New("killed")}, f, t0.Add(time.Second))
	if s.Run.State != api.RunFailed || !d.Finished || len(starts(eff)) != 0 || !strings.HasPrefix(s.Run.Report, "run stopped: the run budget of $2.00") || !strings.Contains(s.Run.Report, "\n- task a is failed: stopped with the run") {
		t.Errorf("the end: %s %q, finished %v, effects %v", s.Run.State, s.Run.Report, d.Finished, eff)
	}
}

func TestStepCancel(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{Concurrency: 1})
	s, _, _ = step(t, s, Begin{}, f, t0)
	s, d, eff := step(t, s, Cancel{}, f, t0)
	if s.Stop != "cancelled (drover run cancel)" || d.Finished || !reflect.DeepEqual(eff, []Effect{EndIterations{Reason: s.Stop}}) {
		t.Fatalf("cancel: stop %q, %+v, %v", s.Stop, d, eff)
	}
	if _, _, eff := step(t, s, Cancel{}, f, t0); len(eff) != 0 {
		t.Errorf("a second cancel: %v", eff)
	}
	s, d, eff = step(t, s, IterationDone{Task: "c", Iteration: 1, AgentErr: errors.New("killed")}, f, t0)
	if s.Run.State != api.RunFailed || !d.Finished || len(eff) != 0 || !strings.HasPrefix(s.Run.Report, "run stopped: cancelled (drover run cancel)") {
		t.Errorf("cancelled: %s %q %v", s.Run.State, s.Run.Report, eff)
	}
}

func TestStepWaveCheckpoints(t *testing.T) {
	suiteFailed := &api.TestResult{Command: "echo boom; exit 1", Output: "boom\n"}
	cases := []struct {
		name   string
		ev     WaveChecked
		report string
		review string
	}{
		{"suite failed", WaveChecked{Wave: 1, Suite: suiteFailed}, "wave 1 checkpoint failed: `echo boom; exit 1` does not pass on main after merging the wave; the run stops here.\nboom", ""},
		{"merge failed", WaveChecked{Wave: 1, MergeErr: errors.New("not a branch")}, "wave 1: merging into main failed: not a branch", ""},
		{"no suite", WaveChecked{Wave: 1}, "wave 1: the suite did not run", ""},
		{
			"conflict", WaveChecked{Wave: 1, Conflicts: []Conflict{{Branch: "drover/run-1/a", Files: []string{"x.go", "y.go"}, Diff: "<<<<<<<"}}},
			"wave 1: branches conflict with main and need review (the others were merged):\n- task a: merge conflict in x.go, y.go\n<<<<<<<", "a",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := facts(t, false)
			s, _, _ := step(t, fresh(t, api.RunOptions{}), Begin{}, f, t0)
			s, _, _ = step(t, s, IterationDone(passed("c", 1, 0)), f, t0)
			s, _, _ = step(t, s, IterationDone(passed("a", 1, 0)), f, t0)
			s, d, eff := step(t, s, c.ev, f, t0)
			if s.Run.State != api.RunFailed || s.Run.Report != c.report || !d.Finished || len(eff) != 0 || s.Run.Merged != 0 {
				t.Errorf("run %s, report %q, merged %d, effects %v; want failed with %q", s.Run.State, s.Run.Report, s.Run.Merged, eff, c.report)
			}
			if c.review != "" {
				if a := s.Task(c.review); a.State != api.TaskNeedsReview || len(a.Conflict) != 2 {
					t.Errorf("task %s: %+v", c.review, a)
				}
			}
		})
	}
}

// A supervisor that died mid-iteration: the resumed run starts the cut
// iteration again, under its number and role, and the wave checkpoint
// that was under way is derived again from the stored state.
func TestStepRederivesEffectsAfterRestart(t *testing.T) {
	f := facts(t, true)
	s := fresh(t, api.RunOptions{Concurrency: 2})
	s, _, _ = step(t, s, Begin{}, f, t0)
	s, _, _ = step(t, s, IterationDone(passed("c", 1, 0)), f, t0.Add(time.Minute))
	m := passed("a", 1, 0)
	m.Test.Passed, m.Test.Output = false, "--- FAIL: TestA\nFAIL\n"
	s, _, eff := step(t, s, m, f, t0.Add(2*time.Minute))
	if got := starts(eff); len(got) != 1 || eff[0].(StartIteration).Iteration != 2 || eff[0].(StartIteration).Role != router.Debugger || !eff[0].(StartIteration).Review || eff[0].(StartIteration).ReviewModel != "opus" {
		t.Fatalf("a's second iteration: %+v", eff)
	}
	stored := s.Run // committed before the effects ran; then the crash
	rs := Restore(Resume(stored, t0.Add(time.Hour)), t0.Add(time.Hour))
	rs, _, eff = step(t, rs, Begin{}, f, t0.Add(time.Hour))
	// Its work tree starts from the branch's last commit, without what
	// the killed agent left (Fresh); it is the same attempt as the one
	// cut short (2, a's second start), which an executor of other
	// machines adopts.
	want := StartIteration{Task: "a", Iteration: 2, Role: router.Debugger, Base: "base0", Branch: "drover/run-1/a", Fresh: true, Feedback: stored.Tasks[1].Feedback, Review: true, ReviewModel: "opus", Attempt: 2}
	if len(eff) != 1 || !reflect.DeepEqual(eff[0], want) || rs.Task("a").Runs != 3 {
		t.Fatalf("after the restart: %+v, want %+v (runs %d)", eff, want, rs.Task("a").Runs)
	}
	rs, _, eff = step(t, rs, IterationDone(passed("a", 2, 0)), f, t0.Add(time.Hour+time.Minute))
	if len(eff) != 1 || !rs.Merging {
		t.Fatalf("wave 1 done: %v", eff)
	}
	stored = rs.Run // the checkpoint was under way at the next crash
	rs = Restore(Resume(stored, t0.Add(2*time.Hour)), t0.Add(2*time.Hour))
	if _, _, eff = step(t, rs, Begin{}, f, t0.Add(2*time.Hour)); !reflect.DeepEqual(eff, []Effect{CheckWave{Wave: 1, Branches: []string{"drover/run-1/c", "drover/run-1/a"}}}) {
		t.Errorf("the checkpoint after the restart: %v", eff)
	}
}

// Begin on a run whose time budget is spent stops it at once.
func TestStepRunTimeBudget(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{MaxMinutes: 30})
	s, _, eff := step(t, s, Begin{}, f, t0)
	if dl := eff[0].(StartIteration).Deadline; !dl.Equal(t0.Add(30 * time.Minute)) {
		t.Errorf("deadline %s", dl)
	}
	s, d, _ := step(t, s, IterationDone{Task: "c", Iteration: 1, AgentErr: errors.New("killed")}, f, t0.Add(31*time.Minute))
	if s.Stop == "" || s.Run.State != api.RunRunning || d.Finished {
		t.Fatalf("c ended past the budget: stop %q, run %s", s.Stop, s.Run.State)
	}
	s, d, _ = step(t, s, IterationDone{Task: "a", Iteration: 1, AgentErr: errors.New("killed")}, f, t0.Add(31*time.Minute))
	if s.Run.State != api.RunFailed || !d.Finished || !strings.Contains(s.Run.Report, "the run budget of 30 minutes (--max-minutes) is spent: 31m0s elapsed") {
		t.Errorf("run %s: %q", s.Run.State, s.Run.Report)
	}
}

// A supervisor that died after the commit that spent a task's budget,
// before its agent was ended and its iteration failed the task: the
// resumed run fails the task as that iteration's end would have, and
// starts no agent of it again.
func TestStepFailsTaskACrashLeftOutOfBudget(t *testing.T) {
	cases := []struct {
		name   string
		opts   api.RunOptions
		before func(State) State
		err    string
	}{
		{
			name: "dollars", opts: api.RunOptions{TaskMaxUSD: 1},
			before: func(s State) State {
				s, _, eff := step(t, s, AgentProgress{Task: "a", Iteration: 1, Progress: Progress{CostUSD: 1.2}}, facts(t, false), t0.Add(time.Minute))
				if !reflect.DeepEqual(eff, []Effect{EndIteration{Task: "a"}}) {
					t.Fatalf("the progress that spends the budget: %v", eff)
				}
				return s
			},
			err: "the task budget of $1.00 (--task-max-usd) is spent: its agents cost $1.20",
		},
		{
			name: "minutes", opts: api.RunOptions{TaskMaxMinutes: 30},
			before: func(s State) State {
				// A heartbeat's commit, the task's minutes spent.
				s.Run.UpdatedAt = t0.Add(31 * time.Minute)
				return s
			},
			err: "the task budget of 30 minutes (--task-max-minutes) is spent: 31m0s elapsed",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := facts(t, false)
			s, _, _ := step(t, fresh(t, c.opts), Begin{}, f, t0)
			stored := c.before(s).Run // committed; then the crash
			later := t0.Add(time.Hour)
			rs := Restore(Resume(stored, later), later)
			rs, d, eff := step(t, rs, Begin{}, f, later)
			a := rs.Task("a")
			if a.State != api.TaskFailed || a.Error != c.err || a.Runs != 1 {
				t.Errorf("task a after the restart: %s %q, %d runs; want failed with %q after 1 run", a.State, a.Error, a.Runs, c.err)
			}
			// The wave cannot be merged any more: c, cut short too, is
			// not worked again, and the run fails saying why.
			if len(eff) != 0 || !d.Finished || rs.Run.State != api.RunFailed || !strings.Contains(rs.Run.Report, "- task a is failed: "+c.err) {
				t.Errorf("after the restart: effects %v, finished %v, run %s %q", eff, d.Finished, rs.Run.State, rs.Run.Report)
			}
		})
	}
}

func TestStartable(t *testing.T) {
	task := func(ids ...string) []*api.RunTask {
		out := make([]*api.RunTask, len(ids))
		for i, id := range ids {
			out[i] = &api.RunTask{ID: id}
		}
		return out
	}
	alone := map[string]bool{"x": true, "y": true}
	cases := []struct {
		name             string
		pending, running []*api.RunTask
		concurrency      int
		want             []string
	}{
		{"parallel tasks up to the concurrency", task("a", "b", "c"), nil, 2, []string{"a", "b"}},
		{"running tasks take slots", task("a", "b", "c"), task("d"), 2, []string{"a"}},
		{"no slot left", task("a"), task("c", "d"), 2, nil},
		{"an alone task starts by itself, first", task("a", "x", "b"), nil, 3, []string{"x"}},
		{"alone tasks one at a time, in file order", task("y", "x"), nil, 3, []string{"y"}},
		{"nothing starts beside a running alone task", task("a", "b"), task("x"), 3, nil},
		{"an alone task waits for what runs, and holds the rest back", task("a", "x"), task("b"), 3, nil},
		{"with the alone tasks done, the rest in parallel", task("a", "b"), nil, 3, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range startable(c.pending, c.running, alone, c.concurrency) {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("startable = %v, want %v", got, c.want)
			}
		})
	}
}

// A task marked parallel: false never runs beside another task of its
// wave, through its retries and theirs, whatever the concurrency.
func TestStepAloneTaskNeverOverlaps(t *testing.T) {
	g, err := rungraph.Parse([]byte(`tasks:
  - {id: p1, description: P1}
  - {id: solo, description: Solo, parallel: false}
  - {id: p2, description: P2, parallel: true}
  - {id: p3, description: P3}
  - {id: next, description: Next, depends-on: [solo], parallel: false}
`), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := facts(t, false)
	s := Restore(New("run-1", "g.yaml", "", api.RunOptions{Concurrency: 3, MaxIterations: 3}, "main", g, t0), t0)
	now := t0
	var seen []string // the tasks running after each step, joined
	check := func(s State) {
		t.Helper()
		var running []string
		for _, task := range s.Run.Tasks {
			if task.State == api.TaskRunning {
				running = append(running, task.ID)
			}
		}
		seen = append(seen, strings.Join(running, "+"))
		if len(running) > 1 && (slices.Contains(running, "solo") || slices.Contains(running, "next")) {
			t.Fatalf("an alone task ran beside others: %v", running)
		}
	}
	s, _, _ = Step(s, Begin{}, g.Order(), f, now)
	check(s)
	// Every task's first iteration leaves no commit, so each runs twice.
	for steps := 0; s.Run.State == api.RunRunning && steps < 50; steps++ {
		now = now.Add(time.Minute)
		var ev Event
		if s.Merging {
			ev = WaveChecked{Wave: s.Run.Merged + 1, Suite: &api.TestResult{Passed: true}}
		} else {
			for _, task := range s.Run.Tasks {
				if task.State == api.TaskRunning {
					m := passed(task.ID, task.Iteration, 0.1)
					m.Committed = task.Iteration > 1
					ev = m
					break
				}
			}
		}
		if ev == nil {
			t.Fatalf("nothing runs and the run is %s: %+v", s.Run.State, s.Run.Tasks)
		}
		s, _, _ = Step(s, ev, g.Order(), f, now)
		check(s)
	}
	if s.Run.State != api.RunDone {
		t.Fatalf("run %s: %s", s.Run.State, s.Run.Report)
	}
	want := []string{"solo", "solo", "p1+p2+p3", "p1+p2+p3", "p2+p3", "p2+p3", "p3", "p3", "", "next", "next", "", ""}
	if !slices.Equal(seen, want) {
		t.Errorf("running after each step:\n%q\nwant\n%q", seen, want)
	}
}

// TestStepNamesTheWorker: a task's iteration names the worker it runs on
// from its progress and its end; a report that names none keeps it.
func TestStepNamesTheWorker(t *testing.T) {
	f := facts(t, false)
	s := fresh(t, api.RunOptions{})
	s, _, _ = step(t, s, Begin{}, f, t0)
	for _, c := range []struct {
		name string
		ev   Event
		want string
	}{
		{"progress names it", AgentProgress{Task: "c", Iteration: 1, Worker: "w1"}, "w1"},
		{"progress without one", AgentProgress{Task: "c", Iteration: 1, Progress: Progress{ToolCalls: 1}}, "w1"},
		{"a stale report", AgentProgress{Task: "c", Iteration: 7, Worker: "w9"}, "w1"},
		{"the end names another", IterationDone{Task: "c", Iteration: 1, Worker: "w2", AgentErr: errors.New("killed")}, "w2"},
	} {
		s, _, _ = step(t, s, c.ev, f, t0)
		if got := s.Task("c").Worker; got != c.want {
			t.Errorf("%s: worker %q, want %q", c.name, got, c.want)
		}
	}
}

// A supervisor that dies while an agent works, its progress counted, and
// is resumed: a nats run adopts the agent, whose reports go on from what
// was counted (counted once); a local run's agent died with it, and the
// new agent's reports add to what the dead one spent.
func TestResumeCountsAdoptedAgentOnce(t *testing.T) {
	cases := []struct {
		name     string
		opts     api.RunOptions
		wantCost float64
		wantTool int
	}{
		{"nats: the agent is adopted", api.RunOptions{Executor: "nats", NATS: "nats://127.0.0.1:4222"}, 0.5, 3},
		{"local: a new agent", api.RunOptions{}, 0.8, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(t, false)
			s, _, _ := step(t, fresh(t, tc.opts), Begin{}, f, t0)
			s, _, _ = step(t, s, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 0.3, ToolCalls: 2}}, f, t0)
			rs := Restore(Resume(s.Run, t0.Add(time.Hour)), t0.Add(time.Hour))
			rs, _, _ = step(t, rs, Begin{}, f, t0.Add(time.Hour))
			rs, _, _ = step(t, rs, AgentProgress{Task: "c", Iteration: 1, Progress: Progress{CostUSD: 0.5, ToolCalls: 3}}, f, t0.Add(time.Hour))
			if c := rs.Task("c"); c.CostUSD != tc.wantCost || c.ToolCalls != tc.wantTool || rs.Run.CostUSD != tc.wantCost {
				t.Errorf("task c: $%v, %d tool calls, run $%v; want $%v, %d", c.CostUSD, c.ToolCalls, rs.Run.CostUSD, tc.wantCost, tc.wantTool)
			}
		})
	}
}
