package plan

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

var tm = templates.Defaults()

// seedCase is one case of seed 001's 80-case test table, in drover's terms.
// Where the seed tests something that lives in another layer, the case
// tests what this layer owes it, and says so in its name (the reviewer's
// flags, for instance, are tested in package reviewer).
type seedCase struct {
	id, name string
	in       State
	facts    Facts
	// answer is the reviewer's answer when the stop starts a review.
	answer *ReviewOutcome

	start     bool   // a review must start
	model     string // and with this model
	promptHas []string

	kind string   // the final output: block or allow
	has  []string // in the final reason or systemMessage
	not  []string

	want *State // the final state's seed fields
	same bool   // the final state is the input state
	// writeView: +1 a WriteView is expected, -1 none is.
	writeView int
	check     func(t *testing.T, r run)
	err       string // Stop must fail, with this in the error
}

// validationState is the state of the validation cases: a standalone task.
var validationState = st(phase(PhaseNextTask, PhaseNone), task("1"))

func seedCases() []seedCase {
	codeReview := func(mods ...func(*State)) State {
		return st(append([]func(*State){phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1)}, mods...)...)
	}
	return []seedCase{
		// Suite 1: validation rules.
		{id: "1.1", name: "no jq: the decision comes from the store, a missing view is written", in: validationState, facts: facts(), kind: "allow", writeView: +1},
		{id: "1.2", name: "invalid input: a reviewer answer that is not the review in flight is ignored",
			in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), func(s *State) { s.Review = &InFlight{Kind: KindCode, Iteration: 1, Model: "opus", Task: "1"} }),
			facts: facts(func(f *Facts) {
				f.ReviewInFlight = true
				f.Review = &ReviewOutcome{Kind: KindCode, Iteration: 5, Outcome: reviewer.Pass, Verdict: "PASS"}
			}),
			kind: "block", has: []string{"is running the code review of task 1", "drover plan wait"}, same: true},
		{id: "1.3", name: "invalid directory: a missing plan folder allows with a warning", in: validationState, facts: facts(noDir), kind: "allow", has: []string{"is missing"}, same: true, writeView: -1},
		{id: "1.4", name: "stop_hook_active: a broken folder warns instead of blocking twice", in: validationState, facts: facts(files("notes.md"), hookActive), kind: "allow", has: []string{"Missing required file: plan.md"}},
		{id: "1.5", name: "no plan in the session allows silently", in: State{}, facts: facts(noDir), kind: "allow", same: true, writeView: -1,
			check: func(t *testing.T, r run) {
				if r.out.SystemMessage != "" {
					t.Errorf("message %q", r.out.SystemMessage)
				}
			}},
		{id: "1.6", name: "valid plan structure allows quietly", in: validationState, facts: facts(viewOf(string(View(validationState, nil)))), kind: "allow", writeView: -1,
			check: func(t *testing.T, r run) {
				if r.out != (hook.Output{}) {
					t.Errorf("output %+v, want none", r.out)
				}
			}},
		{id: "1.7", name: "missing plan.md and an invalid filename block", in: validationState, facts: facts(files("invalid-file.md")), kind: "block", has: []string{"Missing required file: plan.md", "Invalid filename: invalid-file.md"}},
		{id: "1.8", name: "nested directories block", in: validationState, facts: facts(files("plan.md", "nested/extra.md")), kind: "block", has: []string{"nested directories", "nested/extra.md"}},
		{id: "1.9", name: "review without base file blocks", in: validationState, facts: facts(files("plan.md", "design-review-1.md")), kind: "block", has: []string{"design-review-1.md exists but design.md does not"}},
		{id: "1.10", name: "post-review without review blocks", in: validationState, facts: facts(files("plan.md", "plan-post-review-1.md")), kind: "block", has: []string{"plan-post-review-1.md exists but plan-review-1.md does not"}},
		{id: "1.11", name: "task files without tasks.md block", in: validationState, facts: facts(files("plan.md", "task-1.md")), kind: "block", has: []string{"Task files exist but tasks.md is missing"}},
		{id: "1.12", name: "non-table tasks.md blocks", in: validationState, facts: facts(files("plan.md", "tasks.md"), tasksMD("# Tasks\n\n1. do it\n")), kind: "block", has: []string{"non-table"}},
		{id: "1.13", name: "empty tasks.md blocks", in: validationState, facts: facts(files("plan.md", "tasks.md"), tasksMD("")), kind: "block", has: []string{"no table rows"}},
		{id: "1.14", name: "state.json is not rejected by the filename rules", in: validationState, facts: facts(addFiles("state.json"), viewOf(`{"phase":"x","next_phase":null,"current_task":null,"phase_iteration":0,"max_reviews":8,"review_model":"opus","consecutive_clean":0,"tdd":false}`)), kind: "allow", not: []string{"state.json"}, writeView: +1},
		{id: "1.15", name: "invalid state.json warns and is rewritten", in: validationState, facts: facts(addFiles("state.json"), viewOf(`"not valid json"`)), kind: "allow", has: []string{"state.json was not a valid drover view", "(not a JSON object)"}, writeView: +1},
		{id: "1.16", name: "state.json missing fields warns and is rewritten", in: validationState, facts: facts(addFiles("state.json"), viewOf(`{"phase": "new-plan"}`)), kind: "allow", has: []string{"missing field(s): next_phase, current_task, phase_iteration, max_reviews, review_model, consecutive_clean, tdd"}, writeView: +1},
		{id: "1.17", name: "valid state.json passes without warning", in: validationState, facts: facts(addFiles("state.json"), viewOf(string(View(validationState, nil)))), kind: "allow", not: []string{"state.json"}, writeView: -1},

		// Suite 2: auto-review logic.
		{id: "2.1", name: "trigger code review", in: st(phase(PhaseNextTask, PhaseCodeReview), task("1")), facts: facts(), answer: fail, start: true, model: "opus", kind: "block", has: []string{planDir + "/task-1-review-1.md"}},
		{id: "2.2", name: "trigger plan review", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(), answer: fail, start: true, model: "opus", kind: "block", has: []string{planDir + "/plan-review-1.md"}},
		{id: "2.3", name: "trigger tasks review", in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(), answer: fail, start: true, model: "opus", kind: "block", has: []string{planDir + "/tasks-review-1.md"}},
		{id: "2.4", name: "next_phase null is standalone", in: st(phase(PhaseNextTask, PhaseNone), task("1")), facts: facts(), kind: "allow", same: true},
		{id: "2.5", name: "next_phase post-code-review is the agent's turn", in: st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(1)), facts: facts(), kind: "allow", same: true},
		{id: "2.6", name: "max reviews reached is a hard stop", in: codeReview(iter(8)), facts: facts(), kind: "allow", has: []string{"reached its limit of 8 review(s)", "task-1-review-8.md"}, same: true},
		{id: "2.7", name: "max reviews with a custom limit", in: codeReview(iter(3), maxRev(3)), facts: facts(), kind: "allow", has: []string{"limit of 3 review(s)"}, same: true},
		{id: "2.8", name: "state.json missing: the store's state rules and the view is written", in: codeReview(), facts: facts(), answer: fail, start: true, kind: "block", has: []string{"task-1-review-2.md"},
			check: func(t *testing.T, r run) {
				// The first stop saw no view at all.
				if _, ok := find[WriteView](r.effects); !ok {
					t.Error("no WriteView after the answer")
				}
			}},
		{id: "2.9", name: "state.json malformed: the review still runs and the view is rewritten", in: codeReview(), facts: facts(viewOf("not json")), start: true, kind: "block", has: []string{"state.json was not a valid drover view"}, writeView: +1},
		{id: "2.10", name: "next_phase complete-task is not a review", in: st(phase(PhaseCodeReview, PhaseCompleteTask), task("1")), facts: facts(), kind: "allow", same: true},
		{id: "2.11", name: "next_phase create-tasks is not a review", in: st(phase(PhasePlanReview, PhaseCreateTasks)), facts: facts(), kind: "allow", same: true},
		{id: "2.12", name: "trigger all-code-review", in: st(phase(PhasePostCodeReview, PhaseAllCodeReview), task("3")), facts: facts(), answer: fail, start: true, model: "opus", kind: "block", has: []string{planDir + "/all-code-review-1.md"}},
		{id: "2.13", name: "one clean review is not enough", in: codeReview(clean(0)), facts: facts(), answer: pass, kind: "block", has: []string{"post-code-review"},
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), clean(1)))},
		{id: "2.14", name: "two clean reviews in a row advance", in: codeReview(clean(1)), facts: facts(), answer: pass, kind: "allow", has: []string{"passed: 2 clean review(s) in a row", "Next: complete-task"},
			want: ptr(codeReview(phase(PhaseCodeReview, PhaseCompleteTask), iter(2), model(2), clean(2)))},
		{id: "2.15", name: "clean then dirty resets the count", in: codeReview(clean(1)), facts: facts(), answer: fail, kind: "block", has: []string{"post-code-review"},
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), clean(0)))},

		// Suite 3: state transitions.
		{id: "3.1", name: "code review phase updated", in: st(phase(PhaseNextTask, PhaseCodeReview), task("1")), facts: facts(), answer: fail,
			want: ptr(st(phase(PhaseCodeReview, PhasePostCodeReview), task("1"), iter(1), model(1)))},
		{id: "3.2", name: "plan review phase updated", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(), answer: fail,
			want: ptr(st(phase(PhasePlanReview, PhasePostPlanReview), iter(1), model(1)))},
		{id: "3.3", name: "tasks review phase updated", in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(), answer: fail,
			want: ptr(st(phase(PhaseTasksReview, PhasePostTasksReview), iter(1), model(1)))},
		{id: "3.4", name: "model alternation opus to sonnet", in: st(phase(PhaseNextTask, PhaseCodeReview), task("1")), facts: facts(), answer: fail, model: "opus", start: true,
			check: func(t *testing.T, r run) { wantViewModel(t, r, "sonnet") }},
		{id: "3.5", name: "model alternation sonnet to opus", in: codeReview(), facts: facts(), answer: fail, model: "sonnet", start: true,
			want:  ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2))),
			check: func(t *testing.T, r run) { wantViewModel(t, r, "opus") }},
		{id: "3.6", name: "iteration increment", in: codeReview(iter(4), model(4)), facts: facts(), answer: fail,
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(5), model(5)))},
		{id: "3.7", name: "max_reviews preserved", in: codeReview(maxRev(5)), facts: facts(), answer: fail,
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), maxRev(5)))},
		{id: "3.8", name: "current_task preserved", in: codeReview(task("3")), facts: facts(), answer: fail,
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), task("3")))},
		{id: "3.9", name: "consecutive_clean incremented on a clean review", in: codeReview(), facts: facts(), answer: pass,
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), clean(1)))},
		{id: "3.10", name: "consecutive_clean reset on a review with issues", in: codeReview(clean(1)), facts: facts(), answer: fail,
			want: ptr(codeReview(phase(PhaseCodeReview, PhasePostCodeReview), iter(2), model(2), clean(0)))},
		{id: "3.11", name: "two clean code reviews advance to complete-task", in: codeReview(clean(1)), facts: facts(), answer: pass,
			want: ptr(codeReview(phase(PhaseCodeReview, PhaseCompleteTask), iter(2), model(2), clean(2)))},
		{id: "3.12", name: "two clean plan reviews advance to create-tasks", in: st(phase(PhasePostPlanReview, PhasePlanReview), iter(1), model(1), clean(1)), facts: facts(), answer: pass,
			want: ptr(st(phase(PhasePlanReview, PhaseCreateTasks), iter(2), model(2), clean(2)))},
		{id: "3.13", name: "two clean tasks reviews advance to complete-task", in: st(phase(PhasePostTasksReview, PhaseTasksReview), iter(1), model(1), clean(1)), facts: facts(), answer: pass,
			want: ptr(st(phase(PhaseTasksReview, PhaseCompleteTask), iter(2), model(2), clean(2)))},
		{id: "3.14", name: "two clean all-code reviews advance to complete", in: st(phase(PhasePostAllCodeReview, PhaseAllCodeReview), task("3"), iter(1), model(1), clean(1)), facts: facts(), answer: pass,
			want: ptr(st(phase(PhaseAllCodeReview, PhaseComplete), task("3"), iter(2), model(2), clean(2)))},
		{id: "3.15", name: "auto-advance writes all modified fields", in: codeReview(iter(3), model(0), clean(1)), facts: facts(), answer: pass, model: "opus", start: true,
			want:  ptr(codeReview(phase(PhaseCodeReview, PhaseCompleteTask), iter(4), model(1), clean(2))),
			check: func(t *testing.T, r run) { wantViewModel(t, r, "sonnet") }},
		{id: "3.16", name: "the view written is valid JSON with every required field", in: codeReview(), facts: facts(), answer: fail, writeView: +1,
			check: func(t *testing.T, r run) {
				w, _ := find[WriteView](r.effects)
				var m map[string]any
				if err := json.Unmarshal(w.Data, &m); err != nil {
					t.Fatal(err)
				}
				for _, k := range viewFields {
					if _, ok := m[k]; !ok {
						t.Errorf("view lacks %s", k)
					}
				}
			}},

		// Suite 4: CLI invocation (the flags themselves: reviewer.TestBuildCommandClaude).
		{id: "4.1", name: "model opus", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1")), facts: facts(), start: true, model: "opus", kind: "block"},
		{id: "4.2", name: "model sonnet", in: codeReview(), facts: facts(), start: true, model: "sonnet", kind: "block"},
		{id: "4.3", name: "no permission bypass: drover writes the review file", in: codeReview(), facts: facts(), answer: fail, promptHas: []string{"Do not edit any file"},
			check: func(t *testing.T, r run) {
				w, ok := find[WriteReview](r.effects)
				if !ok || w.Path != planDir+"/task-1-review-2.md" {
					t.Fatalf("WriteReview %+v", w)
				}
			}},
		{id: "4.4", name: "print mode: the effect carries everything the reviewer spec needs", in: codeReview(), facts: facts(), start: true, kind: "block",
			check: func(t *testing.T, r run) {
				sr := *r.started
				if sr.Kind != KindCode || sr.Iteration != 2 || sr.Task != "1" || sr.ReviewFile != planDir+"/task-1-review-2.md" {
					t.Errorf("StartReview %+v", sr)
				}
			}},
		{id: "4.5", name: "code review prompt names the task", in: codeReview(task("3")), facts: facts(), start: true, promptHas: []string{"task-3.md", "task-3-review-2.md"}},
		{id: "4.6", name: "plan review prompt names the plan", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(), start: true, promptHas: []string{planDir + "/plan.md", "plan-review-1.md"}},
		{id: "4.7", name: "tasks review prompt names tasks.md and the task files only", in: st(phase(PhaseCreateTasks, PhaseTasksReview)), facts: facts(addFiles("task-1-review-1.md")), start: true,
			promptHas: []string{planDir + "/tasks.md", "tasks-review-1.md", planDir + "/task-1.md, " + planDir + "/task-2.md, " + planDir + "/task-3.md"}},
		{id: "4.8", name: "all-code review prompt", in: st(phase(PhasePostCodeReview, PhaseAllCodeReview), task("3")), facts: facts(), start: true, promptHas: []string{"all-code-review-1.md", planDir + "/tasks.md", planDir + "/task-2.md"}},
		{id: "4.9", name: "review file written to the right path", in: codeReview(task("2"), iter(2)), facts: facts(), answer: fail,
			check: func(t *testing.T, r run) {
				w, _ := find[WriteReview](r.effects)
				if w.Path != planDir+"/task-2-review-3.md" {
					t.Errorf("review file %q, want task-2-review-3.md", w.Path)
				}
				for _, want := range []string{"# Code review of task 2, iteration 3", "Verdict: FAIL", "1 blocking, 1 minor", "`config.go:42`: the error from Open is ignored"} {
					if !strings.Contains(string(w.Data), want) {
						t.Errorf("review file lacks %q:\n%s", want, w.Data)
					}
				}
			}},
		{id: "4.10", name: "CLI not on PATH: not counted, allowed with a warning", in: codeReview(), facts: facts(), answer: failedRun(`starting reviewer "claude": exec: "claude": executable file not found in $PATH`), kind: "allow", has: []string{"did not produce a verdict", "executable file not found"}, same: true},
		{id: "4.11", name: "CLI exits 1: not counted, allowed with a warning", in: codeReview(), facts: facts(), answer: failedRun("reviewer: exited with a non-zero status: exit status 1"), kind: "allow", has: []string{"exit status 1", "Log: " + planDir + "/.review.log"}, same: true},
		{id: "4.12", name: "no structured output: not counted", in: codeReview(), facts: facts(), answer: failedRun("reviewer: the result has no structured output"), kind: "allow", has: []string{"no structured output"}, same: true},
		{id: "4.13", name: "timeout: not counted", in: codeReview(), facts: facts(), answer: failedRun("reviewer: timed out (process group killed) after 10m0s"), kind: "allow", has: []string{"timed out"}, same: true},
		{id: "4.14", name: "the verdict comes from the structured answer", in: codeReview(), facts: facts(), answer: fail, kind: "block", has: []string{"FAIL, 1 blocking, 1 minor finding(s)"}},

		// Suite 5: block messages (golden).
		{id: "5.1", name: "code review block message", in: codeReview(task("2"), iter(2)), facts: facts(), answer: fail, kind: "block", has: []string{"task-2-review-3.md", "post-code-review", "state.json", "drover plan post-review-done", "task-2-post-review-3.md"}},
		{id: "5.2", name: "plan review block message", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(), answer: fail, kind: "block", has: []string{"plan-review-1.md", "post-plan-review", "plan.md", "plan-post-review-1.md"}},
		{id: "5.3", name: "tasks review block message", in: st(phase(PhasePostTasksReview, PhaseTasksReview), iter(1), model(1)), facts: facts(), answer: fail, kind: "block", has: []string{"tasks-review-2.md", "post-tasks-review", "tasks.md", "tasks-post-review-2.md"}},
		{id: "5.4", name: "all-code review block message", in: st(phase(PhasePostCodeReview, PhaseAllCodeReview), task("3")), facts: facts(), answer: fail, kind: "block", has: []string{"all-code-review-1.md", "post-all-code-review", "all-code-post-review-1.md"}},
		{id: "5.5", name: "block message names the plan directory", in: codeReview(), facts: facts(), answer: fail, kind: "block", has: []string{planDir + "/"}, not: []string{"{{", "}}"}},
		{id: "5.6", name: "block output is valid hook JSON", in: codeReview(), facts: facts(), answer: fail, kind: "block",
			check: func(t *testing.T, r run) {
				data, err := json.Marshal(r.out)
				if err != nil {
					t.Fatal(err)
				}
				var back struct{ Decision, Reason string }
				if err := json.Unmarshal(data, &back); err != nil || back.Decision != "block" || back.Reason == "" {
					t.Errorf("hook JSON %s: %v", data, err)
				}
			}},

		// Suite 6: edge cases (6.10 and 6.11 are sequences: TestSeedAlternation, TestSeedTwoCleanIntegration).
		{id: "6.1", name: "only the session's plan: facts of another plan are refused", in: codeReview(), facts: facts(func(f *Facts) { f.PlanID = "p2" }), err: `facts are for plan "p2"`},
		{id: "6.2", name: "state.json with extra unknown fields is a valid view", in: validationState, facts: facts(viewOf(strings.Replace(string(View(validationState, nil)), `"tdd"`, `"custom_field": 42, "tdd"`, 1))), kind: "allow", not: []string{"state.json"}},
		{id: "6.3", name: "iteration 0 in a standalone phase allows", in: st(phase(PhaseNextTask, PhaseNone), iter(0)), facts: facts(), kind: "allow", same: true},
		{id: "6.4", name: "an unexpected model is passed through", in: st(phase(PhaseNextTask, PhaseCodeReview), task("1")), facts: facts(models("haiku")), start: true, model: "haiku"},
		{id: "6.5", name: "state but no plan.md: the plan review cannot run and rule 1 blocks", in: st(phase(PhaseNewPlan, PhasePlanReview)), facts: facts(files("state.json")), kind: "block", has: []string{"Missing required file: plan.md", "plan.md does not exist"}, same: true},
		{id: "6.6", name: "auto-review takes precedence over validation", in: codeReview(), facts: facts(addFiles("nested/extra.md")), start: true, kind: "block", has: []string{"drover plan wait"}, not: []string{"nested"}},
		{id: "6.7", name: "empty plan folder and no plan in the session allows", in: State{}, facts: facts(files()), kind: "allow", same: true, writeView: -1},
		{id: "6.8", name: "max_reviews 0 skips the review and advances", in: st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"), maxRev(0)), facts: facts(), kind: "allow", has: []string{"Reviews are off", "Next: complete-task"},
			want: ptr(st(phase(PhaseCodeReview, PhaseCompleteTask), task("1"), maxRev(0)))},
		{id: "6.9", name: "a plan folder without drover state is left alone", in: State{}, facts: facts(), kind: "allow", same: true, writeView: -1},
		{id: "6.12", name: "one atomic view write per decision, never a temporary file", in: codeReview(), facts: facts(), answer: fail, writeView: +1},
	}
}

