//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
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

	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/proctag"
)

// helperEnv makes the test binary a helper process instead of running the
// tests: "setsid" starts `sleep 60` in a session of its own (out of reach
// of a group kill, as an agent's tool call is), prints its pid and exits.
const helperEnv = "PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "setsid" {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Stdout = os.Stdout // hold the output open, as a stray tool would
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(cmd.Process.Pid)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// sh is the Cmd that runs script with sh -c.
func sh(script string) Cmd { return Cmd{Path: "sh", Args: []string{"-c", script}} }

// firstPid reads the pid a script printed on its first line.
func firstPid(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid in the output %q", out)
	}
	return pid
}

// gone reports whether pid no longer runs; a zombie counts as gone (it
// only waits for init to reap it).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
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

// requireGone fails the test when pid still runs after a generous bound
// (a SIGKILLed process needs a moment to be torn down).
func requireGone(t *testing.T, pid int) {
	t.Helper()
	if !eventually.Holds(10*time.Second, func() bool { return gone(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d outlived the run", pid)
	}
}

func TestRunKillsTheGroup(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		timeout  time.Duration
		cancel   bool
		wantErr  error
		timedOut bool
		exit     int
	}{
		{name: "after a normal exit", script: "sleep 60 & echo $!; echo started", exit: 0},
		{name: "after a failed exit", script: "sleep 60 & echo $!; exit 4", exit: 4},
		{name: "on timeout", script: "sleep 60 & echo $!; wait", timeout: 500 * time.Millisecond, wantErr: ErrTimeout, timedOut: true, exit: -1},
		{name: "on cancel", script: "sleep 60 & echo $!; wait", cancel: true, wantErr: context.Canceled, exit: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Only a kill for the timeout is reported (a supervisor's
			// /metrics counts them).
			kills := 0
			ctx = OnTimeoutKill(ctx, func() { kills++ })
			c := sh(tt.script)
			c.Timeout = tt.timeout
			var pid int
			if tt.cancel {
				// Cancel once the grandchild's pid is out: it exists then.
				c.Stdout = &LineWriter{Sep: '\n', Max: 100, Fn: func(b []byte) {
					pid, _ = strconv.Atoi(string(b))
					cancel()
				}}
			}
			res, err := Run(ctx, c)
			if tt.wantErr == nil && err != nil && tt.exit == 0 || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run = %v, want %v", err, tt.wantErr)
			}
			if res.ExitCode != tt.exit || res.TimedOut != tt.timedOut || !res.Started {
				t.Errorf("exit %d, timed out %v, started %v; want %d, %v, true", res.ExitCode, res.TimedOut, res.Started, tt.exit, tt.timedOut)
			}
			if want := map[bool]int{true: 1}[tt.timedOut]; kills != want {
				t.Errorf("OnTimeoutKill's function was called %d times, want %d", kills, want)
			}
			if !tt.cancel {
				pid = firstPid(t, res.Stdout.String())
			}
			requireGone(t, pid)
		})
	}
}

// TestRunTagKill: a grandchild in a session of its own escapes the group
// kill; the tag finds it. Without a tag, Run still returns once WaitDelay
// is past, though the grandchild holds the output open.
func TestRunTagKill(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tagged := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagged=%v", tagged), func(t *testing.T) {
			c := Cmd{Path: exe, Env: append(os.Environ(), helperEnv+"=setsid"), WaitDelay: 300 * time.Millisecond}
			if tagged {
				c.TagKey = proctag.AgentKey
			}
			start := time.Now()
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatalf("Run: %v (stderr %q)", err, res.Stderr.String())
			}
			pid := firstPid(t, res.Stdout.String())
			if !tagged {
				if took := time.Since(start); took > 30*time.Second {
					t.Errorf("Run took %s with the output held open", took)
				}
				if gone(pid) {
					t.Fatal("the untagged grandchild died: the test shows nothing")
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			requireGone(t, pid)
		})
	}
}

