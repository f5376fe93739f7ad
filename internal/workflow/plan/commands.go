package plan

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/templates"
)

// The commands below are what the agent runs instead of editing state.json
// (`drover plan <command>`), one per action of seed 001 that changes state.
// Each takes the session's State and the plan folder's Facts and returns the
// new State and its effects (always the WriteView of the new state); on
// error the State is returned unchanged and nothing is to be done.

// ErrReviewRunning is returned by a command that cannot run while a review
// is in flight.
var ErrReviewRunning = errors.New("a review is running: wait for it (drover plan wait), or end the loop with drover plan stop-reviews")

// NewPlan is `drover plan new <plan-id>`, run after writing plan.md: the
// session's plan becomes f.PlanID at phase new-plan, and the plan review
// loop starts at the next stop (a new plan is always reviewed). maxReviews
// is the per-cycle limit (DefaultMaxReviews unless configured; 0 turns
// reviews off).
func NewPlan(s State, f Facts, t templates.Set, maxReviews int) (State, []Effect, error) {
	switch {
	case !ValidPlanID(f.PlanID):
		return s, nil, fmt.Errorf("plan new: %w", sayErr(t, nil, templates.PlanRefuseBadID, map[string]string{"quoted_id": strconv.Quote(f.PlanID)}))
	case s.Review != nil:
		return s, nil, fmt.Errorf("plan new: %w", reviewRunning(t))
	case maxReviews < 0:
		return s, nil, fmt.Errorf("plan new: %w", sayErr(t, nil, templates.PlanRefuseNegativeReviews, map[string]string{"max_reviews": strconv.Itoa(maxReviews)}))
	case !f.DirExists || !hasFile(f, "plan.md"):
		return s, nil, fmt.Errorf("plan new: %w", sayErr(t, nil, templates.PlanRefuseWriteFirst, map[string]string{"file": path.Join(f.PlanDir, "plan.md")}))
	}
	n := State{
		PlanID:     f.PlanID,
		Phase:      PhaseNewPlan,
		NextPhase:  PhasePlanReview,
		MaxReviews: maxReviews,
		Owner:      f.SessionID,
	}
	n.Ledger.Cycle = 1
	return n, viewEffects(n, f), nil
}

// CreateTasks is `drover plan create-tasks`, run after writing tasks.md and
// the task files: the tasks review loop starts at the next stop.
func CreateTasks(s State, f Facts, t templates.Set) (State, []Effect, error) {
	if err := check(s, f, t, "create-tasks"); err != nil {
		return s, nil, err
	}
	if !hasFile(f, "tasks.md") {
		return s, nil, fmt.Errorf("plan create-tasks: %w", sayErr(t, nil, templates.PlanRefuseWriteFirst, map[string]string{"file": path.Join(f.PlanDir, "tasks.md")}))
	}
	problem, err := checkTable(f.TasksMD, t)
	if err != nil {
		return s, nil, fmt.Errorf("plan create-tasks: %w", err)
	}
	if problem != "" {
		return s, nil, fmt.Errorf("plan create-tasks: %s", problem)
	}
	n := newCycle(s)
	n.Phase = PhaseCreateTasks
	n.NextPhase = PhaseTasksReview
	n.CurrentTask = ""
	return n, viewEffects(n, f), nil
}

// CompleteTask is `drover plan complete-task [ID] [--tdd]`, run after
// implementing a task: the code review loop of that task starts at the next
// stop. An empty task means the first task of tasks.md that is not done.
// tdd records the variant, which later tasks keep.
func CompleteTask(s State, f Facts, t templates.Set, task string, tdd bool) (State, []Effect, error) {
	return startTask(s, f, t, "complete-task", task, tdd, true)
}

// NextTask is `drover plan next-task [ID] [--tdd]`: the standalone variant
// of CompleteTask, with no review loop (next_phase is null).
func NextTask(s State, f Facts, t templates.Set, task string, tdd bool) (State, []Effect, error) {
	return startTask(s, f, t, "next-task", task, tdd, false)
}

