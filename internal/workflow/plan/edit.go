package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/templates"
)

// state.json is drover's view of the plan, but seed 001 taught its users
// to edit it: every block message of the seed says "to stop the review
// loop, set next_phase to null in state.json", and max_reviews "can be
// changed mid-plan" there. drover keeps the plan's state itself, so a hand
// edit is found by comparing the file with what drover last wrote
// (State.LastView) and with the view of the state (a write a crash cut
// short), and then:
//
//   - a state.json that names another session (session_id) was written by
//     that session, which took the plan over (drover plan continue);
//   - next_phase set to null ends the review loop, as drover plan
//     stop-reviews does, and max_reviews becomes the new cap: the seed's
//     two escape hatches are honoured, and the answer says so;
//   - any other field edited is undone (drover writes its view back), and
//     the answer names `drover plan set`, the command that changes it.
//
// A state.json that is not a valid view at all is rule 8's (CheckView):
// rewritten with a warning.

// ViewEdit is what a hand edit of state.json asks for.
type ViewEdit struct {
	// Owner is the session that state.json names when it is not this
	// one: that session took the plan over.
	Owner string
	// NextPhaseNull is next_phase edited to null; MaxReviews a new
	// max_reviews (0 or more).
	NextPhaseNull bool
	MaxReviews    *int
	// Refused lists the other fields edited, in the view's order.
	Refused []string
}

// Wrote returns s recording data as the state.json drover wrote (or found
// already written) for it.
func Wrote(s State, data []byte) State {
	s.LastView = string(data)
	return s
}

// ViewOwner returns the session a state.json names as driving its plan,
// or "" (none named, or not a view).
func ViewOwner(data []byte) string {
	var v struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	return v.SessionID
}

// TakenBy returns the session that took s's plan over, as s records it or
// as f.View (the plan's state.json) says, or "".
func TakenBy(s State, f Facts) string {
	if s.TakenBy != "" {
		return s.TakenBy
	}
	if e, ok := ReadEdit(s, f); ok {
		return e.Owner
	}
	return ""
}

// ReadEdit reports whether f.View, the plan's state.json, was edited since
// drover wrote it, and what the edit asks for. A state.json that is not a
// valid view (rule 8) or that differs only in what drover does not read
// back (the note, review_running, unknown fields, layout) is no edit.
func ReadEdit(s State, f Facts) (ViewEdit, bool) {
	if f.View == nil || !s.Active() || f.PlanID != s.PlanID {
		return ViewEdit{}, false
	}
	own := View(s, f.Models)
	if bytes.Equal(f.View, own) || (s.LastView != "" && string(f.View) == s.LastView) {
		return ViewEdit{}, false
	}
	got, ok := parseView(f.View)
	if !ok {
		return ViewEdit{}, false
	}
	if hook.ValidSessionID(got.SessionID) && f.SessionID != "" && got.SessionID != f.SessionID {
		return ViewEdit{Owner: got.SessionID}, true
	}
	// The edit is judged against the file it was made to: drover's last
	// write, or, when that write is newer than the saved state (it is
	// saved with the next change), the view of the state. Whichever
	// explains the edit with fewer changes is the one.
	ownView, _ := parseView(own)
	e := diffView(ownView, got)
	if last, ok := parseView([]byte(s.LastView)); ok {
		if alt := diffView(last, got); alt.size() < e.size() {
			e = alt
		}
	}
	if e.size() == 0 {
		return ViewEdit{}, false
	}
	return e, true
}

// size is how many changes e holds.
func (e ViewEdit) size() int {
	n := len(e.Refused)
	if e.NextPhaseNull {
		n++
	}
	if e.MaxReviews != nil {
		n++
	}
	return n
}

// diffView is the edit that turns view was into got.
func diffView(was, got view) ViewEdit {
	var e ViewEdit
	switch {
	case reflect.DeepEqual(was.NextPhase, got.NextPhase):
	case was.NextPhase != nil && got.NextPhase == nil:
		e.NextPhaseNull = true
	default:
		e.Refused = append(e.Refused, "next_phase")
	}
	switch {
	case reflect.DeepEqual(was.MaxReviews, got.MaxReviews):
	case got.MaxReviews != nil && *got.MaxReviews >= 0:
		n := *got.MaxReviews
		e.MaxReviews = &n
	default:
		e.Refused = append(e.Refused, "max_reviews")
	}
	for _, c := range []struct {
		name     string
		was, got any
	}{
		{"plan_id", was.PlanID, got.PlanID},
		{"phase", was.Phase, got.Phase},
		{"current_task", was.CurrentTask, got.CurrentTask},
		{"phase_iteration", was.PhaseIteration, got.PhaseIteration},
		{"review_model", was.ReviewModel, got.ReviewModel},
		{"consecutive_clean", was.ConsecutiveClean, got.ConsecutiveClean},
		{"tdd", was.TDD, got.TDD},
		{"budget_usd", was.BudgetUSD, got.BudgetUSD},
		{"standalone", was.Standalone, got.Standalone},
	} {
		if !reflect.DeepEqual(c.was, c.got) {
			e.Refused = append(e.Refused, c.name)
		}
	}
	return e
}

