//go:build unix

package agentrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
)

func TestRunScript(t *testing.T) {
	spec := fakeSpec(t, "script")
	spec.OutputCap = 1024 // the 4 KiB assistant line is skipped
	var events []Event
	res, err := Run(context.Background(), spec, func(ev Event) { events = append(events, ev) })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Err != nil {
		t.Fatalf("Result.Err = %v (stderr %q)", res.Err, res.Stderr)
	}
	var types []string
	for _, ev := range events {
		types = append(types, ev.Type)
	}
	if want := []string{"system", "assistant", "stream_event", "user", "result"}; !reflect.DeepEqual(types, want) {
		t.Errorf("event types = %q, want %q", types, want)
	}
	if len(events) == 5 {
		if got := events[1].ToolCalls; len(got) != 2 || got[0].Command != "go test ./internal/lex/..." || got[1].Path != "a.go" {
			t.Errorf("tool calls = %+v", got)
		}
		if got := events[3].ToolResults; len(got) != 2 || !got[0].IsError || got[0].Text != "FAIL" || got[1].IsError {
			t.Errorf("tool results = %+v", got)
		}
	}
	want := Result{
		ExitCode: 0, CostUSD: 0.25, Turns: 3, FinalText: "All done.", Subtype: "success",
		SessionID: "fake-1", SawResult: true, ToolCalls: 2, Events: 5, Skipped: 2,
		Stderr: "fake: starting\n",
	}
	res.Duration = 0
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Result = %+v\nwant     %+v", res, want)
	}
}

func TestRunPassesPromptDirEnvAndNoStdin(t *testing.T) {
	dir := t.TempDir()
	spec := fakeSpec(t, "probe", "AGENTRUN_PROBE=seen")
	spec.Args = []string{"--print"}
	spec.Dir = dir
	spec.Prompt = "-rf is not a flag"
	res, err := Run(context.Background(), spec, nil)
	if err != nil || res.Err != nil {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	resolved, _ := filepath.EvalSymlinks(dir)
	want := "stdin=0 dir=" + resolved + ` probe=seen args=["--print" " -rf is not a flag"]`
	if res.FinalText != want {
		t.Errorf("fake saw %q\nwant      %q", res.FinalText, want)
	}
}

func TestRunOutcomes(t *testing.T) {
	tests := []struct {
		scenario string
		wantErr  error
		errText  string
		exit     int
		isError  bool
	}{
		{scenario: "fail", errText: "exit status 3: fake: not logged in", exit: 3, isError: true},
		{scenario: "agent-error", wantErr: ErrAgentError, errText: "(error_max_turns)", isError: true},
		{scenario: "no-result", wantErr: ErrNoResult},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			res, err := Run(context.Background(), fakeSpec(t, tt.scenario), nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Err == nil || (tt.wantErr != nil && !errors.Is(res.Err, tt.wantErr)) || !strings.Contains(res.Err.Error(), tt.errText) {
				t.Errorf("Result.Err = %v, want %v containing %q", res.Err, tt.wantErr, tt.errText)
			}
			if res.ExitCode != tt.exit || res.IsError != tt.isError || res.TimedOut {
				t.Errorf("exit %d, is_error %v, timed out %v; want %d, %v, false", res.ExitCode, res.IsError, res.TimedOut, tt.exit, tt.isError)
			}
		})
	}
}

func TestRunSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{name: "no binary", spec: Spec{}, want: "no binary"},
		{name: "missing binary", spec: Spec{Bin: filepath.Join(t.TempDir(), "nope")}, want: "starting agent"},
		{name: "prompt too long", spec: Spec{Bin: "true", Prompt: strings.Repeat("x", MaxPromptArg+1)}, want: "more than the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			res, err := Run(context.Background(), tt.spec, func(Event) { called = true })
			if err == nil || !strings.Contains(err.Error(), tt.want) || res.ExitCode != -1 || called {
				t.Errorf("Run = %+v, %v; want an error containing %q", res, err, tt.want)
			}
		})
	}
}

// grandchildPid reads the pid the fake's grandchild wrote.
func grandchildPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitDead waits until pid is gone or a zombie; it fails the test, and
// kills pid, if the process is still running after a generous bound.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	if !eventually.Holds(20*time.Second, func() bool { return dead(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d outlived the agent", pid)
	}
}