func startTask(s State, f Facts, t templates.Set, cmd, task string, tdd, review bool) (State, []Effect, error) {
	if err := check(s, f, t, cmd); err != nil {
		return s, nil, err
	}
	if task == "" {
		rest := Remaining(f.TasksMD, "")
		if len(rest) == 0 {
			return s, nil, sayErr(t, nil, templates.PlanRefuseAllDoneName, map[string]string{"command": cmd})
		}
		task = rest[0]
	}
	if !ValidTaskID(task) {
		return s, nil, sayErr(t, nil, templates.PlanRefuseBadTaskID, map[string]string{"command": cmd, "quoted_task": strconv.Quote(task)})
	}
	if !hasFile(f, "task-"+task+".md") {
		return s, nil, sayErr(t, nil, templates.PlanRefuseNoTaskFile, map[string]string{"command": cmd, "task_file": path.Join(f.PlanDir, "task-"+task+".md")})
	}
	n := newCycle(s)
	n.CurrentTask = task
	n.TDD = tdd
	switch {
	case review && tdd:
		n.Phase, n.NextPhase = PhaseCompleteTaskTDD, PhaseCodeReview
	case review:
		n.Phase, n.NextPhase = PhaseCompleteTask, PhaseCodeReview
	case tdd:
		n.Phase, n.NextPhase = PhaseNextTaskTDD, PhaseNone
	default:
		n.Phase, n.NextPhase = PhaseNextTask, PhaseNone
	}
	return n, viewEffects(n, f), nil
}

// ContinueTask is `drover plan continue-task`: resuming an interrupted
// task. next_phase passes through unchanged: a review loop that was set up
// stays set up, a standalone task stays standalone.
func ContinueTask(s State, f Facts, t templates.Set) (State, []Effect, error) {
	if err := check(s, f, t, "continue-task"); err != nil {
		return s, nil, err
	}
	if s.CurrentTask == "" {
		return s, nil, sayErr(t, nil, templates.PlanRefuseContinueNoTask, nil)
	}
	n := s
	n.Phase = PhaseContinueTask
	return n, viewEffects(n, f), nil
}

// PostReviewDone is `drover plan post-review-done`, run after the
// post-review work the last review asked for: phase becomes the post-review
// and next_phase the review again, so the next stop starts the next review.
// Whether the work is clean is the reviewer's call, never the agent's.
func PostReviewDone(s State, f Facts, t templates.Set) (State, []Effect, error) {
	if err := check(s, f, t, "post-review-done"); err != nil {
		return s, nil, err
	}
	kind, ok := s.NextPhase.PostReviewKind()
	if !ok {
		return s, nil, sayErr(t, nil, templates.PlanRefuseNoPostReview, map[string]string{"phase": orNone(string(s.Phase)), "next_phase": orNone(string(s.NextPhase))})
	}
	n := s
	n.Phase = kind.PostReviewPhase()
	n.NextPhase = kind.ReviewPhase()
	return n, viewEffects(n, f), nil
}

// StopReviews is `drover plan stop-reviews`, the escape hatch: next_phase
// becomes null, so no review starts at the next stop, and a review in
// flight is abandoned (CancelReview).
func StopReviews(s State, f Facts, t templates.Set) (State, []Effect, error) {
	if !s.Active() {
		return s, nil, sayErr(t, nil, templates.PlanRefuseCommandNoPlan, map[string]string{"command": "stop-reviews"})
	}
	n := s
	var effects []Effect
	if s.Review != nil {
		effects = append(effects, CancelReview{Kind: s.Review.Kind, Iteration: s.Review.Iteration})
		n.Review = nil
	}
	n.NextPhase, n.Standalone = PhaseNone, false
	return n, append(effects, viewEffects(n, f)...), nil
}

// SetMaxReviews is `drover plan set-max-reviews N`: the per-cycle limit,
// from now on (0 turns reviews off; the cycle in progress is then skipped at
// the next stop).
func SetMaxReviews(s State, f Facts, t templates.Set, n int) (State, []Effect, error) {
	if !s.Active() {
		return s, nil, sayErr(t, nil, templates.PlanRefuseCommandNoPlan, map[string]string{"command": "set-max-reviews"})
	}
	if n < 0 {
		return s, nil, sayErr(t, nil, templates.PlanRefuseSetNegative, map[string]string{"max_reviews": strconv.Itoa(n)})
	}
	next := s
	next.MaxReviews = n
	return next, viewEffects(next, f), nil
}

