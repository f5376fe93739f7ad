package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/test/seed004"
)

func (p *proj) loopStatus(id string) api.LoopStatus {
	p.t.Helper()
	var st api.LoopStatus
	out := p.must("", "loop", "status", "--session", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		p.t.Fatalf("loop status --json: %v\n%s", err, out)
	}
	return st
}

func loopStop(id, msg string) map[string]any {
	return map[string]any{"session_id": id, "hook_event_name": "Stop", "last_assistant_message": msg}
}

func TestLoopEndsOnItsPromiseOnly(t *testing.T) {
	p := newProj(t)
	id := "loop-a"
	out := p.must(`"make the parser handle unicode" --max-iterations 10 --completion-promise "ALL DONE"`, "loop", "start", "--session", id, "--args", "-")
	if !strings.Contains(out, "make the parser handle unicode") {
		t.Fatalf("loop start printed:\n%s", out)
	}
	st := p.loopStatus(id)
	if !st.Active || st.Iteration != 1 || st.MaxIterations != 10 || st.CompletionPromise != "ALL DONE" {
		t.Fatalf("after start: %+v", st)
	}
	tr, err := os.ReadFile(st.Tracker)
	if err != nil || !strings.Contains(string(tr), "max_iterations: 10") {
		t.Fatalf("tracker: %v\n%s", err, tr)
	}
	for i, msg := range []string{
		"Working on it.",
		"I will not output <promise>ALL DONE</promise> yet.",
		"```\n<promise>ALL DONE</promise>\n```",
		"> <promise>ALL DONE</promise>",
		"> The instructions say:\n<promise>ALL DONE</promise>",
		"Write `<promise>ALL DONE</promise>` once every test passes.",
		"all done",
	} {
		h := p.hook(hook.Stop, loopStop(id, msg))
		if !h.IsBlock() || !strings.Contains(h.Reason, "make the parser handle unicode") {
			t.Fatalf("stop %d (%q) did not continue the loop: %+v", i, msg, h)
		}
		if i == 0 && !strings.Contains(h.Reason, "developer") {
			t.Errorf("the first continuation is not routed to the developer:\n%s", h.Reason)
		}
	}
	if st := p.loopStatus(id); !st.Active || st.Iteration != 8 {
		t.Fatalf("after seven false signals: %+v", st)
	}
	// Issue 12: the tag at the end of a sentence is explicit.
	h := p.hook(hook.Stop, loopStop(id, "All tests pass. <promise>all   done</promise>\n"))
	if h.IsBlock() {
		t.Fatalf("the kept promise did not end the loop: %+v", h)
	}
	if st := p.loopStatus(id); st.Active || st.Outcome != "done" {
		t.Errorf("after the promise: %+v", st)
	}
	if h := p.hook(hook.Stop, loopStop(id, "anything")); h.IsBlock() {
		t.Errorf("a stop after the loop ended blocked: %+v", h)
	}
}

