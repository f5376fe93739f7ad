package plan

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// The verbs of `drover plan` as the session actor receives them: each is
// (state, arguments, facts) -> (state, decision, effects), built on the
// commands of commands.go, with the text the caller answers rendered from
// the templates. The actor commits the new state when Decision.Changed says
// so, then performs the effects, then answers with Decision.Message.

// Verbs lists the plan commands. Command decides all of them but status,
// findings and wait, which change nothing and which the caller answers from
// its own state (Status, Findings, and the review it runs).
var Verbs = []string{"new", "advance", "set", "status", "findings", "continue", "wait", "stop-reviews", "add-task", "review", "action"}

// Decision is what a verb answers besides its new state.
type Decision struct {
	// Message is the text for the agent (or user) who ran the command.
	Message string
	// Changed is true when the new state differs from the old one and
	// must be committed before the effects run.
	Changed bool
	// Route is where continue sends the agent; zero for other verbs.
	Route Route
}

// Refusal is a verb the rules turn down: the request is wrong (an unknown
// phase, a plan that is not the session's, a review in flight), not
// drover. Callers answer it as a bad request.
type Refusal struct{ Err error }

// ErrUnknownVerb is wrapped by the Refusal of a verb that is not a plan
// command: a malformed request rather than one the plan's state refuses.
var ErrUnknownVerb = errors.New("unknown plan command")

// unknownVerb is the text of an unknown verb's refusal; it is ErrUnknownVerb.
type unknownVerb string

func (u unknownVerb) Error() string { return string(u) }

func (u unknownVerb) Is(target error) bool { return target == ErrUnknownVerb }

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns the reason of the refusal.
func (r *Refusal) Unwrap() error { return r.Err }

// refuse makes err a Refusal; nil stays nil.
func refuse(err error) error {
	if err == nil {
		return nil
	}
	return &Refusal{Err: err}
}

func refusef(format string, args ...any) error { return refuse(fmt.Errorf(format, args...)) }

// refuseWith is the Refusal worded by template name.
func refuseWith(t templates.Set, name string, vars map[string]string) error {
	return refuse(errors.New(say(t, name, vars)))
}

// AdvancePhases returns the phases `drover plan advance` accepts: those
// issue 6 names, next-task-tdd, post-review (whichever post-review is
// waited for) and complete.
func AdvancePhases() []string {
	return []string{"new-plan", "create-tasks", "complete-task", "complete-task-tdd", "next-task", "next-task-tdd", "continue-task", "post-review", "post-plan-review", "post-tasks-review", "post-code-review", "post-all-code-review", "complete"}
}

// Command applies the plan verb (one of Verbs) with args to s under f,
// the facts of the session's plan (of args.PlanID for new). On error the
// state is s unchanged and there are no effects; a Refusal is the caller's
// mistake.
func Command(s State, f Facts, t templates.Set, verb string, args api.PlanArgs) (State, Decision, []Effect, error) {
	if owner := TakenBy(s, f); owner != "" && (verb != "new" || args.PlanID == s.PlanID) {
		// Another session drives the plan: this one may start another
		// plan, or take this one back with drover plan continue (the
		// caller adopts it first), but not act on it.
		return s, Decision{}, nil, takenOverErr(s, f, t, owner)
	}
	switch verb {
	case "new":
		return newPlan(s, f, t, args)
	case "advance":
		return advancePlan(s, f, t, args)
	case "set":
		return setPlan(s, f, t, args)
	case "continue", "next":
		return continuePlan(s, f, t)
	case "stop-reviews", "stop", "cancel":
		return stopReviews(s, f, t)
	case "add-task":
		return change(s, f, t, "add-task", func(s State, f Facts) (State, []Effect, error) {
			return AddTask(s, f, t, args.Task)
		}, func(n State) (string, error) {
			v := vars(n, f, t, "")
			v["added_task"] = args.Task
			return t.Render(templates.PlanTaskAdded, v)
		})
	case "review":
		return standaloneReview(s, f, t, args)
	case "status", "findings", "wait":
		return s, Decision{}, nil, fmt.Errorf("plan %s changes nothing: its caller answers it (Status, Findings)", verb)
	case "action":
		if !s.Active() {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseNoPlanAction, map[string]string{"action": args.Phase, "session_id": f.SessionID})
		}
		text, err := ActionPrompt(s, f, t, args.Phase, args.Task)
		if err != nil {
			return s, Decision{}, nil, refuse(err)
		}
		return s, Decision{Message: text}, nil, nil
	}
	return s, Decision{}, nil, refuse(unknownVerb(fmt.Sprintf("unknown plan command %q (known: %s)", verb, strings.Join(Verbs, ", "))))
}

