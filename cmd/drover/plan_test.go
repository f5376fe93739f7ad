package main

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/templates"
)

// planFakeReviewer is a review.cli custom reviewer that always answers
// PASS and records its model and $DROVER_REVIEWER per run.
const planFakeReviewer = `#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
printf '%s' "$1" > "$d/model-$n"
printf '%s' "${DROVER_REVIEWER:-}" > "$d/guard-$n"
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"PASS","findings":[]},"total_cost_usd":0.25}\n'
`

func TestPlanThroughTheCLI(t *testing.T) {
	p := newProj(t)
	fake := t.TempDir()
	script := filepath.Join(fake, "fake-reviewer")
	if err := os.WriteFile(script, []byte(planFakeReviewer), 0o755); err != nil {
		t.Fatal(err)
	}
	p.useReviewer(script)
	const id = "aaaaaaaa-2222-3333-4444-555555555555"
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(fake, name))
		return string(b)
	}

	out := p.must("", "plan", "new", "--session", id, "demo")
	planMD := filepath.Join(p.root, ".drover", "plans", "demo", "plan.md")
	if !strings.Contains(out, "Write the plan to "+planMD) {
		t.Fatalf("plan new printed:\n%s", out)
	}
	if err := os.WriteFile(planMD, []byte("# Demo\n\nBuild it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, post := range []bool{true, false} {
		// The stop that starts a review is held while the reviewer runs
		// (review.hold) and answered with what it found: the agent
		// spends no turn on drover plan wait.
		h := p.hook(hook.Stop, stopInput(id))
		if post {
			if !h.IsBlock() || !strings.Contains(h.Reason, "drover plan post-review-done") {
				t.Fatalf("stop after review 1: %+v", h)
			}
			p.must("", "plan", "post-review-done", "--session", id)
			continue
		}
		if h.IsBlock() || !strings.Contains(h.SystemMessage, "passed: 2 clean review(s) in a row") {
			t.Fatalf("stop after review 2: %+v", h)
		}
	}
	if read("model-1") != "opus" || read("model-2") != "sonnet" || read("guard-1") != "1" {
		t.Errorf("reviewer runs: models %q %q, guard %q", read("model-1"), read("model-2"), read("guard-1"))
	}

	var st struct {
		Phase     string  `json:"phase"`
		NextPhase *string `json:"next_phase"`
		Totals    struct {
			Runs    int     `json:"runs"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"totals"`
	}
	out = p.must("", "plan", "status", "--session", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("plan status --json: %v\n%s", err, out)
	}
	if st.Phase != "plan-review" || st.NextPhase == nil || *st.NextPhase != "create-tasks" || st.Totals.Runs != 2 || st.Totals.CostUSD != 0.5 {
		t.Errorf("plan status: %+v", st)
	}
	// drover status shows what the session's reviewer runs cost.
	var all api.StatusResponse
	if out := p.must("", "status", "--json"); json.Unmarshal([]byte(out), &all) != nil || len(all.Sessions) != 1 || all.Sessions[0].ID != id || all.Sessions[0].CostUSD != 0.5 {
		t.Errorf("status --json: %+v\n%s", all, out)
	}
	if out := p.must("", "status"); !strings.Contains(out, "COST") || !strings.Contains(out, "$0.50") {
		t.Errorf("status table without the cost:\n%s", out)
	}
	// A per-plan budget, set from the command line.
	if out := p.must("", "plan", "set", "--session", id, "demo", "budget_usd=0.4"); !strings.Contains(out, "reviewer budget $0.40") {
		t.Errorf("plan set budget_usd printed:\n%s", out)
	}
	if out := p.must("", "plan", "status", "--session", id); !strings.Contains(out, "budget $0.40") {
		t.Errorf("plan status without the budget:\n%s", out)
	}
	// Outside a session, status reads the plans' state.json views.
	if out := p.must("", "plan", "status"); !strings.Contains(out, "demo") || !strings.Contains(out, "create-tasks") {
		t.Errorf("plan status outside a session:\n%s", out)
	}
	// The slash command's way in: arguments on stdin.
	if out := p.must("continue", "plan", "--args", "-", "--session", id); !strings.Contains(out, "Next action: create-tasks") {
		t.Errorf("plan --args - continue printed:\n%s", out)
	}
	// From the slash command an action word starts the action.
	if out := p.must("create-tasks", "plan", "--args", "-", "--session", id); !strings.Contains(out, "Plan demo: create the tasks") || !strings.Contains(out, "`drover plan create-tasks`") {
		t.Errorf("/drover:plan create-tasks printed:\n%s", out)
	}
	if r := p.drover("", "plan", "advance", "--session", id, "bogus"); r.code == 0 || !strings.Contains(r.stderr, "unknown phase") {
		t.Errorf("advance bogus: exit %d, stderr %q", r.code, r.stderr)
	}
	const other = "bbbbbbbb-2222-3333-4444-555555555555"
	if out := p.must("", "plan", "new", "--session", other, "--budget-usd", "1.5", "capped"); !strings.Contains(out, "reviewer budget $1.50") {
		t.Errorf("plan new --budget-usd printed:\n%s", out)
	}
	if r := p.drover("", "plan", "set", "--session", other, "capped", "budget_usd=-1"); r.code == 0 || !strings.Contains(r.stderr, "budget_usd") {
		t.Errorf("a negative budget: exit %d, stderr %q", r.code, r.stderr)
	}
}

// writePlanReviewer makes p's reviewer the fake that always passes.
func writePlanReviewer(t *testing.T, p *proj) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "fake-reviewer")
	if err := os.WriteFile(script, []byte(planFakeReviewer), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not held: the standalone cycle below goes through drover plan wait.
	p.useReviewer(script, "hold: 0s")
}

