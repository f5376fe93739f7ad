package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/drover-dev/drover/reviewer"
)

// ViewFile is the name of the view drover writes in the plan folder.
const ViewFile = "state.json"

// viewNote tells whoever opens state.json where it comes from.
const viewNote = "Written by drover from its own state. Only two hand edits are taken: next_phase null (ends the review loop) and max_reviews; drover undoes any other. Change the plan with `drover plan` commands (drover plan set KEY=VALUE)."

// view is state.json, written by View and read back by StateFromView: seed
// 001's eight fields, in the seed's spelling, plus the plan id, its budget
// when it has one and whether its review cycle is a standalone one (so that
// a session that adopts the plan keeps both), whether a review is running,
// and a note. The pointers tell a field that is null or absent from a zero
// value when a view is read.
type view struct {
	PlanID           string  `json:"plan_id"`
	Phase            Phase   `json:"phase"`
	NextPhase        *Phase  `json:"next_phase"`
	CurrentTask      *string `json:"current_task"`
	PhaseIteration   *int    `json:"phase_iteration"`
	MaxReviews       *int    `json:"max_reviews"`
	ReviewModel      string  `json:"review_model"`
	ConsecutiveClean int     `json:"consecutive_clean"`
	TDD              bool    `json:"tdd"`
	BudgetUSD        float64 `json:"budget_usd,omitempty"`
	Standalone       bool    `json:"standalone,omitempty"`
	ReviewRunning    bool    `json:"review_running"`
	// SessionID is the session that drives the plan (State.Owner).
	SessionID string `json:"session_id,omitempty"`
	Note      string `json:"note"`
}

// viewFields are the fields rule 8 requires in state.json (null is a valid
// value for next_phase, current_task and phase_iteration): the seed's eight
// fields of view.
var viewFields = []string{"phase", "next_phase", "current_task", "phase_iteration", "max_reviews", "review_model", "consecutive_clean", "tdd"}

// View renders s as the state.json the agent reads. review_model is the
// model of the next review under models.
func View(s State, models []string) []byte {
	iteration, maxReviews := s.Iteration, s.MaxReviews
	v := view{
		PlanID:           s.PlanID,
		Phase:            s.Phase,
		PhaseIteration:   &iteration,
		MaxReviews:       &maxReviews,
		ReviewModel:      reviewer.NextModel(models, s.ModelIndex),
		ConsecutiveClean: s.ConsecutiveClean,
		TDD:              s.TDD,
		BudgetUSD:        s.BudgetUSD,
		Standalone:       s.Standalone,
		ReviewRunning:    s.Review != nil,
		SessionID:        s.Owner,
		Note:             viewNote,
	}
	if s.NextPhase != PhaseNone {
		np := s.NextPhase
		v.NextPhase = &np
	}
	if s.CurrentTask != "" {
		ct := s.CurrentTask
		v.CurrentTask = &ct
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Unreachable: the view holds only strings, numbers and bools.
		return nil
	}
	return append(data, '\n')
}

// knownPhases are the phases a state.json may name.
var knownPhases = []Phase{
	PhaseNewPlan, PhasePlanReview, PhasePostPlanReview, PhaseCreateTasks,
	PhaseTasksReview, PhasePostTasksReview, PhaseNextTask, PhaseNextTaskTDD,
	PhaseCompleteTask, PhaseCompleteTaskTDD, PhaseContinueTask, PhaseCodeReview,
	PhasePostCodeReview, PhaseAllCodeReview, PhasePostAllCodeReview, PhaseComplete,
}

// StateFromView rebuilds plan id's state from its state.json view data:
// how a session takes up a plan another one left. models are the reviewer
// models (review_model picks the index into them) and defaultMax the
// max_reviews of a view without one. A review that was running is not
// rebuilt: the next stop starts it again at the same iteration. The review
// ledger is not in the view; the next review starts with an empty one.
func StateFromView(id string, data []byte, models []string, defaultMax int) (State, error) {
	var v view
	if err := json.Unmarshal(data, &v); err != nil {
		return State{}, fmt.Errorf("reading the state.json of plan %s: %w", id, err)
	}
	if !slices.Contains(knownPhases, v.Phase) {
		return State{}, fmt.Errorf("the state.json of plan %s has no known phase (%q)", id, v.Phase)
	}
	s := State{PlanID: id, Phase: v.Phase, MaxReviews: defaultMax, ConsecutiveClean: max(v.ConsecutiveClean, 0), TDD: v.TDD}
	if v.NextPhase != nil {
		if !slices.Contains(knownPhases, *v.NextPhase) {
			return State{}, fmt.Errorf("the state.json of plan %s has an unknown next_phase %q", id, *v.NextPhase)
		}
		s.NextPhase = *v.NextPhase
	}
	if v.Standalone {
		// Only a cycle under way can be standalone.
		_, review := s.NextPhase.ReviewKind()
		_, post := s.NextPhase.PostReviewKind()
		s.Standalone = review || post
	}
	if v.CurrentTask != nil {
		if *v.CurrentTask != "" && !ValidTaskID(*v.CurrentTask) {
			return State{}, fmt.Errorf("the state.json of plan %s has an invalid current_task %q", id, *v.CurrentTask)
		}
		s.CurrentTask = *v.CurrentTask
	}
	if v.PhaseIteration != nil {
		s.Iteration = max(*v.PhaseIteration, 0)
	}
	if v.MaxReviews != nil && *v.MaxReviews >= 0 {
		s.MaxReviews = *v.MaxReviews
	}
	if i := slices.Index(models, v.ReviewModel); i >= 0 {
		s.ModelIndex = i
	}
	if CheckBudget(v.BudgetUSD) == nil {
		s.BudgetUSD = v.BudgetUSD
	}
	s.Ledger.Cycle = 1
	return s, nil
}

// CheckBudget refuses a plan budget that is negative or not a number.
func CheckBudget(usd float64) error {
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("budget_usd must be a dollar amount of 0 or more, got %v", usd)
	}
	return nil
}
