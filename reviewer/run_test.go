package reviewer

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/templates"
)

func TestRunPassAndFail(t *testing.T) {
	tests := []struct {
		name     string
		kv       []string
		outcome  Outcome
		findings int
	}{
		{"pass", nil, Pass, 0},
		{"fail", []string{"FAKE_VERDICT=FAIL", `FAKE_FINDINGS=[{"severity":"blocking","file":"a.go","line":3,"summary":"bug"}]`}, Fail, 1},
		{"verbose array", []string{"FAKE_VERBOSE=1", "FAKE_VERDICT=FAIL"}, Fail, 0},
		{"stderr noise does not matter", []string{"FAKE_STDERR=warning: slow\n"}, Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run(context.Background(), fake(tt.kv...))
			if r.Err != nil || r.Outcome != tt.outcome || len(r.Findings) != tt.findings {
				t.Fatalf("outcome %s (err %v, %d findings), want %s with %d; stderr %q", r.Outcome, r.Err, len(r.Findings), tt.outcome, tt.findings, r.Stderr)
			}
			if r.Model != "opus" || r.ExitCode != 0 || r.CostUSD != 0.25 || r.Duration <= 0 {
				t.Errorf("model %q exit %d cost %v duration %v", r.Model, r.ExitCode, r.CostUSD, r.Duration)
			}
		})
	}
}

// TestRunInvocation checks what the CLI receives: seed 4.x flags, the
// recursion guard, no CLAUDECODE, and an empty (closed) stdin.
func TestRunInvocation(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "args.json")
	s := fake("FAKE_ARGS_FILE="+argsFile, "CLAUDECODE=1")
	s.Model = "sonnet"
	s.Prompt = "Review task-3.md; findings go to task-3-review-2.md"
	r := Run(context.Background(), s)
	if r.Outcome != Pass {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Args       []string
		Guard      string
		Claudecode string
		Stdin      string
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rec.Args, " ")
	for _, want := range []string{"--print", "--model sonnet", "--output-format json", "--json-schema {", `--settings {"disableAllHooks":true}`} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q: %q", want, rec.Args)
		}
	}
	if rec.Args[len(rec.Args)-1] != s.Prompt {
		t.Errorf("last arg = %q, want the prompt", rec.Args[len(rec.Args)-1])
	}
	if rec.Guard != "1" || rec.Claudecode != "" || rec.Stdin != "" {
		t.Errorf("guard %q, CLAUDECODE %q, stdin %q; want 1, unset, empty", rec.Guard, rec.Claudecode, rec.Stdin)
	}
}

