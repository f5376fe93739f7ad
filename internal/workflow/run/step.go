package run

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// Step applies one event to a run and decides what follows: the iterations
// to start (the pending tasks of the current wave, at most Concurrency at
// once, and a task marked `parallel: false` by itself), the wave to merge
// and check once all its tasks are done, the agents to end when a budget
// is spent, and the run's end. order is the
// graph's dependency order (rungraph.Graph.Order), in which a wave's
// branches are merged. s is not changed.
func Step(s State, ev Event, order []rungraph.Task, f Facts, now time.Time) (State, Decision, []Effect) {
	st := &stepper{s: s.clone(), f: f, now: now, order: order}
	switch e := ev.(type) {
	case Begin, Wake:
		st.advance()
	case Cancel:
		if st.s.Stop == "" {
			st.stop(say(f.Templates, templates.RunCancelled, nil))
		}
		st.advance()
	case IterationDone:
		st.iterationDone(e)
		st.advance()
	case WaveChecked:
		st.waveChecked(e)
		st.advance()
	case AgentProgress:
		st.progress(e)
		d := Decision{Commit: CommitSoon}
		// A run that is stopping is saved at once: its stop must not wait
		// for the next progress save.
		if len(st.effects) > 0 || st.s.Stop != "" {
			d.Commit = CommitNow
		}
		return st.s, d, st.effects
	}
	return st.s, Decision{Commit: CommitNow, Finished: st.s.Finished()}, st.effects
}

// clone copies what a step changes, so that the caller's state stays as
// it was.
func (s State) clone() State {
	s.Run.Tasks = slices.Clone(s.Run.Tasks)
	s.History = maps.Clone(s.History)
	if s.History == nil {
		s.History = map[string][]convergence.Metrics{}
	}
	s.Live = maps.Clone(s.Live)
	if s.Live == nil {
		s.Live = map[string]Progress{}
	}
	s.Ending = maps.Clone(s.Ending)
	if s.Ending == nil {
		s.Ending = map[string]bool{}
	}
	return s
}

type stepper struct {
	s       State
	f       Facts
	now     time.Time
	order   []rungraph.Task
	effects []Effect
}

// stop ends the run for why: no iteration starts, and the running agents
// are ended.
func (st *stepper) stop(why string) {
	st.s.Stop = why
	st.effects = append(st.effects, EndIterations{Reason: why})
}

// checkRunBudget stops the run when a run budget is spent.
func (st *stepper) checkRunBudget() {
	if st.s.Stop != "" {
		return
	}
	r := st.s.Run
	if why := RunBudgetSpent(st.f.Templates, r.Options, st.now.Sub(RunClock(r)), r.CostUSD-r.BudgetFromUSD); why != "" {
		st.stop(why)
	}
}

// advance starts what can start now, and ends the run when nothing is
// left to do.
func (st *stepper) advance() {
	r := &st.s.Run
	if r.State != api.RunRunning || st.s.Merging {
		return
	}
	tmpl := st.f.Templates
	wave := r.Merged + 1
	if wave > r.Waves {
		r.State = api.RunDone
		r.Report = say(tmpl, templates.RunDone, map[string]string{
			"tasks": strconv.Itoa(len(r.Tasks)), "waves": strconv.Itoa(r.Waves), "target": r.Target, "cost": usd(r.CostUSD),
		})
		return
	}
	st.checkRunBudget()
	if st.s.Stop != "" {
		// Let what runs end (its agents were ended), then stop.
		if st.s.Inflight() == 0 {
			st.fail(st.stopReport())
		}
		return
	}
	var pending, failed []*api.RunTask
	var wake time.Time
	allDone := true
	for i := range r.Tasks {
		t := &r.Tasks[i]
		if t.Wave != wave {
			continue
		}
		switch t.State {
		case api.TaskPending:
			if t.Waiting() {
				// A task that waits for a limit holds no place: the rest
				// of the wave goes on without it.
				if t.LimitUntil.After(st.now) {
					if wake.IsZero() || t.LimitUntil.Before(wake) {
						wake = t.LimitUntil
					}
					break
				}
				st.endWait(t)
			}
			// A task whose budget was spent while its agent ran, and
			// whose iteration a crash cut short before it could fail the
			// task, fails now as that iteration's end would have: no
			// agent of it runs again.
			if why := TaskBudgetSpent(tmpl, r.Options, TaskClock(*t, r.ResumedAt), st.now, t.CostUSD-t.BudgetFromUSD); why != "" {
				t.State, t.Error, t.EndedAt = api.TaskFailed, outOfBudget(tmpl, why, t.Iteration, t.Feedback), st.now
				failed = append(failed, t)
				break
			}
			pending = append(pending, t)
		case api.TaskFailed, api.TaskNeedsReview:
			failed = append(failed, t)
		}
		allDone = allDone && t.State == api.TaskDone
	}
	if len(failed) > 0 {
		// The wave cannot be merged; let what runs finish, then stop.
		if st.s.Inflight() == 0 {
			st.fail(say(tmpl, templates.RunWaveBlocked, map[string]string{"wave": strconv.Itoa(wave), "tasks": taskLines(failed, false)}))
		}
		return
	}
	if !wake.IsZero() {
		st.effects = append(st.effects, WakeAt{At: wake})
	}
	inflight := st.s.Inflight()
	for _, t := range startable(pending, st.running(wave), alone(st.order), r.Options.Concurrency) {
		st.startIteration(t)
		inflight++
	}
	if allDone && inflight == 0 {
		st.s.Merging = true
		var branches []string
		for _, gt := range st.order {
			if t := st.s.Task(gt.ID); t != nil && t.Wave == wave {
				branches = append(branches, t.Branch)
			}
		}
		st.effects = append(st.effects, CheckWave{Wave: wave, Branches: branches})
	}
}

