package executor

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
)

// roundTrip marshals v to JSON and back into a new T.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshalling %T: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshalling %T from %s: %v", v, b, err)
	}
	return out
}

// TestIterationRoundTrip: an iteration crosses the wire (NATS) whole.
func TestIterationRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	for _, it := range []Iteration{
		{RunID: "r1", Task: rungraph.Task{ID: "t"}, Iteration: 1, Branch: "drover/r1/t", Prompt: "work"},
		{
			RunID: "r1", Task: rungraph.Task{ID: "t", Description: "Work.", Files: []string{"a.go"}, Tests: []string{"./a"}, DependsOn: []string{"s"}, Alone: true, Line: 3},
			Iteration: 2, Base: "abc123", Branch: "drover/r1/t", Fresh: true, Prompt: "work\nmore", Role: router.Role("debugger"),
			Options: api.RunOptions{
				Concurrency: 2, MaxIterations: 3, Agent: "my-agent {{prompt}}", TestCommand: "go test {{packages}}",
				IterationTimeout: time.Hour, TaskMaxUSD: 1.5, Executor: NATS, NATS: "nats://127.0.0.1:4222",
			},
			Deadline: at,
			Review:   &Review{CLI: reviewer.CLICustom, Model: "opus", Schema: []byte(`{"type":"object"}`), BudgetUSD: 2, Timeout: time.Minute, Command: []string{"rev", "{{prompt}}"}, OutputCap: 1024},
		},
	} {
		if got := roundTrip(t, it); !reflect.DeepEqual(got, it) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, it)
		}
	}
}

// TestResultRoundTrip: a result crosses the wire whole, its errors as their
// text, the reviewer's included.
func TestResultRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	rev := reviewer.Result{Model: "opus", Outcome: reviewer.Failed, Verdict: "", Findings: []reviewer.Finding{{}}, CostUSD: 0.2, Duration: time.Second, ExitCode: 1, Err: errors.New("reviewer: exited"), Stdout: []byte("out")}
	for _, r := range []Result{
		{Worker: LocalWorker, Base: "abc"},
		{
			Worker: "w2", Base: "abc", Progress: Progress{CostUSD: 0.5, ToolCalls: 7, Finished: true}, AgentErr: "exit status 1",
			Test: &api.TestResult{Command: "go test ./a", Passed: true, Output: "ok", At: at}, Committed: true,
			OffBranch: "mine", Branch: "drover/r1/t", Dirty: "?? x", Review: ReviewResultOf(rev),
			Limit: &agentrun.Limit{Status: 429, Reset: at, Message: "slow down"}, Err: "no work tree",
		},
	} {
		if got := roundTrip(t, r); !reflect.DeepEqual(got, r) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
	back := roundTrip(t, ReviewResultOf(rev)).Reviewer()
	if back.Err == nil || back.Err.Error() != rev.Err.Error() || back.Outcome != rev.Outcome || back.CostUSD != rev.CostUSD {
		t.Errorf("the review back: %+v, want %+v", back, rev)
	}
	if got := roundTrip(t, Progress{Worker: "w1", CostUSD: 0.25, ToolCalls: 3}); got != (Progress{Worker: "w1", CostUSD: 0.25, ToolCalls: 3}) {
		t.Errorf("progress round trip: %+v", got)
	}
}

// TestReviewSpec: the wire form of a reviewer keeps what the configuration
// gave it.
func TestReviewSpec(t *testing.T) {
	spec := reviewer.Spec{CLI: reviewer.CLICustom, Path: "/bin/rev", Model: "opus", Schema: []byte("{}"), BudgetUSD: 1, Timeout: time.Minute, Command: []string{"rev"}, OutputCap: 9, LogPath: "log"}
	if got := roundTrip(t, *ReviewOf(&spec)).Spec(); !reflect.DeepEqual(got, spec) {
		t.Errorf("spec back: %+v, want %+v", got, spec)
	}
	if ReviewOf(nil) != nil {
		t.Error("ReviewOf(nil) is not nil")
	}
}

// TestError: an empty text is no error.
func TestError(t *testing.T) {
	if Error("") != nil || Error("x").Error() != "x" || Failed(errors.New("y")).Err != "y" {
		t.Error("Error and Failed do not carry the text")
	}
}
