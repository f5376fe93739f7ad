package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
)

// mixedFakeCLI is both fake reviewer CLIs, installed as claude and as
// codex on PATH: it logs "<cli> <model>" per run and answers PASS in that
// CLI's output, claude's result envelope ($0.25) or codex exec --json
// events (a turn of 24,000 input tokens, 20,000 of them cached, and 1,000
// output tokens, which drover prices).
const mixedFakeCLI = `#!/bin/sh
d=$(dirname "$0")
cli=$(basename "$0")
model=
prev=
for a; do [ "$prev" = --model ] && model=$a; prev=$a; done
echo "$cli $model" >> "$d/runs"
if [ "$cli" = codex ]; then
  echo '{"type":"thread.started","thread_id":"01a213ac-b980-71b3-a79c-b3a161276e62"}'
  echo '{"type":"turn.started"}'
  echo '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"{\"review\":\"fine\",\"verdict\":\"PASS\",\"findings\":[]}"}}'
  echo '{"type":"turn.completed","usage":{"input_tokens":24000,"cached_input_tokens":20000,"cache_write_input_tokens":0,"output_tokens":1000,"reasoning_output_tokens":0}}'
  exit 0
fi
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"review":"fine","verdict":"PASS","findings":[]},"total_cost_usd":0.25}\n'
`

// TestPlanMixedReviewers: review.models alternates a claude and a codex
// model, and each review of the cycle runs on its own CLI.
func TestPlanMixedReviewers(t *testing.T) {
	p := newProj(t)
	bin := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(mixedFakeCLI), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range p.env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p.env[i] = "PATH=" + bin + string(os.PathListSeparator) + v
		}
	}
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("review:\n  cli: claude\n  models: opus,gpt-5-codex\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const id = "aaaaaaaa-2222-3333-4444-666666666666"
	p.must("", "plan", "new", "--session", id, "demo")
	planMD := filepath.Join(p.root, ".drover", "plans", "demo", "plan.md")
	if err := os.WriteFile(planMD, []byte("# Demo\n\nBuild it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := p.hook(hook.Stop, stopInput(id))
	if !h.IsBlock() || !strings.Contains(h.Reason, "drover plan post-review-done") {
		t.Fatalf("stop after review 1: %+v", h)
	}
	p.must("", "plan", "post-review-done", "--session", id)
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() || !strings.Contains(h.SystemMessage, "passed: 2 clean review(s) in a row") {
		t.Fatalf("stop after review 2: %+v", h)
	}
	runs, _ := os.ReadFile(filepath.Join(bin, "runs"))
	if got := strings.TrimSpace(string(runs)); got != "claude opus\ncodex gpt-5-codex" {
		t.Errorf("reviewer runs:\n%s\nwant claude opus, then codex gpt-5-codex", got)
	}
	var st struct {
		Totals struct {
			Runs    int     `json:"runs"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"totals"`
	}
	out := p.must("", "plan", "status", "--session", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("plan status --json: %v\n%s", err, out)
	}
	// claude's $0.25, and codex's tokens at gpt-5-codex's list prices.
	want := 0.25 + (4000*1.25+20000*0.125+1000*10)/1e6
	if st.Totals.Runs != 2 || math.Abs(st.Totals.CostUSD-want) > 1e-9 {
		t.Errorf("plan totals: %+v; want 2 runs costing $%v", st.Totals, want)
	}
}
