package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

func TestLoopMetricCommandsRunInParallelAndRouteTheNextStop(t *testing.T) {
	stamps := t.TempDir()
	// Each command marks its start, then waits (boundedly) for the other
	// one's mark and records whether it came: run one after the other, the
	// first could never see the second.
	meet := func(self, other string) string {
		return "touch '" + filepath.Join(stamps, self+".start") + "'; i=0; while [ ! -f '" + filepath.Join(stamps, other+".start") +
			"' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -f '" + filepath.Join(stamps, other+".start") + "' ] && touch '" +
			filepath.Join(stamps, self+".met") + "'; "
	}
	failing := meet("a", "b") + `printf -- '--- FAIL: TestParse (0.00s)\n    parse_test.go:12: unicode letters are rejected\nFAIL\nFAIL\texample.com/parser\t0.01s\n'; exit 1`
	sleeper := meet("b", "a") + "sleep 0.1"
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
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	first := f.loopStop("s1", "a", "working")
	if first.Err != nil || !first.Output.IsBlock() {
		t.Fatalf("first stop: %+v", first)
	}
	if strings.Contains(first.Output.Reason, "drover:debugger") {
		t.Fatalf("nothing failed yet, but the first stop went to the debugger:\n%s", first.Output.Reason)
	}
	eventually.True(t, testTimeout, "the metric command results to be saved", func() bool {
		rec, _, _ := f.store.Load(context.Background(), "s1")
		return len(rec.LoopHistory) == 1 && rec.LoopHistory[0].CommandOutcome != ""
	})
	rec, _, _ := f.store.Load(context.Background(), "s1")
	if h := rec.LoopHistory[0]; h.CommandOutcome != convergence.OutcomeTestsFailed || h.TestsFailed != 1 || h.ErrorHash == "" {
		t.Errorf("history after the metric commands: %+v", h)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(stamps, name+".met")); err != nil {
			t.Errorf("metric command %s never saw the other one running: they did not run in parallel", name)
		}
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
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, MaxUSD: 1})
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

// Go test -v output: both tests pass, or one of two fails.
const (
	bothPass = "=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- PASS: TestLex (0.00s)\nPASS\nok  \texample.com/parser\t0.01s"
	halfPass = "=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- FAIL: TestLex (0.00s)\n    lex_test.go:9: runes split\nFAIL\nFAIL\texample.com/parser\t0.01s"
)

// testTranscript is one iteration that ran go test -v with output, then
// said msg.
func testTranscript(t *testing.T, output, msg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	lines := `{"type":"user","message":{"role":"user","content":"build the parser"}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test -v ./..."}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + fmt.Sprintf("%q", output) + `}]}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":` + fmt.Sprintf("%q", msg) + `}]}}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoopEndsOnConvergence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		output   string
		cfg      func(*config.Config)
		require  bool
		active   bool
		status   string
		reasonIs string
	}{
		{"end_on_converged ends it", bothPass, func(*config.Config) {}, false, false, "converged_success", "converged: test pass rate 1.00"},
		{"end_on_converged off goes on", bothPass, func(c *config.Config) { c.Loop.EndOnConverged = false }, false, true, "converged_success", ""},
		{"required checks go on", bothPass, func(c *config.Config) { c.Loop.CheckCommand = "true" }, true, true, "converged_success", ""},
		{"half the tests passing is not success by default", halfPass, func(*config.Config) {}, false, true, "exploring", ""},
		{"loop.success_pass_rate 0.5 makes it success", halfPass, func(c *config.Config) { c.Loop.SuccessPassRate = 0.5 }, false, false, "converged_success", "meets the success threshold 0.50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, tc.cfg)
			f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, RequireChecks: tc.require})
			msg := "The parser tests ran."
			path := testTranscript(t, tc.output, msg)
			stop := func(id string) *HookResult {
				return f.ask("s1", &HandleHook{RequestID: id, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &msg}}).(*HookResult)
			}
			if !tc.active {
				// loop.converged_streak (2): the first success goes on and
				// says that one more ends the loop.
				first := stop("first")
				if first.Err != nil || !first.Output.IsBlock() || !strings.Contains(first.Output.Reason, "1 iteration from now, drover ends the loop") {
					t.Fatalf("first success: block %v, err %v; want a block that names the end\n%s", first.Output.IsBlock(), first.Err, first.Output.Reason)
				}
			}
			res := stop("a")
			if res.Err != nil || res.Output.IsBlock() == !tc.active {
				t.Fatalf("stop: block %v, err %v; want block %v\n%s%s", res.Output.IsBlock(), res.Err, tc.active, res.Output.Reason, res.Output.SystemMessage)
			}
			st := f.loop("s1", "status", nil)
			if st.Status != tc.status || st.Active != tc.active {
				t.Fatalf("status %+v, want %s", st, tc.status)
			}
			if !tc.active {
				if st.Outcome != "converged" || !strings.Contains(st.EndReason, tc.reasonIs) || !strings.Contains(res.Output.SystemMessage, "drover's metrics say it converged") {
					t.Errorf("ended loop: outcome %q, end reason %q, message %q", st.Outcome, st.EndReason, res.Output.SystemMessage)
				}
				return
			}
			f.loop("s1", "cancel", nil)
		})
	}
}