func ptr[T any](v T) *T { return &v }

func wantViewModel(t *testing.T, r run, want string) {
	t.Helper()
	w, ok := find[WriteView](r.effects)
	if !ok {
		t.Fatal("no WriteView")
	}
	var v struct {
		ReviewModel string `json:"review_model"`
	}
	if err := json.Unmarshal(w.Data, &v); err != nil || v.ReviewModel != want {
		t.Errorf("view review_model %q (%v), want %q", v.ReviewModel, err, want)
	}
}

func TestSeed(t *testing.T) {
	for _, c := range seedCases() {
		t.Run(c.id+" "+c.name, func(t *testing.T) {
			if c.err != "" {
				got, _, effects, err := Stop(c.in, c.facts, tm)
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				if !reflect.DeepEqual(got, c.in) || effects != nil {
					t.Errorf("a failed Stop changed the state or asked for effects")
				}
				return
			}
			r := stop(t, c.in, c.facts, c.answer)
			if c.start || c.model != "" || len(c.promptHas) > 0 {
				if r.started == nil {
					t.Fatalf("no review started; output %s", formatOutput(r.out))
				}
				if c.model != "" && r.started.Model != c.model {
					t.Errorf("model %q, want %q", r.started.Model, c.model)
				}
				for _, p := range c.promptHas {
					if !strings.Contains(r.started.Prompt, p) {
						t.Errorf("prompt lacks %q:\n%s", p, r.started.Prompt)
					}
				}
			}
			if c.answer == nil && !c.start && r.started != nil {
				t.Fatalf("a review started: %+v", r.started)
			}
			if c.kind != "" && r.out.Kind() != c.kind {
				t.Errorf("kind %s, want %s\n%s", r.out.Kind(), c.kind, formatOutput(r.out))
			}
			text := r.out.Reason + "\n" + r.out.SystemMessage
			for _, h := range c.has {
				if !strings.Contains(text, h) {
					t.Errorf("output lacks %q:\n%s", h, formatOutput(r.out))
				}
			}
			for _, n := range c.not {
				if strings.Contains(text, n) {
					t.Errorf("output has %q:\n%s", n, formatOutput(r.out))
				}
			}
			if c.same && !reflect.DeepEqual(r.state, c.in) {
				t.Errorf("state changed: %s, want %s", formatState(r.state), formatState(c.in))
			}
			if c.want != nil && formatState(r.state) != formatState(*c.want) {
				t.Errorf("state\n %s\nwant\n %s", formatState(r.state), formatState(*c.want))
			}
			_, wrote := find[WriteView](r.effects)
			if (c.writeView > 0 && !wrote) || (c.writeView < 0 && wrote) {
				t.Errorf("WriteView present %v, want %v", wrote, c.writeView > 0)
			}
			if c.check != nil {
				c.check(t, r)
			}
			if r.out.Kind() != "allow" || r.out.SystemMessage != "" {
				g := "in:  " + formatState(c.in) + "\nout: " + formatState(r.state) + "\n"
				if r.started != nil {
					g += "review: " + r.started.Model + " " + r.started.ReviewFile + "\n"
				}
				if r.first.Reason != "" {
					g += "--- while the review ran ---\n" + formatOutput(r.first) + "--- after the answer ---\n"
				}
				golden(t, g+formatOutput(r.out))
			}
		})
	}
}