func TestRunGracefulStop(t *testing.T) {
	file := filepath.Join(t.TempDir(), "got")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := sh(`trap 'echo term > "$GOT"; exit 3' TERM; echo ready; sleep 60 & wait`)
	c.Env = append(os.Environ(), "GOT="+file)
	c.Graceful = true
	c.Stdout = &LineWriter{Sep: '\n', Max: 100, Fn: func([]byte) { cancel() }}
	res, err := Run(ctx, c)
	if !errors.Is(err, context.Canceled) || res.ExitCode != 3 {
		t.Errorf("Run = %+v, %v; want exit 3 after SIGTERM, cancelled", res, err)
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "term\n" {
		t.Errorf("the trap wrote %q, %v; want term", got, err)
	}
}

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name     string
		c        Cmd
		stdout   string
		stderr   string
		head     string
		tail     string
		dropped  int64
		wantFail bool
	}{
		{name: "separate", c: sh("echo out; echo err >&2"), stdout: "out\n", stderr: "err\n"},
		{name: "combined in order", c: Cmd{Path: "sh", Args: []string{"-c", "echo 1; echo 2 >&2; echo 3"}, Combined: true}, stdout: "1\n2\n3\n"},
		{
			name: "cap keeps the head and the tail",
			// seq 1 100000 prints 588895 bytes.
			c:    Cmd{Path: "seq", Args: []string{"1", "100000"}, OutputCap: 100},
			head: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n1", tail: "99995\n99996\n99997\n99998\n99999\n100000\n", dropped: 588895 - 100,
		},
		{name: "stdin is empty", c: sh("cat; echo end"), stdout: "end\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), tt.c)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.dropped > 0 {
				o := res.Stdout
				if string(o.Head) != tt.head || !strings.HasSuffix(string(o.Tail), tt.tail) || o.Dropped != tt.dropped || !o.Truncated() || len(o.Bytes()) != tt.c.OutputCap {
					t.Errorf("Stdout = head %q, tail %q, dropped %d; want %q, ...%q, %d, %d bytes kept", o.Head, o.Tail, o.Dropped, tt.head, tt.tail, tt.dropped, tt.c.OutputCap)
				}
				if s := o.String(); !strings.Contains(s, fmt.Sprintf("[... %d bytes cut by drover ...]", tt.dropped)) {
					t.Errorf("String does not say what was cut: %q", s)
				}
				return
			}
			if res.Stdout.String() != tt.stdout || res.Stderr.String() != tt.stderr || res.Stdout.Truncated() {
				t.Errorf("stdout %q, stderr %q; want %q, %q", res.Stdout.String(), res.Stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

func TestRunEnvAndTags(t *testing.T) {
	c := sh(`echo "$PROC_TEST_VAR|$DROVER_SUPERVISOR_RUN|$DROVER_REVIEW_RUN"; pwd`)
	c.Env = append(os.Environ(), "PROC_TEST_VAR=seen")
	c.OwnerTag = proctag.SupervisorKey + "=owner1"
	c.TagKey = proctag.ReviewKey
	c.Dir = t.TempDir()
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	vars, dir, _ := strings.Cut(strings.TrimSpace(res.Stdout.String()), "\n")
	parts := strings.Split(vars, "|")
	if len(parts) != 3 || parts[0] != "seen" || parts[1] != "owner1" || len(parts[2]) != 16 {
		t.Errorf("the child saw %q; want seen|owner1|<16 hex digits>", vars)
	}
	if want, _ := filepath.EvalSymlinks(c.Dir); dir != want {
		t.Errorf("the child ran in %q, want %q", dir, want)
	}
}

// failWriter fails its first write.
type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

func TestRunErrors(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		c       Cmd
		is      error
		started bool
		exit    int
	}{
		{name: "no program", c: Cmd{}, exit: -1},
		{name: "missing program", c: Cmd{Path: filepath.Join(t.TempDir(), "nope")}, is: os.ErrNotExist, exit: -1},
		{name: "missing dir", c: Cmd{Path: "true", Dir: filepath.Join(t.TempDir(), "nope")}, is: os.ErrNotExist, exit: -1},
		{name: "already cancelled", ctx: done, c: Cmd{Path: "true"}, is: context.Canceled, exit: -1},
		{name: "exit status", c: sh("exit 7"), started: true, exit: 7},
		{name: "writer fails", c: Cmd{Path: "sh", Args: []string{"-c", "echo x; exec sleep 60"}, Stdout: failWriter{}}, is: errFull, started: true, exit: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			res, err := Run(ctx, tt.c)
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("Run = %v, want an error wrapping %v", err, tt.is)
			}
			if res.Started != tt.started || res.ExitCode != tt.exit {
				t.Errorf("started %v exit %d, want %v %d", res.Started, res.ExitCode, tt.started, tt.exit)
			}
			var exit *exec.ExitError
			if tt.exit > 0 && !errors.As(err, &exit) {
				t.Errorf("err %v is not an *exec.ExitError", err)
			}
		})
	}
}

func TestShell(t *testing.T) {
	tests := []struct {
		name    string
		command string
		c       Cmd
		out     string
		exit    int
		fails   bool
	}{
		{name: "and list", command: "echo lint && echo test", out: "lint\ntest\n"},
		{name: "and list stops at a failure", command: "false && echo test", exit: 1, fails: true},
		{name: "exit after echo fails", command: "echo boom; exit 1", out: "boom\n", exit: 1, fails: true},
		{name: "pipes and quotes", command: `printf 'a b\nc\n' | wc -l | tr -d ' '`, out: "2\n"},
		{name: "stderr goes with stdout", command: "echo one; echo two >&2", c: Cmd{Combined: true}, out: "one\ntwo\n"},
		{name: "blank", command: "  ", exit: -1, fails: true},
		{name: "a program too", command: "true", c: Cmd{Path: "bash"}, exit: -1, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Shell(context.Background(), tt.command, tt.c)
			if (err != nil) != tt.fails || res.ExitCode != tt.exit || res.Stdout.String() != tt.out {
				t.Errorf("Shell(%q) = exit %d, stdout %q, %v; want exit %d, %q, failed %v", tt.command, res.ExitCode, res.Stdout.String(), err, tt.exit, tt.out, tt.fails)
			}
		})
	}
}