// running returns the tasks of wave whose iteration is under way.
func (st *stepper) running(wave int) []*api.RunTask {
	var out []*api.RunTask
	for i := range st.s.Run.Tasks {
		if t := &st.s.Run.Tasks[i]; t.Wave == wave && t.State == api.TaskRunning {
			out = append(out, t)
		}
	}
	return out
}

// alone returns the ids of the tasks of order that must run alone
// (`parallel: false`).
func alone(order []rungraph.Task) map[string]bool {
	out := map[string]bool{}
	for _, t := range order {
		if t.Alone {
			out[t.ID] = true
		}
	}
	return out
}

// startable picks, from the pending tasks of a wave (in file order), the
// ones to start now, given the tasks of the wave that run and the run's
// concurrency. A task in alone (`parallel: false`) runs with no other task
// of its wave at the same time: while it runs nothing starts, and while it
// waits nothing new starts until what runs has ended, when it starts by
// itself. Such tasks go first, in file order, so that one is never held
// back by the others' retries; the rest then start as usual, up to
// concurrency at once.
func startable(pending, running []*api.RunTask, alone map[string]bool, concurrency int) []*api.RunTask {
	for _, t := range running {
		if alone[t.ID] {
			return nil
		}
	}
	for _, t := range pending {
		if !alone[t.ID] {
			continue
		}
		if len(running) > 0 {
			return nil
		}
		return []*api.RunTask{t}
	}
	n := max(concurrency-len(running), 0)
	return pending[:min(n, len(pending))]
}

// fail ends the run with report.
func (st *stepper) fail(report string) {
	st.s.Run.State = api.RunFailed
	st.s.Run.Report = report
}

// stopReport is the report of a run a budget or a cancel stopped.
func (st *stepper) stopReport() string {
	var failed []*api.RunTask
	for i := range st.s.Run.Tasks {
		if t := &st.s.Run.Tasks[i]; t.State == api.TaskFailed && t.Error != "" {
			failed = append(failed, t)
		}
	}
	return say(st.f.Templates, templates.RunStopped, map[string]string{"reason": st.s.Stop, "tasks": taskLines(failed, true)})
}

