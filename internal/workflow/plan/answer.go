package plan

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// A reviewer's answer goes through two decisions, so that no effect runs
// before the state that asks for it is committed:
//
//  1. ReviewAnswered records the answer in the review in flight
//     (InFlight.Answered: outcome, verdict, findings and the run log lines)
//     and asks for its review file (WriteReview).
//  2. Once the file is written, or could not be, the caller hands the
//     Filing back to ReviewFiled, which applies the answer as Stop would
//     have: a review file drover could not write makes the run a failed one,
//     as the seed handles a reviewer that wrote none. The hook answer is
//     kept in State.Answer for the next stop, and the runs are logged
//     (RecordRuns).
//
// Pending says what a stored State still waits for, so that a supervisor or
// an actor that starts again redoes what a crash may have cut short: a
// review in flight with no process is started again, an answered review's
// file is written again, the last runs are logged unless they are, the plan
// folder of a plan just started is made, and state.json is rewritten.

// RunsFile is the name of the reviewer run log in a plan folder: one
// api.PlanReviewRun per line.
const RunsFile = "reviews.jsonl"

// Answered is a reviewer's answer to the review in flight, recorded before
// its review file is written.
type Answered struct {
	Outcome ReviewOutcome `json:"outcome"`
	// Run is the run as status shows it (for a parallel review, the
	// combined answer), and Runs the run of each reviewer of a parallel
	// review, which the run log keeps one by one (empty for a single
	// reviewer: Run is its one run).
	Run  api.PlanReviewRun   `json:"run"`
	Runs []api.PlanReviewRun `json:"runs,omitempty"`
}

// Filing is how writing the review file of an answered review went: the
// event that ReviewFiled decides on.
type Filing struct {
	Kind      Kind
	Iteration int
	Task      string
	// Err says why the file could not be written; empty when it was.
	Err string
}

// RecordRuns appends Runs to the run log at Path, leaving out those the log
// already holds (same time, session, plan, kind, iteration and model), so
// that doing it again appends nothing.
type RecordRuns struct {
	Path string
	Runs []api.PlanReviewRun
}

func (RecordRuns) effect() {}

// RunRecord is the run log line of res, one reviewer run of review r of
// plan planID in session sessionID, that finished at now.
func RunRecord(r InFlight, planID, sessionID string, res reviewer.Result, now time.Time) api.PlanReviewRun {
	rec := api.PlanReviewRun{
		Time: now.UTC(), Session: sessionID, Plan: planID, Kind: string(r.Kind), Task: r.Task,
		Iteration: r.Iteration, Model: r.Model, Outcome: string(res.Outcome), Verdict: res.Verdict,
		ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Findings: len(res.Findings), CostUSD: res.CostUSD,
	}
	if res.Model != "" {
		rec.Model = res.Model
	}
	for _, f := range res.Findings {
		if f.Blocking() {
			rec.Blocking++
		}
	}
	if res.Err != nil {
		rec.Error = res.Err.Error()
	}
	return rec
}

// awaitsAnswer reports whether the review in flight in s is the one o
// answers and has no answer yet.
func (s State) awaitsAnswer(o ReviewOutcome) bool {
	r := s.Review
	return r != nil && r.Answered == nil && r.Kind == o.Kind && r.Iteration == o.Iteration
}

// AwaitsFiling reports whether the review in flight in s is answered and
// waits for the review file that fl reports on.
func (s State) AwaitsFiling(fl Filing) bool {
	r := s.Review
	return r != nil && r.Answered != nil && r.Kind == fl.Kind && r.Iteration == fl.Iteration && r.Task == fl.Task
}

// ReviewAnswered records a, the answer of the reviewer of the review in
// flight in s, and returns the WriteReview of its review file (with no
// Path when the run gave no verdict: there is no file to write, and the
// answer is filed as it is). An answer to another review, or a second
// answer, changes nothing.
func ReviewAnswered(s State, f Facts, t templates.Set, a Answered) (State, []Effect, error) {
	if !s.awaitsAnswer(a.Outcome) || f.PlanID != s.PlanID || TakenBy(s, f) != "" {
		// A plan another session took over is not this one's to review:
		// its next stop lets it go.
		return s, nil, nil
	}
	next := s
	r := *s.Review
	r.Answered = &a
	next.Review = &r
	w, err := reviewFile(next, f, t)
	if err != nil {
		return s, nil, fmt.Errorf("review answer: %w", err)
	}
	return next, []Effect{w}, nil
}

