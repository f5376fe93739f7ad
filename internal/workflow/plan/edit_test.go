package plan

import (
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
)

// edited is the view of s with edit applied to its text.
func edited(s State, edit func(string) string) func(*Facts) {
	return func(f *Facts) { f.View = []byte(edit(string(View(s, f.Models)))) }
}

func replace(old, new string) func(string) string {
	return func(v string) string { return strings.Replace(v, old, new, 1) }
}

// TestStopTakesHandEdits runs Stop on a state.json edited since drover
// wrote it: the seed's escape hatches are taken and said, other edits are
// undone with a message naming drover plan set, a state.json that names
// another session means the plan was taken over, and what is no edit
// (drover's own last file, an unknown field) changes nothing.
func TestStopTakesHandEdits(t *testing.T) {
	post := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1))
	inFlight := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), func(s *State) { s.Review = &InFlight{Kind: KindCode, Iteration: 1, Model: "opus", Task: "1"} })
	withSession := func(f *Facts) { f.SessionID = "me" }
	tests := []struct {
		name    string
		in      State
		facts   Facts
		block   bool
		started bool
		cancel  bool
		view    bool // a WriteView is expected
		has     []string
		not     []string
		want    func(State) bool
	}{
		{
			name: "next_phase null ends the loop before a review", in: post,
			facts: facts(edited(post, replace(`"next_phase": "code-review"`, `"next_phase": null`))),
			has:   []string{"next_phase to null", "`drover plan set next_phase=null`"}, not: []string{"cancelled"},
			want: func(s State) bool {
				return s.NextPhase == PhaseNone && s.Phase == PhasePostCodeReview && s.Iteration == 1
			},
		},
		{
			name: "next_phase null cancels the review in flight", in: inFlight,
			facts: facts(edited(inFlight, replace(`"next_phase": "code-review"`, `"next_phase": null`))), cancel: true, view: true,
			has:  []string{"next_phase to null", "the review that was running is cancelled"},
			want: func(s State) bool { return s.NextPhase == PhaseNone && s.Review == nil },
		},
		{
			name: "max_reviews 0 skips the cycle", in: post,
			facts: facts(edited(post, replace(`"max_reviews": 8`, `"max_reviews": 0`))), view: true,
			has:  []string{"max_reviews to 0 (it was 8)", "max_reviews"},
			want: func(s State) bool { return s.MaxReviews == 0 && s.NextPhase == PhaseCompleteTask },
		},
		{
			name: "max_reviews at the reviews done is the hard stop", in: post,
			facts: facts(edited(post, replace(`"max_reviews": 8`, `"max_reviews": 1`))),
			has:   []string{"max_reviews to 1 (it was 8)", "reached its limit"},
			want:  func(s State) bool { return s.MaxReviews == 1 && s.NextPhase == PhaseCodeReview },
		},
		{
			name: "other fields are undone and drover plan set is named", in: post,
			facts: facts(edited(post, replace(`"phase_iteration": 1`, `"phase_iteration": 0`))), block: true, started: true, view: true,
			has:  []string{"edited by hand (phase_iteration)", "`drover plan set KEY=VALUE`"},
			want: func(s State) bool { return s.Review != nil && s.Review.Iteration == 2 },
		},
		{
			name: "a state.json naming another session: taken over", in: inFlight,
			facts: facts(withSession, edited(inFlight, replace(`"note"`, `"session_id": "other", "note"`))), cancel: true,
			has:  []string{"now driven by session other", "starts no reviewer"},
			want: func(s State) bool { return !s.Active() && s.TakenBy == "other" && s.PlanID == planID },
		},
		{
			name: "an edit of the state's view when the saved last file is older",
			in: func() State {
				s := post
				s.LastView = string(View(st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), nil))
				return s
			}(),
			facts: facts(edited(post, replace(`"next_phase": "code-review"`, `"next_phase": null`))),
			has:   []string{"next_phase to null"}, not: []string{"edited by hand ("},
			want: func(s State) bool { return s.NextPhase == PhaseNone && s.Iteration == 1 },
		},
		{
			name: "drover's own last file is no edit", in: func() State { s := post; s.LastView = `{"old": "view"}`; return s }(),
			facts: facts(viewOf(`{"old": "view"}`)), block: true, started: true, view: true, not: []string{"by hand"},
			want: func(s State) bool { return s.Review != nil },
		},
		{
			name: "an unknown field is no edit", in: post,
			facts: facts(edited(post, replace(`"tdd"`, `"custom": 1, "tdd"`))), block: true, started: true, view: true, not: []string{"by hand"},
			want: func(s State) bool { return s.Review != nil },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, effects, err := Stop(tt.in, tt.facts, tm)
			if err != nil {
				t.Fatal(err)
			}
			if out.IsBlock() != tt.block {
				t.Errorf("block %v, want %v: %s", out.IsBlock(), tt.block, formatOutput(out))
			}
			_, started := find[StartReview](effects)
			_, cancel := find[CancelReview](effects)
			_, view := find[WriteView](effects)
			if started != tt.started || cancel != tt.cancel || view != tt.view {
				t.Errorf("effects %s: start %v cancel %v view %v, want %v %v %v", effectNames(effects), started, cancel, view, tt.started, tt.cancel, tt.view)
			}
			for _, want := range tt.has {
				if !strings.Contains(out.SystemMessage, want) {
					t.Errorf("the answer lacks %q:\n%s", want, formatOutput(out))
				}
			}
			for _, bad := range tt.not {
				if strings.Contains(out.SystemMessage+out.Reason, bad) {
					t.Errorf("the answer has %q:\n%s", bad, formatOutput(out))
				}
			}
			if tt.block && strings.Contains(out.SystemMessage, "by hand") && !strings.Contains(out.Reason, "by hand") {
				t.Errorf("the agent is not told about the edit:\n%s", formatOutput(out))
			}
			if !tt.want(got) {
				t.Errorf("state %s", formatState(got))
			}
		})
	}
}