// TestRunFailures checks that each way a run can go wrong is Failed, never
// a PASS or a FAIL, with an Err that says which.
func TestRunFailures(t *testing.T) {
	tests := []struct {
		name    string
		spec    func() Spec
		err     error
		errHas  string
		exit    int
		logHas  string
		noStart bool
	}{
		{
			name: "seed 4.10 CLI not found",
			spec: func() Spec {
				s := fake()
				s.Path = filepath.Join(t.TempDir(), "no-such-claude")
				return s
			},
			errHas: "starting reviewer", exit: -1, noStart: true,
		},
		{
			name: "seed 4.11 exit 1 with a passing envelope",
			spec: func() Spec { return fake("FAKE_EXIT=1", "FAKE_STDERR=boom on stderr") },
			err:  ErrExit, exit: 1, logHas: "boom on stderr",
		},
		{
			name:   "exit 1 after an is_error result says why",
			spec:   func() Spec { return fake("FAKE_EXIT=1", "FAKE_STDOUT="+envNotLoggedIn) },
			err:    ErrIsError,
			errHas: "Not logged in", exit: 1,
		},
		{
			name: "is_error with exit 0",
			spec: func() Spec { return fake("FAKE_STDOUT=" + envRateLimited) },
			err:  ErrIsError, exit: 0,
		},
		{
			name: "seed 4.12 no structured output",
			spec: func() Spec { return fake("FAKE_STDOUT=" + envNoStruct) },
			err:  ErrNoStructuredOutput, exit: 0, logHas: `--json-schema`,
		},
		{
			name: "unparsable stdout",
			spec: func() Spec { return fake("FAKE_STDOUT=Looks good to me! PASS") },
			err:  ErrUnparsable, exit: 0, logHas: "Looks good to me",
		},
		{
			name: "empty stdout",
			spec: func() Spec { return fake("FAKE_STDOUT=") },
			err:  ErrUnparsable, exit: 0,
		},
		{
			name: "bad verdict",
			spec: func() Spec { return fake("FAKE_VERDICT=MAYBE") },
			err:  ErrBadVerdict, exit: 0,
		},
		{
			name: "seed 4.13 timeout",
			spec: func() Spec {
				s := fake("FAKE_SLEEP=1h")
				s.Timeout = 200 * time.Millisecond
				return s
			},
			err: ErrTimeout, exit: -1, logHas: "timed out",
		},
		{
			name: "a PASS on stdout, then killed by a signal",
			spec: func() Spec { return fake("FAKE_KILL_SELF=1") },
			err:  ErrExit, errHas: "killed", exit: -1,
		},
		{
			name: "a PASS on stdout, then a hang until the timeout",
			spec: func() Spec {
				s := fake("FAKE_HANG_AFTER=1h")
				// Time to print the answer even on a loaded machine.
				s.Timeout = 3 * time.Second
				return s
			},
			err: ErrTimeout, exit: -1, logHas: `"structured_output":{"findings":[],"verdict":"PASS"}`,
		},
		{
			name: "binary garbage",
			spec: func() Spec { return fake("FAKE_STDOUT=\x01\x7f\xfe\xff{[\x1b[31m") },
			err:  ErrUnparsable, exit: 0,
		},
		{
			name:   "bad spec",
			spec:   func() Spec { s := fake(); s.Prompt = ""; return s },
			errHas: "prompt is empty", exit: -1, noStart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.spec()
			s.LogPath = filepath.Join(t.TempDir(), "logs", "review-1.log")
			r := Run(context.Background(), s)
			if r.Outcome != Failed || r.Verdict != "" || r.Findings != nil {
				t.Fatalf("outcome %s verdict %q findings %v, want Failed with neither", r.Outcome, r.Verdict, r.Findings)
			}
			if r.Err == nil || (tt.err != nil && !errors.Is(r.Err, tt.err)) || !strings.Contains(r.Err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want %v containing %q", r.Err, tt.err, tt.errHas)
			}
			if r.ExitCode != tt.exit {
				t.Errorf("exit code %d, want %d", r.ExitCode, tt.exit)
			}
			if Clean(r, true) || Clean(r, false) {
				t.Error("a failed run counts as clean")
			}
			log, err := os.ReadFile(s.LogPath)
			if err != nil {
				t.Fatalf("no failure log: %v", err)
			}
			for _, want := range []string{"error: ", "exit code: " + strconv.Itoa(tt.exit), tt.logHas} {
				if !strings.Contains(string(log), want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			if !tt.noStart && !strings.Contains(string(log), `"--print"`) {
				t.Errorf("log lacks the command line:\n%s", log)
			}
			if fi, err := os.Stat(s.LogPath); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

func TestRunLogShortensThePrompt(t *testing.T) {
	s := fake("FAKE_EXIT=2")
	s.Prompt = strings.Repeat("review every line carefully ", 200)
	s.LogPath = filepath.Join(t.TempDir(), "r.log")
	if r := Run(context.Background(), s); r.Outcome != Failed {
		t.Fatalf("outcome %s", r.Outcome)
	}
	log, _ := os.ReadFile(s.LogPath)
	if strings.Contains(string(log), s.Prompt) || !strings.Contains(string(log), "<5600 bytes>") {
		t.Errorf("the log holds the whole prompt or not its size:\n%s", log)
	}
}

func TestRunSuccessWritesNoLog(t *testing.T) {
	s := fake()
	s.LogPath = filepath.Join(t.TempDir(), "r.log")
	if r := Run(context.Background(), s); r.Outcome != Pass {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	if _, err := os.Stat(s.LogPath); !os.IsNotExist(err) {
		t.Errorf("a log was written for a good run: %v", err)
	}
}

// TestRunKillsTheGroup checks that a timeout or a cancel kills the
// reviewer's grandchildren too, and that Run does not wait for a grandchild
// that holds stdout open.
func TestRunKillsTheGroup(t *testing.T) {
	tests := []struct {
		name    string
		kv      []string
		timeout time.Duration
		cancel  bool
		outcome Outcome
		err     error
	}{
		// The timeout leaves the fake time to start its grandchild even
		// on a loaded machine; the test checks what dies, not how fast.
		{name: "timeout", kv: []string{"FAKE_SLEEP=1h"}, timeout: 3 * time.Second, outcome: Failed, err: ErrTimeout},
		{name: "cancel", kv: []string{"FAKE_SLEEP=1h"}, timeout: time.Minute, cancel: true, outcome: Failed, err: context.Canceled},
		{name: "normal exit leaves no straggler", timeout: time.Minute, outcome: Pass},
		// The group kill misses a grandchild in a session of its own; the
		// environment tag finds it.
		{name: "timeout with a grandchild in its own session", kv: []string{"FAKE_SLEEP=1h", "FAKE_SETSID=1"}, timeout: 3 * time.Second, outcome: Failed, err: ErrTimeout},
		{name: "normal exit leaves no straggler in its own session", kv: []string{"FAKE_SETSID=1"}, timeout: time.Minute, outcome: Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
			s := fake(append(tt.kv, "FAKE_GRANDCHILD="+pidFile)...)
			s.Timeout = tt.timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				go func() {
					eventually.Holds(10*time.Second, func() bool { _, err := os.Stat(pidFile); return err == nil })
					cancel()
				}()
			}
			r := Run(ctx, s)
			if r.Outcome != tt.outcome || (tt.err != nil && !errors.Is(r.Err, tt.err)) {
				t.Fatalf("outcome %s err %v, want %s %v", r.Outcome, r.Err, tt.outcome, tt.err)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the fake never started its grandchild: %v", err)
			}
			pid, _ := strconv.Atoi(string(data))
			if !eventually.Holds(10*time.Second, func() bool { return gone(pid) }) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("grandchild %d survived the run", pid)
			}
		})
	}
}

// gone reports whether pid no longer runs. A zombie counts as gone: it is
// dead, and only waits for a parent (init here) to reap it.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestRunOutputCap(t *testing.T) {
	const huge = 4 << 20
	s := fake("FAKE_HUGE=" + strconv.Itoa(huge))
	s.OutputCap = 64 << 10
	r := Run(context.Background(), s)
	if r.Outcome != Failed || !errors.Is(r.Err, ErrOutputTooLarge) {
		t.Fatalf("outcome %s err %v, want Failed with ErrOutputTooLarge", r.Outcome, r.Err)
	}
	if len(r.Stdout) != s.OutputCap || len(r.Stderr) != s.OutputCap || !r.StdoutTruncated || !r.StderrTruncated {
		t.Errorf("kept %d/%d bytes (truncated %v/%v), want %d each, truncated", len(r.Stdout), len(r.Stderr), r.StdoutTruncated, r.StderrTruncated, s.OutputCap)
	}
	if r.ExitCode != 0 {
		t.Errorf("exit code %d: the fake did not finish writing (blocked on a full pipe?)", r.ExitCode)
	}
}

func TestRunLimiter(t *testing.T) {
	l := NewLimiter(1)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s := fake()
	s.Limiter = l
	r := Run(ctx, s)
	if r.Outcome != Failed || !errors.Is(r.Err, context.DeadlineExceeded) || r.ExitCode != -1 {
		t.Fatalf("with no free slot: outcome %s err %v exit %d, want Failed before starting", r.Outcome, r.Err, r.ExitCode)
	}
	l.Release()
	if r := Run(context.Background(), s); r.Outcome != Pass {
		t.Fatalf("with a free slot: outcome %s err %v", r.Outcome, r.Err)
	}
	if l.InUse() != 0 {
		t.Errorf("Run did not release its slot: %d in use", l.InUse())
	}
}

func TestLimiter(t *testing.T) {
	var nilL *Limiter
	if err := nilL.Acquire(context.Background()); err != nil || nilL.InUse() != 0 || nilL.Size() != 0 {
		t.Fatal("a nil limiter limits")
	}
	nilL.Release()

	l := NewLimiter(0)
	if l.Size() != 1 {
		t.Fatalf("NewLimiter(0).Size() = %d, want 1", l.Size())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context got a slot: %v", err)
	}
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Release()
	l.Release() // one too many must not grow the limiter
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer tcancel()
	if err := l.Acquire(tctx); err == nil {
		t.Fatal("a second slot was granted by a limiter of one")
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "args.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Run(ctx, fake("FAKE_ARGS_FILE="+argsFile))
	if r.Outcome != Failed || !errors.Is(r.Err, context.Canceled) || r.ExitCode != -1 {
		t.Fatalf("outcome %s err %v exit %d", r.Outcome, r.Err, r.ExitCode)
	}
	if _, err := os.Stat(argsFile); !os.IsNotExist(err) {
		t.Error("the reviewer ran although the context was already done")
	}
}

// fakeAs returns a Spec that runs the fake CLI as cli, printing that CLI's
// output.
func fakeAs(cli, model string, kv ...string) Spec {
	s := fake(append([]string{"FAKE_CLI=" + cli}, kv...)...)
	s.CLI, s.Model = cli, model
	return s
}

type invocation struct {
	Args       []string
	Guard      string
	Claudecode string
	Stdin      string
	SchemaFile string `json:"schema_file"`
}

func readInvocation(t *testing.T, path string) invocation {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake recorded no invocation: %v", err)
	}
	var inv invocation
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestRunCodexAndGemini runs the fake as each CLI: the argv it received,
// the schema file codex read (and that Run removed), the verdict, findings
// and tokens parsed from each one's output.
func TestRunCodexAndGemini(t *testing.T) {
	blocking := `[{"severity":"blocking","file":"plan.md","line":4,"summary":"no rollback step"}]`
	tests := []struct {
		name          string
		spec          Spec
		wantArgs      func(inv invocation) []string
		outcome       Outcome
		findings      int
		input, output int64
		cost          float64
	}{
		{
			name: "codex",
			spec: fakeAs(CLICodex, "gpt-5-codex"),
			wantArgs: func(inv invocation) []string {
				return []string{"exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--output-schema", schemaPath(inv.Args), "--model", "gpt-5-codex", "Review the work."}
			},
			// 315 input, 24,448 cached and 122 output tokens at
			// gpt-5-codex's list prices.
			outcome: Pass, input: 24763, output: 122, cost: (315*1.25 + 24448*0.125 + 122*10) / 1e6,
		},
		{
			name: "gemini",
			spec: fakeAs(CLIGemini, "gemini-2.5-pro", "FAKE_VERDICT=FAIL", "FAKE_FINDINGS="+blocking),
			wantArgs: func(invocation) []string {
				return []string{"--model", "gemini-2.5-pro", "--output-format", "json", "--approval-mode", "default", "--allowed-tools", "run_shell_command", "--prompt", geminiPrompt(templates.Set{}, "Review the work.", Schema())}
			},
			outcome: Fail, findings: 1, input: 900, output: 60, cost: (700*1.25 + 200*0.125 + 60*10) / 1e6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argsFile := filepath.Join(t.TempDir(), "args.json")
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where Run writes codex's schema file
			s := tt.spec
			s.Env = append(s.Env, "FAKE_ARGS_FILE="+argsFile, "CLAUDECODE=1")
			r := Run(context.Background(), s)
			if r.Outcome != tt.outcome || r.Err != nil || len(r.Findings) != tt.findings {
				t.Fatalf("outcome %s err %v findings %v, want %s with %d; stderr %q", r.Outcome, r.Err, r.Findings, tt.outcome, tt.findings, r.Stderr)
			}
			if r.InputTokens != tt.input || r.OutputTokens != tt.output || math.Abs(r.CostUSD-tt.cost) > 1e-12 || r.ExitCode != 0 || r.Model != s.Model {
				t.Errorf("tokens %d/%d cost %v exit %d model %q", r.InputTokens, r.OutputTokens, r.CostUSD, r.ExitCode, r.Model)
			}
			inv := readInvocation(t, argsFile)
			if want := tt.wantArgs(inv); !slices.Equal(inv.Args, want) {
				t.Errorf("args =\n%q\nwant\n%q", inv.Args, want)
			}
			if inv.Guard != "1" || inv.Claudecode != "" || inv.Stdin != "" {
				t.Errorf("guard %q, CLAUDECODE %q, stdin %q; want 1, unset, empty", inv.Guard, inv.Claudecode, inv.Stdin)
			}
			if s.CLI == CLICodex {
				if inv.SchemaFile != string(StrictSchema()) {
					t.Errorf("codex read the schema %q, want StrictSchema()", inv.SchemaFile)
				}
				if filepath.Dir(schemaPath(inv.Args)) != tmp {
					t.Errorf("schema file %q is not in TMPDIR", schemaPath(inv.Args))
				}
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("the schema file %s outlived the run", left[0].Name())
			}
		})
	}
}

func schemaPath(args []string) string {
	if i := slices.Index(args, "--output-schema"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestRunFailuresCodexAndGemini: each way these CLIs fail is a Failed run
// that says why, with the schema file gone and a log written.
func TestRunFailuresCodexAndGemini(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		timeout time.Duration
		err     []error
		errHas  string
		exit    int
	}{
		{
			name: "codex turn.failed and exit 1",
			spec: fakeAs(CLICodex, "", "FAKE_EXIT=1", "FAKE_STDOUT="+codexTurnFailed),
			err:  []error{ErrExit, ErrIsError}, errHas: "401 Unauthorized", exit: 1,
		},
		{
			name: "codex prose instead of the schema",
			spec: fakeAs(CLICodex, "", "FAKE_STDOUT="+`{"type":"item.completed","item":{"type":"agent_message","text":"LGTM"}}`+"\n"+`{"type":"turn.completed"}`),
			err:  []error{ErrNoStructuredOutput}, errHas: "LGTM",
		},
		{
			name: "codex garbage",
			spec: fakeAs(CLICodex, "", "FAKE_STDOUT=\x01\x02\xff{{ segfault?"),
			err:  []error{ErrUnparsable},
		},
		{
			name: "codex hangs",
			spec: fakeAs(CLICodex, "", "FAKE_SLEEP=1h"), timeout: 200 * time.Millisecond,
			err: []error{ErrTimeout}, exit: -1,
		},
		{
			name: "gemini fatal error as JSON on stderr, exit 41",
			spec: fakeAs(CLIGemini, "", "FAKE_EXIT=41", "FAKE_STDOUT=", "FAKE_STDERR="+geminiAuthError),
			err:  []error{ErrExit, ErrIsError}, errHas: "FatalAuthenticationError", exit: 41,
		},
		{
			name: "gemini exit 1 with plain stderr",
			spec: fakeAs(CLIGemini, "", "FAKE_EXIT=1", "FAKE_STDOUT=", "FAKE_STDERR=TypeError: fetch failed"),
			err:  []error{ErrExit}, errHas: "exit status 1", exit: 1,
		},
		{
			name: "gemini answers in prose",
			spec: fakeAs(CLIGemini, "", "FAKE_STDOUT="+`{"response":"All good, PASS.","stats":{}}`),
			err:  []error{ErrNoStructuredOutput}, errHas: "All good",
		},
		{
			name: "gemini garbage",
			spec: fakeAs(CLIGemini, "", "FAKE_STDOUT=Loaded cached credentials.\nPASS"),
			err:  []error{ErrUnparsable},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where Run writes codex's schema file
			s := tt.spec
			s.LogPath = filepath.Join(t.TempDir(), "review-1.log")
			if tt.timeout > 0 {
				s.Timeout = tt.timeout
			}
			r := Run(context.Background(), s)
			if r.Outcome != Failed || r.Verdict != "" || r.Findings != nil || Clean(r, false) {
				t.Fatalf("outcome %s verdict %q findings %v, want Failed with neither", r.Outcome, r.Verdict, r.Findings)
			}
			for _, want := range tt.err {
				if !errors.Is(r.Err, want) {
					t.Errorf("err = %v, want it to wrap %v", r.Err, want)
				}
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.errHas) {
				t.Errorf("err = %v, want it to mention %q", r.Err, tt.errHas)
			}
			if r.ExitCode != tt.exit {
				t.Errorf("exit code %d, want %d", r.ExitCode, tt.exit)
			}
			log, err := os.ReadFile(s.LogPath)
			if err != nil || !strings.Contains(string(log), "exit code: "+strconv.Itoa(tt.exit)) {
				t.Errorf("log (%v):\n%s", err, log)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%s left %s in TMPDIR after a failed run", s.CLI, left[0].Name())
			}
		})
	}
}
