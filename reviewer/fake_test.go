package reviewer

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake reviewer CLI (the os/exec test pattern):
// run with fakeEnv set, TestMain acts as the CLI instead of running tests.
// What it does is scripted by FAKE_* variables in its environment.
const fakeEnv = "DROVER_FAKE_REVIEWER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(fakeMain())
	}
	os.Exit(m.Run())
}

// fakeMain is the fake CLI. Variables, all optional:
//
//	FAKE_ARGS_FILE     write {"args","guard","claudecode","stdin"} as JSON there
//	FAKE_GRANDCHILD    write the pid of a sleeping grandchild there
//	FAKE_SETSID        start that grandchild in a session of its own, as
//	                   the claude CLI runs its Bash tool calls
//	FAKE_SLEEP         sleep this long (a time.Duration) before answering
//	FAKE_HUGE          write this many bytes to stdout and to stderr first
//	FAKE_STDERR        text for stderr
//	FAKE_STDOUT        exact stdout (overrides the envelope)
//	FAKE_VERDICT       the envelope's verdict (default PASS)
//	FAKE_FINDINGS      the envelope's findings, as JSON
//	FAKE_NITS          a seed: 1-4 random minor findings, verdict FAIL
//	FAKE_REVIEW        the answer's review text (no "review" when unset)
//	FAKE_DENIALS       claude's permission_denials, as JSON
//	FAKE_IS_ERROR      claude's envelope is an error (is_error, no answer)
//	FAKE_VERBOSE       print the --verbose array instead of one object
//	FAKE_CLI           codex or gemini: print that CLI's output instead of
//	                   claude's envelope (JSON Lines events; a JSON object
//	                   whose response holds the verdict in a code fence);
//	                   auto: the output of the CLI its arguments are for
//	FAKE_HANG_AFTER    after answering, sleep this long (a time.Duration)
//	FAKE_KILL_SELF     after answering, die by SIGKILL
//	FAKE_EXIT          exit code (default 0)
//
// The FAKE_ARGS_FILE record also holds "schema_file", the content of the
// file named after --output-schema (codex), read while the fake runs.
func fakeMain() int {
	if p := os.Getenv("FAKE_ARGS_FILE"); p != "" {
		stdin, _ := io.ReadAll(os.Stdin)
		rec := map[string]any{
			"args":       os.Args[1:],
			"guard":      os.Getenv(GuardEnv),
			"claudecode": os.Getenv("CLAUDECODE"),
			"stdin":      string(stdin),
		}
		if i := slices.Index(os.Args, "--output-schema"); i > 0 && i+1 < len(os.Args) {
			data, err := os.ReadFile(os.Args[i+1])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			rec["schema_file"] = string(data)
		}
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	}
	if p := os.Getenv("FAKE_GRANDCHILD"); p != "" {
		// sleep(1) starts faster than another copy of the test binary,
		// which matters on a loaded machine.
		cmd := exec.Command("sleep", "3600")
		if _, err := exec.LookPath("sleep"); err != nil {
			cmd = exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "FAKE_GRANDCHILD=", "FAKE_SLEEP=1h", "FAKE_ARGS_FILE=")
		}
		cmd.Stdout = os.Stdout // holds the reviewer's stdout pipe open
		if os.Getenv("FAKE_SETSID") != "" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if err := os.WriteFile(p, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
			return 3
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("FAKE_HUGE")); n > 0 {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for left := n; left > 0; left -= len(chunk) {
			c := chunk[:min(left, len(chunk))]
			os.Stdout.Write(c)
			os.Stderr.Write(c)
		}
	}
	if d, err := time.ParseDuration(os.Getenv("FAKE_SLEEP")); err == nil {
		time.Sleep(d)
	}
	if s := os.Getenv("FAKE_STDERR"); s != "" {
		fmt.Fprint(os.Stderr, s)
	}
	if s, ok := os.LookupEnv("FAKE_STDOUT"); ok {
		fmt.Print(s)
	} else {
		fmt.Println(fakeEnvelope())
	}
	if d, err := time.ParseDuration(os.Getenv("FAKE_HANG_AFTER")); err == nil {
		time.Sleep(d)
	}
	if os.Getenv("FAKE_KILL_SELF") != "" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	}
	code, _ := strconv.Atoi(os.Getenv("FAKE_EXIT"))
	return code
}