// SamePlan checks that a plan id given with a command (empty: none) names
// the plan of session sessionID, whose state is s; t words the refusal.
func SamePlan(t templates.Set, s State, sessionID, id string) error {
	vars := map[string]string{"session_id": sessionID, "plan_id": id, "session_plan_id": s.PlanID}
	switch {
	case id == "":
		return nil
	case !s.Active():
		return refuseWith(t, templates.PlanRefuseNotThisSession, vars)
	case s.PlanID != id:
		return refuseWith(t, templates.PlanRefuseOtherPlan, vars)
	}
	return nil
}

// CheckPlanID refuses an id that is not a valid plan id, before the caller
// uses it to name a folder; t words the refusal.
func CheckPlanID(t templates.Set, id string) error {
	if !ValidPlanID(id) {
		return refuseWith(t, templates.PlanRefuseBadID, map[string]string{"quoted_id": strconv.Quote(id)})
	}
	return nil
}

// change runs a command that changes an active plan: it applies cmd,
// drops a saved answer the change made stale, and answers message(new
// state).
func change(s State, f Facts, t templates.Set, what string, cmd func(State, Facts) (State, []Effect, error), message func(State) (string, error)) (State, Decision, []Effect, error) {
	if !s.Active() {
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseNoPlanCommand, map[string]string{"command": what, "session_id": f.SessionID})
	}
	next, effects, err := cmd(s, f)
	if err != nil {
		return s, Decision{}, nil, refuse(err)
	}
	next = DropAnswer(s, next)
	msg, err := message(next)
	if err != nil {
		return s, Decision{}, nil, fmt.Errorf("plan %s: %w", what, err)
	}
	return next, Decision{Message: msg, Changed: !reflect.DeepEqual(s, next)}, effects, nil
}

