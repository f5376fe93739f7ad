//go:build linux

package agentrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// setsid starts a command in a session of its own, out of reach of a kill
// of its parent's process group.
func setsid(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

func TestRunKillsToolCallsInTheirOwnSession(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, "setsid", fakePidFile+"="+pidFile)
	spec.WaitDelay = 100 * time.Millisecond
	res, err := Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Err != nil || res.FinalText != "All done." {
		t.Errorf("Result = %+v; want a clean finish", res)
	}
	waitDead(t, grandchildPid(t, pidFile))
}

func TestKillTagged(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tag := TagEnv + "=test-" + filepath.Base(t.TempDir())
	pidFile := filepath.Join(t.TempDir(), "pid")
	// A tagged process in a session of its own, and an untagged one: only
	// the first may die.
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), env...)
		setsid(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	tagged := start(fakeEnv+"=grandchild", fakePidFile+"="+pidFile, tag)
	// Wait until it is up, its environment readable.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tagged process did not start")
		}
	}
	other := start(fakeEnv+"=sleep", fakeSleep+"=1h", tag+"x")

	n, err := KillTagged(tag)
	if err != nil || n != 1 {
		t.Fatalf("KillTagged = %d, %v; want 1 process killed", n, err)
	}
	if err := tagged.Wait(); err == nil {
		t.Error("the tagged process exited cleanly; want it killed")
	}
	if dead(other.Process.Pid) {
		t.Error("KillTagged killed a process whose tag only shares a prefix")
	}
	if n, err := KillTagged(tag); err != nil || n != 0 {
		t.Errorf("second KillTagged = %d, %v; want nothing left to kill", n, err)
	}
}