func fakeEnvelope() string {
	verdict := os.Getenv("FAKE_VERDICT")
	if verdict == "" {
		verdict = VerdictPass
	}
	findings := json.RawMessage(`[]`)
	if f := os.Getenv("FAKE_FINDINGS"); f != "" {
		findings = json.RawMessage(f)
	}
	if seed, err := strconv.ParseUint(os.Getenv("FAKE_NITS"), 10, 64); err == nil {
		r := rand.New(rand.NewPCG(seed, uint64(os.Getpid())))
		var nits []Finding
		for i := range 1 + r.IntN(4) {
			nits = append(nits, Finding{Severity: SeverityMinor, File: fmt.Sprintf("pkg/f%d.go", r.IntN(9)), Line: 1 + r.IntN(300), Summary: fmt.Sprintf("nit %d: rename variable v%d", i, r.IntN(1000))})
		}
		findings, _ = json.Marshal(nits)
		verdict = VerdictFail
	}
	answer := map[string]any{"verdict": verdict, "findings": findings}
	if r, ok := os.LookupEnv("FAKE_REVIEW"); ok {
		answer["review"] = r
	}
	so, _ := json.Marshal(answer)
	cli := os.Getenv("FAKE_CLI")
	if cli == "auto" {
		// As the command line says: a mixed cycle runs one fake as
		// several CLIs.
		switch {
		case len(os.Args) > 1 && os.Args[1] == "exec":
			cli = CLICodex
		case slices.Contains(os.Args, "--approval-mode"):
			cli = CLIGemini
		}
	}
	switch cli {
	case CLICodex:
		msg, _ := json.Marshal(string(so))
		return `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading the plan**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"plan.md\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":` + string(msg) + `}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}`
	case CLIGemini:
		out, _ := json.MarshalIndent(map[string]any{
			"session_id": "s",
			"response":   "Here is my review.\n```json\n" + string(so) + "\n```",
			"stats": map[string]any{"models": map[string]any{"gemini-2.5-pro": map[string]any{
				"api":    map[string]any{"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5000},
				"tokens": map[string]any{"input": 700, "prompt": 900, "candidates": 60, "total": 1000, "cached": 200, "thoughts": 40, "tool": 0},
			}}},
		}, "", "  ")
		return string(out)
	}
	denials := "[]"
	if d := os.Getenv("FAKE_DENIALS"); d != "" {
		denials = d
	}
	env := fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"","structured_output":%s,"session_id":"s","total_cost_usd":0.25,"duration_ms":10,"permission_denials":%s}`, so, denials)
	if os.Getenv("FAKE_IS_ERROR") != "" {
		env = fmt.Sprintf(`{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":9,"result":"","session_id":"s","total_cost_usd":0.25,"duration_ms":10,"permission_denials":%s}`, denials)
	}
	if os.Getenv("FAKE_VERBOSE") != "" {
		return `[{"type":"system","subtype":"init"},{"type":"assistant","message":{}},` + env + `]`
	}
	return env
}

// fake returns a Spec that runs the fake CLI as claude, scripted by kv
// ("FAKE_X=value" pairs).
func fake(kv ...string) Spec {
	return Spec{
		CLI:     CLIClaude,
		Path:    os.Args[0],
		Model:   "opus",
		Prompt:  "Review the work.",
		Timeout: time.Minute,
		Env:     append(append(os.Environ(), fakeEnv+"=1"), kv...),
	}
}