// taskLines lists tasks and their state, one a line, with their error
// when they have one (always, with withError).
func taskLines(tasks []*api.RunTask, withError bool) string {
	lines := make([]string, 0, len(tasks))
	for _, t := range tasks {
		line := "- task " + t.ID + " is " + string(t.State)
		if withError || t.Error != "" {
			line += ": " + t.Error
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// startIteration marks the next iteration of t as started.
func (st *stepper) startIteration(t *api.RunTask) {
	r := st.s.Run
	t.State = api.TaskRunning
	t.Runs++
	if t.StartedAt.IsZero() {
		t.StartedAt = st.now
	}
	// A task's base is saved with the start of its first iteration, so
	// that a crash before that iteration ends cannot make it the target's
	// head of a later day.
	if t.Base == "" {
		t.Base = st.f.Head
		if fork := st.f.Forks[t.ID]; fork != "" {
			t.Base = fork
		}
	}
	// The work tree of an iteration worked again after a crash, or of a
	// task that starts over after a resume, holds what the last agent
	// left uncommitted: it starts from the branch's last commit instead.
	fresh := t.Interrupted || (t.Iteration == 0 && t.Runs > 1)
	// An iteration a crash cut short is worked again as it was: its
	// number and role.
	if !t.Interrupted || t.Iteration == 0 {
		t.Iteration++
	}
	if !t.Interrupted || t.Role == "" {
		t.Role = string(RouteIteration(st.f.Settings.Rules, t.Iteration, st.s.History[t.ID], t.Status))
	}
	// A crash's iteration is the same work; a limit's is new work
	// (limited clears Attempt).
	if !t.Interrupted || t.Attempt == 0 {
		t.Attempt = t.Runs
	}
	t.Interrupted = false
	e := StartIteration{
		Task: t.ID, Iteration: t.Iteration, Role: router.Role(t.Role), Base: t.Base, Branch: t.Branch, Feedback: t.Feedback, Fresh: fresh,
		Attempt:  t.Attempt,
		Deadline: IterationDeadline(r.Options, TaskClock(*t, r.ResumedAt), RunClock(r)),
	}
	if st.f.Settings.Review {
		e.Review, e.ReviewModel = true, reviewer.NextModel(st.f.Settings.Models, t.Reviews)
	}
	st.effects = append(st.effects, e)
}

// count adds to task t and the run what the agent's progress p adds to
// what was counted of it before, keeps p as counted, and returns the cost
// it added.
func (st *stepper) count(t *api.RunTask, p Progress) float64 {
	before := st.s.Live[t.ID]
	cost := p.CostUSD - before.CostUSD
	t.CostUSD += cost
	st.s.Run.CostUSD += cost
	t.ToolCalls += p.ToolCalls - before.ToolCalls
	st.s.Live[t.ID] = p
	t.AttemptCostUSD, t.AttemptToolCalls = p.CostUSD, p.ToolCalls
	return cost
}

// progress counts what a running agent has spent and done so far, and
// ends the run's agents at once when that spends the run's budget, or the
// task's agent when it spends the task's dollars.
func (st *stepper) progress(m AgentProgress) {
	t := st.s.Task(m.Task)
	if t == nil || t.State != api.TaskRunning || t.Iteration != m.Iteration {
		return
	}
	if m.Worker != "" {
		t.Worker = m.Worker
	}
	t.Paused = m.Paused
	st.count(t, m.Progress)
	if m.Progress.Finished {
		// The agent is done: its iteration goes on to its tests, and
		// its end checks the budgets, a finished task first.
		return
	}
	st.checkRunBudget()
	// The task's dollars, unlike its minutes, have no deadline to end the
	// iteration with; its end fails the task and says why.
	if !st.s.Ending[t.ID] && TaskBudgetSpent(st.f.Templates, st.s.Run.Options, time.Time{}, st.now, t.CostUSD-t.BudgetFromUSD) != "" {
		st.s.Ending[t.ID] = true
		st.effects = append(st.effects, EndIteration{Task: t.ID})
	}
}

// iterationDone applies one iteration's outcome to its task.
func (st *stepper) iterationDone(m IterationDone) {
	r := &st.s.Run
	t := st.s.Task(m.Task)
	if t == nil || t.State != api.TaskRunning || t.Iteration != m.Iteration {
		return
	}
	tmpl := st.f.Templates
	if t.Base == "" {
		t.Base = m.Base
	}
	if m.Worker != "" {
		t.Worker = m.Worker
	}
	t.Paused = ""
	// The agent's progress is counted already, up to its last report.
	st.count(t, m.Progress)
	delete(st.s.Live, t.ID)
	t.AttemptCostUSD, t.AttemptToolCalls = 0, 0
	delete(st.s.Ending, t.ID)
	if m.Limit != nil && m.Err == nil {
		// A limit is not the work's fault: the iteration waits for it
		// and is worked again, unless the run stops or the task's
		// budget is spent, which end it as any other iteration.
		st.checkRunBudget()
		if st.s.Stop == "" && TaskBudgetSpent(tmpl, r.Options, TaskClock(*t, r.ResumedAt), st.now, t.CostUSD-t.BudgetFromUSD) == "" {
			st.limited(t, *m.Limit)
			return
		}
	}
	t.LimitRetries = 0
	if m.Review != nil {
		t.CostUSD += m.Review.CostUSD
		r.CostUSD += m.Review.CostUSD
		t.Reviews++
		t.LastReview = TaskReview(*m.Review, m.Iteration, st.now)
	}
	if m.Test != nil {
		t.LastTest = m.Test
	}
	done, feedback := Judge(tmpl, m)
	st.s.History[t.ID] = append(slices.Clip(st.s.History[t.ID]), IterationMetrics(m.Iteration, m.Test))
	status, reason := convergence.Classify(st.s.History[t.ID], convergence.Budget{}, st.f.Settings.Thresholds)
	t.Status, t.StatusReason = string(status), reason
	st.checkRunBudget()
	taskBudget := TaskBudgetSpent(tmpl, r.Options, TaskClock(*t, r.ResumedAt), st.now, t.CostUSD-t.BudgetFromUSD)
	iterations := strconv.Itoa(t.Iteration)
	failWith := func(err string) { t.State, t.Error, t.EndedAt = api.TaskFailed, err, st.now }
	switch {
	case done:
		t.State, t.Error, t.EndedAt, t.Feedback = api.TaskDone, "", st.now, ""
	case st.s.Stop != "":
		failWith(say(tmpl, templates.RunTaskStopped, map[string]string{"reason": st.s.Stop}))
	case taskBudget != "":
		failWith(outOfBudget(tmpl, taskBudget, t.Iteration, feedback))
	case m.Err != nil:
		// drover's own trouble: more iterations would meet it again.
		failWith(m.Err.Error())
	case status == convergence.StuckPlateau || status == convergence.Thrashing:
		// More iterations of the same will not finish it.
		failWith(say(tmpl, templates.RunTaskStuck, map[string]string{"status": string(status), "iterations": iterations, "reason": reason}))
	case t.Iteration >= r.Options.MaxIterations:
		failWith(say(tmpl, templates.RunTaskNotDone, map[string]string{"iterations": iterations, "last": firstLine(feedback)}))
	default:
		t.State, t.Feedback = api.TaskPending, feedback
	}
}

// limited makes task t, whose agent met limit l, wait for it: its
// iteration is worked again, under the same number and role, once the
// limit resets (or a backoff passed, when it did not say when), without
// spending an iteration of the task. Past run.limit_retries limits in a
// row the task fails instead.
func (st *stepper) limited(t *api.RunTask, l agentrun.Limit) {
	t.Limits++
	if t.LimitRetries >= st.s.Run.Options.LimitRetries {
		t.State, t.EndedAt = api.TaskFailed, st.now
		t.Error = say(st.f.Templates, templates.RunTaskLimited, map[string]string{"retries": strconv.Itoa(t.LimitRetries), "limit": firstLine(l.Message)})
		return
	}
	t.LimitRetries++
	t.State, t.Interrupted, t.Attempt = api.TaskPending, true, 0
	t.LimitSince, t.LimitUntil, t.Limit = st.now, LimitUntil(l, t.LimitRetries, st.now), firstLine(l.Message)
}

// endWait ends the wait of task t for a limit: the time it waited is no
// part of its time budget.
func (st *stepper) endWait(t *api.RunTask) {
	if st.now.After(t.LimitSince) && !t.LimitSince.IsZero() {
		t.Waited += st.now.Sub(t.LimitSince)
	}
	t.LimitUntil, t.LimitSince, t.Limit = time.Time{}, time.Time{}, ""
}

// outOfBudget is the error of a task whose budget (why) is spent after
// iterations, the last of which ended with feedback; an iteration a crash
// cut short has none to tell.
func outOfBudget(tmpl templates.Set, why string, iterations int, feedback string) string {
	if feedback == "" {
		return why
	}
	return say(tmpl, templates.RunTaskOutOfBudget, map[string]string{"budget": why, "iterations": strconv.Itoa(iterations), "last": firstLine(feedback)})
}

// waveChecked applies a wave's merge and suite to the run.
func (st *stepper) waveChecked(m WaveChecked) {
	st.s.Merging = false
	r := &st.s.Run
	if m.Wave != r.Merged+1 || r.State != api.RunRunning {
		return
	}
	tmpl := st.f.Templates
	vars := map[string]string{"wave": strconv.Itoa(m.Wave), "target": r.Target}
	var conflicts []string
	for _, c := range m.Conflicts {
		var t *api.RunTask
		for i := range r.Tasks {
			if r.Tasks[i].Branch == c.Branch {
				t = &r.Tasks[i]
			}
		}
		if t == nil {
			continue
		}
		t.State, t.Conflict = api.TaskNeedsReview, c.Files
		t.Error = say(tmpl, templates.RunTaskConflict, map[string]string{"files": strings.Join(c.Files, ", ")})
		conflicts = append(conflicts, "- task "+t.ID+": "+t.Error+"\n"+c.Diff)
	}
	switch {
	case m.MergeErr != nil:
		vars["error"] = m.MergeErr.Error()
		st.fail(say(tmpl, templates.RunMergeFailed, vars))
	case len(conflicts) > 0:
		vars["conflicts"] = strings.Join(conflicts, "\n")
		st.fail(say(tmpl, templates.RunConflicts, vars))
	case m.Suite == nil:
		st.fail(say(tmpl, templates.RunSuiteMissing, vars))
	default:
		r.Suite = m.Suite
		if !m.Suite.Passed {
			vars["command"], vars["output"] = m.Suite.Command, m.Suite.Output
			st.fail(say(tmpl, templates.RunSuiteFailed, vars))
			return
		}
		r.Merged = m.Wave
	}
}
