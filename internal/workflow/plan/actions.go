package plan

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// The actions ActionPrompt knows besides the Action* routes of Next: what
// /drover:plan ACTION asks the agent to do.
const (
	ActionCompleteTaskTDD = "complete-task-tdd"
	ActionNextTask        = "next-task"
	ActionNextTaskTDD     = "next-task-tdd"
	ActionAddTask         = "add-task"
	ActionPlanReview      = "plan-review"
	ActionTasksReview     = "tasks-review"
	ActionCodeReview      = "code-review"
	ActionAllCodeReview   = "all-code-review"
)

// taskRule says which task an action works on.
type taskRule int

const (
	taskNone           taskRule = iota // no task
	taskPending                        // the task named, else the first not done
	taskCurrent                        // the current task only
	taskCurrentOrNamed                 // the task named, else the current task
	taskNew                            // the task named, else the next free id
)

type actionSpec struct {
	template string
	task     taskRule
}

// actionSpecs maps each action to its prompt and its task.
var actionSpecs = map[string]actionSpec{
	ActionNewPlan:         {templates.PlanActionNewPlan, taskNone},
	ActionCreateTasks:     {templates.PlanActionCreateTasks, taskNone},
	ActionCompleteTask:    {templates.PlanActionCompleteTask, taskPending},
	ActionCompleteTaskTDD: {templates.PlanActionCompleteTaskTDD, taskPending},
	ActionNextTask:        {templates.PlanActionNextTask, taskPending},
	ActionNextTaskTDD:     {templates.PlanActionNextTaskTDD, taskPending},
	ActionContinueTask:    {templates.PlanActionContinueTask, taskCurrent},
	ActionAddTask:         {templates.PlanActionAddTask, taskNew},
	ActionPlanReview:      {templates.PlanActionPlanReview, taskNone},
	ActionTasksReview:     {templates.PlanActionTasksReview, taskNone},
	ActionCodeReview:      {templates.PlanActionCodeReview, taskCurrentOrNamed},
	ActionAllCodeReview:   {templates.PlanActionAllCodeReview, taskNone},
	ActionPostReview:      {templates.PlanActionPostReview, taskNone},
	ActionStop:            {templates.PlanActionStop, taskNone},
	ActionDone:            {templates.PlanActionDone, taskNone},
	ActionAskUser:         {templates.PlanActionAskUser, taskNone},
}

