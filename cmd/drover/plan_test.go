package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
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
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "review:\n  cli: custom\n  command: \"'" + script + "' {{model}} {{prompt}}\"\n"
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
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

	for i, post := range []bool{true, false} {
		if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() || !strings.Contains(h.Reason, "drover plan wait") {
			t.Fatalf("stop %d: want the wait block, got %+v", i, h)
		}
		if out := p.must("", "plan", "wait", "--session", id); !strings.Contains(out, "is done: PASS") {
			t.Fatalf("plan wait printed:\n%s", out)
		}
		h := p.hook(hook.Stop, stopInput(id))
		if post {
			if !h.IsBlock() || !strings.Contains(h.Reason, "drover plan post-review-done") {
				t.Fatalf("stop after review 1: %+v", h)
			}
			p.must("", "plan", "post-review-done", "--session", id)
			continue
		}
		if h.IsBlock() || !strings.Contains(h.SystemMessage, "passed twice") {
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
	if out := p.must("create-tasks", "plan", "--args", "-", "--session", id); !strings.Contains(out, "Perform the create-tasks action") || !strings.Contains(out, "`drover plan create-tasks`") {
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