// TestPlanActionsThroughTheCLI drives the agent's side of a plan through
// the binary: the slash command's action words print the action's prompt
// (overridable in .drover/templates/), and a standalone code review is one
// review that leaves next_phase null.
func TestPlanActionsThroughTheCLI(t *testing.T) {
	p := newProj(t)
	writePlanReviewer(t, p)
	const id = "cccccccc-2222-3333-4444-555555555555"
	dir := filepath.Join(p.root, ".drover", "plans", "acts")
	p.must("", "plan", "new", "--session", id, "acts")
	for name, content := range map[string]string{
		"plan.md":   "# Acts\n",
		"tasks.md":  "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | one |\n",
		"task-1.md": "# Task 1\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The slash command: each action word prints its prompt with the
	// plan's values and the command that reports it done.
	for _, c := range []struct{ args, want string }{
		{"complete-task", "`drover plan complete-task 1`"},
		{"complete-task 1 --tdd", "`drover plan complete-task 1 --tdd`"},
		{"complete-task-tdd", "`drover plan complete-task 1 --tdd`"},
		{"next-task --tdd", "`drover plan next-task 1 --tdd`"},
		{"code-review 1", "`drover plan code-review 1`"},
		{"plan-review", "`drover plan plan-review`"},
		{"tasks-review", "`drover plan tasks-review`"},
		{"all-code-review", "`drover plan all-code-review`"},
		{"add-task", "`drover plan add-task 2`"},
	} {
		out := p.must(c.args, "plan", "--args", "-", "--session", id)
		if !strings.Contains(out, c.want) || !strings.Contains(out, dir) {
			t.Errorf("/drover:plan %s printed:\n%s", c.args, out)
		}
	}
	for _, args := range []string{"continue-task", "complete-task --fast", "code-review 1 2", "complete-task 9"} {
		if r := p.drover(args, "plan", "--args", "-", "--session", id); r.code == 0 {
			t.Errorf("/drover:plan %s: exit 0, stdout %q", args, r.stdout)
		}
	}
	// A project's override is what the agent gets.
	tdir := filepath.Join(p.root, ".drover", "templates")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, templates.PlanActionCreateTasks+".md"), []byte("Make tasks for {{plan_id}}; report with `drover plan create-tasks`.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := p.must("create-tasks", "plan", "--args", "-", "--session", id); strings.TrimSpace(out) != "Make tasks for acts; report with `drover plan create-tasks`." {
		t.Errorf("/drover:plan create-tasks with an override printed:\n%s", out)
	}

	// A standalone code review from the terminal: one review at the next
	// stop, even a failing one, and the plan stays where it was.
	if out := p.must("", "plan", "code-review", "--session", id, "1"); !strings.Contains(out, "standalone code review of task 1") || !strings.Contains(out, "one review") {
		t.Fatalf("plan code-review printed:\n%s", out)
	}
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() || !strings.Contains(h.Reason, "drover plan wait") {
		t.Fatalf("stop: want the wait block, got %+v", h)
	}
	p.must("", "plan", "wait", "--session", id)
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() || !strings.Contains(h.SystemMessage, "standalone code review of task 1") || !strings.Contains(h.SystemMessage, "task-1-review-1.md") || !strings.Contains(h.SystemMessage, "next_phase is null") {
		t.Fatalf("stop after the review: %+v", h)
	}
	var st api.PlanStatus
	out := p.must("", "plan", "status", "--session", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("plan status --json: %v\n%s", err, out)
	}
	if st.Phase != "code-review" || st.NextPhase != nil || st.Standalone || st.Totals.Runs != 1 {
		t.Errorf("plan status after the standalone review: %+v", st)
	}
	for _, name := range []string{"plan-review", "tasks-review", "all-code-review"} {
		if out := p.must("", "plan", name, "--session", id); !strings.Contains(out, "standalone") {
			t.Errorf("plan %s printed:\n%s", name, out)
		}
	}
}