// AddTask is `drover plan add-task ID`, run after adding a task to tasks.md
// and writing its task file: it becomes the current task when none is in
// progress.
func AddTask(s State, f Facts, t templates.Set, task string) (State, []Effect, error) {
	if err := check(s, f, t, "add-task"); err != nil {
		return s, nil, err
	}
	if !ValidTaskID(task) {
		return s, nil, sayErr(t, nil, templates.PlanRefuseBadTaskID, map[string]string{"command": "add-task", "quoted_task": strconv.Quote(task)})
	}
	if !hasFile(f, "task-"+task+".md") {
		return s, nil, sayErr(t, nil, templates.PlanRefuseNoTaskFile, map[string]string{"command": "add-task", "task_file": path.Join(f.PlanDir, "task-"+task+".md")})
	}
	n := s
	if n.CurrentTask == "" {
		n.CurrentTask = task
	}
	return n, viewEffects(n, f), nil
}

// MarkComplete is `drover plan complete`: the plan is done. It is how a
// user skips the all-code review of a small plan whose tasks were each
// reviewed already (a choice drover never makes on its own).
func MarkComplete(s State, f Facts, t templates.Set) (State, []Effect, error) {
	if err := check(s, f, t, "complete"); err != nil {
		return s, nil, err
	}
	n := s
	n.Phase, n.NextPhase, n.Standalone = PhaseComplete, PhaseNone, false
	return n, viewEffects(n, f), nil
}

// StandaloneReview is `drover plan code-review [ID]`, `plan-review`,
// `tasks-review` and `all-code-review`: a review of kind starts at the next
// stop, standalone, as seed 001's standalone review commands are: one
// review, with no post-review after it whatever the verdict; next_phase
// then becomes null and the plan does not advance. task is the task of a code review (the current
// task when empty), which becomes the current task.
func StandaloneReview(s State, f Facts, t templates.Set, kind Kind, task string) (State, []Effect, error) {
	cmd := string(kind.ReviewPhase())
	if err := check(s, f, t, cmd); err != nil {
		return s, nil, err
	}
	n := newCycle(s)
	switch kind {
	case KindCode:
		if task == "" {
			task = s.CurrentTask
		}
		if task == "" {
			return s, nil, sayErr(t, nil, templates.PlanRefuseNameTheTask, map[string]string{"command": cmd})
		}
		if !ValidTaskID(task) {
			return s, nil, fmt.Errorf("plan %s: %q is not a valid task id", cmd, task)
		}
		n.CurrentTask = task
	case KindPlan, KindTasks, KindAllCode:
		if task != "" {
			return s, nil, fmt.Errorf("plan %s: takes no task id (got %q)", cmd, task)
		}
	default:
		return s, nil, fmt.Errorf("plan review: unknown kind of review %q", kind)
	}
	if kind == KindTasks && hasFile(f, "tasks.md") {
		problem, err := checkTable(f.TasksMD, t)
		if err != nil {
			return s, nil, fmt.Errorf("plan %s: %w", cmd, err)
		}
		if problem != "" {
			return s, nil, fmt.Errorf("plan %s: %s", cmd, problem)
		}
	}
	problem, err := missingInput(n, f, t, kind)
	if err != nil {
		return s, nil, fmt.Errorf("plan %s: %w", cmd, err)
	}
	if problem != "" {
		return s, nil, sayErr(t, nil, templates.PlanRefuseNothingToReview, map[string]string{"command": cmd, "problem": problem})
	}
	n.NextPhase = kind.ReviewPhase()
	n.Standalone = true
	return n, viewEffects(n, f), nil
}

// The actions Next routes to.
const (
	ActionPostReview   = "post-review"
	ActionStop         = "stop"
	ActionNewPlan      = "new-plan"
	ActionCreateTasks  = "create-tasks"
	ActionCompleteTask = "complete-task"
	ActionContinueTask = "continue-task"
	ActionDone         = "done"
	ActionAskUser      = "ask-user"
)

// Route is where `drover plan continue` sends the agent.
type Route struct {
	// Action is one of the Action* constants.
	Action string
	// Phase is the phase the action performs (post-code-review,
	// complete-task-tdd, ...), when it is more specific than Action.
	Phase Phase
	// Task is the task to work on, File the review file to answer.
	Task string
	File string
	// Text is the rendered plan_next template, then the prompt of the
	// action (ActionPrompt).
	Text string
}