// newPlan is `drover plan new ID`: the session's plan becomes args.PlanID
// at phase new-plan, whether plan.md is written yet or not (a plan started
// from the slash command has none yet: the first stop finds it missing,
// and the folder rules tell the agent to write it). A plan whose state.json
// exists belongs to whichever session started it: only its own session
// may start it over.
func newPlan(s State, f Facts, t templates.Set, args api.PlanArgs) (State, Decision, []Effect, error) {
	id := args.PlanID
	if err := CheckPlanID(t, id); err != nil {
		return s, Decision{}, nil, err
	}
	maxReviews := f.DefaultMaxReviews
	if args.MaxReviews != nil {
		maxReviews = *args.MaxReviews
	}
	switch {
	case maxReviews < 0:
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseNegativeReviews, map[string]string{"max_reviews": strconv.Itoa(maxReviews)})
	case CheckBudget(args.BudgetUSD) != nil:
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseBadBudget, map[string]string{"value": fmt.Sprint(args.BudgetUSD)})
	case s.Review != nil:
		return s, Decision{}, nil, refusef("plan new: %w", reviewRunning(t))
	case f.PlanID != id:
		return s, Decision{}, nil, fmt.Errorf("plan new: the facts are for plan %q, not %q", f.PlanID, id)
	case s.PlanID != id && f.View != nil:
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseExists, map[string]string{"plan_id": id, "view_file": path.Join(f.PlanDir, ViewFile), "plan_dir": f.PlanDir})
	}
	var next State
	if hasFile(f, "plan.md") {
		var err error
		if next, _, err = NewPlan(s, f, t, maxReviews); err != nil {
			return s, Decision{}, nil, refuse(err)
		}
	} else {
		next = State{PlanID: id, Phase: PhaseNewPlan, NextPhase: PhasePlanReview, MaxReviews: maxReviews}
		next.Ledger.Cycle = 1
	}
	next.Owner = f.SessionID
	next.TDD = args.TDD
	next.BudgetUSD = args.BudgetUSD

	var parts []string
	if s.Active() && s.PlanID != id && s.Phase != PhaseComplete {
		v := vars(next, f, t, "")
		v["old_plan_id"], v["old_phase"] = s.PlanID, string(s.Phase)
		aside, err := t.Render(templates.PlanSetAside, v)
		if err != nil {
			return s, Decision{}, nil, fmt.Errorf("plan new: %w", err)
		}
		parts = append(parts, aside)
	}
	v := vars(next, f, t, "")
	v["tdd_note"], v["budget_note"] = "", ""
	if next.TDD {
		v["tdd_note"] = ", " + say(t, templates.PlanTDDNote, nil)
	}
	if next.BudgetUSD > 0 {
		v["budget_note"] = ", " + say(t, templates.PlanBudgetNote, map[string]string{"budget_usd": dollars(next.BudgetUSD)})
	}
	started, err := t.Render(templates.PlanStarted, v)
	if err != nil {
		return s, Decision{}, nil, fmt.Errorf("plan new: %w", err)
	}
	// The rest is the new-plan action's prompt: what to write, then stop.
	prompt, err := ActionPrompt(next, f, t, ActionNewPlan, "")
	if err != nil {
		return s, Decision{}, nil, fmt.Errorf("plan new: %w", err)
	}
	parts = append(parts, started, prompt)
	effects := []Effect{MakeFolder{Path: f.PlanDir}, CancelReview{}}
	return next, Decision{Message: strings.Join(parts, "\n"), Changed: true}, append(effects, viewEffects(next, f)...), nil
}

// advancePlan is `drover plan advance PHASE [TASK]`: the agent reports a
// step done, and hears what follows it.
func advancePlan(s State, f Facts, t templates.Set, args api.PlanArgs) (State, Decision, []Effect, error) {
	phase := Phase(args.Phase)
	var cmd func(s State, f Facts) (State, []Effect, error)
	switch phase {
	case PhaseNewPlan:
		cmd = func(s State, f Facts) (State, []Effect, error) {
			n, e, err := NewPlan(s, f, t, s.MaxReviews)
			n.TDD = s.TDD
			return n, e, err
		}
	case PhaseCreateTasks:
		cmd = func(s State, f Facts) (State, []Effect, error) { return CreateTasks(s, f, t) }
	case PhaseCompleteTask, PhaseCompleteTaskTDD:
		cmd = func(s State, f Facts) (State, []Effect, error) {
			return CompleteTask(s, f, t, args.Task, phase == PhaseCompleteTaskTDD)
		}
	case PhaseNextTask, PhaseNextTaskTDD:
		cmd = func(s State, f Facts) (State, []Effect, error) {
			return NextTask(s, f, t, args.Task, phase == PhaseNextTaskTDD)
		}
	case PhaseContinueTask:
		cmd = func(s State, f Facts) (State, []Effect, error) { return ContinueTask(s, f, t) }
	case PhaseComplete:
		cmd = func(s State, f Facts) (State, []Effect, error) { return MarkComplete(s, f, t) }
	case "post-review", PhasePostPlanReview, PhasePostTasksReview, PhasePostCodeReview, PhasePostAllCodeReview:
		cmd = func(s State, f Facts) (State, []Effect, error) {
			if phase != "post-review" && s.NextPhase != phase && s.Review == nil {
				return s, nil, sayErr(t, nil, templates.PlanRefuseWaitsFor, map[string]string{"phase": string(phase), "next_phase": orNone(string(s.NextPhase))})
			}
			return PostReviewDone(s, f, t)
		}
	default:
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseUnknownPhase, map[string]string{"quoted_phase": strconv.Quote(string(phase)), "known": strings.Join(AdvancePhases(), ", ")})
	}
	return change(s, f, t, "advance "+string(phase), cmd, func(n State) (string, error) {
		return t.Render(advanceTemplate(n), advanceVars(n, f, t))
	})
}

