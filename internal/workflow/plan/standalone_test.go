package plan

import (
	"errors"
	"strings"
	"testing"
)

func standalone(s *State) { s.Standalone = true }

func cycle(n int) func(*State) { return func(s *State) { s.Ledger.Cycle = n } }

func TestStandaloneReview(t *testing.T) {
	// A standalone task (next_phase null) in the middle of a plan.
	base := st(phase(PhaseNextTask, PhaseNone), task("1"), iter(3), model(3), clean(1))
	tests := []struct {
		name    string
		in      State
		facts   Facts
		kind    Kind
		task    string
		want    State
		wantErr string
	}{
		{
			name: "code review of a named task: a new cycle, the task becomes current, the phase stays",
			in:   base, facts: facts(), kind: KindCode, task: "2",
			want: st(phase(PhaseNextTask, PhaseCodeReview), task("2"), standalone, cycle(2)),
		},
		{
			name: "code review of the current task",
			in:   base, facts: facts(), kind: KindCode,
			want: st(phase(PhaseNextTask, PhaseCodeReview), task("1"), standalone, cycle(2)),
		},
		{
			name: "code review with no task and no current task",
			in:   st(phase(PhaseTasksReview, PhaseNone)), facts: facts(), kind: KindCode,
			wantErr: "there is no current task; name the task",
		},
		{
			name: "code review of a path-like task",
			in:   base, facts: facts(), kind: KindCode, task: "../x",
			wantErr: `"../x" is not a valid task id`,
		},
		{
			name: "code review of a task without its file",
			in:   base, facts: facts(), kind: KindCode, task: "9",
			wantErr: "nothing to review: task file task-9.md does not exist",
		},
		{
			name: "plan review keeps the current task",
			in:   base, facts: facts(), kind: KindPlan,
			want: st(phase(PhaseNextTask, PhasePlanReview), task("1"), standalone, cycle(2)),
		},
		{
			name: "plan review takes no task",
			in:   base, facts: facts(), kind: KindPlan, task: "1",
			wantErr: "takes no task id",
		},
		{
			name: "plan review without plan.md",
			in:   base, facts: facts(files("tasks.md", "task-1.md")), kind: KindPlan,
			wantErr: "nothing to review: plan.md does not exist",
		},
		{
			name: "tasks review",
			in:   st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(), kind: KindTasks,
			want: st(phase(PhaseCreateTasks, PhaseTasksReview), standalone, cycle(2)),
		},
		{
			name: "tasks review of a tasks.md that is not a table",
			in:   base, facts: facts(tasksMD("todo: everything")), kind: KindTasks,
			wantErr: "non-table",
		},
		{
			name: "tasks review without tasks",
			in:   base, facts: facts(files("plan.md"), tasksMD("")), kind: KindTasks,
			wantErr: "nothing to review: tasks.md lists no task",
		},
		{
			name: "all-code review",
			in:   base, facts: facts(), kind: KindAllCode,
			want: st(phase(PhaseNextTask, PhaseAllCodeReview), task("1"), standalone, cycle(2)),
		},
		{
			name: "not while a review runs",
			in:   st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), running), facts: facts(), kind: KindPlan,
			wantErr: ErrReviewRunning.Error(),
		},
		{
			name: "not without a plan",
			in:   State{}, facts: facts(), kind: KindPlan,
			wantErr: "no plan",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, effects, err := StandaloneReview(tt.in, tt.facts, tm, tt.kind, tt.task)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if formatState(got) != formatState(tt.in) || effects != nil {
					t.Errorf("a failed command changed the state or has effects: %s, %v", formatState(got), effects)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if formatState(got) != formatState(tt.want) || got.Ledger.Cycle != tt.want.Ledger.Cycle {
				t.Errorf("state\n %s (cycle %d)\nwant\n %s (cycle %d)", formatState(got), got.Ledger.Cycle, formatState(tt.want), tt.want.Ledger.Cycle)
			}
			checkEffects(t, got, tt.facts, effects)
			w, ok := find[WriteView](effects)
			if !ok || !strings.Contains(string(w.Data), `"standalone": true`) {
				t.Errorf("the view does not say standalone:\n%s", w.Data)
			}
		})
	}
	inFlight := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), running)
	if _, _, err := StandaloneReview(inFlight, facts(), tm, KindCode, "1"); !errors.Is(err, ErrReviewRunning) {
		t.Errorf("a standalone review while one runs: %v, want ErrReviewRunning", err)
	}
}