// Next is `drover plan continue` (seed 001's continue-plan): it reads
// next_phase first (what should happen) and phase only when next_phase is
// null (what was last done), and says what to do, with the prompt of the
// action it routes to. When a review comes next and phase is not a
// post-review, the work under review is checked first, as the seed says: a
// plan.md that is missing or looks unfinished (PlanComplete) routes to
// new-plan, a tasks.md without rows (TasksHaveRows) to create-tasks, and a
// current task whose subtasks are not all marked complete (TaskComplete) to
// continue-task; otherwise the agent is to stop so the review runs. A
// next_phase of complete finishes the plan. A task action with no task to
// work on (none left in tasks.md, or no current task or task file) routes
// to ask-user.
func Next(s State, f Facts, t templates.Set) (State, Route, []Effect, error) {
	if !s.Active() {
		return s, Route{}, nil, sayErr(t, nil, templates.PlanRefuseCommandStartPlan, map[string]string{"command": "continue"})
	}
	if f.PlanID != s.PlanID {
		return s, Route{}, nil, fmt.Errorf("plan continue: the facts are for plan %q, the session's plan is %q", f.PlanID, s.PlanID)
	}
	n := s
	r := Route{Phase: s.NextPhase}
	if kind, ok := s.NextPhase.PostReviewKind(); ok {
		r.Action = ActionPostReview
		task := s.CurrentTask
		r.Task = task
		r.File = path.Join(f.PlanDir, ReviewFile(kind, task, s.Iteration))
	} else if kind, ok := s.NextPhase.ReviewKind(); ok {
		// The review runs at the next stop; the seed's two-level
		// heuristic says whether work is outstanding before it.
		r.Action = ActionStop
		_, afterPost := s.Phase.PostReviewKind()
		switch {
		case s.Review != nil || afterPost:
			// Level 1: the post-review was done (or, drover's own
			// case, the review is running already): stop.
		case kind == KindPlan && !PlanComplete(f):
			r.Action, r.Phase = ActionNewPlan, PhaseNewPlan
		case kind == KindTasks && !TasksHaveRows(f):
			r.Action, r.Phase = ActionCreateTasks, PhaseCreateTasks
		case (kind == KindCode || kind == KindAllCode) && s.CurrentTask != "" && !TaskComplete(s, f):
			r.Action, r.Phase, r.Task = ActionContinueTask, PhaseContinueTask, s.CurrentTask
		}
	} else {
		switch s.NextPhase {
		case PhaseCompleteTask, PhaseCompleteTaskTDD:
			// The plan's tdd keeps every task on the same variant,
			// whatever a hand-made state.json says.
			r.Action, r.Phase = ActionCompleteTask, taskPhase(s.TDD || s.NextPhase == PhaseCompleteTaskTDD)
			if rest := Remaining(f.TasksMD, ""); len(rest) > 0 {
				r.Task = rest[0]
			}
		case PhaseCreateTasks:
			r.Action = ActionCreateTasks
		case PhaseComplete:
			n.Phase, n.NextPhase = PhaseComplete, PhaseNone
			r.Action, r.Phase = ActionDone, PhaseComplete
		case PhaseNone:
			switch s.Phase {
			case PhaseContinueTask, PhaseNextTask, PhaseNextTaskTDD, PhaseCompleteTask, PhaseCompleteTaskTDD:
				r.Action, r.Phase, r.Task = ActionContinueTask, PhaseContinueTask, s.CurrentTask
			case PhaseComplete:
				r.Action, r.Phase = ActionDone, PhaseComplete
			default:
				r.Action, r.Phase = ActionAskUser, s.Phase
			}
		default:
			r.Action, r.Phase = ActionAskUser, s.Phase
		}
	}
	prompt, err := routePrompt(n, f, t, r)
	if err != nil && (r.Action == ActionCompleteTask || r.Action == ActionContinueTask) {
		// Nothing to work on (no task left, no current task, or its
		// file is missing): the user decides.
		r.Action, r.Phase, r.Task = ActionAskUser, s.Phase, ""
		prompt, err = routePrompt(n, f, t, r)
	}
	if err != nil {
		return s, Route{}, nil, fmt.Errorf("plan continue: %w", err)
	}
	v := vars(n, f, t, "")
	v["action"] = r.Action
	if r.Phase != PhaseNone && string(r.Phase) != r.Action {
		v["action"] = fmt.Sprintf("%s (%s)", r.Action, r.Phase)
	}
	v["target"] = ""
	switch {
	case r.File != "":
		v["target"] = say(t, templates.PlanNextReviewFile, map[string]string{"file": r.File})
	case r.Task != "":
		v["target"] = say(t, templates.PlanNextTaskFile, map[string]string{"file": path.Join(f.PlanDir, "task-"+r.Task+".md")})
	}
	text, err := t.Render(templates.PlanNext, v)
	if err != nil {
		return s, Route{}, nil, fmt.Errorf("plan continue: %w", err)
	}
	r.Text = text + "\n\n" + prompt
	return n, r, viewEffects(n, f), nil
}