func dead(pid int) bool {
	// A killed orphan stays a zombie until init reaps it, and a container's
	// init may never do so: a zombie is dead.
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
			return s[i+2] == 'Z' || s[i+2] == 'X'
		}
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestRunTimeoutKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, "hang", fakePidFile+"="+pidFile)
	spec.Timeout = 2 * time.Second
	spec.WaitDelay = 100 * time.Millisecond
	var sawInit bool
	res, err := Run(context.Background(), spec, func(ev Event) { sawInit = sawInit || ev.Subtype == "init" })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !errors.Is(res.Err, ErrTimeout) || !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Result = %+v; want a timeout", res)
	}
	if !sawInit {
		t.Error("init event not seen before the timeout")
	}
	waitDead(t, grandchildPid(t, pidFile))
}

func TestRunCancelKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, "hang", fakePidFile+"="+pidFile)
	spec.WaitDelay = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the agent is under way: its grandchild exists by then.
	res, err := Run(ctx, spec, func(ev Event) {
		if ev.Subtype == "init" {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !errors.Is(res.Err, context.Canceled) || res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Result = %+v; want a cancellation", res)
	}
	waitDead(t, grandchildPid(t, pidFile))
}

func TestRunOrphanHoldingOutput(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, "orphan", fakePidFile+"="+pidFile)
	spec.WaitDelay = 100 * time.Millisecond
	res, err := Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Err != nil || res.ExitCode != 0 || res.FinalText != "All done." {
		t.Errorf("Result = %+v; want a clean finish", res)
	}
	waitDead(t, grandchildPid(t, pidFile))
}

func TestRunAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, fakeSpec(t, "sleep", fakeSleep+"=1h"), nil)
	// exec refuses to start with a done context.
	if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
		t.Errorf("Run = %+v, %v; want it not to run", res, err)
	}
}

func TestFakeBinaryIsNotAShell(t *testing.T) {
	// Run must not go through a shell: a prompt with shell syntax arrives
	// as one argument, unexpanded.
	spec := fakeSpec(t, "probe")
	spec.Args = nil
	spec.Prompt = "$(touch pwned); `id` > x"
	spec.Dir = t.TempDir()
	res, err := Run(context.Background(), spec, nil)
	if err != nil || res.Err != nil {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.HasSuffix(res.FinalText, `args=["$(touch pwned); `+"`id`"+` > x"]`) {
		t.Errorf("fake saw %q", res.FinalText)
	}
	if _, err := os.Stat(filepath.Join(spec.Dir, "pwned")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the prompt was run by a shell")
	}
}

// Run reads a codex or gemini agent's stream in its format: the outcome,
// the tool calls and the cost priced from its tokens.
func TestRunOtherCLIFormats(t *testing.T) {
	for _, tc := range []struct {
		stream string
		format Format
		exit   string
		errIs  error
		want   func(Result) bool
	}{
		{"gemini-tool.jsonl", FormatGemini, "0", nil, func(r Result) bool {
			// 20 input and 2 output tokens of gemini-2.5-flash.
			return r.FinalText == "ok" && r.ToolCalls == 1 && r.SessionID == "7720d07c-52b9-4413-95b3-0cd28ca17929" && r.CostUSD == testPrice("", 20, 0, 2)
		}},
		{"gemini-error.jsonl", FormatGemini, "0", ErrAgentError, func(r Result) bool {
			return r.IsError && strings.Contains(r.FinalText, "FAIL400")
		}},
		{"codex-tool.jsonl", FormatCodex, "0", nil, func(r Result) bool {
			return r.FinalText == "ok" && r.ToolCalls == 3 && r.CostUSD == testPrice("", 4000, 20000, 1000)
		}},
		// codex exits 1 after turn.failed.
		{"codex-failed.jsonl", FormatCodex, "1", nil, func(r Result) bool {
			return r.IsError && r.ExitCode == 1 && strings.Contains(r.Err.Error(), "exit status 1")
		}},
	} {
		t.Run(tc.stream, func(t *testing.T) {
			spec := fakeSpec(t, "replay:"+tc.stream, "AGENTRUN_EXIT="+tc.exit)
			spec.Format, spec.Price, spec.Args = tc.format, testPrice, nil
			res, err := Run(context.Background(), spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.errIs == nil && tc.exit == "0") != (res.Err == nil) || tc.errIs != nil && !errors.Is(res.Err, tc.errIs) || !tc.want(res) {
				t.Errorf("Result = %+v", res)
			}
		})
	}
}
