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
			run:  func() (State, []Effect, error) { return NewPlan(State{}, facts(), tm, 8) },
			want: st(phase(PhaseNewPlan, PhasePlanReview)),
		},
		{
			name: "new plan with reviews off",
			run:  func() (State, []Effect, error) { return NewPlan(inCycle, facts(), tm, 0) },
			want: st(phase(PhaseNewPlan, PhasePlanReview), maxRev(0)),
		},
		{
			name:    "new plan needs plan.md",
			run:     func() (State, []Effect, error) { return NewPlan(State{}, facts(files("tasks.md")), tm, 8) },
			wantErr: "write " + planDir + "/plan.md first",
		},
		{
			name: "new plan refuses a path-like id",
			run: func() (State, []Effect, error) {
				return NewPlan(State{}, facts(func(f *Facts) { f.PlanID = "../x" }), tm, 8)
			},
			wantErr: `"../x" is not a valid plan id`,
		},
		{
			name:    "new plan refuses a negative limit",
			run:     func() (State, []Effect, error) { return NewPlan(State{}, facts(), tm, -1) },
			wantErr: "negative",
		},
		{
			name: "create-tasks starts a new cycle and keeps max_reviews and tdd",
			run: func() (State, []Effect, error) {
				return CreateTasks(st(phase(PhasePlanReview, PhaseCreateTasks), iter(2), model(2), clean(2), maxRev(4), tdd, task("9")), facts(), tm)
			},
			want: st(phase(PhaseCreateTasks, PhaseTasksReview), maxRev(4), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "create-tasks needs a task table",
			run: func() (State, []Effect, error) {
				return CreateTasks(st(phase(PhaseNewPlan, PhaseNone)), facts(tasksMD("todo: everything")), tm)
			},
			wantErr: "non-table",
		},
		{
			name: "complete-task picks the first open task and starts the code review loop",
			run: func() (State, []Effect, error) {
				return CompleteTask(inCycle, facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n| 2 | pending |\n")), tm, "", false)
			},
			want: st(phase(PhaseCompleteTask, PhaseCodeReview), task("2"), func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "complete-task --tdd",
			run:  func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), tm, "3", true) },
			want: st(phase(PhaseCompleteTaskTDD, PhaseCodeReview), task("3"), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name:    "complete-task needs the task file",
			run:     func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), tm, "7", false) },
			wantErr: "no task file " + planDir + "/task-7.md",
		},
		{
			name:    "complete-task refuses a bad id",
			run:     func() (State, []Effect, error) { return CompleteTask(inCycle, facts(), tm, "../1", false) },
			wantErr: "not a valid task id",
		},
		{
			name: "complete-task with nothing open",
			run: func() (State, []Effect, error) {
				return CompleteTask(inCycle, facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n")), tm, "", false)
			},
			wantErr: "no task that is not done",
		},
		{
			name: "complete-task while a review runs",
			run: func() (State, []Effect, error) {
				return CompleteTask(st(phase(PhaseCompleteTask, PhaseCodeReview), running), facts(), tm, "1", false)
			},
			wantErr: "a review is running",
		},
		{
			name: "next-task is standalone",
			run:  func() (State, []Effect, error) { return NextTask(inCycle, facts(), tm, "2", true) },
			want: st(phase(PhaseNextTaskTDD, PhaseNone), task("2"), tdd, func(s *State) { s.Ledger.Cycle = 2 }),
		},
		{
			name: "continue-task keeps next_phase",
			run: func() (State, []Effect, error) {
				return ContinueTask(st(phase(PhaseCompleteTask, PhaseCodeReview), task("2")), facts(), tm)
			},
			want: st(phase(PhaseContinueTask, PhaseCodeReview), task("2")),
		},
		{
			name: "continue-task without a task",
			run: func() (State, []Effect, error) {
				return ContinueTask(st(phase(PhaseCreateTasks, PhaseNone)), facts(), tm)
			},
			wantErr: "no current task",
		},
		{
			name: "post-review-done loops back to the review",
			run:  func() (State, []Effect, error) { return PostReviewDone(inCycle, facts(), tm) },
			want: st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(3), model(3), clean(1)),
		},
		{
			name: "post-review-done with no review to answer",
			run: func() (State, []Effect, error) {
				return PostReviewDone(st(phase(PhaseNextTask, PhaseNone)), facts(), tm)
			},
			wantErr: "no review is waiting for its post-review (phase next-task, next none)",
		},
		{
			name: "stop-reviews ends the loop",
			run:  func() (State, []Effect, error) { return StopReviews(inCycle, facts(), tm) },
			want: st(phase(PhaseCodeReview, PhaseNone), task("1"), iter(3), model(3), clean(1)),
		},
		{
			name: "stop-reviews abandons a running review",
			run: func() (State, []Effect, error) {
				return StopReviews(st(phase(PhaseCompleteTask, PhaseCodeReview), running), facts(), tm)
			},
			want: st(phase(PhaseCompleteTask, PhaseNone)),
		},
		{
			name: "set-max-reviews",
			run:  func() (State, []Effect, error) { return SetMaxReviews(inCycle, facts(), tm, 12) },
			want: st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(3), model(3), clean(1), maxRev(12)),
		},
		{
			name:    "set-max-reviews refuses a negative limit",
			run:     func() (State, []Effect, error) { return SetMaxReviews(inCycle, facts(), tm, -2) },
			wantErr: "negative",
		},
		{
			name: "add-task becomes current when none is",
			run: func() (State, []Effect, error) {
				return AddTask(st(phase(PhaseTasksReview, PhaseCompleteTask)), facts(), tm, "3")
			},
			want: st(phase(PhaseTasksReview, PhaseCompleteTask), task("3")),
		},
		{
			name: "add-task leaves a current task alone",
			run:  func() (State, []Effect, error) { return AddTask(inCycle, facts(), tm, "3") },
			want: inCycle,
		},
		{
			name: "complete skips the all-code review",
			run: func() (State, []Effect, error) {
				return MarkComplete(st(phase(PhaseCodeReview, PhaseAllCodeReview)), facts(), tm)
			},
			want: st(phase(PhaseComplete, PhaseNone)),
		},
		{
			name:    "commands need a plan",
			run:     func() (State, []Effect, error) { return PostReviewDone(State{}, facts(), tm) },
			wantErr: "this session has no plan",
		},
		{
			name: "commands refuse facts of another plan",
			run: func() (State, []Effect, error) {
				return MarkComplete(inCycle, facts(func(f *Facts) { f.PlanID = "p2" }), tm)
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
		"create-tasks":     func() (State, []Effect, error) { return CreateTasks(in, facts(), tm) },
		"continue-task":    func() (State, []Effect, error) { return ContinueTask(in, facts(), tm) },
		"post-review-done": func() (State, []Effect, error) { return PostReviewDone(in, facts(), tm) },
		"add-task":         func() (State, []Effect, error) { return AddTask(in, facts(), tm, "2") },
		"new":              func() (State, []Effect, error) { return NewPlan(in, facts(), tm, 8) },
	} {
		got, _, err := run()
		if !errors.Is(err, ErrReviewRunning) || !reflect.DeepEqual(got, in) {
			t.Errorf("%s during a review: %v, state %s", name, err, formatState(got))
		}
	}
	got, effects, err := StopReviews(in, facts(), tm)
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

// TestNext is seed 001's continue-plan, rule by rule: rule quotes the rule
// each case exercises.
func TestNext(t *testing.T) {
	const (
		overview  = "# P\n\n## Overview\n\nshort\n"
		noHeading = "# P\n\nhalf a plan\n"
		openSub   = "# Task 2\n\n## Subtask 2.1\n**Status**: done\n\n## Subtask 2.2\n**Status**: pending\n"
		doneSubs  = "# Task 2\n\n## Subtask 2.1\n**Status**: done\n\n## Subtask 2.2\n**Status:** completed\n"
		openBox   = "# Task 2\n\n- [x] parse\n- [ ] report\n"
		doneBoxes = "# Task 2\n\n- [x] parse\n- [X] report\n"
	)
	long := "# P\n" + strings.Repeat("line\n", 50) // 51 lines, no Overview
	tests := []struct {
		name   string
		rule   string
		in     State
		facts  Facts
		action string
		phase  Phase
		target string
		done   bool
	}{
		{name: "post-code-review", rule: `next_phase = "post-code-review" → execute post-code-review.md`,
			in: st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(3)), facts: facts(), action: ActionPostReview, phase: PhasePostCodeReview, target: planDir + "/task-2-review-3.md"},
		{name: "post-plan-review", rule: `next_phase = "post-plan-review" → execute post-plan-review.md`,
			in: st(phase(PhasePlanReview, PhasePostPlanReview), iter(1)), facts: facts(), action: ActionPostReview, phase: PhasePostPlanReview, target: planDir + "/plan-review-1.md"},
		{name: "post-tasks-review", rule: `next_phase = "post-tasks-review" → execute post-tasks-review.md`,
			in: st(phase(PhaseTasksReview, PhasePostTasksReview), iter(2)), facts: facts(), action: ActionPostReview, phase: PhasePostTasksReview, target: "tasks-review-2.md"},
		{name: "post-all-code-review", rule: `next_phase = "post-all-code-review" → execute post-all-code-review.md`,
			in: st(phase(PhaseAllCodeReview, PhasePostAllCodeReview), iter(1)), facts: facts(), action: ActionPostReview, phase: PhasePostAllCodeReview, target: "all-code-review-1.md"},

		// next_phase a review, level 1: phase a post-review → stop.
		{name: "code review after a post-review: stop", rule: "phase is a post-review value: the post-review was completed, simply stop to trigger the hook",
			in: st(phase(PhasePostCodeReview, PhaseCodeReview), task("2"), iter(1)), facts: facts(taskMD(openSub)), action: ActionStop, phase: PhaseCodeReview},
		{name: "plan review after a post-review: stop", rule: "phase is a post-review value: simply stop",
			in: st(phase(PhasePostPlanReview, PhasePlanReview), iter(1)), facts: facts(planMD(noHeading)), action: ActionStop, phase: PhasePlanReview},
		{name: "tasks review after a post-review: stop", rule: "phase is a post-review value: simply stop",
			in: st(phase(PhasePostTasksReview, PhaseTasksReview), iter(1)), facts: facts(tasksMD("")), action: ActionStop, phase: PhaseTasksReview},
		{name: "all-code review after a post-review: stop", rule: "phase is a post-review value: simply stop",
			in: st(phase(PhasePostAllCodeReview, PhaseAllCodeReview), task("3"), iter(1)), facts: facts(taskMD(openBox)), action: ActionStop, phase: PhaseAllCodeReview},

		// Level 2, plan-review.
		{name: "plan review, plan.md missing: new-plan", rule: "plan-review: plan.md missing → execute new-plan.md",
			in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(files(), planMD("")), action: ActionNewPlan, phase: PhaseNewPlan},
		{name: "plan review, half-written plan: new-plan", rule: "plan-review: no ## Overview heading and not > 50 lines → execute new-plan.md to continue the existing plan",
			in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(planMD(noHeading)), action: ActionNewPlan, phase: PhaseNewPlan},
		{name: "plan review, 50 lines exactly: new-plan", rule: "plan-review: complete only when > 50 lines",
			in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(planMD(strings.Repeat("line\n", 50))), action: ActionNewPlan, phase: PhaseNewPlan},
		{name: "plan review, an Overview heading: stop", rule: "plan-review: contains an ## Overview heading → simply stop",
			in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(planMD(overview)), action: ActionStop, phase: PhasePlanReview},
		{name: "plan review, a long plan: stop", rule: "plan-review: > 50 lines → simply stop",
			in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(planMD(long)), action: ActionStop, phase: PhasePlanReview},

		// Level 2, tasks-review.
		{name: "tasks review, tasks.md missing: create-tasks", rule: "tasks-review: tasks.md missing → execute create-tasks.md",
			in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(files("plan.md"), tasksMD("")), action: ActionCreateTasks, phase: PhaseCreateTasks},
		{name: "tasks review, header only: create-tasks", rule: "tasks-review: no | line after the header → execute create-tasks.md",
			in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(tasksMD("| Id | Status | Description |\n|----|--------|-------------|\n")), action: ActionCreateTasks, phase: PhaseCreateTasks},
		{name: "tasks review, table rows: stop", rule: "tasks-review: at least one table row → simply stop",
			in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(), action: ActionStop, phase: PhaseTasksReview},

		// Level 2, code-review and all-code-review.
		{name: "code review, a subtask pending: continue-task", rule: "code-review: subtasks incomplete → the agent crashed mid-implementation, execute continue-task.md",
			in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("2")), facts: facts(taskMD(openSub)), action: ActionContinueTask, phase: PhaseContinueTask, target: planDir + "/task-2.md"},
		{name: "code review, a box unticked: continue-task", rule: "code-review: subtasks incomplete → execute continue-task.md",
			in: st(phase(PhaseContinueTask, PhaseCodeReview), task("2")), facts: facts(taskMD(openBox)), action: ActionContinueTask, phase: PhaseContinueTask, target: planDir + "/task-2.md"},
		{name: "code review, every subtask done: stop", rule: "code-review: all subtasks complete → simply stop",
			in: st(phase(PhaseContinueTask, PhaseCodeReview), task("2")), facts: facts(taskMD(doneSubs)), action: ActionStop, phase: PhaseCodeReview},
		{name: "code review tdd, every box ticked: stop", rule: "code-review: all subtasks complete → simply stop",
			in: st(phase(PhaseCompleteTaskTDD, PhaseCodeReview), task("2"), tdd), facts: facts(taskMD(doneBoxes)), action: ActionStop, phase: PhaseCodeReview},
		{name: "code review, task file missing: ask the user", rule: "code-review: the task file is not complete → continue-task, which has no file to continue (drover: ask the user)",
			in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("7")), facts: facts(), action: ActionAskUser, phase: PhaseCompleteTask},
		{name: "all-code review, a subtask pending: continue-task", rule: "all-code-review: subtasks of the current task incomplete → execute continue-task.md",
			in: st(phase(PhaseCodeReview, PhaseAllCodeReview), task("3")), facts: facts(taskMD(openSub)), action: ActionContinueTask, phase: PhaseContinueTask, target: planDir + "/task-3.md"},
		{name: "all-code review, every subtask done: stop", rule: "all-code-review: all subtasks complete → simply stop",
			in: st(phase(PhaseCodeReview, PhaseAllCodeReview), task("3")), facts: facts(taskMD(doneBoxes)), action: ActionStop, phase: PhaseAllCodeReview},

		{name: "next task", rule: `next_phase = "complete-task" → execute the next task with the automation entry point`,
			in: st(phase(PhaseCodeReview, PhaseCompleteTask), task("1")), facts: facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n| 2 | pending |\n")), action: ActionCompleteTask, phase: PhaseCompleteTask, target: planDir + "/task-2.md"},
		{name: "next task tdd", rule: `next_phase = "complete-task-tdd" → execute the next task with the automation entry point`,
			in: st(phase(PhaseCodeReview, PhaseCompleteTaskTDD), task("1"), tdd), facts: facts(), action: ActionCompleteTask, phase: PhaseCompleteTaskTDD, target: "task-1.md"},
		{name: "create-tasks", rule: `next_phase = "create-tasks" → execute create-tasks.md`,
			in: st(phase(PhasePlanReview, PhaseCreateTasks)), facts: facts(), action: ActionCreateTasks, phase: PhaseCreateTasks},
		{name: "complete finishes the plan", rule: `next_phase = "complete" → set phase: "complete", next_phase: null, inform user all tasks are done`,
			in: st(phase(PhaseAllCodeReview, PhaseComplete)), facts: facts(), action: ActionDone, phase: PhaseComplete, done: true},

		// next_phase null.
		{name: "interrupted standalone task", rule: `next_phase null, phase "next-task" → execute continue-task.md`,
			in: st(phase(PhaseNextTask, PhaseNone), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "interrupted standalone tdd task", rule: `next_phase null, phase "next-task-tdd" → execute continue-task.md`,
			in: st(phase(PhaseNextTaskTDD, PhaseNone), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "interrupted continue-task", rule: `next_phase null, phase "continue-task" → execute continue-task.md`,
			in: st(phase(PhaseContinueTask, PhaseNone), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "interrupted complete-task, reviews stopped", rule: `next_phase null, phase "complete-task" → execute continue-task.md`,
			in: st(phase(PhaseCompleteTask, PhaseNone), task("2")), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "interrupted complete-task-tdd, reviews stopped", rule: `next_phase null, phase "complete-task-tdd" → execute continue-task.md`,
			in: st(phase(PhaseCompleteTaskTDD, PhaseNone), task("2"), tdd), facts: facts(), action: ActionContinueTask, phase: PhaseContinueTask},
		{name: "already complete", rule: `next_phase null, phase "complete" → inform user all tasks are done`,
			in: st(phase(PhaseComplete, PhaseNone)), facts: facts(), action: ActionDone, phase: PhaseComplete, done: true},
		{name: "a standalone code review: ask the user", rule: "catch-all: any other phase with next_phase null → show phase and current_task, ask what to do",
			in: st(phase(PhaseCodeReview, PhaseNone), task("1")), facts: facts(), action: ActionAskUser, phase: PhaseCodeReview},
		{name: "a standalone plan review: ask the user", rule: "catch-all: any other phase with next_phase null → ask the user",
			in: st(phase(PhasePlanReview, PhaseNone)), facts: facts(), action: ActionAskUser, phase: PhasePlanReview},
		{name: "an interrupted post-review: ask the user", rule: "catch-all: any other phase with next_phase null → ask the user",
			in: st(phase(PhasePostCodeReview, PhaseNone), task("1")), facts: facts(), action: ActionAskUser, phase: PhasePostCodeReview},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r, effects, err := Next(tt.in, tt.facts, tm)
			if err != nil {
				t.Fatal(err)
			}
			if r.Action != tt.action || r.Phase != tt.phase {
				t.Errorf("route %s (%s), want %s (%s); seed rule: %s", r.Action, r.Phase, tt.action, tt.phase, tt.rule)
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

func TestSubtasksDone(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want bool
	}{
		{"no subtask marked", "# Task 1\n\nParse the config.\n", true},
		{"empty", "", true},
		{"every status done", "**Status**: done\n**Status:** completed\nStatus: ✅\n", true},
		{"a status pending", "**Status**: done\n**Status**: pending\n", false},
		{"in progress", "- Status: in progress\n", false},
		{"not done", "Status: not done\n", false},
		{"every box ticked", "- [x] a\n* [X] b\n1. [x] c\n", true},
		{"a box open", "- [x] a\n2) [ ] b\n", false},
		{"a box open under done statuses", "**Status**: done\n- [ ] c\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubtasksDone(tt.md); got != tt.want {
				t.Errorf("SubtasksDone(%q) = %v, want %v", tt.md, got, tt.want)
			}
		})
	}
}