// The artifact checks of seed 001's continue-plan, for a review that comes
// next while phase is not a post-review: each says whether the work the
// review is about was finished, or was cut off by a crash.

// PlanComplete reports whether plan.md exists and appears complete: it has
// an "## Overview" heading or more than 50 lines.
func PlanComplete(f Facts) bool {
	if !hasFile(f, "plan.md") {
		return false
	}
	lines := strings.Split(strings.TrimRight(f.PlanMD, "\n"), "\n")
	if len(lines) > 50 {
		return true
	}
	for _, line := range lines {
		if h, ok := strings.CutPrefix(strings.TrimSpace(line), "## Overview"); ok && (h == "" || !isWordByte(h[0])) {
			return true
		}
	}
	return false
}

// TasksHaveRows reports whether tasks.md exists and holds actual table
// rows: at least one row after the header (and its separator).
func TasksHaveRows(f Facts) bool {
	if !hasFile(f, "tasks.md") {
		return false
	}
	_, rows := Table(f.TasksMD)
	return len(rows) > 0
}

// TaskComplete reports whether the current task's file exists and marks
// every subtask complete (SubtasksDone).
func TaskComplete(s State, f Facts) bool {
	return s.CurrentTask != "" && hasFile(f, "task-"+s.CurrentTask+".md") && SubtasksDone(f.TaskMD)
}

// checkbox matches a Markdown task-list item and captures its mark.
var checkbox = regexp.MustCompile(`^\s*(?:[-*+]|[0-9]+[.)])\s+\[([ xX])\]`)

// statusLine matches a status line such as "**Status**: pending",
// "**Status:** done" or "- Status: in progress" and captures the status.
var statusLine = regexp.MustCompile(`(?i)^\s*(?:[-*+]\s+)?[*_]*status[*_]*\s*:[*_]*\s*(.*)$`)

// SubtasksDone reports whether a task file marks all its subtasks
// complete. A subtask is marked by a task-list item ("- [ ]" open, "- [x]"
// done) or by a status line ("**Status**: done"; the words TaskRow.Done
// accepts). A file that marks no subtask has none open.
func SubtasksDone(taskMD string) bool {
	for _, line := range strings.Split(taskMD, "\n") {
		if m := checkbox.FindStringSubmatch(line); m != nil {
			if m[1] == " " {
				return false
			}
			continue
		}
		if m := statusLine.FindStringSubmatch(line); m != nil && !statusDone(strings.Trim(m[1], "*_` ")) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// routePrompt is the ActionPrompt of route r. A task action with no task
// (tasks.md has none left, or the interrupted task is not known) routes to
// ask-user.
func routePrompt(s State, f Facts, t templates.Set, r Route) (string, error) {
	switch r.Action {
	case ActionCompleteTask:
		if r.Task == "" {
			return "", ErrNoTask
		}
		return ActionPrompt(s, f, t, string(r.Phase), r.Task) // complete-task or complete-task-tdd
	case ActionContinueTask:
		if r.Task == "" {
			return "", ErrNoTask
		}
		return ActionPrompt(s, f, t, r.Action, "")
	}
	return ActionPrompt(s, f, t, r.Action, "")
}

// CancelReview tells the actor to kill the reviewer of a review that was
// abandoned; its answer, if one still arrives, is ignored.
type CancelReview struct {
	Kind      Kind
	Iteration int
}

func (CancelReview) effect() {}

// check is the common precondition of the plan commands.
func check(s State, f Facts, t templates.Set, cmd string) error {
	switch {
	case !s.Active():
		return sayErr(t, nil, templates.PlanRefuseCommandStartPlan, map[string]string{"command": cmd})
	case f.PlanID != s.PlanID:
		return fmt.Errorf("plan %s: the facts are for plan %q, the session's plan is %q", cmd, f.PlanID, s.PlanID)
	case s.Review != nil:
		return fmt.Errorf("plan %s: %w", cmd, reviewRunning(t))
	}
	return nil
}

func viewEffects(s State, f Facts) []Effect {
	return []Effect{WriteView{Path: path.Join(f.PlanDir, ViewFile), Data: View(s, f.Models)}}
}