func TestSlashAction(t *testing.T) {
	tests := []struct {
		action     string
		rest       []string
		wantAction string
		wantTask   string
		wantErr    string
	}{
		{"complete-task", nil, "complete-task", "", ""},
		{"complete-task", []string{"3"}, "complete-task", "3", ""},
		{"complete-task", []string{"3", "--tdd"}, "complete-task-tdd", "3", ""},
		{"complete-task", []string{"--tdd"}, "complete-task-tdd", "", ""},
		{"complete-task-tdd", []string{"--tdd", "2"}, "complete-task-tdd", "2", ""},
		{"next-task", []string{"--tdd"}, "next-task-tdd", "", ""},
		{"code-review", []string{"4"}, "code-review", "4", ""},
		{"code-review", []string{"--tdd"}, "", "", "unknown flag"},
		{"complete-task", []string{"--fast"}, "", "", "unknown flag"},
		{"add-task", []string{"1", "2"}, "", "", "one task id at most"},
	}
	for _, tt := range tests {
		action, task, err := slashAction(tt.action, tt.rest)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s %v: err %v, want %q", tt.action, tt.rest, err, tt.wantErr)
			}
			continue
		}
		if err != nil || action != tt.wantAction || task != tt.wantTask {
			t.Errorf("%s %v = %q %q %v, want %q %q", tt.action, tt.rest, action, task, err, tt.wantAction, tt.wantTask)
		}
	}
}

// Commands named in prose: `drover plan X [Y]` (across a line break too) and
// /drover:plan X.
var (
	planCmdRE   = regexp.MustCompile(`drover\s+plan\s+([a-z][a-z0-9-]*)(?:\s+([a-z][a-z0-9-]*))?`)
	slashPlanRE = regexp.MustCompile(`/drover:plan\s+([a-z][a-z0-9-]*)`)
	placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)
)