// TestEditsWaitForTheStop checks that what runs between stops (a review's
// answer, a restart) keeps a hand edit for the stop rather than writing
// the view over it, and that a plan another session took over is left
// alone.
func TestEditsWaitForTheStop(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), func(s *State) {
		s.Review = &InFlight{Kind: KindCode, Iteration: 1, Model: "opus", Task: "1", Answered: &Answered{Outcome: ReviewOutcome{Kind: KindCode, Iteration: 1, Model: "opus", Outcome: reviewer.Pass, Verdict: "PASS"}}}
	})
	nulled := facts(edited(s, replace(`"next_phase": "code-review"`, `"next_phase": null`)))
	if effects, err := Pending(s, nulled, tm); err != nil || hasView(effects) {
		t.Errorf("Pending over an edit: %s %v", effectNames(effects), err)
	}
	filed, effects, err := ReviewFiled(s, nulled, tm, Filing{Kind: KindCode, Iteration: 1, Task: "1"})
	if err != nil || hasView(effects) || filed.Review != nil {
		t.Errorf("ReviewFiled over an edit: %s %v", effectNames(effects), err)
	}
	// The stop after takes the edit, against the view drover last wrote.
	withLast := Wrote(filed, View(s, nil))
	got, out, _, err := Stop(withLast, nulled, tm)
	if err != nil || got.NextPhase != PhaseNone || got.Answer != nil || out.IsBlock() || !strings.Contains(out.SystemMessage, "next_phase to null") || strings.Contains(out.SystemMessage, "edited by hand (") {
		t.Errorf("the stop after: %s %s %v", formatState(got), formatOutput(out), err)
	}

	other := facts(func(f *Facts) { f.SessionID = "me" }, edited(s, replace(`"note"`, `"session_id": "other", "note"`)))
	if effects, err := Pending(s, other, tm); err != nil || len(effects) != 0 {
		t.Errorf("Pending of a plan taken over: %s %v", effectNames(effects), err)
	}
	if next, effects, err := ReviewFiled(s, other, tm, Filing{Kind: KindCode, Iteration: 1, Task: "1"}); err != nil || len(effects) != 0 || next.Review == nil {
		t.Errorf("ReviewFiled of a plan taken over: %s %v", effectNames(effects), err)
	}
	taken, effects := TakenOver(st(phase(PhaseCompleteTask, PhaseCodeReview), running), "other")
	if taken.TakenBy != "other" || taken.Review != nil || effectNames(effects) != "CancelReview" {
		t.Errorf("TakenOver: %+v %s", taken, effectNames(effects))
	}
	if _, _, _, err := Command(taken, facts(), tm, "advance", api.PlanArgs{Phase: "post-review"}); err == nil || !strings.Contains(err.Error(), "now driven by session other") {
		t.Errorf("a command in a session whose plan was taken over: %v", err)
	}
}

func hasView(effects []Effect) bool { _, ok := find[WriteView](effects); return ok }