// TestLoopStopWaitsForATranscriptNotYetCreated: at the first Stop of a new
// session the CLI may not have created its transcript file yet. The stop
// waits for it (as it waits for a transcript still being written) and
// measures the iteration: its passing tests and its spend.
func TestLoopStopWaitsForATranscriptNotYetCreated(t *testing.T) {
	f := newPlanFixture(t)
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, MaxUSD: 5})
	const msg = "The parser tests ran."
	lines := strings.SplitAfter(readTestFile(t, testTranscript(t, bothPass, "unused")), "\n")
	// The iteration's final text, with $0.30 of Sonnet output.
	content := strings.Join(lines[:3], "") + usageLine("m1", "claude-sonnet-4-5", time.Now().Add(time.Second), msg, 0, 20_000)
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	written := make(chan error, 1)
	go func() {
		// The CLI creates the file a moment after the hook fired; the file
		// appears whole, as a rename makes it.
		time.Sleep(200 * time.Millisecond)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			written <- err
			return
		}
		written <- os.Rename(tmp, path)
	}()
	m := msg
	res := f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &m}}).(*HookResult)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || !res.Output.IsBlock() {
		t.Fatalf("stop: block %v, err %v; want the loop to go on", res.Output.IsBlock(), res.Err)
	}
	st := f.loop("s1", "status", nil)
	if st.Status != "converged_success" || st.CostUSD < 0.29 || st.CostUSD > 0.31 {
		t.Errorf("status %q (%s), cost $%.4f; want the iteration measured: converged_success and $0.30", st.Status, st.StatusReason, st.CostUSD)
	}
	if !strings.Contains(res.Output.Reason, "Budget: iteration 2 of 10; $0.30 of $5.00") {
		t.Errorf("the block does not count the iteration's spend:\n%s", res.Output.Reason)
	}
	f.loop("s1", "cancel", nil)
}