// TestPlanDocsNameRealCommands renders every plan template and reads the
// plugin's /drover:plan prompt and the README: every `drover plan X` they
// name must be a subcommand of the real command tree, under its own name
// (not an alias), every `drover plan advance Y` a phase advance takes, and
// every /drover:plan X an action word or a subcommand. A prompt that sends
// the agent to a command that does not exist cannot come back.
func TestPlanDocsNameRealCommands(t *testing.T) {
	planCmd, _, err := (&app{}).rootCmd().Find([]string{"plan"})
	if err != nil || planCmd.Name() != "plan" {
		t.Fatalf("finding the plan command: %v", err)
	}
	subs := map[string]*cobra.Command{}
	for _, c := range planCmd.Commands() {
		subs[c.Name()] = c
	}
	docs := map[string]string{}
	d := templates.Defaults()
	for _, name := range templates.Names() {
		if !strings.HasPrefix(name, "plan_") && !strings.HasPrefix(name, "reviewer_") {
			continue
		}
		raw, err := d.Render(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Fill every placeholder, so that a command held in a value
		// would show too.
		vars := map[string]string{}
		for _, m := range placeholder.FindAllStringSubmatch(raw, -1) {
			vars[m[1]] = "1"
		}
		rendered, err := d.Render(name, vars)
		if err != nil {
			t.Fatal(err)
		}
		docs["template "+name] = rendered
	}
	for _, file := range []string{"../../plugin/commands/plan.md", "../../README.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs[file] = string(data)
	}
	named := 0
	for _, where := range slices.Sorted(maps.Keys(docs)) {
		text := docs[where]
		for _, m := range planCmdRE.FindAllStringSubmatch(text, -1) {
			named++
			sub, ok := subs[m[1]]
			if !ok {
				t.Errorf("%s names `drover plan %s`: not a subcommand of drover plan (%v)", where, m[1], slices.Sorted(maps.Keys(subs)))
				continue
			}
			if sub.Name() == "advance" && m[2] != "" && !slices.Contains(plan.AdvancePhases(), m[2]) {
				t.Errorf("%s names `drover plan advance %s`: advance takes %v", where, m[2], plan.AdvancePhases())
			}
		}
		for _, m := range slashPlanRE.FindAllStringSubmatch(text, -1) {
			named++
			if _, ok := subs[m[1]]; !ok && !slices.Contains(slashActions, m[1]) {
				t.Errorf("%s names /drover:plan %s: neither an action word (%v) nor a subcommand", where, m[1], slashActions)
			}
		}
	}
	if named < 40 {
		t.Errorf("only %d commands named in the plan docs: is the scan still reading them?", named)
	}
}

// TestPlanAdvanceTakesEveryIssuePhase pins the phases issue 6 lists for
// drover plan advance to what the session actor accepts and the help says.
func TestPlanAdvanceTakesEveryIssuePhase(t *testing.T) {
	advance, _, err := (&app{}).rootCmd().Find([]string{"plan", "advance"})
	if err != nil || advance.Name() != "advance" {
		t.Fatalf("finding plan advance: %v", err)
	}
	for _, phase := range []string{"new-plan", "create-tasks", "complete-task", "complete-task-tdd", "next-task", "continue-task", "post-plan-review", "post-tasks-review", "post-code-review", "post-all-code-review"} {
		if !slices.Contains(plan.AdvancePhases(), phase) {
			t.Errorf("advance does not take %s", phase)
		}
		if !strings.Contains(advance.Long, phase) {
			t.Errorf("advance's help does not list %s", phase)
		}
	}
}

// planScriptedReviewer is a review.cli custom reviewer that answers run n
// with the structured output in the file answer-n beside it (a clean PASS
// when there is none).
const planScriptedReviewer = `#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
a='{"verdict":"PASS","findings":[]}'
[ -f "$d/answer-$n" ] && a=$(cat "$d/answer-$n")
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":%s,"total_cost_usd":0.1}\n' "$a"
`

// TestPlanFindingsThroughTheCLI runs reviews with blocking and minor
// findings through the binary and reads them back with drover plan
// findings, as text and as JSON: the current cycle's ledger first, then
// the earlier cycle's, labelled with what it reviewed.
func TestPlanFindingsThroughTheCLI(t *testing.T) {
	p := newProj(t)
	fake := t.TempDir()
	script := filepath.Join(fake, "fake-reviewer")
	answers := map[string]string{
		"answer-1": `{"verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":3,"summary":"the error path is not planned"},{"severity":"minor","file":"plan.md","summary":"name the constant"}]}`,
		"answer-2": `{"verdict":"PASS","findings":[{"severity":"minor","file":"plan.md","summary":"name the constant"}]}`,
		"answer-4": `{"verdict":"FAIL","findings":[{"severity":"blocking","file":"tasks.md","summary":"tasks 1 and 2 overlap"}]}`,
	}
	answers["fake-reviewer"] = planScriptedReviewer
	for name, content := range answers {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.useReviewer(script)
	const id = "ffffffff-2222-3333-4444-555555555555"
	dir := filepath.Join(p.root, ".drover", "plans", "found")
	p.must("", "plan", "new", "--session", id, "found")
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Found\n\n## Overview\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// review runs one review: the stop that starts it is held while the
	// reviewer runs (review.hold) and answered with what it found.
	review := func(n int) hook.Output {
		t.Helper()
		return p.hook(hook.Stop, stopInput(id))
	}

	if out := p.must("", "plan", "findings", "--session", id); !strings.Contains(out, "No findings in review cycle 1 of plan found.") {
		t.Errorf("findings before any review:\n%s", out)
	}
	// An empty ledger is an empty JSON list, not null.
	if out := p.must("", "plan", "findings", "--session", id, "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("findings --json before any review: %q, want []", out)
	}
	if h := review(1); !h.IsBlock() || !strings.Contains(h.Reason, "FAIL, 1 blocking, 1 minor") {
		t.Fatalf("stop after review 1: %+v", h)
	}
	out := p.must("", "plan", "findings", "--session", id)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Review cycle 1 of plan found \(current: plan review\):$`),
		regexp.MustCompile(`(?m)^STATE\s+SEVERITY\s+WHERE\s+REVIEWS\s+SUMMARY$`),
		regexp.MustCompile(`(?m)^open\s+blocking\s+plan\.md:3\s+1-1 \(1x\)\s+the error path is not planned$`),
		regexp.MustCompile(`(?m)^open\s+minor\s+plan\.md\s+1-1 \(1x\)\s+name the constant$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("findings after review 1 do not match %s:\n%s", want, out)
		}
	}
	// The blocking finding goes first (the ledger keeps the reviewer's
	// order; the reviewer listed it first).
	if strings.Index(out, "blocking") > strings.Index(out, "minor") {
		t.Errorf("findings out of order:\n%s", out)
	}

	p.must("", "plan", "post-review-done", "--session", id)
	review(2) // PASS with the minor nit again: clean
	p.must("", "plan", "post-review-done", "--session", id)
	if h := review(3); h.IsBlock() || !strings.Contains(h.SystemMessage, "passed") {
		t.Fatalf("stop after review 3: %+v", h)
	}
	for name, content := range map[string]string{
		"tasks.md":  "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | one |\n| 2 | pending | two |\n",
		"task-1.md": "# Task 1\n",
		"task-2.md": "# Task 2\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.must("", "plan", "create-tasks", "--session", id)
	if h := review(4); !h.IsBlock() || !strings.Contains(h.Reason, "tasks review (iteration 1)") {
		t.Fatalf("stop after the first tasks review: %+v", h)
	}

	out = p.must("", "plan", "findings", "--session", id)
	current := strings.Index(out, "Review cycle 2 of plan found (current: tasks review):")
	earlier := strings.Index(out, "Review cycle 1 (plan review):")
	if current < 0 || earlier < current {
		t.Fatalf("findings after the second cycle's first review: want cycle 2, then cycle 1:\n%s", out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^open\s+blocking\s+tasks\.md\s+1-1 \(1x\)\s+tasks 1 and 2 overlap$`),
		regexp.MustCompile(`(?m)^resolved\s+blocking\s+plan\.md:3\s+1-1 \(1x\)\s+the error path is not planned$`),
		regexp.MustCompile(`(?m)^resolved\s+minor\s+plan\.md\s+1-2 \(2x\)\s+name the constant$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("findings after the second cycle's first review do not match %s:\n%s", want, out)
		}
	}
	if strings.Contains(out[:earlier], "plan.md") || strings.Contains(out[earlier:], "tasks.md") {
		t.Errorf("a finding under the wrong cycle:\n%s", out)
	}

	var found []api.PlanFinding
	out = p.must("", "plan", "findings", "--session", id, "--json")
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("plan findings --json: %v\n%s", err, out)
	}
	type row struct {
		Cycle            int
		Kind, Severity   string
		Open, Current    bool
		First, Last, Num int
		Summary          string
	}
	var got []row
	for _, f := range found {
		got = append(got, row{f.Cycle, f.Kind, f.Severity, f.Open, f.Current, f.FirstReview, f.LastReview, f.Times, f.Summary})
	}
	want := []row{
		{2, "tasks", "blocking", true, true, 1, 1, 1, "tasks 1 and 2 overlap"},
		{1, "plan", "blocking", false, false, 1, 1, 1, "the error path is not planned"},
		{1, "plan", "minor", false, false, 1, 2, 2, "name the constant"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan findings --json:\n got %+v\nwant %+v\n%s", got, want, out)
	}
	// The raw JSON keeps the documented names.
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 3 {
		t.Fatalf("plan findings --json: %v\n%s", err, out)
	}
	for key, v := range map[string]any{"cycle": 2.0, "kind": "tasks", "current": true, "open": true, "severity": "blocking", "first_review": 1.0, "last_review": 1.0, "times": 1.0, "file": "tasks.md", "summary": "tasks 1 and 2 overlap"} {
		if raw[0][key] != v {
			t.Errorf("plan findings --json: %s is %v, want %v", key, raw[0][key], v)
		}
	}
}

// planSleepyReviewer is a review.cli custom reviewer whose first run
// starts a child in its process group and sleeps with it until the file
// "sleep" beside it is gone; every run records its pid, its child's,
// its prompt and its model, then answers PASS.
const planSleepyReviewer = `#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
printf '%s' "$1" > "$d/model-$n"
printf '%s' "$2" > "$d/prompt-$n"
if [ -f "$d/sleep" ]; then
  sleep 3600 &
  echo $! > "$d/child-$n"
  echo $$ > "$d/pid-$n"
  wait
fi
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"PASS","findings":[]},"total_cost_usd":0.25}\n'
`

// TestPlanReviewSurvivesKill9 kills the real supervisor with SIGKILL in
// the middle of a plan review: the reviewer and every process of its
// group die with it, and the next drover command starts a new supervisor
// that runs review 1 again, at the same iteration and with the same
// model, after which the cycle goes on.
func TestPlanReviewSurvivesKill9(t *testing.T) {
	p := newProj(t)
	fake := t.TempDir()
	script := filepath.Join(fake, "fake-reviewer")
	for name, content := range map[string]string{"fake-reviewer": planSleepyReviewer, "sleep": "1"} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not held: the first stop must answer while the reviewer sleeps.
	p.useReviewer(script, "hold: 0s")
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(fake, name))
		return strings.TrimSpace(string(b))
	}
	const id = "99999999-2222-3333-4444-555555555555"
	p.must("", "plan", "new", "--session", id, "crash")
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "plans", "crash", "plan.md"), []byte("# Crash\n\n## Overview\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() || !strings.Contains(h.Reason, "drover plan wait") {
		t.Fatalf("first stop: want the wait block, got %+v", h)
	}
	eventually.True(t, 30*time.Second, "the reviewer to start", func() bool { return read("pid-1") != "" })
	rpid, _ := strconv.Atoi(read("pid-1"))
	cpid, _ := strconv.Atoi(read("child-1"))
	if rpid <= 0 || cpid <= 0 {
		t.Fatalf("reviewer pid %q, child pid %q", read("pid-1"), read("child-1"))
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-rpid, syscall.SIGKILL)
		_ = syscall.Kill(cpid, syscall.SIGKILL)
	})

	pid := p.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	// Nothing of the review outlives the supervisor: not the reviewer,
	// not the child in its group.
	waitGone(t, rpid)
	waitGone(t, cpid)
	if err := syscall.Kill(-rpid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the reviewer's process group %d is still there: %v", rpid, err)
	}

	// The next command starts a new supervisor, which runs review 1 again.
	if err := os.Remove(filepath.Join(fake, "sleep")); err != nil {
		t.Fatal(err)
	}
	if out := p.must("", "plan", "wait", "--session", id); !strings.Contains(out, "is done: PASS") {
		t.Fatalf("plan wait after kill -9 printed:\n%s", out)
	}
	if npid := p.supervisorPID(); npid == 0 || npid == pid {
		t.Errorf("no new supervisor (old %d, new %d)", pid, npid)
	}
	if read("count") != "2" || read("model-2") != "opus" || !strings.Contains(read("prompt-2"), "plan-review-1.md") {
		t.Errorf("the rerun: %s runs, model %q, prompt %q", read("count"), read("model-2"), read("prompt-2"))
	}
	h := p.hook(hook.Stop, stopInput(id))
	if !h.IsBlock() || !strings.Contains(h.Reason, "plan-review-1.md") || !strings.Contains(h.Reason, "drover plan post-review-done") {
		t.Fatalf("stop after the rerun: %+v", h)
	}
	var st struct {
		PhaseIteration   int `json:"phase_iteration"`
		ConsecutiveClean int `json:"consecutive_clean"`
	}
	if out := p.must("", "plan", "status", "--session", id, "--json"); json.Unmarshal([]byte(out), &st) != nil || st.PhaseIteration != 1 || st.ConsecutiveClean != 1 {
		t.Errorf("status after the rerun: %+v\n%s", st, out)
	}

	// The cycle goes on: review 2 (sonnet) passes it.
	p.must("", "plan", "post-review-done", "--session", id)
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() {
		t.Fatalf("stop before review 2: %+v", h)
	}
	p.must("", "plan", "wait", "--session", id)
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() || !strings.Contains(h.SystemMessage, "passed: 2 clean review(s) in a row") {
		t.Fatalf("stop after review 2: %+v", h)
	}
	if read("count") != "3" || read("model-3") != "sonnet" {
		t.Errorf("review 2: %s runs, model %q", read("count"), read("model-3"))
	}
}

