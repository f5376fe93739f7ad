package plan

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/templates"
)

// TestActionPrompt renders every action's prompt for one plan, against
// golden files: each names what to write and its report command with the
// plan's values.
func TestActionPrompt(t *testing.T) {
	// Task 1 is done, task 2 is current and interrupted, and its code
	// review waits for its post-review (for post-review); stop, done and
	// ask-user get the states they are routed from.
	tasks := tasksMD("| Id | Status | Description |\n|----|--------|-------------|\n| 1 | done | parse the config |\n| 2 | pending | add the command |\n| 3 | pending | write the docs |\n")
	base := st(phase(PhaseContinueTask, PhaseCodeReview), task("2"), maxRev(5))
	states := map[string]State{
		ActionPostReview: st(phase(PhaseCodeReview, PhasePostCodeReview), task("2"), iter(2), model(2), clean(1), maxRev(5)),
		ActionStop:       st(phase(PhasePostPlanReview, PhasePlanReview), iter(1), model(1), maxRev(5)),
		ActionDone:       st(phase(PhaseComplete, PhaseNone), maxRev(5)),
		ActionAskUser:    st(phase(PhaseCodeReview, PhaseNone), task("2"), iter(3), maxRev(5)),
	}
	for _, action := range Actions() {
		t.Run(action, func(t *testing.T) {
			s, ok := states[action]
			if !ok {
				s = base
			}
			got, err := ActionPrompt(s, facts(tasks, func(f *Facts) { f.CleanStreak = 3 }), tm, action, "")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, "{{") {
				t.Errorf("unfilled placeholder:\n%s", got)
			}
			if !strings.Contains(got, "Plan p1") {
				t.Errorf("the prompt does not name the plan:\n%s", got)
			}
			golden(t, got+"\n")
		})
	}
}

// reportRE finds the command a prompt says reports the action done.
var reportRE = regexp.MustCompile("`(drover plan [^`]+)`")