// Actions returns the names ActionPrompt accepts, sorted.
func Actions() []string {
	names := make([]string, 0, len(actionSpecs))
	for name := range actionSpecs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ErrNoTask is returned by ActionPrompt when the action needs a task and
// none is named or can be found.
var ErrNoTask = errors.New("no task to work on")

// ActionPrompt renders the prompt of action (one of Actions) for the
// session's plan: what the agent is to do, the files to write, and the
// `drover plan` command that reports it done, with the plan's values filled
// in. task is the task the user named, or "" for the action's default: the
// first task of tasks.md not done (complete-task, next-task), the current
// task (continue-task, code-review), or the next free numeric id (add-task).
// Nothing changes: the agent's report command does that.
func ActionPrompt(s State, f Facts, t templates.Set, action, task string) (string, error) {
	spec, ok := actionSpecs[action]
	if !ok {
		return "", sayErr(t, nil, templates.PlanRefuseUnknownAction, map[string]string{"action": action, "known": fmt.Sprint(Actions())})
	}
	switch {
	case !s.Active():
		return "", sayErr(t, nil, templates.PlanRefuseActionNoPlan, map[string]string{"action": action})
	case f.PlanID != s.PlanID:
		return "", fmt.Errorf("plan %s: the facts are for plan %q, the session's plan is %q", action, f.PlanID, s.PlanID)
	}
	task, err := actionTask(s, f, t, action, spec.task, task)
	if err != nil {
		return "", err
	}
	v, err := actionVars(s, f, t, action, task)
	if err != nil {
		return "", err
	}
	text, err := t.Render(spec.template, v)
	if err != nil {
		return "", fmt.Errorf("plan %s: %w", action, err)
	}
	return text, nil
}

// actionTask resolves the task of an action under its rule. A task ends up
// in shell commands the prompt names, so it must be a valid task id.
func actionTask(s State, f Facts, t templates.Set, action string, rule taskRule, named string) (string, error) {
	vars := map[string]string{"action": action, "command": action, "quoted_task": strconv.Quote(named)}
	if named != "" {
		if rule == taskNone || rule == taskCurrent {
			return "", sayErr(t, nil, templates.PlanRefuseTakesNoTask, vars)
		}
		if !ValidTaskID(named) {
			return "", sayErr(t, nil, templates.PlanRefuseBadTaskID, vars)
		}
	}
	task := named
	switch rule {
	case taskNone:
		return "", nil
	case taskPending:
		if task == "" {
			rest := Remaining(f.TasksMD, "")
			if len(rest) == 0 {
				return "", sayErr(t, ErrNoTask, templates.PlanRefuseAllDone, vars)
			}
			task = rest[0]
		}
	case taskCurrent, taskCurrentOrNamed:
		if task == "" {
			task = s.CurrentTask
		}
		if task == "" {
			return "", sayErr(t, ErrNoTask, templates.PlanRefuseNoCurrentTask, vars)
		}
	case taskNew:
		if task == "" {
			return nextTaskID(f.TasksMD), nil
		}
		for _, r := range Tasks(f.TasksMD) {
			if r.ID == task {
				vars["task"] = task
				return "", sayErr(t, nil, templates.PlanRefuseTaskExists, vars)
			}
		}
		return task, nil
	}
	if !hasFile(f, "task-"+task+".md") {
		vars["task_file"] = path.Join(f.PlanDir, "task-"+task+".md")
		return "", sayErr(t, nil, templates.PlanRefuseNoTaskFile, vars)
	}
	return task, nil
}

// nextTaskID returns one more than the largest numeric id of tasks.md
// (1 for none).
func nextTaskID(tasksMD string) string {
	top := 0
	for _, r := range Tasks(tasksMD) {
		if n, err := strconv.Atoi(r.ID); err == nil && n > top {
			top = n
		}
	}
	return strconv.Itoa(top + 1)
}

// actionVars returns the placeholders of the action prompts: those of vars
// and
//
//	task, task_file (the action's task), current_task, plan_file,
//	tasks_file, first_model (of a new cycle),
//	next_iteration; for post-review and stop, review_name, review_file
//	and post_review_file of the review waited for.
func actionVars(s State, f Facts, t templates.Set, action, task string) (map[string]string, error) {
	v := vars(s, f, t, "")
	v["task"] = orNone(task)
	v["task_file"] = path.Join(f.PlanDir, "task-"+orNone(task)+".md")
	v["current_task"] = orNone(s.CurrentTask)
	v["plan_file"] = path.Join(f.PlanDir, "plan.md")
	v["tasks_file"] = path.Join(f.PlanDir, "tasks.md")
	v["first_model"] = reviewer.NextModel(f.Models, 0)
	v["next_iteration"] = strconv.Itoa(s.Iteration + 1)
	switch action {
	case ActionPostReview:
		kind, ok := s.NextPhase.PostReviewKind()
		if !ok {
			return nil, fmt.Errorf("plan %s: no review waits for its post-review (next_phase %s)", action, orNone(string(s.NextPhase)))
		}
		r := InFlight{Kind: kind, Iteration: s.Iteration, Model: v["model"]}
		if kind == KindCode {
			r.Task = s.CurrentTask
		}
		rv := reviewVars(s, f, t, r)
		for _, k := range []string{"review_name", "review_file", "post_review_file"} {
			v[k] = rv[k]
		}
	case ActionStop:
		kind, ok := s.NextPhase.ReviewKind()
		if s.Review != nil {
			kind, ok = s.Review.Kind, true
			v["next_iteration"] = strconv.Itoa(s.Review.Iteration)
		}
		if !ok {
			return nil, fmt.Errorf("plan %s: no review comes next (next_phase %s)", action, orNone(string(s.NextPhase)))
		}
		v["review_name"] = reviewName(t, kind, orNone(s.CurrentTask))
	}
	return v, nil
}