// useReviewer configures the project's reviewer as the custom command
// script, given the model and the prompt; keys are more lines of the
// review section ("hold: 0s").
func (p *proj) useReviewer(script string, keys ...string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		p.t.Fatal(err)
	}
	cfg := "review:\n  cli: custom\n  command: \"'" + script + "' {{model}} {{prompt}}\"\n"
	for _, k := range keys {
		cfg += "  " + k + "\n"
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(cfg), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestPlanStateEditsAndTakeoverThroughTheHook is what a user of seed 001
// meets from the terminal: setting next_phase to null in state.json (the
// escape hatch) lets the next stop through with a message saying so and
// runs no reviewer; and after drover plan continue in a second session,
// the first session's stop lets go, naming the session that took the plan.
func TestPlanStateEditsAndTakeoverThroughTheHook(t *testing.T) {
	p := newProj(t)
	writePlanReviewer(t, p)
	const a, b = "dddddddd-2222-3333-4444-555555555555", "eeeeeeee-2222-3333-4444-555555555555"
	dir := filepath.Join(p.root, ".drover", "plans", "hatch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Hatch\n\n## Overview\n\nOne step.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.must("", "plan", "new", "--session", a, "hatch")

	view := filepath.Join(dir, "state.json")
	data, err := os.ReadFile(view)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), `"next_phase": "plan-review"`, `"next_phase": null`, 1)
	if edited == string(data) {
		t.Fatalf("state.json has no next_phase to edit:\n%s", data)
	}
	if err := os.WriteFile(view, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	h := p.hook(hook.Stop, stopInput(a))
	if h.IsBlock() || !strings.Contains(h.SystemMessage, "next_phase to null") || !strings.Contains(h.SystemMessage, "drover plan set next_phase=null") {
		t.Fatalf("stop after next_phase null in state.json: %+v", h)
	}
	var st api.PlanStatus
	if err := json.Unmarshal([]byte(p.must("", "plan", "status", "--session", a, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.NextPhase != nil || st.ReviewRunning || st.Totals.Runs != 0 {
		t.Errorf("status after the escape hatch: %+v", st)
	}

	// Session b takes the plan over; a lets go at its next stop.
	if out := p.must("", "plan", "continue", "--session", b, "hatch"); !strings.Contains(out, "Session "+b+" now drives plan hatch") {
		t.Fatalf("plan continue in session b printed:\n%s", out)
	}
	h = p.hook(hook.Stop, stopInput(a))
	if h.IsBlock() || !strings.Contains(h.SystemMessage, "now driven by session "+b) {
		t.Fatalf("session a's stop after the takeover: %+v", h)
	}
	if out := p.must("", "plan", "status", "--session", a); !strings.Contains(out, "taken over by session "+b) {
		t.Errorf("plan status in session a:\n%s", out)
	}
	// Outside a session, the table of plans names the session that drives
	// each.
	out := p.must("", "plan", "status")
	if fields := strings.Fields(lineStarting(out, "hatch ")); len(fields) == 0 || fields[len(fields)-1] != b || !strings.HasSuffix(lineStarting(out, "PLAN "), "SESSION") {
		t.Errorf("plan status outside a session does not name session %s as hatch's:\n%s", b, out)
	}
}

// lineStarting returns the first line of text that starts with prefix, or
// "".
func lineStarting(text, prefix string) string {
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
