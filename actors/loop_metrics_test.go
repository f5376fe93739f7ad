package actors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
)

func TestLoopMetricCommandsRunInParallelAndRouteTheNextStop(t *testing.T) {
	stamps := t.TempDir()
	stamp := func(name string) string { return "date +%s%N > '" + filepath.Join(stamps, name) + "'" }
	// The test command waits (boundedly) for the other one to have
	// started: run one after the other, their stamps could not overlap.
	failing := stamp("a.start") + "; i=0; while [ ! -f '" + filepath.Join(stamps, "b.start") + "' ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; " +
		stamp("a.end") + `; printf -- '--- FAIL: TestParse (0.00s)\n    parse_test.go:12: unicode letters are rejected\nFAIL\nFAIL\texample.com/parser\t0.01s\n'; exit 1`
	sleeper := stamp("b.start") + "; sleep 0.3; " + stamp("b.end")
	// loop.metric_commands splits on ';': the commands are scripts.
	script := func(name, body string) string {
		p := filepath.Join(stamps, name)
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return "sh '" + p + "'"
	}
	f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(c *config.Config) {
		c.Loop.MetricCommands = script("test.sh", failing) + " ; " + script("sleep.sh", sleeper)
		c.Loop.CheckTimeout = time.Minute
	})
	f.loop("s1", "start", LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	first := f.loopStop("s1", "a", "working")
	if first.Err != nil || !first.Output.IsBlock() {
		t.Fatalf("first stop: %+v", first)
	}
	if strings.Contains(first.Output.Reason, "drover:debugger") {
		t.Fatalf("nothing failed yet, but the first stop went to the debugger:\n%s", first.Output.Reason)
	}
	if !waitUntil(func() bool {
		rec, _, _ := f.store.Load(context.Background(), "s1")
		return len(rec.LoopHistory) == 1 && rec.LoopHistory[0].CommandOutcome != ""
	}) {
		t.Fatal("the metric command results were never saved")
	}
	rec, _, _ := f.store.Load(context.Background(), "s1")
	if h := rec.LoopHistory[0]; h.CommandOutcome != convergence.OutcomeTestsFailed || h.TestsFailed != 1 || h.ErrorHash == "" {
		t.Errorf("history after the metric commands: %+v", h)
	}
	read := func(name string) int64 {
		b, err := os.ReadFile(filepath.Join(stamps, name))
		if err != nil {
			t.Fatalf("stamp %s: %v", name, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("stamp %s: %v", name, err)
		}
		return n
	}
	if aStart, aEnd, bStart, bEnd := read("a.start"), read("a.end"), read("b.start"), read("b.end"); aStart >= bEnd || bStart >= aEnd {
		t.Errorf("the metric commands did not overlap: a %d..%d, b %d..%d", aStart, aEnd, bStart, bEnd)
	}
	second := f.loopStop("s1", "b", "still working")
	if !second.Output.IsBlock() || !strings.Contains(second.Output.Reason, "drover:debugger") {
		t.Fatalf("the failing tests measured after iteration 1 did not route iteration 2 to the debugger:\n%s", second.Output.Reason)
	}
	f.loop("s1", "cancel", nil)
}

// usageLine is one assistant transcript entry with its usage.
func usageLine(id, model string, at time.Time, text string, in, out int) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%s","timestamp":%q,"message":{"id":%q,"model":%q,"role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}`,
		id, at.UTC().Format(time.RFC3339Nano), id, model, text, in, out) + "\n"
}

func TestLoopMaxUSDEndsTheLoopOnTheTranscriptsCost(t *testing.T) {
	f := newPlanFixture(t)
	f.loop("s1", "start", LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, MaxUSD: 1})
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	now := time.Now()
	// Spent before the loop started ($25 of opus output): not the loop's.
	before := usageLine("m0", "claude-opus-4-5", now.Add(-time.Hour), "earlier work", 0, 1_000_000)
	// $0.30 of sonnet output in iteration 1: under the budget.
	iter1 := usageLine("m1", "claude-sonnet-4-5", now.Add(time.Second), "working", 0, 20_000)
	if err := os.WriteFile(path, []byte(before+iter1), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := func(req, msg string) *HookResult {
		return f.ask("s1", &HandleHook{RequestID: req, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &msg}}).(*HookResult)
	}
	first := stop("a", "working")
	if first.Err != nil || !first.Output.IsBlock() {
		t.Fatalf("first stop (spent $0.30 of $1) did not continue the loop: %+v", first)
	}
	// $1.25 of opus output in iteration 2: over the budget.
	iter2 := usageLine("m2", "claude-opus-4-5", now.Add(2*time.Second), "more work", 0, 50_000)
	if err := os.WriteFile(path, []byte(before+iter1+iter2), 0o644); err != nil {
		t.Fatal(err)
	}
	second := stop("b", "more work")
	if second.Err != nil || second.Output.IsBlock() {
		t.Fatalf("second stop (spent $1.55 of $1) did not end the loop: %+v", second)
	}
	st := f.loop("s1", "status", nil)
	if st.Active || st.CostUSD < 1.5 || st.CostUSD > 1.6 {
		t.Errorf("after the budget: active %v, cost $%.4f (want about $1.55)", st.Active, st.CostUSD)
	}
}