// TestStandaloneCycle runs standalone reviews through Stop: seed 001's
// standalone review commands perform one review and stop, so whatever the
// verdict there is no post-review, next_phase becomes null and the plan
// does not advance (the cycle belongs to the automation only).
func TestStandaloneCycle(t *testing.T) {
	// Only task 3 is left: an automated code review of it would go on
	// to the all-code review.
	lastTask := tasksMD("| Id | Status | Description |\n|----|--------|-------------|\n| 1 | done | a |\n| 2 | done | b |\n| 3 | pending | c |\n")
	tests := []struct {
		name   string
		kind   Kind
		task   string
		in     State
		facts  Facts
		answer *ReviewOutcome
		phase  Phase // where the plan ends
		file   string
	}{
		{name: "plan review that fails", kind: KindPlan, in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(), answer: fail, phase: PhasePlanReview, file: "plan-review-1.md"},
		{name: "plan review that passes", kind: KindPlan, in: st(phase(PhaseCreateTasks, PhaseNone)), facts: facts(), answer: pass, phase: PhasePlanReview, file: "plan-review-1.md"},
		{name: "tasks review", kind: KindTasks, in: st(phase(PhaseNextTask, PhaseNone), task("1")), facts: facts(), answer: fail, phase: PhaseTasksReview, file: "tasks-review-1.md"},
		{name: "code review of the last task", kind: KindCode, task: "3", in: st(phase(PhaseNextTask, PhaseNone), task("3")), facts: facts(lastTask), answer: pass, phase: PhaseCodeReview, file: "task-3-review-1.md"},
		{name: "all-code review", kind: KindAllCode, in: st(phase(PhaseCodeReview, PhaseNone), task("3")), facts: facts(), answer: fail, phase: PhaseAllCodeReview, file: "all-code-review-1.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := StandaloneReview(tt.in, tt.facts, tm, tt.kind, tt.task)
			if err != nil {
				t.Fatal(err)
			}
			r := stop(t, s, tt.facts, tt.answer)
			if r.started == nil || !r.first.IsBlock() {
				t.Fatalf("the stop after the command started no review: %s", formatState(r.state))
			}
			if r.out.IsBlock() || r.state.Phase != tt.phase || r.state.NextPhase != PhaseNone || r.state.Standalone || r.state.Iteration != 1 {
				t.Fatalf("after the one review: %s %s, want allow at %s with next_phase null", r.out.Kind(), formatState(r.state), tt.phase)
			}
			if w, ok := find[WriteReview](r.effects); !ok || !strings.HasSuffix(w.Path, "/"+tt.file) {
				t.Errorf("review file %+v, want %s", w, tt.file)
			}
			for _, want := range []string{"standalone", tt.file, "one review", "next_phase is null", tt.answer.Verdict} {
				if !strings.Contains(r.out.SystemMessage, want) {
					t.Errorf("message lacks %q:\n%s", want, r.out.SystemMessage)
				}
			}
			if strings.Contains(r.out.SystemMessage, "post-review-done") {
				t.Errorf("a standalone review asks for a post-review:\n%s", r.out.SystemMessage)
			}
			w, _ := find[WriteView](r.effects)
			if strings.Contains(string(w.Data), "standalone") {
				t.Errorf("the view still says standalone:\n%s", w.Data)
			}
			// The next stop starts nothing.
			next := stop(t, r.state, tt.facts, nil)
			if next.started != nil || next.out.IsBlock() {
				t.Errorf("the stop after a standalone review: %s, review started %v", next.out.Kind(), next.started != nil)
			}
			if tt.name == "plan review that fails" {
				golden(t, formatOutput(r.out))
			}
		})
	}
	t.Run("the automated cycle still loops through post-reviews", func(t *testing.T) {
		s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
		r := stop(t, s, facts(), pass)
		if !r.out.IsBlock() || r.state.NextPhase != PhasePostCodeReview || !strings.Contains(r.out.Reason, "post-review-done") {
			t.Fatalf("first clean review of complete-task: %s %s", r.out.Kind(), formatState(r.state))
		}
	})
}

