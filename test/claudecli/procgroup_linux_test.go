package claudecli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExecTimeoutKillsGroup checks that a timeout kills the CLI together
// with what it started, and reports the deadline.
func TestExecTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	bin := writeScript(t, dir, "claude", `
sleep 300 &
echo $! > "`+pidFile+`"
echo started
wait
`)
	res, err := Run{Bin: bin, Dir: dir, BaseURL: "http://127.0.0.1:9", Timeout: 500 * time.Millisecond}.Exec(t.Context())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec error = %v, want a deadline", err)
	}
	if !strings.Contains(res.Stdout, "started") {
		t.Errorf("output before the timeout was lost: %+v", res)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The killed child may linger as a zombie of the dead script until
	// init reaps it; a zombie is no longer running.
	if err := syscall.Kill(pid, 0); err == nil && !isZombie(pid) {
		t.Errorf("child %d of the timed-out CLI is still running", pid)
	}
}

func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone between the checks
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
