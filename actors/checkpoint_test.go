package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

func (f *planFixture) loop(id, verb string, args any) api.LoopStatus {
	f.t.Helper()
	raw, _ := json.Marshal(args)
	r := f.ask(id, &WorkflowCommand{Workflow: "loop", Verb: verb, Args: raw}).(*WorkflowResult)
	if r.Err != nil {
		f.t.Fatalf("loop %s: %v", verb, r.Err)
	}
	var st api.LoopStatus
	if err := json.Unmarshal(r.Response, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *planFixture) loopStop(id, req, msg string) *HookResult {
	f.t.Helper()
	return f.ask(id, &HandleHook{RequestID: req, Event: hook.Stop, Input: hook.Input{SessionID: id, LastAssistantMessage: &msg}}).(*HookResult)
}

func TestLoopCheckpointConsensusGoesIntoTheNextBlockReason(t *testing.T) {
	f := newPlanFixture(t)
	// Both reviewers (opus and sonnet, in parallel) fail the work with one
	// blocking finding. They run at once, so this fake records per model
	// rather than sharing the plan fake's run counter.
	script := "#!/bin/sh\nd=$(dirname \"$0\")\nprintf '%s' \"${DROVER_REVIEWER:-}\" > \"$d/ckpt-guard-$1\"\n" +
		`printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"parser.go","line":3,"summary":"unicode letters are rejected"}]},"total_cost_usd":0.1}\n'` + "\n"
	if err := os.WriteFile(filepath.Join(f.fake, "fake-reviewer"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, CheckpointEvery: 1})
	first := f.loopStop("s1", "a", "working")
	if first.Err != nil || !first.Output.IsBlock() {
		t.Fatalf("first stop: %+v", first)
	}
	// The checkpoint after iteration 1 runs in the background; wait for its
	// consensus to be saved, without sleeping a fixed time.
	eventually.True(t, testTimeout, "the checkpoint consensus to be saved", func() bool {
		rec, _, _ := f.store.Load(context.Background(), "s1")
		return rec.LoopCheckpoint != ""
	})
	for _, m := range []string{"opus", "sonnet"} {
		if g := f.fakeFile("ckpt-guard-" + m); g != "1" {
			t.Errorf("reviewer %s did not run, or ran without the recursion guard (%q)", m, g)
		}
	}
	second := f.loopStop("s1", "b", "still working")
	if !second.Output.IsBlock() || !strings.Contains(second.Output.Reason, "After iteration 1: FAIL (0 pass, 2 fail") || !strings.Contains(second.Output.Reason, "parser.go:3") || !strings.Contains(second.Output.Reason, "unicode letters are rejected") {
		t.Fatalf("the consensus is not in the next block reason:\n%s", second.Output.Reason)
	}
	rec, _, _ := f.store.Load(context.Background(), "s1")
	if rec.LoopCheckpoint != "" {
		t.Errorf("the consensus was kept after delivery: %q", rec.LoopCheckpoint)
	}
	// Delivered once, it stays open: a compaction puts it back.
	compact := f.ask("s1", &HandleHook{RequestID: "c", Event: hook.SessionStart, Input: hook.Input{SessionID: "s1", Source: "compact"}}).(*HookResult)
	if compact.Err != nil || compact.Output.HookSpecificOutput == nil {
		t.Fatalf("compact: %+v", compact)
	}
	if ctx := compact.Output.HookSpecificOutput.AdditionalContext; !strings.Contains(ctx, "## Open findings") || !strings.Contains(ctx, "parser.go:3") || !strings.Contains(ctx, "build the parser") {
		t.Errorf("the compaction context lacks the open findings:\n%s", ctx)
	}
	f.loop("s1", "cancel", nil)
}

// TestLoopRestartCancelsTheOldCheckpoint: drover loop start in a session
// whose loop has a checkpoint review in flight replaces the loop, so that
// review is cancelled and its reviewers killed, as drover loop cancel
// does; left running, its consensus would land in the new loop.
func TestLoopRestartCancelsTheOldCheckpoint(t *testing.T) {
	f := newPlanFixture(t)
	// Each reviewer records the pid of a long sleep it waits for, then
	// fails the work; it only gets that far if nobody kills it.
	script := "#!/bin/sh\nd=$(dirname \"$0\")\nsleep 30 &\necho \"$!\" > \"$d/ckpt-child-$1\"\nwait\n" +
		`printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"old.go","line":1,"summary":"a finding of the old loop"}]},"total_cost_usd":0.1}\n'` + "\n"
	if err := os.WriteFile(filepath.Join(f.fake, "fake-reviewer"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "the old task", MaxIterations: 10, CheckpointEvery: 1})
	if first := f.loopStop("s1", "a", "working"); first.Err != nil || !first.Output.IsBlock() {
		t.Fatalf("first stop: %+v", first)
	}
	var children []int
	if !eventually.Holds(testTimeout, func() bool {
		children = children[:0]
		for _, m := range []string{"opus", "sonnet"} {
			pid, err := strconv.Atoi(f.fakeFile("ckpt-child-" + m))
			if err != nil {
				return false
			}
			children = append(children, pid)
		}
		return true
	}) {
		t.Fatal("the checkpoint reviewers never started")
	}
	t.Cleanup(func() {
		for _, pid := range children {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	f.loop("s1", "start", api.LoopStartArgs{Prompt: "the new task", MaxIterations: 10})
	if !eventually.Holds(testTimeout, func() bool { return gone(children[0]) && gone(children[1]) }) {
		t.Fatalf("the old loop's checkpoint reviewers %v still run after the loop was replaced", children)
	}
	next := f.loopStop("s1", "b", "working on the new task")
	if !next.Output.IsBlock() || strings.Contains(next.Output.Reason, "a finding of the old loop") {
		t.Errorf("the new loop's block reason:\n%s", next.Output.Reason)
	}
	f.loop("s1", "cancel", nil)
}

// TestConsensusTextWithoutAVerdict: a checkpoint where every reviewer run
// failed is no review, not a FAIL: the agent is told nobody judged the
// work and why, and is not sent after findings nobody made.
func TestConsensusTextWithoutAVerdict(t *testing.T) {
	failed := reviewer.Result{Model: "opus", Outcome: reviewer.Failed, Err: fmt.Errorf("%w: exit status 127\nsh: claude: not found", reviewer.ErrExit)}
	blocking := reviewer.Result{Model: "sonnet", Outcome: reviewer.Fail, Findings: []reviewer.Finding{{Severity: "blocking", File: "parser.go", Line: 3, Summary: "unicode letters are rejected"}}}
	for _, tc := range []struct {
		name    string
		c       reviewer.Combined
		results []reviewer.Result
		want    []string
		notWant []string
	}{
		{"every run failed", reviewer.Combined{Result: reviewer.Result{Outcome: reviewer.Fail}, FailedRuns: 2}, []reviewer.Result{failed, failed},
			[]string{"After iteration 4: no review", "all 2 reviewer run(s) failed", "opus", "exited with a non-zero status"}, []string{"FAIL", "not found"}},
		{"one verdict among failures", reviewer.Combined{Result: reviewer.Result{Outcome: reviewer.Fail}, FailVotes: 1, FailedRuns: 1}, []reviewer.Result{failed, blocking},
			[]string{"After iteration 4: FAIL (0 pass, 1 fail, 1 reviewer run(s) failed)", "parser.go:3 (sonnet): unicode letters are rejected"}, []string{"no review"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := consensusText(templates.Defaults(), 4, tc.c, tc.results)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("consensus lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("consensus has %q:\n%s", w, got)
				}
			}
		})
	}
}
