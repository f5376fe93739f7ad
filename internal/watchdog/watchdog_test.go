//go:build linux

package watchdog

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestMain lets the test binary be the watchdog that Start runs, as the
// drover binary is in production.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == Command {
		if _, err := Watch(os.Stdin, os.Args[2]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestValidTag(t *testing.T) {
	tag, err := NewTag()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tag  string
		want bool
	}{
		{tag, true},
		{TagKey + "=abc", true},
		{TagKey + "=", false},
		{"PATH=/usr/bin", false},
		{TagKey, false},
		{TagKey + "=a=b", false},
		{"", false},
	} {
		if got := ValidTag(tt.tag); got != tt.want {
			t.Errorf("ValidTag(%q) = %v, want %v", tt.tag, got, tt.want)
		}
	}
	if _, err := Watch(nil, "PATH=/usr/bin"); err == nil {
		t.Error("Watch took a tag that is not a supervisor's")
	}
	if _, err := Start("true", "HOME=/", nil); err == nil {
		t.Error("Start took a tag that is not a supervisor's")
	}
}

// tagged starts a sleeper carrying env, in a session of its own (out of
// reach of any group kill), and returns it.
func tagged(t *testing.T, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "3600")
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func killedBySIGKILL(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
}

// A watchdog whose supervisor closes its end (as the kernel does when the
// supervisor dies) kills what carries the supervisor's tag, and nothing
// that carries another's.
func TestStartAndClose(t *testing.T) {
	tag, err := NewTag()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewTag()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := tagged(t, tag), tagged(t, other)
	d, err := Start(exe, tag, append(os.Environ(), tag))
	if err != nil {
		t.Fatal(err)
	}
	if err := mine.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the watchdog killed before its supervisor went: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mine.Wait(); !killedBySIGKILL(err) {
		t.Errorf("the tagged process ended with %v; want SIGKILL", err)
	}
	if err := theirs.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the watchdog killed another supervisor's process: %v", err)
	}
}
