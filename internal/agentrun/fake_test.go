package agentrun

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
)

// The test binary doubles as a fake agent CLI: run with fakeEnv set, it
// plays the scenario named there instead of running tests.
const (
	fakeEnv     = "AGENTRUN_FAKE"
	fakePidFile = "AGENTRUN_FAKE_PIDFILE" // where a grandchild writes its pid
	fakeSleep   = "AGENTRUN_FAKE_SLEEP"   // how long the "sleep" scenario takes
)

func TestMain(m *testing.M) {
	if scenario := os.Getenv(fakeEnv); scenario != "" {
		os.Exit(fakeAgent(scenario))
	}
	os.Exit(m.Run())
}

// fakeSpec is a Spec that runs the test binary as a fake agent.
func fakeSpec(t testing.TB, scenario string, env ...string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Bin: exe, Args: ClaudeArgs(), Env: append([]string{fakeEnv + "=" + scenario}, env...)}
}

const (
	lineInit         = `{"type":"system","subtype":"init","session_id":"fake-1","model":"fake-model","tools":["Bash","Read"]}`
	lineAssistant    = `{"type":"assistant","message":{"model":"fake-model","content":[{"type":"text","text":"Running tests."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./internal/lex/..."}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a.go"}}]},"session_id":"fake-1"}`
	lineResults      = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"FAIL"},{"type":"tool_result","tool_use_id":"t2","content":"package a"}]},"session_id":"fake-1"}`
	line429Assistant = `{"type":"assistant","message":{"id":"d8","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: Request rejected (429) · usage limit reached, resets at 2026-01-01T12:30:00Z"}]},"parent_tool_use_id":null,"session_id":"fake-1","error":"rate_limit"}`
	line429Result    = `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":258,"num_turns":1,"result":"API Error: Request rejected (429) · usage limit reached, resets at 2026-01-01T12:30:00Z","stop_reason":"stop_sequence","session_id":"fake-1","total_cost_usd":0}`
	lineResult       = `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.25,"result":"All done.","session_id":"fake-1"}`
)

func fakeAgent(scenario string) int {
	out := os.Stdout
	say := func(lines ...string) {
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
	if name, ok := strings.CutPrefix(scenario, "replay:"); ok {
		// A recorded stream of testdata/streams, then the exit code of
		// AGENTRUN_EXIT.
		data, err := os.ReadFile(filepath.Join("testdata", "streams", name))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		_, _ = out.Write(data)
		code, _ := strconv.Atoi(os.Getenv("AGENTRUN_EXIT"))
		return code
	}
	switch scenario {
	case "script":
		fmt.Fprintln(os.Stderr, "fake: starting")
		say(lineInit, "not json at all", lineAssistant, `{"type":"stream_event","event":{}}`)
		say(`{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", 4096) + `"}]}}`)
		say(lineResults)
		// The result line arrives in pieces and without a newline.
		fmt.Fprint(out, lineResult[:20])
		out.Sync()
		time.Sleep(10 * time.Millisecond)
		fmt.Fprint(out, lineResult[20:])
		return 0
	case "probe":
		stdin, _ := io.ReadAll(os.Stdin)
		dir, _ := os.Getwd()
		text := fmt.Sprintf("stdin=%d dir=%s probe=%s args=%q", len(stdin), dir, os.Getenv("AGENTRUN_PROBE"), os.Args[1:])
		say(fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":%s}`, strconv.Quote(text)))
		return 0
	case "fail":
		say(lineInit, `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"Not logged in"}`)
		fmt.Fprintln(os.Stderr, "some noise\nfake: not logged in")
		return 3
	case "agent-error":
		say(lineInit, `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":9}`)
		return 0
	case "limit":
		// What Claude Code 2.1.197 prints when the API answers 429 and it
		// gives up retrying (CLAUDE_CODE_MAX_RETRIES=0).
		say(lineInit, line429Assistant, line429Result)
		return 1
	case "no-result":
		say(lineInit, lineAssistant)
		return 0
	case "sleep":
		d, _ := time.ParseDuration(os.Getenv(fakeSleep))
		time.Sleep(d)
		say(lineResult)
		return 0
	case "hang":
		// A tool that runs in the background, then an agent that never ends.
		if err := spawnGrandchild(false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		say(lineInit)
		time.Sleep(time.Hour)
		return 0
	case "setsid":
		// A clean finish that leaves a tool call running in a session of
		// its own, as Claude Code runs its Bash tool calls.
		if err := spawnGrandchild(false, setsid); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		say(lineInit, lineResult)
		return 0
	case "orphan":
		// A clean finish that leaves a process holding stdout open.
		if err := spawnGrandchild(true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		say(lineInit, lineResult)
		return 0
	case "grandchild":
		if err := os.WriteFile(os.Getenv(fakePidFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return 1
		}
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake agent: unknown scenario %q\n", scenario)
	return 2
}

// setsid starts a command in a session of its own, out of reach of a kill
// of its parent's process group.
func setsid(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// spawnGrandchild starts the test binary again as a long sleeper, in the
// fake agent's process group unless an option moves it, and waits until it
// has written its pid.
func spawnGrandchild(holdStdout bool, opts ...func(*exec.Cmd)) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fakeEnv+"=grandchild")
	if holdStdout {
		cmd.Stdout = os.Stdout
	}
	for _, o := range opts {
		o(cmd)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if eventually.Holds(5*time.Second, func() bool {
		b, err := os.ReadFile(os.Getenv(fakePidFile))
		return err == nil && len(b) > 0
	}) {
		return nil
	}
	return fmt.Errorf("grandchild did not start")
}