// advanceTemplate is what follows the phase the agent reported in n.
func advanceTemplate(n State) string {
	if _, ok := n.NextPhase.ReviewKind(); ok {
		switch {
		case n.MaxReviews == 0:
			return templates.PlanAdvancedReviewsOff
		case n.Iteration >= n.MaxReviews:
			// The stop will be the hard stop, not another review.
			return templates.PlanAdvancedLimit
		}
		return templates.PlanAdvancedReview
	}
	if n.Phase == PhaseComplete {
		return templates.PlanCompleted
	}
	return templates.PlanAdvanced
}

// advanceVars are vars plus review_kind (of the review next_phase names)
// and next_iteration.
func advanceVars(n State, f Facts, t templates.Set) map[string]string {
	v := vars(n, f, t, "")
	kind, _ := n.NextPhase.ReviewKind()
	v["review_kind"] = string(kind)
	v["next_iteration"] = strconv.Itoa(n.Iteration + 1)
	return v
}

// setPlan is `drover plan set KEY=VALUE`, the escape hatch for the
// plan's settings.
func setPlan(s State, f Facts, t templates.Set, args api.PlanArgs) (State, Decision, []Effect, error) {
	if err := SamePlan(t, s, f.SessionID, args.PlanID); err != nil {
		return s, Decision{}, nil, err
	}
	key, value := args.Key, strings.TrimSpace(args.Value)
	setting := func(apply func(*State)) func(State, Facts) (State, []Effect, error) {
		return func(s State, f Facts) (State, []Effect, error) {
			if !s.Active() {
				return s, nil, sayErr(t, nil, templates.PlanRefuseCommandNoPlan, map[string]string{"command": "set"})
			}
			apply(&s)
			return s, viewEffects(s, f), nil
		}
	}
	render := func(name string) func(State) (string, error) {
		return func(n State) (string, error) {
			v := vars(n, f, t, "")
			v["budget_usd"], v["spent_usd"] = dollars(n.BudgetUSD), dollars(f.SpentUSD)
			return t.Render(name, v)
		}
	}
	switch key {
	case "max_reviews":
		n, err := strconv.Atoi(value)
		if err != nil {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetMaxReviews, map[string]string{"quoted_value": strconv.Quote(value)})
		}
		return change(s, f, t, "set max_reviews", func(s State, f Facts) (State, []Effect, error) {
			return SetMaxReviews(s, f, t, n)
		}, render(templates.PlanSetMaxReviews))
	case "next_phase":
		if value != "null" && value != "none" && value != "" {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetNextPhase, nil)
		}
		return stopReviews(s, f, t)
	case "review_model":
		models := f.Models
		if len(models) == 0 {
			models = reviewer.DefaultModels
		}
		i := slices.Index(models, value)
		if i < 0 {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetReviewModel, map[string]string{"models": strings.Join(models, ", "), "quoted_value": strconv.Quote(value)})
		}
		return change(s, f, t, "set review_model", setting(func(s *State) { s.ModelIndex = i }), render(templates.PlanSetReviewModel))
	case "budget_usd":
		usd, err := strconv.ParseFloat(strings.TrimPrefix(value, "$"), 64)
		if err != nil {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetBudget, map[string]string{"quoted_value": strconv.Quote(value)})
		}
		if CheckBudget(usd) != nil {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseBadBudget, map[string]string{"value": fmt.Sprint(usd)})
		}
		name := templates.PlanSetBudget
		if usd == 0 {
			name = templates.PlanSetNoBudget
		}
		return change(s, f, t, "set budget_usd", setting(func(s *State) { s.BudgetUSD = usd }), render(name))
	case "tdd":
		tdd, err := strconv.ParseBool(value)
		if err != nil {
			return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetTDD, map[string]string{"quoted_value": strconv.Quote(value)})
		}
		return change(s, f, t, "set tdd", setting(func(s *State) { s.TDD = tdd }), render(templates.PlanSetTDD))
	}
	return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseSetUnknown, map[string]string{"quoted_key": strconv.Quote(key)})
}