// reviewFile is the WriteReview of the answered review in flight in s.
func reviewFile(s State, f Facts, t templates.Set) (WriteReview, error) {
	r := *s.Review
	w := WriteReview{Kind: r.Kind, Iteration: r.Iteration, Task: r.Task}
	d, err := apply(s, f, t, r.Answered.Outcome)
	if err != nil {
		return w, err
	}
	for _, e := range d.effects {
		if file, ok := e.(WriteReview); ok {
			w.Path, w.Data = file.Path, file.Data
		}
	}
	return w, nil
}

// ReviewFiled applies the answered review in flight in s once its review
// file was written (fl.Err empty) or could not be (then the run counts as
// failed: the user is warned, the iteration is not counted, the review
// runs again at the next stop). The hook answer is saved in State.Answer
// for the next stop, the runs in State.LastRun and State.Runs, and the
// effects log the runs and write the view. A filing that s does not wait
// for changes nothing.
func ReviewFiled(s State, f Facts, t templates.Set, fl Filing) (State, []Effect, error) {
	if !s.AwaitsFiling(fl) || f.PlanID != s.PlanID || TakenBy(s, f) != "" {
		return s, nil, nil
	}
	a := *s.Review.Answered
	o, run, runs := a.Outcome, a.Run, slices.Clone(a.Runs)
	if fl.Err != "" {
		o.Outcome, o.Err, o.LogPath = reviewer.Failed, fl.Err, ""
		run = asFailed(run, fl.Err)
		for i := range runs {
			runs[i] = asFailed(runs[i], fl.Err)
		}
	}
	d, err := apply(s, f, t, o)
	if err == nil {
		err = d.finish(f, t)
	}
	if err != nil {
		return s, nil, fmt.Errorf("applying the review: %w", err)
	}
	next := d.state
	if d.out != (hook.Output{}) {
		out := d.out
		next.Answer = &out
	}
	if len(runs) == 0 {
		runs = []api.PlanReviewRun{run}
	}
	next.LastRun, next.Runs = &run, runs
	effects := []Effect{RecordRuns{Path: path.Join(f.PlanDir, RunsFile), Runs: runs}}
	_, edited := ReadEdit(s, f)
	for _, e := range d.effects {
		switch e.(type) {
		case WriteReview:
			continue
		case WriteView:
			if edited {
				// A hand edit of state.json waits for the next stop,
				// which takes it or says that it undid it.
				continue
			}
		}
		effects = append(effects, e)
	}
	return next, effects, nil
}

// asFailed is run made a failed one by err, keeping what the reviewer
// said for the record.
func asFailed(run api.PlanReviewRun, err string) api.PlanReviewRun {
	run.Outcome = string(reviewer.Failed)
	if run.Error != "" {
		err = run.Error + "\n" + err
	}
	run.Error = err
	return run
}

// Pending returns the effects the stored state s waits for, under f (whose
// ReviewInFlight says whether its reviewer runs now): each is idempotent,
// so one that already ran does nothing. A plan whose folder is missing
// waits for nothing (the next stop says so), unless it was just started:
// then the folder is made.
func Pending(s State, f Facts, t templates.Set) ([]Effect, error) {
	if !s.Active() || f.PlanID != s.PlanID || TakenBy(s, f) != "" {
		// Nothing waits in a plan another session took over: its
		// review is that session's now.
		return nil, nil
	}
	var effects []Effect
	if !f.DirExists {
		if s.Phase != PhaseNewPlan {
			return nil, nil
		}
		effects = append(effects, MakeFolder{Path: f.PlanDir})
	}
	if len(s.Runs) > 0 {
		effects = append(effects, RecordRuns{Path: path.Join(f.PlanDir, RunsFile), Runs: s.Runs})
	}
	switch r := s.Review; {
	case r == nil:
	case r.Answered != nil:
		w, err := reviewFile(s, f, t)
		if err != nil {
			return nil, fmt.Errorf("pending review file: %w", err)
		}
		effects = append(effects, w)
	case !f.ReviewInFlight && f.ReviewerMissing == nil:
		// A reviewer that cannot start is not started again: the
		// next stop says why and lets the agent go (reviewerMissing).
		sr, err := startEffect(s, f, t, *r)
		if err != nil {
			return nil, fmt.Errorf("pending review: %w", err)
		}
		effects = append(effects, sr)
	}
	if _, edited := ReadEdit(s, f); !edited {
		// A hand edit is kept for the next stop, which takes it or says
		// that it undid it.
		if view := View(s, f.Models); !bytes.Equal(view, f.View) {
			effects = append(effects, WriteView{Path: path.Join(f.PlanDir, ViewFile), Data: view})
		}
	}
	return effects, nil
}
