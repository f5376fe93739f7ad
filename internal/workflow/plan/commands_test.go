package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func running(s *State) {
	s.Review = &InFlight{Kind: KindCode, Iteration: 2, Model: "sonnet", Task: "1"}
}

func TestCommands(t *testing.T) {
	inCycle := st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(3), model(3), clean(1), func(s *State) {
		s.ReviewHead = "c3"
		s.Ledger.Latest = 3
	})
	tests := []struct {
		name    string
		run     func() (State, []Effect, error)
		in      State
		want    State
		wantErr string
	}{
		{
			name: "new plan starts the plan review loop",
			run:  func() (State, []Effect, error) { return NewPlan(State{}, facts(), 8) },
			want: st(phase(PhaseNewPlan, PhasePlanReview)),
		},
		{
			name: "new plan with reviews off",
			run:  func() (State, []Effect, error) { return NewPlan(inCycle, facts(), 0) },
			want: st(phase(PhaseNewPlan, PhasePlanReview), maxRev(0)),
		},
		{
			name:    "new plan needs plan.md",
			run:     func() (State, []Effect, error) { return NewPlan(State{}, facts(files("tasks.md")), 8) },
			wantErr: "write " + planDir + "/plan.md first",
		},
		{
			name: "new plan refuses a path-like id",
			run: func() (State, []Effect, error) {
				return NewPlan(State{}, facts(func(f *Facts) { f.PlanID = "../x" }), 8)
			},
			wantErr: `"../x" is not a valid plan id`,
		},
		{
			name:    "new plan refuses a negative limit",
			run:     func() (State, []Effect, error) { return NewPlan(State{}, facts(), -1) },
			wantErr: "negative",
		},
		{
			name: "create-tasks starts a new cycle and keeps max_reviews and tdd",
			run: func() (State, []Effect, error) {
				return CreateTasks(st(phase(PhasePlanReview, PhaseCreateTasks), iter(2), model(2), clean(2), maxRev(4), tdd, task("9")), facts())
			},
			want: st(phase(PhaseCreateTasks, PhaseTasksReview), maxRev(4), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "create-tasks needs a task table",
			run: func() (State, []Effect, error) {
				return CreateTasks(st(phase(PhaseNewPlan, PhaseNone)), facts(tasksMD("todo: everything")))
			},
			wantErr: "non-table",
		},
		{
			name: "complete-task picks the first open task and starts the code review loop",
			run: func() (State, []Effect, error) {
				return CompleteTask(inCycle, facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n| 2 | pending |\n")), "", false)
			},
			want: st(phase(PhaseCompleteTask, PhaseCodeReview), task("2"), func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "complete-task --tdd",
			run:  func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), "3", true) },
			want: st(phase(PhaseCompleteTaskTDD, PhaseCodeReview), task("3"), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name:    "complete-task needs the task file",
			run:     func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), "7", false) },
			wantErr: "no task file " + planDir + "/task-7.md",
		},
		{
			name:    "complete-task refuses a bad id",
			run:     func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), "../1", false) },
			wantErr: "not a valid task id",
		},
		{
			name: "complete-task with nothing open",
			run: func() (State, []Effect, error) {
				return CompleteTask(inCycle, facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n")), "", false)
			},
			wantErr: "no task that is not done",
		},
		{
			name: "complete-task while a review runs",
			run: func() (State, []Effect, error) {
				return CompleteTask(st(phase(PhaseCompleteTask, PhaseCodeReview), running), facts(), "1", false)
			},
			wantErr: "a review is running",
		},
		{
			name: "next-task is standalone",
			run:  func() (State, []Effect, error) { return NextTask(inCycle, facts(), "2", true) },
			want: st(phase(PhaseNextTaskTDD, PhaseNone), task("2"), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "continue-task keeps next_phase",
			run: func() (State, []Effect, error) {
				return ContinueTask(st(phase(PhaseCompleteTask, PhaseCodeReview), task("2")), facts())
			},
			want: st(phase(PhaseContinueTask, PhaseCodeReview), task("2")),
		},
		{
			name:    "continue-task without a task",
			run:     func() (State, []Effect, error) { return ContinueTask(st(phase(PhaseCreateTasks, PhaseNone)), facts()) },
			wantErr: "no current task",
		},
		{
			name: "post-review-done loops back to the review",
			run:  func() (State, []Effect, error) { return PostReviewDone(inCycle, facts()) },
			want: st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(3), model(3), clean(1)),
		},
		{
			name:    "post-review-done with no review to answer",
			run:     func() (State, []Effect, error) { return PostReviewDone(st(phase(PhaseNextTask, PhaseNone)), facts()) },
			wantErr: "no review is waiting for its post-review (phase next-task, next none)",
		},
		{
			name: "stop-reviews ends the loop",
			run:  func() (State, []Effect, error) { return StopReviews(inCycle, facts()) },
			want: st(phase(PhaseCodeReview, PhaseNone), task("1"), iter(3), model(3), clean(1)),
		},
		{
			name: "stop-reviews abandons a running review",
			run: func() (State, []Effect, error) {
				return StopReviews(st(phase(PhaseCompleteTask, PhaseCodeReview), running), facts())
			},
			want: st(phase(PhaseCompleteTask, PhaseNone)),
		},
		{
			name: "set-max-reviews",
			run:  func() (State, []Effect, error) { return SetMaxReviews(inCycle, facts(), 12) },
			want: st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(3), model(3), clean(1), maxRev(12)),
		},
		{
			name:    "set-max-reviews refuses a negative limit",
			run:     func() (State, []Effect, error) { return SetMaxReviews(inCycle, facts(), -2) },
			wantErr: "negative",
		},
		{
			name: "add-task becomes current when none is",
			run: func() (State, []Effect, error) {
				return AddTask(st(phase(PhaseTasksReview, PhaseCompleteTask)), facts(), "3")
			},
			want: st(phase(PhaseTasksReview, PhaseCompleteTask), task("3")),
		},
		{
			name: "add-task leaves a current task alone",
			run:  func() (State, []Effect, error) { return AddTask(inCycle, facts(), "3") },
			want: inCycle,
		},
		{
			name: "complete skips the all-code review",
			run: func() (State, []Effect, error) {
				return MarkComplete(st(phase(PhaseCodeReview, PhaseAllCodeReview)), facts())
			},
			want: st(phase(PhaseComplete, PhaseNone)),
		},
		{
			name:    "commands need a plan",
			run:     func() (State, []Effect, error) { return PostReviewDone(State{}, facts()) },
			wantErr: "this session has no plan",
		},
		{
			name: "commands refuse facts of another plan",
			run: func() (State, []Effect, error) {
				return MarkComplete(inCycle, facts(func(f *Facts) { f.PlanID = "p2" }))
			},
			wantErr: `facts are for plan "p2"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, effects, err := tt.run()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if effects != nil {
					t.Errorf("effects %v with an error", effects)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if formatState(got) != formatState(tt.want) || got.Ledger.Cycle != tt.want.Ledger.Cycle {
				t.Errorf("state\n %s cycle %d\nwant\n %s cycle %d", formatState(got), got.Ledger.Cycle, formatState(tt.want), tt.want.Ledger.Cycle)
			}
			w, ok := find[WriteView](effects)
			if !ok || string(w.Data) != string(View(got, nil)) {
				t.Error("no WriteView of the new state")
			}
		})
	}
}

func TestCommandErrorsLeaveStateAlone(t *testing.T) {
	in := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), running)
	for name, run := range map[string]func() (State, []Effect, error){
		"create-tasks":     func() (State, []Effect, error) { return CreateTasks(in, facts()) },
		"continue-task":    func() (State, []Effect, error) { return ContinueTask(in, facts()) },
		"post-review-done": func() (State, []Effect, error) { return PostReviewDone(in, facts()) },
		"add-task":         func() (State, []Effect, error) { return AddTask(in, facts(), "2") },
		"new":              func() (State, []Effect, error) { return NewPlan(in, facts(), 8) },
	} {
		got, _, err := run()
		if !errors.Is(err, ErrReviewRunning) || !reflect.DeepEqual(got, in) {
			t.Errorf("%s during a review: %v, state %s", name, err, formatState(got))
		}
	}
	got, effects, err := StopReviews(in, facts())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := find[CancelReview](effects); !ok || c.Iteration != 2 || got.Review != nil {
		t.Errorf("stop-reviews during a review: %+v %v", effects, got.Review)
	}
	// The abandoned review's answer is ignored when it still arrives.
	after, out, _, err := Stop(got, facts(func(f *Facts) {
		f.Review = &ReviewOutcome{Kind: KindCode, Iteration: 2, Outcome: "pass", Verdict: "PASS"}
	}), tm)
	if err != nil || out.IsBlock() || after.ConsecutiveClean != 0 || after.Iteration != 0 {
		t.Errorf("the abandoned answer was applied: %s %s %v", formatState(after), out.Kind(), err)
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name   string
		in     State
		facts  Facts
		action string
		phase  Phase
		target string
		done   bool
	}{
		{name: "post-code-review", in: st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(3)), facts: facts(), action: ActionPostReview, phase: PhasePostCodeReview, target: planDir + "/task-2-review-3.md"},
		{name: "post-plan-review", in: st(phase(PhasePlanReview, PhasePostPlanReview), iter(1)), facts: facts(), action: ActionPostReview, phase: PhasePostPlanReview, target: planDir + "/plan-review-1.md"},
		{name: "post-tasks-review", in: st(phase(PhaseTasksReview, PhasePostTasksReview), iter(2)), facts: facts(), action: ActionPostReview, phase: PhasePostTasksReview, target: "tasks-review-2.md"},
		{name: "post-all-code-review", in: st(phase(PhaseAllCodeReview, PhasePostAllCodeReview), iter(1)), facts: facts(), action: ActionPostReview, phase: PhasePostAllCodeReview, target: "all-code-review-1.md"},
		{name: "review after a post-review: stop", in: st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1)), facts: facts(), action: ActionStop, phase: PhaseCodeReview},
		{name: "plan review with a half-written plan: new-plan", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(files()), action: ActionNewPlan, phase: PhaseNewPlan},
		{name: "plan review with a plan: stop", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(), action: ActionStop, phase: PhasePlanReview},
		{name: "tasks review with broken tasks.md: create-tasks", in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(tasksMD("")), action: ActionCreateTasks, phase: PhaseCreateTasks},
		{name: "code review of an interrupted task: continue-task", in: st(phase(PhaseContinueTask, PhaseCodeReview), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask, target: planDir + "/task-2.md"},
		{name: "next task", in: st(phase(PhaseCodeReview, PhaseCompleteTask), task("1")), facts: facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n| 2 | pending |\n")), action: ActionCompleteTask, phase: PhaseCompleteTask, target: planDir + "/task-2.md"},
		{name: "next task tdd", in: st(phase(PhaseCodeReview, PhaseCompleteTaskTDD), task("1"), tdd), facts: facts(), action: ActionCompleteTask, phase: PhaseCompleteTaskTDD, target: "task-1.md"},
		{name: "create-tasks", in: st(phase(PhasePlanReview, PhaseCreateTasks)), facts: facts(), action: ActionCreateTasks, phase: PhaseCreateTasks},
		{name: "complete finishes the plan", in: st(phase(PhaseAllCodeReview, PhaseComplete)), facts: facts(), action: ActionDone, phase: PhaseComplete, done: true},
		{name: "interrupted standalone task", in: st(phase(PhaseNextTask, PhaseNone), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "already complete", in: st(phase(PhaseComplete, PhaseNone)), facts: facts(), action: ActionDone, phase: PhaseComplete, done: true},
		{name: "anything else: ask the user", in: st(phase(PhaseCodeReview, PhaseNone), task("1")), facts: facts(), action: ActionAskUser, phase: PhaseCodeReview},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r, effects, err := Next(tt.in, tt.facts, tm)
			if err != nil {
				t.Fatal(err)
			}
			if r.Action != tt.action || r.Phase != tt.phase {
				t.Errorf("route %s (%s), want %s (%s)", r.Action, r.Phase, tt.action, tt.phase)
			}
			if !strings.Contains(r.Text, tt.target) || !strings.Contains(r.Text, "Next action: "+r.Action) {
				t.Errorf("text lacks %q:\n%s", tt.target, r.Text)
			}
			if tt.done != (got.Phase == PhaseComplete && got.NextPhase == PhaseNone) {
				t.Errorf("state after next: %s", formatState(got))
			}
			if _, ok := find[WriteView](effects); !ok {
				t.Error("no WriteView")
			}
		})
	}
	if _, _, _, err := Next(State{}, facts(), tm); err == nil {
		t.Error("next without a plan: no error")
	}
	_, r, _, _ := Next(st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(3)), facts(), tm)
	golden(t, r.Text+"\n")
}