func TestActionPromptTasks(t *testing.T) {
	s := st(phase(PhaseNextTask, PhaseNone), task("1"))
	tests := []struct {
		name, action, task string
		facts              Facts
		state              *State
		report             string // a command the prompt must name
		wantErr            string
	}{
		{name: "complete-task: the first task not done", action: ActionCompleteTask, facts: facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n| 2 | pending |\n")), report: "drover plan complete-task 2"},
		{name: "complete-task: a named task", action: ActionCompleteTask, task: "3", facts: facts(), report: "drover plan complete-task 3"},
		{name: "complete-task-tdd", action: ActionCompleteTaskTDD, task: "3", facts: facts(), report: "drover plan complete-task 3 --tdd"},
		{name: "next-task", action: ActionNextTask, facts: facts(), report: "drover plan next-task 1"},
		{name: "next-task-tdd", action: ActionNextTaskTDD, task: "2", facts: facts(), report: "drover plan next-task 2 --tdd"},
		{name: "complete-task: none left", action: ActionCompleteTask, facts: facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n")), wantErr: "no task that is not done"},
		{name: "complete-task: no task file", action: ActionCompleteTask, task: "7", facts: facts(), wantErr: "there is no task file " + planDir + "/task-7.md"},
		{name: "complete-task: a task id that would break the command", action: ActionCompleteTask, task: "1; rm -rf /", facts: facts(), wantErr: "not a valid task id"},
		{name: "continue-task: the current task", action: ActionContinueTask, facts: facts(), report: "drover plan continue-task"},
		{name: "continue-task takes no id", action: ActionContinueTask, task: "2", facts: facts(), wantErr: "takes no task id"},
		{name: "continue-task without a current task", action: ActionContinueTask, state: ptr(st(phase(PhaseCreateTasks, PhaseNone))), facts: facts(), wantErr: "no current task"},
		{name: "code-review: the current task", action: ActionCodeReview, facts: facts(), report: "drover plan code-review 1"},
		{name: "code-review: a named task", action: ActionCodeReview, task: "3", facts: facts(), report: "drover plan code-review 3"},
		{name: "plan-review", action: ActionPlanReview, facts: facts(), report: "drover plan plan-review"},
		{name: "plan-review takes no id", action: ActionPlanReview, task: "3", facts: facts(), wantErr: "takes no task id"},
		{name: "tasks-review", action: ActionTasksReview, facts: facts(), report: "drover plan tasks-review"},
		{name: "all-code-review", action: ActionAllCodeReview, facts: facts(), report: "drover plan all-code-review"},
		{name: "add-task: the next free id", action: ActionAddTask, facts: facts(), report: "drover plan add-task 4"},
		{name: "add-task: a named id", action: ActionAddTask, task: "x1", facts: facts(), report: "drover plan add-task x1"},
		{name: "add-task: an id that exists", action: ActionAddTask, task: "2", facts: facts(), wantErr: "has a task 2 already"},
		{name: "add-task to an empty plan", action: ActionAddTask, facts: facts(tasksMD("")), report: "drover plan add-task 1"},
		{name: "create-tasks", action: ActionCreateTasks, facts: facts(), report: "drover plan create-tasks"},
		{name: "new-plan", action: ActionNewPlan, facts: facts(), report: "drover plan advance new-plan"},
		{name: "post-review with no review waiting", action: ActionPostReview, facts: facts(), wantErr: "no review waits for its post-review"},
		{name: "stop with no review next", action: ActionStop, facts: facts(), wantErr: "no review comes next"},
		{name: "an unknown action", action: "make-coffee", facts: facts(), wantErr: "unknown action"},
		{name: "no plan", action: ActionPlanReview, state: &State{}, facts: facts(), wantErr: "no plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := s
			if tt.state != nil {
				in = *tt.state
			}
			got, err := ActionPrompt(in, tt.facts, tm, tt.action, tt.task)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var reports []string
			for _, m := range reportRE.FindAllStringSubmatch(got, -1) {
				reports = append(reports, m[1])
			}
			if !slices.Contains(reports, tt.report) {
				t.Errorf("the prompt names %q, want %q:\n%s", reports, tt.report, got)
			}
		})
	}
}

// TestCompleteTaskMarksDoneFirst checks that complete-task asks for the
// task to be marked done in tasks.md before its review loop, not after:
// the loop ends with a user stop that leaves the agent no turn, and both
// continue (the next task) and the end of the last task's reviews (the
// all-code review) go by what tasks.md marks done. Marked later, continue
// would send the agent back to the task just reviewed.
func TestCompleteTaskMarksDoneFirst(t *testing.T) {
	for _, action := range []string{ActionCompleteTask, ActionCompleteTaskTDD} {
		t.Run(action, func(t *testing.T) {
			got, err := ActionPrompt(st(phase(PhaseTasksReview, PhaseCompleteTask)), facts(), tm, action, "1")
			if err != nil {
				t.Fatal(err)
			}
			mark := strings.Index(got, "mark the task `done` in "+planDir+"/tasks.md in the same commit")
			report := strings.Index(got, "run `drover plan complete-task 1")
			if mark < 0 || report < 0 || mark > report {
				t.Errorf("the prompt does not ask to mark task 1 done before running drover plan complete-task:\n%s", got)
			}
			if strings.Contains(got, "once its reviews have passed") {
				t.Errorf("the prompt defers marking the task done to a turn the agent never gets:\n%s", got)
			}
		})
	}
}

// TestActionPromptOverride checks that a project's override of an action's
// template is what the agent gets.
func TestActionPromptOverride(t *testing.T) {
	dir := t.TempDir()
	override := "Review {{task}} of {{plan_id}}: run `drover plan code-review {{task}}`.\n"
	if err := os.WriteFile(filepath.Join(dir, templates.PlanActionCodeReview+".md"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := templates.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ActionPrompt(st(phase(PhaseNextTask, PhaseNone), task("2")), facts(), set, ActionCodeReview, "")
	if err != nil {
		t.Fatal(err)
	}
	if got != "Review 2 of p1: run `drover plan code-review 2`." {
		t.Errorf("got %q", got)
	}
}

// TestNextRoutesWithThePrompt checks that continue appends the routed
// action's prompt, and routes a task action with nothing to work on to the
// user.
func TestNextRoutesWithThePrompt(t *testing.T) {
	tests := []struct {
		name   string
		in     State
		facts  Facts
		action string
		report string
	}{
		{"complete-task", st(phase(PhaseCodeReview, PhaseCompleteTask), task("1")), facts(), ActionCompleteTask, "`drover plan complete-task 1`"},
		{"complete-task-tdd", st(phase(PhaseCodeReview, PhaseCompleteTaskTDD), task("1"), tdd), facts(), ActionCompleteTask, "`drover plan complete-task 1 --tdd`"},
		{"complete-task in a tdd plan", st(phase(PhaseCodeReview, PhaseCompleteTask), task("1"), tdd), facts(), ActionCompleteTask, "`drover plan complete-task 1 --tdd`"},
		{"continue-task", st(phase(PhaseNextTask, PhaseNone), task("2")), facts(), ActionContinueTask, "`drover plan continue-task`"},
		{"create-tasks", st(phase(PhasePlanReview, PhaseCreateTasks)), facts(), ActionCreateTasks, "`drover plan create-tasks`"},
		{"post-review", st(phase(PhasePlanReview, PhasePostPlanReview), iter(1)), facts(), ActionPostReview, "`drover plan post-review-done`"},
		{"no task left: ask the user", st(phase(PhaseCodeReview, PhaseCompleteTask), task("1")), facts(tasksMD("| Id | Status |\n|--|--|\n| 1 | done |\n")), ActionAskUser, "`drover plan status`"},
		{"an interrupted task without its file: ask the user", st(phase(PhaseNextTask, PhaseNone), task("7")), facts(), ActionAskUser, "`drover plan status`"},
		{"a standalone review to come: stop", st(phase(PhaseNextTask, PhaseCodeReview), task("1"), standalone), facts(), ActionStop, "Stop now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r, _, err := Next(tt.in, tt.facts, tm)
			if err != nil {
				t.Fatal(err)
			}
			if r.Action != tt.action || !strings.Contains(r.Text, tt.report) || !strings.Contains(r.Text, "Next action: "+r.Action) {
				t.Errorf("route %s, want %s with %q:\n%s", r.Action, tt.action, tt.report, r.Text)
			}
		})
	}
}
