//go:build linux

package proctag

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestNew(t *testing.T) {
	a, err := New("DROVER_TEST")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New("DROVER_TEST")
	if !strings.HasPrefix(a, "DROVER_TEST=") || len(a) != len("DROVER_TEST=")+16 || a == b {
		t.Errorf("New = %q, %q; want two different DROVER_TEST=<16 hex digits>", a, b)
	}
}

func TestKill(t *testing.T) {
	tag, err := New("DROVER_TEST")
	if err != nil {
		t.Fatal(err)
	}
	// A tagged sleeper in a session of its own, and one whose entry only
	// starts like the tag: only the first may die.
	start := func(env string) *exec.Cmd {
		cmd := exec.Command("sleep", "3600")
		cmd.Env = append(os.Environ(), env)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	tagged := start(tag)
	other := start(tag + "0")

	n, err := Kill(tag)
	if err != nil || n != 1 {
		t.Fatalf("Kill = %d, %v; want 1 process killed", n, err)
	}
	var exit *exec.ExitError
	if err := tagged.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the tagged process ended with %v; want SIGKILL", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("Kill killed a process whose entry only shares the tag's prefix: %v", err)
	}
	if n, err := Kill(tag); err != nil || n != 0 {
		t.Errorf("second Kill = %d, %v; want nothing left to kill", n, err)
	}
}