// stopReviews is `drover plan stop-reviews` (and `drover stop` for a
// plan): the review loop ends, a review in flight is cancelled.
func stopReviews(s State, f Facts, t templates.Set) (State, Decision, []Effect, error) {
	if !s.Active() {
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseNoPlan, map[string]string{"session_id": f.SessionID})
	}
	stop := func(s State, f Facts) (State, []Effect, error) { return StopReviews(s, f, t) }
	return change(s, f, t, "stop-reviews", stop, func(n State) (string, error) {
		return t.Render(templates.PlanReviewsStopped, vars(n, f, t, ""))
	})
}

// standaloneReview is `drover plan review KIND [TASK]` (`drover plan
// code-review [ID]` and friends): one review of that kind runs at the next
// stop and leaves next_phase null.
func standaloneReview(s State, f Facts, t templates.Set, args api.PlanArgs) (State, Decision, []Effect, error) {
	kind, ok := Phase(args.Phase).ReviewKind()
	if !ok {
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseUnknownReview, map[string]string{"quoted_review": strconv.Quote(args.Phase)})
	}
	return change(s, f, t, args.Phase, func(s State, f Facts) (State, []Effect, error) {
		return StandaloneReview(s, f, t, kind, args.Task)
	}, func(n State) (string, error) {
		v := vars(n, f, t, kind)
		v["first_model"] = reviewer.NextModel(f.Models, 0)
		if n.MaxReviews == 0 {
			return t.Render(templates.PlanStandaloneSkipped, v)
		}
		return t.Render(templates.PlanStandaloneStarts, v)
	})
}

// continuePlan is `drover plan continue` for the session's own plan: Next,
// with the state committed only when Next changed it.
func continuePlan(s State, f Facts, t templates.Set) (State, Decision, []Effect, error) {
	next, route, effects, err := Next(s, f, t)
	if err != nil {
		return s, Decision{}, nil, refuse(err)
	}
	next = DropAnswer(s, next)
	return next, Decision{Message: route.Text, Route: route, Changed: !reflect.DeepEqual(next, s)}, effects, nil
}

// Adopt is the first half of `drover plan continue ID` in a session that
// does not drive plan id: the session takes the plan up from view, the
// plan's state.json (nil when there is none), as a new session picks up a
// plan another one left. f are the facts of plan id. Then Command
// continue says what to do.
func Adopt(s State, f Facts, t templates.Set, id string, view []byte) (State, Decision, []Effect, error) {
	switch {
	case s.Review != nil && s.PlanID != id:
		// Taking back this session's own plan from a session that took
		// it over cancels the review it had running (CancelReview).
		return s, Decision{}, nil, refusef("plan continue: %w", reviewRunning(t))
	case !ValidPlanID(id):
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseBadIDShort, map[string]string{"quoted_id": strconv.Quote(id)})
	case view == nil:
		return s, Decision{}, nil, refuseWith(t, templates.PlanRefuseNoView, map[string]string{"plan_id": id, "plan_dir": f.PlanDir})
	}
	next, err := StateFromView(id, view, f.Models, f.DefaultMaxReviews)
	if err != nil {
		return s, Decision{}, nil, refuse(err)
	}
	next.Owner = f.SessionID
	v := vars(next, f, t, "")
	v["session_id"] = f.SessionID
	msg, err := t.Render(templates.PlanAdopted, v)
	if err != nil {
		return s, Decision{}, nil, fmt.Errorf("plan continue: %w", err)
	}
	// The view is written at once: it names this session as the plan's,
	// which is how the session that drove it before learns of it.
	return next, Decision{Message: msg, Changed: true}, append([]Effect{CancelReview{}}, viewEffects(next, f)...), nil
}

// MakeFolder creates the plan folder (and .drover) when it is missing.
type MakeFolder struct{ Path string }

func (MakeFolder) effect() {}
