package run

import (
	"strconv"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/worktree"
	"github.com/drover-dev/drover/templates"
)

// New is the state of a run before anything ran: its tasks pending, in
// waves, each on its branch.
func New(id, file, graph string, opts api.RunOptions, target string, g rungraph.Graph, now time.Time) api.Run {
	rec := api.Run{ID: id, File: file, Graph: graph, Options: opts, Target: target, State: api.RunRunning, CreatedAt: now, UpdatedAt: now, ResumedAt: now}
	waves := g.Waves()
	rec.Waves = len(waves)
	for i, w := range waves {
		for _, t := range w {
			rec.Tasks = append(rec.Tasks, api.RunTask{ID: t.ID, Wave: i + 1, State: api.TaskPending, Branch: worktree.BranchName(id, t.ID)})
		}
	}
	return rec
}

// Resume is the state a run goes on from. Done tasks stay done. A task
// its supervisor's end cut short (a crash) goes on where it was: its
// iteration is worked again under the same number and role, and what it
// spent of its budgets (dollars, including an estimate of its killed
// agent's, and time worked) still counts. A failed task starts over with
// fresh budgets (its branch keeps its commits): a person resumed it after
// fixing the cause. Either way its next iteration starts from its branch's
// last commit, without what the last agent left uncommitted
// (StartIteration.Fresh). A conflicting branch is merged again (a person may
// have resolved it). The run's own budgets likewise go on after a crash
// and begin again after a failure.
func Resume(rec api.Run, now time.Time) api.Run {
	// The stored run was last known worked at its last save: the time
	// from then to now, when no supervisor worked it, is no one's budget.
	last, since := rec.UpdatedAt, rec.ResumedAt
	if since.IsZero() {
		since = rec.CreatedAt
	}
	failed := rec.State == api.RunFailed
	if last.After(since) {
		rec.WorkedBefore += last.Sub(since)
	}
	if failed {
		rec.WorkedBefore, rec.BudgetFromUSD = 0, rec.CostUSD
	}
	rec.State = api.RunRunning
	rec.Report = ""
	rec.Suite = nil
	rec.UpdatedAt, rec.ResumedAt = now, now
	rec.Tasks = append([]api.RunTask(nil), rec.Tasks...)
	for i := range rec.Tasks {
		t := &rec.Tasks[i]
		if t.Waiting() {
			// The wait for a limit, up to the last save, is counted as
			// worked below: it is waited time as well. The wait goes on
			// from now.
			if from := laterOf(t.LimitSince, since); last.After(from) {
				t.Waited += last.Sub(from)
			}
			t.LimitSince = now
		}
		if !t.StartedAt.IsZero() && t.State != api.TaskDone {
			from, to := laterOf(t.StartedAt, since), last
			if t.State == api.TaskFailed && !t.EndedAt.IsZero() && t.EndedAt.Before(to) {
				to = t.EndedAt
			}
			if to.After(from) {
				t.WorkedBefore += to.Sub(from)
			}
		}
		switch t.State {
		case api.TaskRunning:
			// Paused was the dead supervisor's view of its executor.
			t.State, t.Interrupted, t.Paused = api.TaskPending, true, ""
		case api.TaskFailed:
			// Fresh budgets: iterations, minutes, dollars and
			// convergence history start over.
			t.State, t.Iteration, t.Error, t.Interrupted, t.Feedback = api.TaskPending, 0, "", false, ""
			t.StartedAt, t.EndedAt, t.Role, t.Status, t.StatusReason = time.Time{}, time.Time{}, "", "", ""
			t.WorkedBefore, t.BudgetFromUSD = 0, t.CostUSD
			t.Waited, t.LimitRetries, t.LimitUntil, t.LimitSince, t.Limit = 0, 0, time.Time{}, time.Time{}, ""
		case api.TaskNeedsReview:
			t.State, t.Error, t.Conflict = api.TaskDone, "", nil
		}
	}
	return rec
}

// Restore is the state a supervisor works a stored run from (after New or
// Resume): what it knew only in memory starts empty, but the routing of a
// resumed task's next iteration goes by how its last tests went, and the
// agent of an iteration its executor adopts (AdoptsInFlight) is counted
// from what it had reported. A run that never began is taken to begin now.
func Restore(rec api.Run, now time.Time) State {
	if rec.ResumedAt.IsZero() {
		rec.ResumedAt = now
	}
	s := State{Run: rec, History: map[string][]convergence.Metrics{}, Live: map[string]Progress{}, Ending: map[string]bool{}}
	for _, t := range rec.Tasks {
		if t.State != api.TaskDone && t.Iteration > 0 && t.LastTest != nil {
			n := t.Iteration
			if t.Interrupted {
				n--
			}
			s.History[t.ID] = []convergence.Metrics{IterationMetrics(n, t.LastTest)}
		}
		if t.Interrupted && AdoptsInFlight(rec.Options) && (t.AttemptCostUSD != 0 || t.AttemptToolCalls != 0) {
			s.Live[t.ID] = Progress{CostUSD: t.AttemptCostUSD, ToolCalls: t.AttemptToolCalls}
		}
	}
	return s
}