// TestSeedAlternation is seed case 6.10: four reviews with a post-review
// between each use opus, sonnet, opus, sonnet, and the view shows the next
// model after each.
func TestSeedAlternation(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	var got, views []string
	for i := range 4 {
		r := stop(t, s, facts(), fail)
		if r.started == nil || !r.out.IsBlock() {
			t.Fatalf("review %d did not run and block", i+1)
		}
		got = append(got, r.started.Model)
		w, _ := find[WriteView](r.effects)
		var v struct {
			ReviewModel string `json:"review_model"`
		}
		_ = json.Unmarshal(w.Data, &v)
		views = append(views, v.ReviewModel)
		var err error
		if s, _, err = PostReviewDone(r.state, facts()); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"opus", "sonnet", "opus", "sonnet"}) || !slices.Equal(views, []string{"sonnet", "opus", "sonnet", "opus"}) {
		t.Errorf("models %v, views %v", got, views)
	}
}

// TestSeedTwoCleanIntegration is seed case 6.11: two clean reviews in a row,
// with a post-review between: the first blocks, the second allows and sets
// the advance target.
func TestSeedTwoCleanIntegration(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	r := stop(t, s, facts(), pass)
	if !r.out.IsBlock() || r.state.ConsecutiveClean != 1 {
		t.Fatalf("first clean review: %s %s", r.out.Kind(), formatState(r.state))
	}
	s, _, err := PostReviewDone(r.state, facts())
	if err != nil {
		t.Fatal(err)
	}
	r = stop(t, s, facts(), pass)
	if r.out.IsBlock() || r.state.ConsecutiveClean != 2 || r.state.NextPhase != PhaseCompleteTask {
		t.Fatalf("second clean review: %s %s", r.out.Kind(), formatState(r.state))
	}
}

// TestSeedCasesAllCovered keeps the table honest: every one of the seed's 80
// cases has a test.
func TestSeedCasesAllCovered(t *testing.T) {
	ids := map[string]bool{"6.10": true, "6.11": true} // the sequence tests above
	for _, c := range seedCases() {
		if ids[c.id] {
			t.Errorf("case %s appears twice", c.id)
		}
		ids[c.id] = true
	}
	sizes := []int{17, 15, 16, 14, 6, 12}
	total := 0
	for suite, n := range sizes {
		for i := 1; i <= n; i++ {
			id := strconv.Itoa(suite+1) + "." + strconv.Itoa(i)
			if !ids[id] {
				t.Errorf("seed case %s has no test", id)
			}
			total++
		}
	}
	if total != 80 || len(ids) != 80 {
		t.Errorf("%d seed cases, %d tested; want 80", total, len(ids))
	}
}