func TestStandaloneLimits(t *testing.T) {
	t.Run("max_reviews reached ends the cycle with next_phase null", func(t *testing.T) {
		s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("2"), iter(3), maxRev(3), standalone)
		r := stop(t, s, facts(), nil)
		if r.started != nil || r.out.IsBlock() || r.state.NextPhase != PhaseNone || r.state.Standalone || r.state.Phase != PhasePostCodeReview || r.state.Iteration != 3 {
			t.Fatalf("%s %s", r.out.Kind(), formatState(r.state))
		}
		golden(t, formatOutput(r.out))
	})
	t.Run("max_reviews 0 skips the review and leaves next_phase null", func(t *testing.T) {
		s, _, err := StandaloneReview(st(phase(PhaseNextTask, PhaseNone), task("1"), maxRev(0)), facts(), tm, KindCode, "")
		if err != nil {
			t.Fatal(err)
		}
		r := stop(t, s, facts(), nil)
		if r.started != nil || r.out.IsBlock() || r.state.NextPhase != PhaseNone || r.state.Phase != PhaseCodeReview || r.state.Standalone {
			t.Fatalf("%s %s", r.out.Kind(), formatState(r.state))
		}
	})
	t.Run("the automated cycle still hard-stops and waits", func(t *testing.T) {
		s := st(phase(PhasePostCodeReview, PhaseCodeReview), task("2"), iter(3), maxRev(3))
		r := stop(t, s, facts(), nil)
		if r.state.NextPhase != PhaseCodeReview || strings.Contains(r.out.SystemMessage, "standalone") {
			t.Fatalf("%s %s", formatState(r.state), r.out.SystemMessage)
		}
	})
}

// TestStandaloneEndsWithTheCycle checks that the flag belongs to its cycle:
// a command that starts another cycle or ends the loop clears it, one that
// passes next_phase through keeps it.
func TestStandaloneEndsWithTheCycle(t *testing.T) {
	in := st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), standalone)
	tests := []struct {
		name string
		run  func() (State, []Effect, error)
		keep bool
	}{
		{"complete-task", func() (State, []Effect, error) { return CompleteTask(in, facts(), tm, "2", false) }, false},
		{"create-tasks", func() (State, []Effect, error) { return CreateTasks(in, facts(), tm) }, false},
		{"another standalone review", func() (State, []Effect, error) { return StandaloneReview(in, facts(), tm, KindPlan, "") }, true},
		{"stop-reviews", func() (State, []Effect, error) { return StopReviews(in, facts(), tm) }, false},
		{"complete", func() (State, []Effect, error) { return MarkComplete(in, facts(), tm) }, false},
		{"continue-task", func() (State, []Effect, error) { return ContinueTask(in, facts(), tm) }, true},
		{"add-task", func() (State, []Effect, error) { return AddTask(in, facts(), tm, "3") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := tt.run()
			if err != nil {
				t.Fatal(err)
			}
			if got.Standalone != tt.keep {
				t.Errorf("standalone %v, want %v (%s)", got.Standalone, tt.keep, formatState(got))
			}
		})
	}
}
