package plan

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// Stop decides a Stop hook for a session that runs the plan workflow. It
// follows seed 001's hook logic, with the reviewer as a child process:
//
//   - No plan in the session: allow, nothing to do. An Answer saved for
//     the next stop (a review that finished between stops): given, once.
//     A missing plan folder: allow, with a warning.
//   - A review in flight: its answer, when Facts.Review carries it, is
//     applied (below); without an answer the agent is blocked to wait, and
//     a review that is neither running nor answered (the supervisor
//     restarted) is started again.
//   - next_phase is a review phase: with max_reviews 0 the cycle is skipped
//     and the plan advances; past max_reviews it is a hard stop that waits
//     for the user (the stop is allowed, the plan does not advance);
//     otherwise a review starts (effect StartReview, model by alternation,
//     a re-check prompt after the first review) and the agent is blocked
//     until its answer is in.
//   - An answer: a Failed run is not counted and the stop falls through to
//     validation with a warning. A verdict writes the review file, moves the
//     model on and counts clean reviews (reviewer.Clean: only blocking
//     findings count unless Facts.StrictReviews); Facts.CleanStreak clean
//     in a row (two by default; a clean parallel review that every reviewer
//     passed counts as all of them) advance the plan and allow the stop (a
//     user stop), otherwise the agent is blocked with the post-review
//     instructions.
//   - A plan budget (State.BudgetUSD) that Facts.SpentUSD reached stops
//     like max_reviews: no review starts, the stop is allowed.
//   - A standalone review's answer (StandaloneReview) writes the review
//     file and allows the stop with next_phase null, whatever the verdict:
//     it is one review, with no post-review.
//   - Anything else: the folder rules (Validate) block when broken, unless
//     the agent is already continuing from a block (stop_hook_active).
//
// Before any of this, state.json is read back (edit.go): a state.json that
// names another session means that session took the plan over, and the
// stop lets go of it (allowed, with a message naming that session; no
// reviewer starts). A hand edit of next_phase to null or of max_reviews is
// taken, other edits are undone, and the answer says which.
//
// Rule 8 runs on every decision: a state.json that is not a valid view is
// rewritten, with a warning. Any state change, or a view that differs from
// the state, adds a WriteView effect.
//
// On error the returned State is s, unchanged, and there are no effects.
func Stop(s State, f Facts, t templates.Set) (State, hook.Output, []Effect, error) {
	if !s.Active() {
		return s, hook.Output{}, nil, nil
	}
	if f.PlanID != s.PlanID {
		return s, hook.Output{}, nil, fmt.Errorf("stop hook: the facts are for plan %q, the session's plan is %q", f.PlanID, s.PlanID)
	}
	if owner := TakenBy(s, f); owner != "" {
		// Another session drives the plan now: this one lets go.
		next, out, effects, err := released(s, f, t, owner)
		if err != nil {
			return s, hook.Output{}, nil, fmt.Errorf("stop hook: %w", err)
		}
		return next, out, effects, nil
	}
	cur := s
	var (
		notes []string
		taken []Effect
	)
	edit, edited := ReadEdit(s, f)
	if edited {
		var err error
		if cur, notes, taken, err = takeEdit(s, f, t, edit); err != nil {
			return s, hook.Output{}, nil, fmt.Errorf("stop hook: %w", err)
		}
	}
	var (
		d   decision
		err error
	)
	switch kind, isReview := cur.NextPhase.ReviewKind(); {
	case cur.Answer != nil && f.Review == nil:
		// A review finished since the last stop: this stop gives its
		// answer, once.
		d = decision{state: cur, out: *cur.Answer}
		d.state.Answer = nil
		if !edited {
			return d.state, d.out, nil, nil
		}
	case !f.DirExists:
		msg, err := t.Render(templates.PlanFolderMissing, vars(cur, f, t, ""))
		if err != nil {
			return s, hook.Output{}, nil, fmt.Errorf("stop hook: %w", err)
		}
		return cur, hook.Output{SystemMessage: msg}, taken, nil
	case cur.Review != nil:
		d, err = reviewing(cur, f, t)
	case isReview:
		d, err = startReview(cur, f, t, kind)
	default:
		d = decision{state: cur}
		d.out, err = validation(f, t)
	}
	if err == nil {
		err = d.finish(f, t)
	}
	if err != nil {
		return s, hook.Output{}, nil, fmt.Errorf("stop hook: %w", err)
	}
	if len(notes) > 0 {
		// The edit's answer comes first: whoever edited state.json
		// learns what drover made of it, the user in the warning and
		// the agent in the reason when the stop blocks.
		note := strings.Join(notes, "\n")
		d.out.SystemMessage = joinText(note, d.out.SystemMessage, "\n")
		if d.out.IsBlock() {
			d.out.Reason = joinText(note, d.out.Reason, "\n\n")
		}
	}
	return d.state, d.out, append(taken, d.effects...), nil
}