// parseView reads a state.json that holds every field rule 8 requires.
func parseView(data []byte) (view, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil || fields == nil {
		return view{}, false
	}
	for _, k := range viewFields {
		if _, ok := fields[k]; !ok {
			return view{}, false
		}
	}
	var v view
	if json.Unmarshal(data, &v) != nil {
		return view{}, false
	}
	return v, true
}

// takeEdit applies edit e of state.json to s: the escape hatches are
// taken, the rest is left for the view drover writes next to undo. It
// returns the new state, the messages that say what was done, and the
// effects (a review in flight is cancelled when next_phase became null).
func takeEdit(s State, f Facts, t templates.Set, e ViewEdit) (State, []string, []Effect, error) {
	var (
		notes   []string
		effects []Effect
	)
	if e.NextPhaseNull {
		cancelled := ""
		if s.Review != nil {
			effects = append(effects, CancelReview{Kind: s.Review.Kind, Iteration: s.Review.Iteration})
			cancelled = say(t, templates.PlanViewEditCancelled, nil)
		}
		s.Review, s.Answer = nil, nil
		s.NextPhase, s.Standalone = PhaseNone, false
		v := vars(s, f, t, "")
		v["cancelled"] = cancelled
		msg, err := t.Render(templates.PlanViewEditNextPhase, v)
		if err != nil {
			return s, nil, nil, err
		}
		notes = append(notes, msg)
	}
	if e.MaxReviews != nil {
		old := s.MaxReviews
		s.MaxReviews = *e.MaxReviews
		v := vars(s, f, t, "")
		v["old_max_reviews"] = strconv.Itoa(old)
		msg, err := t.Render(templates.PlanViewEditMaxReviews, v)
		if err != nil {
			return s, nil, nil, err
		}
		notes = append(notes, msg)
	}
	if len(e.Refused) > 0 {
		v := vars(s, f, t, "")
		v["fields"] = strings.Join(e.Refused, ", ")
		msg, err := t.Render(templates.PlanViewEditRefused, v)
		if err != nil {
			return s, nil, nil, err
		}
		notes = append(notes, msg)
	}
	return s, notes, effects, nil
}

// TakenOver is the news that session by took s's plan over (it ran drover
// plan continue on it): the review in flight is cancelled and forgotten,
// and the next stop says who drives the plan now. A plan that is not
// active, or already taken, is left as it is.
func TakenOver(s State, by string) (State, []Effect) {
	if !s.Active() || s.TakenBy != "" || by == "" {
		return s, nil
	}
	next := s
	next.TakenBy = by
	var effects []Effect
	if s.Review != nil {
		effects = append(effects, CancelReview{Kind: s.Review.Kind, Iteration: s.Review.Iteration})
	}
	next.Review, next.Answer = nil, nil
	return next, effects
}

// released is the stop of a session whose plan another session took over
// (owner): the stop is allowed with a message naming that session, no
// reviewer starts, and the session keeps only the plan's id and who took
// it, so that it no longer acts on the plan (state.json is owner's now).
func released(s State, f Facts, t templates.Set, owner string) (State, hook.Output, []Effect, error) {
	v := vars(s, f, t, "")
	v["owner"] = owner
	msg, err := t.Render(templates.PlanTakenOver, v)
	if err != nil {
		return s, hook.Output{}, nil, err
	}
	var effects []Effect
	if s.Review != nil {
		effects = append(effects, CancelReview{Kind: s.Review.Kind, Iteration: s.Review.Iteration})
	}
	return State{PlanID: s.PlanID, TakenBy: owner}, hook.Output{SystemMessage: msg}, effects, nil
}

// takenOverErr is the refusal of a command in a session whose plan another
// session took over.
func takenOverErr(s State, f Facts, t templates.Set, owner string) error {
	v := vars(s, f, t, "")
	v["owner"] = owner
	return refuseWith(t, templates.PlanTakenOver, v)
}

// TakeEdit takes a hand edit of f.View, the plan's state.json, into s
// before a command acts on the plan, as the next stop would: the escape
// hatches are applied, the other edits are left for the view the command
// writes to undo. It returns the new state, what to tell the user (empty
// when state.json was not edited) and the effects (a cancelled review).
// An edit that names another session is not taken: Command refuses then.
func TakeEdit(s State, f Facts, t templates.Set) (State, string, []Effect, error) {
	e, ok := ReadEdit(s, f)
	if !ok || e.Owner != "" {
		return s, "", nil, nil
	}
	next, notes, effects, err := takeEdit(s, f, t, e)
	if err != nil {
		return s, "", nil, fmt.Errorf("taking the edit of state.json: %w", err)
	}
	return next, strings.Join(notes, "\n"), effects, nil
}