// TestLoopSeedPromiseMatch replays seed 004's stop-hook-promise-match-03
// as its runner does: the loop's state (task, iteration 2 of 5, promise
// DONE), a Stop whose input has no last_assistant_message, only the
// transcript the runner writes, ending "The task is complete.
// <promise>DONE</promise>". The tag at the end of the sentence ends the
// loop; so does the bare phrase alone on its line, and a negated tag does
// not.
func TestLoopSeedPromiseMatch(t *testing.T) {
	p := newProj(t)
	dir, err := seed004.Dir("stop-hook-promise-match-03")
	if err != nil {
		t.Fatal(err)
	}
	seedTranscript := filepath.Join(dir, "transcript.jsonl")
	var state struct {
		Task              string `json:"task"`
		Iteration         int    `json:"iteration"`
		MaxIterations     int    `json:"max_iterations"`
		CompletionPromise string `json:"completion_promise"`
	}
	if err := readJSONFile(filepath.Join(dir, ".claude", "dev-loop.local.json"), &state); err != nil {
		t.Fatal(err)
	}
	writeTranscript := func(text string) string {
		b, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
		path := filepath.Join(t.TempDir(), "transcript.jsonl")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for i, tc := range []struct {
		name, transcript string
		ends             bool
	}{
		{"seed 004 promise-match-03, its transcript unchanged", seedTranscript, true},
		{"the bare phrase alone on its line", writeTranscript("The task is complete.\nDONE"), true},
		{"a negated tag", writeTranscript("I will not output <promise>DONE</promise> yet."), false},
		{"the bare phrase inside a sentence", writeTranscript("The task is DONE"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "seed-promise-" + strconv.Itoa(i)
			p.must("", "loop", "start", "--session", id, "--max-iterations", strconv.Itoa(state.MaxIterations), "--completion-promise", state.CompletionPromise, state.Task)
			// The seed's state is at iteration 2: one stop without the
			// promise gets there.
			for range state.Iteration - 1 {
				if h := p.hook(hook.Stop, loopStop(id, "Still working.")); !h.IsBlock() {
					t.Fatalf("a stop without the promise ended the loop: %+v", h)
				}
			}
			h := p.hook(hook.Stop, map[string]any{"session_id": id, "hook_event_name": "Stop", "transcript_path": tc.transcript})
			st := p.loopStatus(id)
			if tc.ends && (h.IsBlock() || st.Active || st.Outcome != "done" || st.Iteration != state.Iteration) {
				t.Errorf("the promise did not end the loop at iteration %d: %+v, status %+v", state.Iteration, h, st)
			}
			if !tc.ends && (!h.IsBlock() || !st.Active) {
				t.Errorf("no promise, but the loop ended: %+v, status %+v", h, st)
			}
		})
	}
}

func TestLoopBudgetAndCancel(t *testing.T) {
	p := newProj(t)
	p.must("", "loop", "start", "--session", "budget", "--max-iterations", "2", "keep going")
	if h := p.hook(hook.Stop, loopStop("budget", "still working")); !h.IsBlock() {
		t.Fatalf("iteration 1: %+v", h)
	}
	h := p.hook(hook.Stop, loopStop("budget", "still working"))
	if h.IsBlock() || !strings.Contains(h.SystemMessage, "max_iterations") && !strings.Contains(h.SystemMessage, "iteration") {
		t.Fatalf("iteration 2 of 2 did not end the loop: %+v", h)
	}
	if st := p.loopStatus("budget"); st.Active || st.Outcome != "max_iterations" {
		t.Errorf("after the budget: %+v", st)
	}

	p.must("", "loop", "start", "--session", "cancel", "forever")
	out := p.must("", "loop", "cancel", "--session", "cancel")
	if !strings.Contains(out, "Cancelled") {
		t.Errorf("cancel printed %q", out)
	}
	if h := p.hook(hook.Stop, loopStop("cancel", "x")); h.IsBlock() {
		t.Errorf("a stop after cancel blocked: %+v", h)
	}
	if r := p.drover("", "loop", "cancel", "--session", "cancel"); r.code == 0 {
		t.Errorf("cancelling an ended loop succeeded")
	}
	if r := p.drover("", "loop", "start", "--session", "x"); r.code == 0 || !strings.Contains(r.stderr, "no prompt") {
		t.Errorf("start without a prompt: exit %d %q", r.code, r.stderr)
	}
	if r := p.drover("", "loop", "start", "--session", "x", "--max-iterations", "-1", "p"); r.code == 0 || !strings.Contains(r.stderr, "max-iterations") {
		t.Errorf("start with a bad budget: exit %d %q", r.code, r.stderr)
	}
	for _, usd := range []string{"NaN", "Inf", "-Inf"} {
		if r := p.drover("", "loop", "start", "--session", "x", "--max-usd", usd, "p"); r.code == 0 || !strings.Contains(r.stderr, "--max-usd") || strings.Contains(r.stderr, "encoding") {
			t.Errorf("start with --max-usd %s: exit %d %q", usd, r.code, r.stderr)
		}
	}
}

func TestTwoLoopsStayApartAndQueueRefused(t *testing.T) {
	p := newProj(t)
	p.must("", "loop", "start", "--session", "one", "first prompt")
	p.must("", "loop", "start", "--session", "two", "second prompt")
	h1 := p.hook(hook.Stop, loopStop("one", "x"))
	h2 := p.hook(hook.Stop, loopStop("two", "x"))
	if !strings.Contains(h1.Reason, "first prompt") || strings.Contains(h1.Reason, "second prompt") {
		t.Errorf("loop one was told:\n%s", h1.Reason)
	}
	if !strings.Contains(h2.Reason, "second prompt") || strings.Contains(h2.Reason, "first prompt") {
		t.Errorf("loop two was told:\n%s", h2.Reason)
	}
	p.must("", "do", "--session", "q", "a queued task")
	if r := p.drover("", "loop", "start", "--session", "q", "p"); r.code == 0 || !strings.Contains(r.stderr, "active queue") {
		t.Errorf("a loop over an active queue: exit %d %q", r.code, r.stderr)
	}
}

func TestLoopTrackerQuarantinedAndCompactContext(t *testing.T) {
	p := newProj(t)
	id := "tracked"
	p.must("", "loop", "start", "--session", id, "tracked prompt")
	st := p.loopStatus(id)
	if err := os.WriteFile(st.Tracker, []byte("---\niteration: [broken\n---\nnotes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := p.hook(hook.Stop, loopStop(id, "x"))
	if !h.IsBlock() || !strings.Contains(h.SystemMessage, "loop.md") {
		t.Fatalf("stop with a broken tracker: %+v", h)
	}
	moved, _ := filepath.Glob(st.Tracker + ".corrupt-*")
	if len(moved) != 1 {
		t.Errorf("the broken tracker was not set aside: %v", moved)
	}
	if data, err := os.ReadFile(st.Tracker); err != nil || !strings.HasSuffix(string(data), "\n---\nnotes\n") {
		t.Errorf("after quarantine the tracker does not keep the agent's notes: %v\n%s", err, data)
	}
	h = p.hook(hook.SessionStart, map[string]any{"session_id": id, "source": "compact"})
	if h.HookSpecificOutput == nil || !strings.Contains(h.HookSpecificOutput.AdditionalContext, "tracked prompt") {
		t.Errorf("compaction context: %+v", h)
	}
}

func TestComponentsAsCommands(t *testing.T) {
	p := newProj(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	in := write("route.json", `{"phase":"iterating","last_outcome":"tests_failed","convergence_status":"progressing"}`)
	out := filepath.Join(dir, "route-out.json")
	p.must("", "route", "--input", in, "--output", out)
	var r map[string]any
	if err := readJSONFile(out, &r); err != nil || r["agent"] != "dev:debugger" {
		t.Errorf("route: %v %v", r, err)
	}
	metrics := write("metrics.json", `[{"iteration":1,"test_pass_rate":0.5},{"iteration":2,"test_pass_rate":0.5},{"iteration":3,"test_pass_rate":0.5},{"iteration":4,"test_pass_rate":0.5}]`)
	state := write("state.json", `{"iteration":4,"max_iterations":20}`)
	out = filepath.Join(dir, "conv.json")
	p.must("", "converge", "--metrics", metrics, "--state", state, "--output", out)
	var c map[string]string
	if err := readJSONFile(out, &c); err != nil || c["status"] != "stuck_plateau" || c["reason"] == "" {
		t.Errorf("converge: %v %v", c, err)
	}
	// The thresholds come from the project's configuration.
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("loop:\n  success_pass_rate: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.must("", "converge", "--metrics", metrics, "--state", state, "--output", out)
	if err := readJSONFile(out, &c); err != nil || c["status"] != "converged_success" || !strings.Contains(c["reason"], "success threshold 0.50") {
		t.Errorf("converge with loop.success_pass_rate 0.5: %v %v", c, err)
	}
	progress := write("progress.json", `[{"iteration":1,"test_pass_rate":0.1},{"iteration":2,"test_pass_rate":0.2},{"iteration":3,"test_pass_rate":0.3},{"iteration":4,"test_pass_rate":0.4}]`)
	p.must("", "converge", "--metrics", progress, "--state", state, "--output", out)
	if err := readJSONFile(out, &c); err != nil || c["status"] != "progressing" {
		t.Errorf("converge of a rising pass rate: %v %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("loop:\n  min_improvement: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.must("", "converge", "--metrics", progress, "--state", state, "--output", out)
	if err := readJSONFile(out, &c); err != nil || c["status"] != "stuck_plateau" || !strings.Contains(c["reason"], "needs 0.50") {
		t.Errorf("converge with loop.min_improvement 0.5: %v %v", c, err)
	}
	if r := p.drover("", "route", "--input", filepath.Join(dir, "missing.json"), "--output", out); r.code == 0 || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("route with a missing input: exit %d %q", r.code, r.stderr)
	}
}

// TestRouteCommand: drover route takes seed 004's words as aliases,
// refuses unknown values naming the field, and applies loop.routes.
func TestRouteCommand(t *testing.T) {
	p := newProj(t)
	dir := t.TempDir()
	route := func(input string) (map[string]any, result) {
		t.Helper()
		in := filepath.Join(dir, "in.json")
		if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.json")
		_ = os.Remove(out)
		r := p.drover("", "route", "--input", in, "--output", out)
		var got map[string]any
		if r.code == 0 {
			if err := readJSONFile(out, &got); err != nil {
				t.Fatal(err)
			}
		}
		return got, r
	}
	for _, c := range []struct{ input, agent string }{
		{`{"phase":"implementing","last_outcome":"test_fail"}`, "dev:debugger"},
		{`{"phase":"implementing","last_outcome":"test_fail","convergence_status":"stuck_plateau"}`, "dev:architect"},
		{`{"phase":"initial","last_outcome":null,"convergence_status":null}`, "dev:developer"},
		{`{"phase":"iterating","last_outcome":"build_failure"}`, "dev:debugger"},
		// The counterparts seed 004's tooling writes.
		{`{"phase":"implementing","last_outcome":"test_pass","convergence_status":null}`, "dev:developer"},
		{`{"phase":"implementing","last_outcome":"build_fail","convergence_status":null}`, "dev:debugger"},
		{`{"phase":"implementing","last_outcome":"build_pass","convergence_status":null}`, "dev:developer"},
		{`{"phase":"implementing","last_outcome":"lint_fail","convergence_status":null}`, "dev:developer"},
		{`{"phase":"implementing","last_outcome":"lint_pass","convergence_status":null}`, "dev:developer"},
		{`{"phase":"implementing","last_outcome":"lint_fail","convergence_status":"thrashing"}`, "dev:architect"},
	} {
		if got, r := route(c.input); r.code != 0 || got["agent"] != c.agent {
			t.Errorf("route %s = %v (exit %d %q), want %s", c.input, got, r.code, r.stderr, c.agent)
		}
	}
	for _, c := range []struct{ input, says string }{
		{`{"phase":"implementing","last_outcome":"tests_flaked"}`, `unknown last_outcome "tests_flaked"`},
		{`{"phase":"implementing","last_outcome":"deploy_fail"}`, `unknown last_outcome "deploy_fail"`},
		{`{"phase":"testing"}`, `unknown phase "testing"`},
		{`{"phase":"iterating","convergence_status":"stuck"}`, `unknown convergence_status "stuck"`},
		{`{"last_outcome":"test_fail"}`, "no phase"},
	} {
		if got, r := route(c.input); r.code == 0 || !strings.Contains(r.stderr, c.says) {
			t.Errorf("route %s = %v (exit %d %q), want an error saying %q", c.input, got, r.code, r.stderr, c.says)
		}
	}

	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "loop:\n  routes: 'last_outcome=tests_failed -> tester; last_outcome=lint_failed -> linter; anything -> developer'\n"
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, r := route(`{"phase":"implementing","last_outcome":"test_fail"}`); r.code != 0 || got["role"] != "tester" || got["agent"] != "dev:tester" {
		t.Errorf("route with loop.routes = %v (exit %d %q), want the tester", got, r.code, r.stderr)
	}
	if got, r := route(`{"phase":"implementing","last_outcome":"lint_fail"}`); r.code != 0 || got["role"] != "linter" {
		t.Errorf("lint_fail with loop.routes = %v (exit %d %q), want the linter", got, r.code, r.stderr)
	}
}

func TestStopEndsALoopAndQueueCommandsDoNotTakeOver(t *testing.T) {
	p := newProj(t)
	id := "loop-stop"
	p.must("", "loop", "start", "--session", id, "a loop")
	p.must("", "add", "--session", id, "a task")
	if r := p.drover("", "start", "--session", id); r.code == 0 || !strings.Contains(r.stderr, "runs a loop") {
		t.Errorf("queue start over a running loop: exit %d %q", r.code, r.stderr)
	}
	out := p.must("", "stop", "--session", id)
	if !strings.Contains(out, "Stopped the loop") {
		t.Errorf("stop printed %q", out)
	}
	if st := p.loopStatus(id); st.Active || st.Outcome != "cancelled" {
		t.Errorf("after drover stop: %+v", st)
	}
	if h := p.hook(hook.Stop, loopStop(id, "x")); h.IsBlock() {
		t.Errorf("a stop after drover stop blocked: %+v", h)
	}
}

// loopSlowCheck is a loop.check_command that records its pid in
// check-pid, starts a sleeper in a session of its own that records its
// pid in check-orphan-pid, and waits (boundedly) for "release".
const loopSlowCheck = `#!/bin/sh
d=$(dirname "$0")
echo $$ > "$d/check-pid"
setsid sh -c 'echo $$ > "$1/check-orphan-pid"; exec sleep 3600' sh "$d" </dev/null >/dev/null 2>&1 &
i=0
while [ ! -f "$d/release" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done
`

// TestLoopCheckKill9LeavesNothingRunning kills the real supervisor with
// SIGKILL while a loop's check command runs with a child in a session of
// its own: the watchdog ends both.
func TestLoopCheckKill9LeavesNothingRunning(t *testing.T) {
	p := newProj(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(script, []byte(loopSlowCheck), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("loop:\n  check_command: \"'"+script+"'\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const id = "loop-kill9"
	p.must("", "loop", "start", "--session", id, "--require-checks", "--completion-promise", "DONE", "make it work")
	if h := p.hook(hook.Stop, loopStop(id, "<promise>DONE</promise>")); !h.IsBlock() || !strings.Contains(h.Reason, "running the project's checks") {
		t.Fatalf("the promise did not start the checks: %+v", h)
	}
	pids := map[string]int{}
	if !eventually.Holds(30*time.Second, func() bool {
		for _, name := range []string{"check-pid", "check-orphan-pid"} {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				pids[name] = pid
			}
		}
		return len(pids) == 2
	}) {
		t.Fatalf("the check command never started its child: %v", pids)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	pid := p.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	for name, pid := range pids {
		if !gone(pid, 30*time.Second) {
			t.Errorf("%s (pid %d) outlived the supervisor", name, pid)
		}
	}
}

// TestLoopStatusShowsTheBudgets: the time and dollar budgets, the
// checkpoint period and the checks a loop was started with are in
// drover loop status, as JSON and as text.
func TestLoopStatusShowsTheBudgets(t *testing.T) {
	p := newProj(t)
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("loop:\n  check_command: \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.must("", "loop", "start", "--session", "b", "--max-iterations", "7", "--max-minutes", "90", "--max-usd", "12.5",
		"--checkpoint-every", "3", "--require-checks", "make it work")
	st := p.loopStatus("b")
	if st.MaxIterations != 7 || st.MaxMinutes != 90 || st.MaxUSD != 12.5 || st.CheckpointEvery != 3 || !st.RequireChecks {
		t.Errorf("status --json: %+v", st)
	}
	// drover status --json has the dollar budget too, with what the loop
	// spent against it (nothing yet: omitted).
	var all struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(p.must("", "status", "--json")), &all); err != nil {
		t.Fatalf("drover status --json: %v", err)
	}
	if len(all.Sessions) != 1 || all.Sessions[0]["budget_usd"] != 12.5 || all.Sessions[0]["spent_usd"] != nil {
		t.Errorf("drover status --json sessions = %v, want b with budget_usd 12.5 and no spent_usd", all.Sessions)
	}
	out := p.must("", "loop", "status", "--session", "b")
	for _, want := range []string{"iteration 1 of 7", "budget: 90 min, $12.50; spent unknown", "checkpoint review: every 3 iteration(s)", "checks: required"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	p.must("", "loop", "start", "--session", "plain", "make it work")
	if out := p.must("", "loop", "status", "--session", "plain"); strings.Contains(out, "budget:") || strings.Contains(out, "checkpoint") || strings.Contains(out, "checks:") {
		t.Errorf("a loop without those budgets shows them:\n%s", out)
	}
}

// TestLoopStatusWithoutALoop: in a session where no loop ever ran, the
// status says so instead of "iteration 0 of 0" and a tracker that does not
// exist.
func TestLoopStatusWithoutALoop(t *testing.T) {
	p := newProj(t)
	out := p.must("", "loop", "status", "--session", "never")
	if !strings.Contains(out, "session never has no loop") || strings.Contains(out, "tracker:") {
		t.Errorf("status of a session without a loop:\n%s", out)
	}
	p.must("", "loop", "start", "--session", "never", "make it work")
	p.must("", "loop", "cancel", "--session", "never")
	if out := p.must("", "loop", "status", "--session", "never"); !strings.Contains(out, "ended: cancelled") {
		t.Errorf("status of a cancelled loop:\n%s", out)
	}
}

// slashLoop runs the plugin's /drover:loop command as Claude Code does.
func (p *proj) slashLoop(id, arguments string) string {
	p.t.Helper()
	return p.slash("loop", id, arguments)
}

// TestLoopSlashCommandCancelAndStatus: /drover:loop cancel and
// /drover:loop status, as seed 004's /dev:loop cancel, are the commands,
// with a loop running and without one; they never start a loop on the
// prompt "cancel". A quoted "cancel" is still a prompt.
func TestLoopSlashCommandCancelAndStatus(t *testing.T) {
	p := newProj(t)
	const id = "slash"

	out := p.slashLoop(id, "cancel")
	if !strings.Contains(out, "no loop is running in session "+id+": nothing to cancel") {
		t.Errorf("/drover:loop cancel without a loop printed:\n%s", out)
	}
	out = p.slashLoop(id, "status")
	if !strings.Contains(out, "session "+id+" has no loop") {
		t.Errorf("/drover:loop status without a loop printed:\n%s", out)
	}
	if st := p.loopStatus(id); st.Active || !st.StartedAt.IsZero() {
		t.Fatalf("cancel or status without a loop started one: %+v", st)
	}

	p.slashLoop(id, `"fix the parser" --max-iterations 3`)
	out = p.slashLoop(id, " status ")
	if !strings.Contains(out, "loop of session "+id+": active, iteration 1 of 3") {
		t.Errorf("/drover:loop status printed:\n%s", out)
	}
	out = p.slashLoop(id, "Cancel")
	if !strings.Contains(out, "Cancelled the loop of session "+id) {
		t.Errorf("/drover:loop Cancel printed:\n%s", out)
	}
	if st := p.loopStatus(id); st.Active || st.Outcome != "cancelled" || st.Prompt != "fix the parser" || st.MaxIterations != 3 {
		t.Errorf("after /drover:loop cancel: %+v; want the loop on \"fix the parser\" cancelled", st)
	}
	if h := p.hook(hook.Stop, loopStop(id, "x")); h.IsBlock() {
		t.Errorf("a stop after /drover:loop cancel blocked: %+v", h)
	}
	out = p.slashLoop(id, "cancel")
	if !strings.Contains(out, "no loop is running in session "+id) {
		t.Errorf("a second /drover:loop cancel printed:\n%s", out)
	}

	p.slashLoop(id, `"cancel"`)
	if st := p.loopStatus(id); !st.Active || st.Prompt != "cancel" {
		t.Errorf("a quoted \"cancel\" did not start a loop on it: %+v", st)
	}
}