// joinText joins the non-empty texts of a and b with sep.
func joinText(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// decision is a Stop decision being built.
type decision struct {
	state   State
	out     hook.Output
	effects []Effect
}

// warn adds a message for the user.
func (d *decision) warn(msg string) {
	if d.out.SystemMessage == "" {
		d.out.SystemMessage = msg
		return
	}
	d.out.SystemMessage += "\n" + msg
}

// waitForUser adds the WaitForUser effect of a stop that is let through
// while the plan waits for the user before a review of kind (max_reviews
// or the plan budget spent). A stop that validation blocks keeps the agent
// working, so it waits for no one yet.
func (d *decision) waitForUser(kind Kind) {
	if d.out.IsBlock() {
		return
	}
	s := d.state
	d.effects = append(d.effects, WaitForUser{Plan: s.PlanID, Kind: kind, Task: s.CurrentTask, Phase: s.Phase, Iteration: s.Iteration})
}

// finish applies rule 8 and adds the WriteView effect when the view on disk
// is not the state's.
func (d *decision) finish(f Facts, t templates.Set) error {
	problem, err := CheckView(f.View, t)
	if err != nil {
		return err
	}
	if problem != "" {
		v := vars(d.state, f, t, "")
		v["problem"] = problem
		msg, err := t.Render(templates.PlanViewRewritten, v)
		if err != nil {
			return err
		}
		d.warn(msg)
	}
	if view := View(d.state, f.Models); !bytes.Equal(view, f.View) {
		d.effects = append(d.effects, WriteView{Path: path.Join(f.PlanDir, ViewFile), Data: view})
	}
	return nil
}

// reviewing decides a stop while a review is in flight.
func reviewing(s State, f Facts, t templates.Set) (decision, error) {
	r := *s.Review
	if o := f.Review; o != nil && o.Kind == r.Kind && o.Iteration == r.Iteration {
		return apply(s, f, t, *o)
	}
	d := decision{state: s}
	if !f.ReviewInFlight && r.Answered == nil {
		if f.ReviewerMissing != nil {
			return reviewerMissing(s, f, t, r.Kind)
		}
		// Started before a restart and lost: run it again, with the same
		// iteration and model. An answered review is not: its answer is
		// applied once its review file is written (ReviewFiled).
		sr, err := startEffect(s, f, t, r)
		if err != nil {
			return d, err
		}
		d.effects = append(d.effects, sr)
	}
	reason, err := t.Render(templates.PlanReviewWait, reviewVars(s, f, t, r))
	if err != nil {
		return d, err
	}
	d.out = hook.Block(reason)
	return d, nil
}

// startReview decides a stop whose next phase is a review of kind.
func startReview(s State, f Facts, t templates.Set, kind Kind) (decision, error) {
	d := decision{state: s}
	if s.MaxReviews <= 0 {
		d.state = advance(s, f, kind)
		msg, err := t.Render(templates.PlanReviewsOff, vars(d.state, f, t, kind))
		if err != nil {
			return d, err
		}
		d.warn(msg)
		return d, nil
	}
	r := InFlight{Kind: kind, Iteration: s.Iteration + 1, Model: reviewer.NextModel(f.Models, s.ModelIndex), Head: f.Head}
	if kind == KindCode {
		r.Task = s.CurrentTask
	}
	if r.Iteration > s.MaxReviews {
		// Hard stop: the plan does not advance, the user decides.
		var err error
		if d.out, err = validation(f, t); err != nil {
			return d, err
		}
		last := r
		last.Iteration = s.Iteration
		name := templates.PlanMaxReviews
		if s.Standalone {
			// A standalone cycle has nothing to wait at: it ends.
			d.state.NextPhase, d.state.Standalone = PhaseNone, false
			name = templates.PlanMaxReviewsStandalone
		}
		msg, err := t.Render(name, reviewVars(d.state, f, t, last))
		if err != nil {
			return d, err
		}
		d.warn(msg)
		if !s.Standalone {
			d.waitForUser(kind)
		}
		return d, nil
	}
	if s.BudgetUSD > 0 && f.SpentUSD >= s.BudgetUSD {
		// Like the hard stop: the plan does not advance, the user
		// decides (raise the budget with drover plan set).
		var err error
		if d.out, err = validation(f, t); err != nil {
			return d, err
		}
		v := vars(s, f, t, kind)
		v["next_iteration"] = strconv.Itoa(r.Iteration)
		v["budget_usd"], v["spent_usd"] = dollars(s.BudgetUSD), dollars(f.SpentUSD)
		msg, err := t.Render(templates.PlanBudgetSpent, v)
		if err != nil {
			return d, err
		}
		d.warn(msg)
		d.waitForUser(kind)
		return d, nil
	}
	problem, err := missingInput(s, f, t, kind)
	if err != nil {
		return d, err
	}
	if problem != "" {
		// Nothing to review: fall through to the folder rules, which
		// usually say what is missing.
		var err error
		if d.out, err = validation(f, t); err != nil {
			return d, err
		}
		v := vars(s, f, t, kind)
		v["problem"] = problem
		msg, err := t.Render(templates.PlanReviewMissing, v)
		if err != nil {
			return d, err
		}
		d.warn(msg)
		return d, nil
	}
	if f.ReviewerMissing != nil {
		return reviewerMissing(s, f, t, kind)
	}
	sr, err := startEffect(s, f, t, r)
	if err != nil {
		return d, err
	}
	d.state.Review = &r
	d.effects = append(d.effects, sr)
	reason, err := t.Render(templates.PlanReviewWait, reviewVars(s, f, t, r))
	if err != nil {
		return d, err
	}
	d.out = hook.Block(reason)
	return d, nil
}

// missingInput says what a review of kind would have nothing to read,
// worded by t, or "".
func missingInput(s State, f Facts, t templates.Set, kind Kind) (string, error) {
	name, vars := "", map[string]string{}
	switch kind {
	case KindPlan:
		if !hasFile(f, "plan.md") {
			name = templates.PlanMissingPlanMD
		}
	case KindCode:
		switch {
		case s.CurrentTask == "":
			name = templates.PlanMissingCurrentTask
		case !hasFile(f, "task-"+s.CurrentTask+".md"):
			name, vars["task_file"] = templates.PlanMissingTaskFile, "task-"+s.CurrentTask+".md"
		}
	case KindTasks, KindAllCode:
		if len(taskFiles(f)) == 0 {
			name = templates.PlanMissingTaskFiles
		}
	}
	if name == "" {
		return "", nil
	}
	return t.Render(name, vars)
}

// startEffect builds the StartReview effect for r: the kind's prompt, plus
// the re-check of the previous review after the first.
func startEffect(s State, f Facts, t templates.Set, r InFlight) (StartReview, error) {
	v := reviewVars(s, f, t, r)
	prompt, err := t.Render(promptTemplate(r.Kind), v)
	if err != nil {
		return StartReview{}, err
	}
	if r.Iteration > 1 {
		recheck, err := reviewer.RecheckPrompt(t, s.Ledger.Open(), f.DiffSinceReview)
		if err != nil {
			return StartReview{}, err
		}
		prompt += "\n\n" + recheck
	}
	return StartReview{
		Kind: r.Kind, Iteration: r.Iteration, Model: r.Model, Prompt: prompt,
		ReviewFile: v["review_file"], Task: r.Task,
	}, nil
}

// apply applies a reviewer's answer to the review in flight.
func apply(s State, f Facts, t templates.Set, o ReviewOutcome) (d decision, err error) {
	// Whatever the answer leads to, it tells of the tool calls the
	// reviewer's CLI refused it (reportDenials): the checks it may rest
	// on without having made them.
	defer func() {
		if err == nil {
			err = d.reportDenials(s, f, t, o)
		}
	}()
	r := *s.Review
	next := s
	next.Review = nil
	d = decision{state: next}

	if o.Outcome != reviewer.Pass && o.Outcome != reviewer.Fail {
		var err error
		if d.out, err = validation(f, t); err != nil {
			return d, err
		}
		v := answerVars(s, f, t, r, o)
		v["error"] = o.Err
		if v["error"] == "" {
			v["error"] = say(t, templates.PlanReviewerFailed, nil)
		}
		if o.LogPath != "" {
			v["log_note"] = " " + say(t, templates.PlanLogNote, map[string]string{"log_path": o.LogPath})
		}
		msg, err := t.Render(templates.PlanReviewFailed, v)
		if err != nil {
			return d, err
		}
		d.warn(msg)
		return d, nil
	}

	res := reviewer.Result{Outcome: o.Outcome, Verdict: o.Verdict, Findings: o.Findings}
	next.Iteration = r.Iteration
	next.ModelIndex++
	next.ReviewHead = r.Head
	switch {
	case reviewer.Clean(res, !f.StrictReviews) && o.Unanimous():
		next.ConsecutiveClean = max(next.ConsecutiveClean+1, f.cleanStreak())
	case reviewer.Clean(res, !f.StrictReviews):
		next.ConsecutiveClean++
	default:
		next.ConsecutiveClean = 0
	}
	next.Ledger.Add(r.Iteration, o.Findings)
	next.LedgerKind, next.LedgerTask = r.Kind, r.Task

	v := answerVars(next, f, t, r, o)
	addVerdictVars(v, t, o)
	addReviewVars(v, t, o)
	body, err := t.Render(templates.PlanReviewFile, v)
	if err != nil {
		return d, err
	}
	d.effects = append(d.effects, WriteReview{Path: v["review_file"], Data: []byte(body + "\n")})

	if next.Standalone {
		// Seed 001's standalone review commands perform one review and
		// stop: no post-review, and the plan does not move on. Only the
		// automation (new-plan, create-tasks, complete-task) cycles.
		next.Phase = r.Kind.ReviewPhase()
		next.NextPhase, next.Standalone = PhaseNone, false
		d.state = next
		sv := answerVars(next, f, t, r, o)
		addVerdictVars(sv, t, o)
		msg, err := t.Render(templates.PlanStandaloneReviewed, sv)
		if err != nil {
			return d, err
		}
		d.warn(msg)
		return d, nil
	}
	if next.ConsecutiveClean >= f.cleanStreak() {
		name := templates.PlanPassed
		clean := next.ConsecutiveClean
		next = advance(next, f, r.Kind)
		d.state = next
		av := answerVars(next, f, t, r, o)
		// The message is about the cycle that passed: after the last
		// task, advance has already reset the counts for the all-code
		// review's cycle.
		av["consecutive_clean"] = strconv.Itoa(clean)
		msg, err := t.Render(name, av)
		if err != nil {
			return d, err
		}
		d.warn(msg)
		return d, nil
	}
	next.Phase = r.Kind.ReviewPhase()
	next.NextPhase = r.Kind.PostReviewPhase()
	d.state = next
	reason, err := t.Render(postReviewTemplate(r.Kind), v)
	if err != nil {
		return d, err
	}
	d.out = hook.Block(reason)
	return d, nil
}

// advance ends a review cycle of kind (passed, or skipped with max_reviews
// 0): phase becomes the review phase and next_phase the seed's advance
// target. After the last task's code review that target is the all-code
// review, which starts a new cycle. A standalone cycle has no target:
// next_phase becomes null and the plan stays where it is.
func advance(s State, f Facts, kind Kind) State {
	s.Phase = kind.ReviewPhase()
	if s.Standalone {
		s.NextPhase, s.Standalone = PhaseNone, false
		return s
	}
	switch kind {
	case KindPlan:
		s.NextPhase = PhaseCreateTasks
	case KindTasks:
		s.NextPhase = taskPhase(s.TDD)
	case KindCode:
		if len(Remaining(f.TasksMD, s.CurrentTask)) > 0 {
			s.NextPhase = taskPhase(s.TDD)
		} else {
			s = newCycle(s)
			s.NextPhase = PhaseAllCodeReview
		}
	case KindAllCode:
		s.NextPhase = PhaseComplete
	}
	return s
}

func taskPhase(tdd bool) Phase {
	if tdd {
		return PhaseCompleteTaskTDD
	}
	return PhaseCompleteTask
}

// newCycle resets the review counters: a new cycle starts at iteration 0
// with the strongest model and an empty ledger. The ledger of the cycle
// that ends is kept in PastLedgers when it holds findings.
func newCycle(s State) State {
	s.Iteration = 0
	s.ModelIndex = 0
	s.ConsecutiveClean = 0
	s.Review = nil
	s.ReviewHead = ""
	s.Standalone = false
	if len(s.Ledger.Findings) > 0 {
		past := append(slices.Clone(s.PastLedgers), CycleLedger{Kind: s.LedgerKind, Task: s.LedgerTask, Ledger: s.Ledger})
		s.PastLedgers = past[max(0, len(past)-MaxPastLedgers):]
	}
	s.Ledger = reviewer.Ledger{Cycle: s.Ledger.Cycle + 1}
	s.LedgerKind, s.LedgerTask = "", ""
	return s
}

// validation runs the folder rules: a block listing the violations, or
// allow. When the agent is already continuing from a block, the violations
// become a warning, so that a rule the agent cannot fix does not hold it
// forever.
func validation(f Facts, t templates.Set) (hook.Output, error) {
	violations, err := Validate(f, t)
	if err != nil {
		return hook.Output{}, err
	}
	if len(violations) == 0 {
		return hook.Output{}, nil
	}
	v := map[string]string{
		"plan_id":    f.PlanID,
		"plan_dir":   f.PlanDir,
		"violations": "- " + strings.Join(violations, "\n- "),
	}
	text, err := t.Render(templates.PlanInvalid, v)
	if err != nil {
		return hook.Output{}, err
	}
	if f.StopHookActive {
		return hook.Output{SystemMessage: text}, nil
	}
	return hook.Block(text), nil
}