func TestCapture(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		writes  []string
		head    string
		tail    string
		dropped int64
	}{
		{name: "fits", limit: 8, writes: []string{"ab", "cd"}, head: "ab", tail: "cd"},
		{name: "exactly full", limit: 8, writes: []string{"abcdefgh"}, head: "ab", tail: "cdefgh"},
		{name: "one over", limit: 8, writes: []string{"abcdefghi"}, head: "ab", tail: "defghi", dropped: 1},
		{name: "many small writes", limit: 8, writes: strings.Split("abcdefghijklmnopqrstuvwxyz", ""), head: "ab", tail: "uvwxyz", dropped: 18},
		{name: "one big write", limit: 4, writes: []string{strings.Repeat("x", 100) + "end"}, head: "x", tail: "end", dropped: 99},
		{name: "tail only", limit: 3, writes: []string{"abcdef"}, head: "", tail: "def", dropped: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit)
			for _, w := range tt.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			o := c.output()
			if string(o.Head) != tt.head || string(o.Tail) != tt.tail || o.Dropped != tt.dropped {
				t.Errorf("output = %q + %q, %d dropped; want %q + %q, %d", o.Head, o.Tail, o.Dropped, tt.head, tt.tail, tt.dropped)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	tests := []struct {
		name    string
		sep     byte
		max     int
		writes  []string
		want    []string
		skipped int
	}{
		{name: "lines across writes", sep: '\n', max: 10, writes: []string{"a\nb", "c\n", "\nd"}, want: []string{"a", "bc", "", "d"}},
		{name: "too long is skipped whole", sep: '\n', max: 3, writes: []string{"ok\nlong", "er\nok2\n"}, want: []string{"ok", "ok2"}, skipped: 1},
		{name: "nul records", sep: 0, max: 10, writes: []string{"?? a\x00 M b", "\x00"}, want: []string{"?? a", " M b"}},
		{name: "last record unterminated", sep: 0, max: 10, writes: []string{"x\x00y"}, want: []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &LineWriter{Sep: tt.sep, Max: tt.max, Fn: func(b []byte) { got = append(got, string(b)) }}
			for _, s := range tt.writes {
				if _, err := io.WriteString(w, s); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) || w.Skipped() != tt.skipped {
				t.Errorf("records %q, skipped %d; want %q, %d", got, w.Skipped(), tt.want, tt.skipped)
			}
		})
	}
}

// TestRunStreamsInOrder: a streaming writer sees the output as it comes,
// before the process ends, and is done with when Run returns.
func TestRunStreamsInOrder(t *testing.T) {
	var got bytes.Buffer
	seen := make(chan struct{})
	c := sh(`echo first; read -t 60 x < "$FIFO"; echo second`)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Env = append(os.Environ(), "FIFO="+fifo)
	c.Stdout = &LineWriter{Sep: '\n', Max: 100, Fn: func(b []byte) {
		got.Write(b)
		got.WriteByte(' ')
		if string(b) == "first" {
			close(seen)
		}
	}}
	go func() {
		<-seen // the first line arrived while the script still waits
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.WriteString("go\n")
			f.Close()
		}
	}()
	if _, err := Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got.String() != "first second " {
		t.Errorf("streamed %q", got.String())
	}
}

func TestQuote(t *testing.T) {
	for _, s := range []string{"./internal/...", "", "a b", "it's", `$(touch x); "y" \z`, "-v", "ünï"} {
		res, err := Shell(context.Background(), `printf '%s' `+Quote(s), Cmd{Dir: t.TempDir()})
		if err != nil || res.Stdout.String() != s {
			t.Errorf("sh read Quote(%q) = %s as %q, %v", s, Quote(s), res.Stdout.String(), err)
		}
	}
	if got := Quote("./pkg/a"); got != "./pkg/a" {
		t.Errorf("Quote(./pkg/a) = %s, want it bare", got)
	}
}

// BenchmarkRun measures what a run costs beyond exec itself: a bare
// exec.Command, Run, and Run with a tag of its own (whose kill reads
// /proc).
func BenchmarkRun(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc", func(b *testing.B) {
		for b.Loop() {
			if _, err := Run(context.Background(), Cmd{Path: "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc_tagged", func(b *testing.B) {
		for b.Loop() {
			if _, err := Run(context.Background(), Cmd{Path: "true", TagKey: proctag.AgentKey}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