// AdoptsInFlight says whether the executor of a run with options o adopts
// the iterations in flight when its supervisor died (nats: the workers'
// agents live on and their jobs are taken up again), rather than losing
// them with the supervisor (the local executor, the default).
func AdoptsInFlight(o api.RunOptions) bool { return o.Executor != "" && o.Executor != executor.Local }

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TaskClock is when a task's time budget would have begun had its
// supervisors worked it without a break, and had it not waited for
// limits: its minutes count from there.
// resumedAt is when the run's current supervisor began working it. It is
// zero for a task not started yet.
func TaskClock(t api.RunTask, resumedAt time.Time) time.Time {
	if t.StartedAt.IsZero() {
		return time.Time{}
	}
	return laterOf(t.StartedAt, resumedAt).Add(-t.WorkedBefore).Add(t.Waited)
}

// How long a task waits for a limit that did not say when it resets: a
// backoff that doubles with each limit in a row, from limitBackoff up to
// limitBackoffMax. A reset further away than limitWaitMax (a weekly limit
// is the longest) is taken as that.
const (
	limitBackoff    = time.Minute
	limitBackoffMax = time.Hour
	limitWaitMax    = 7 * 24 * time.Hour
)

// LimitUntil is when a task whose agent met limit l, its retry-th in a
// row (from 1), goes on: when the limit said it resets, or else after an
// exponential backoff.
func LimitUntil(l agentrun.Limit, retry int, now time.Time) time.Time {
	if l.Reset.After(now) {
		if end := now.Add(limitWaitMax); l.Reset.After(end) {
			return end
		}
		return l.Reset
	}
	wait := limitBackoff << min(max(retry-1, 0), 10)
	return now.Add(min(wait, limitBackoffMax))
}

// RunClock is TaskClock for the run's own time budget.
func RunClock(r api.Run) time.Time {
	return r.ResumedAt.Add(-r.WorkedBefore)
}

// RunBudgetSpent names the run budget that elapsed and cost have reached,
// or returns "".
func RunBudgetSpent(t templates.Set, o api.RunOptions, elapsed time.Duration, cost float64) string {
	switch {
	case o.MaxUSD > 0 && cost >= o.MaxUSD:
		return say(t, templates.RunBudgetUSD, map[string]string{"budget": budgetUSD(o.MaxUSD), "cost": usd(cost)})
	case o.MaxMinutes > 0 && elapsed.Minutes() >= o.MaxMinutes:
		return say(t, templates.RunBudgetMinutes, map[string]string{"minutes": minutes(o.MaxMinutes), "elapsed": elapsed.Round(time.Second).String()})
	}
	return ""
}

// TaskBudgetSpent says whether a task that started at start, and has cost
// cost since, has spent its dollar or time budget by now, in words.
func TaskBudgetSpent(t templates.Set, o api.RunOptions, start, now time.Time, cost float64) string {
	if o.TaskMaxUSD > 0 && cost >= o.TaskMaxUSD {
		return say(t, templates.RunTaskBudgetUSD, map[string]string{"budget": budgetUSD(o.TaskMaxUSD), "cost": usd(cost)})
	}
	if o.TaskMaxMinutes <= 0 || start.IsZero() {
		return ""
	}
	if el := now.Sub(start); el.Minutes() >= o.TaskMaxMinutes {
		return say(t, templates.RunTaskBudgetMinutes, map[string]string{"minutes": minutes(o.TaskMaxMinutes), "elapsed": el.Round(time.Second).String()})
	}
	return ""
}

// IterationDeadline is when an iteration of a task that started at
// taskStart, in a run worked since runStart, runs out of time: the
// earlier of the task's and the run's time budgets, or zero without
// either.
func IterationDeadline(o api.RunOptions, taskStart, runStart time.Time) time.Time {
	var d time.Time
	for _, b := range []struct {
		minutes float64
		start   time.Time
	}{{o.TaskMaxMinutes, taskStart}, {o.MaxMinutes, runStart}} {
		if b.minutes <= 0 {
			continue
		}
		end := b.start.Add(time.Duration(b.minutes * float64(time.Minute)))
		if d.IsZero() || end.Before(d) {
			d = end
		}
	}
	return d
}

// budgetUSD writes a dollar budget in cents, or as given when cents would
// change it: a budget of $0.015 reported as $0.01 names one the user did
// not set.
func budgetUSD(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == v {
		return s
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// usd writes dollars spent, in cents.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// minutes writes a budget in minutes as %g does.
func minutes(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