// readTestFile returns the content of path; it fails the test if it
// cannot.
func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoopTranscriptFallbackWaitsForTheFinalText: without
// last_assistant_message in the Stop payload, the promise is read from the
// transcript only when the transcript ends on assistant text. One that
// lags (its promise text followed by a tool call, or by a call's result)
// is no signal: the loop goes on.
func TestLoopTranscriptFallbackWaitsForTheFinalText(t *testing.T) {
	const (
		prompt = `{"type":"user","message":{"role":"user","content":"build the parser"}}` + "\n"
		kept   = `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"All tests pass.\n<promise>DONE</promise>"}]}}` + "\n"
		call   = `{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}` + "\n"
		result = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}` + "\n"
	)
	for _, tc := range []struct {
		name       string
		transcript string
		done       bool
	}{
		{"promise then a tool call", prompt + kept + call, false},
		{"promise then a tool result", prompt + kept + call + result, false},
		{"nothing of the turn yet", prompt, false},
		{"promise as the final text", prompt + call + result + kept, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixture(t)
			f.loop("s1", "start", api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
			path := filepath.Join(t.TempDir(), "transcript.jsonl")
			if err := os.WriteFile(path, []byte(tc.transcript), 0o644); err != nil {
				t.Fatal(err)
			}
			res := f.ask("s1", &HandleHook{RequestID: "a", Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path}}).(*HookResult)
			if res.Err != nil || res.Output.IsBlock() == tc.done {
				t.Fatalf("stop: block %v, err %v; want done %v\n%s", res.Output.IsBlock(), res.Err, tc.done, res.Output.SystemMessage)
			}
			st := f.loop("s1", "status", nil)
			if st.Active == tc.done || (tc.done && st.Outcome != "done") {
				t.Errorf("status: active %v outcome %q, want done %v", st.Active, st.Outcome, tc.done)
			}
			if !tc.done {
				f.loop("s1", "cancel", nil)
			}
		})
	}
}

// The loop's check and metric commands carry the supervisor's tag, for
// its watchdog, and only when there is one.
func TestLoopCommandsCarryTheTag(t *testing.T) {
	const tag = "DROVER_SUPERVISOR_RUN=abc"
	for _, want := range []string{tag, ""} {
		r := runCheck(context.Background(), t.TempDir(), `printf '%s' "${DROVER_SUPERVISOR_RUN+DROVER_SUPERVISOR_RUN=$DROVER_SUPERVISOR_RUN}"`, want, time.Minute)
		if r.Err != "" || r.Output != want {
			t.Errorf("check command with tag %q: %q, %v", want, r.Output, r.Err)
		}
	}
	res := runMetricCommand(context.Background(), t.TempDir(), `printf '%s' "$DROVER_SUPERVISOR_RUN"`, tag, time.Minute)
	if res.Failed || res.Output != "abc" {
		t.Errorf("metric command with tag %q: %+v", tag, res)
	}
}

// A check that runs past its timeout is reported as timed out, with what
// it printed so far; one that fails says how.
func TestCheckResults(t *testing.T) {
	cases := []struct {
		name, command string
		timeout       time.Duration
		timedOut      bool
		err, output   string
	}{
		{"passes", "echo ok", time.Minute, false, "", "ok\n"},
		{"fails", "echo boom; exit 2", time.Minute, false, "exit status 2", "boom\n"},
		{"times out", "echo started; sleep 30", 200 * time.Millisecond, true, "timed out", "started\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := runCheck(context.Background(), t.TempDir(), c.command, "", c.timeout)
			if r.TimedOut != c.timedOut || r.Err != c.err || r.Output != c.output || r.Command != c.command || r.Timeout != c.timeout {
				t.Errorf("runCheck = %+v; want timed out %v, error %q, output %q", r, c.timedOut, c.err, c.output)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("runCheck took %s", el)
			}
		})
	}
}

// TestLoopRequireChecksNeedsACheckCommand: --require-checks without
// loop.check_command could never accept a promise, so the start is refused
// and the error names the key; with the key set it starts.
func TestLoopRequireChecksNeedsACheckCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		require bool
		wantErr bool
	}{
		{"required without a command is refused", "", true, true},
		{"a blank command is no command", "  ", true, true},
		{"required with a command starts", "go test ./...", true, false},
		{"not required needs no command", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(c *config.Config) { c.Loop.CheckCommand = tc.command })
			raw, _ := json.Marshal(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10, RequireChecks: tc.require})
			r := f.ask("s1", &WorkflowCommand{Workflow: "loop", Verb: "start", Args: raw}).(*WorkflowResult)
			if (r.Err != nil) != tc.wantErr {
				t.Fatalf("start: err %v, want error %v", r.Err, tc.wantErr)
			}
			if tc.wantErr {
				if !errors.Is(r.Err, ErrBadRequest) || !strings.Contains(r.Err.Error(), "loop.check_command") {
					t.Errorf("error %q: want a bad request naming loop.check_command", r.Err)
				}
				if rec, _, _ := f.store.Load(context.Background(), "s1"); rec.Loop.Active {
					t.Errorf("a refused start left an active loop: %+v", rec.Loop)
				}
				return
			}
			if st := f.loop("s1", "status", nil); !st.Active {
				t.Errorf("status after start: %+v", st)
			}
		})
	}
}

// TestLoopStartSetsAsideTheEarlierLoopsReflections: a new loop in a
// session starts with an empty reflections folder; the earlier loop's
// iteration-N.json files move to reflections.<time>, so the two loops'
// reflections are never mixed under one name.
func TestLoopStartSetsAsideTheEarlierLoopsReflections(t *testing.T) {
	f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(c *config.Config) { c.Loop.MinToolCalls = 1 })
	dir := filepath.Join(f.root, ".drover", "sessions", "s1", "reflections")
	msg := "The parser tests ran."
	path := testTranscript(t, halfPass, msg)
	stop := func(id string) {
		t.Helper()
		r := f.ask("s1", &HandleHook{RequestID: id, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &msg}}).(*HookResult)
		if r.Err != nil || !r.Output.IsBlock() {
			t.Fatalf("stop %s: %+v", id, r)
		}
		// The reflection is an effect, written once the answer is sent:
		// the next message to the session is handled after it.
		f.loop("s1", "status", nil)
	}
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "first loop", MaxIterations: 10})
	stop("a")
	stop("b")
	if names := dirNames(t, dir); len(names) != 2 {
		t.Fatalf("the first loop's reflections: %v", names)
	}
	f.loop("s1", "start", api.LoopStartArgs{Prompt: "second loop", MaxIterations: 10})
	stop("c")
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "iteration-1.json" {
		t.Errorf("the second loop's reflections folder holds %v, want only its own iteration-1.json", names)
	}
	old, _ := filepath.Glob(dir + ".*")
	if len(old) != 1 {
		t.Fatalf("the first loop's reflections were not set aside: %v", old)
	}
	if names := dirNames(t, old[0]); len(names) != 2 {
		t.Errorf("set-aside reflections: %v", names)
	}
	if st := f.loop("s1", "status", nil); st.Reflections != 1 {
		t.Errorf("status counts %d reflections, want 1", st.Reflections)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
