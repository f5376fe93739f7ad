//go:build unix

package proc

import (
	"errors"
	"os"
	"syscall"
)

// sigKill is the signal that ends a process for certain.
const sigKill = syscall.SIGKILL

// stopSignal is what the group gets on cancellation or timeout.
func stopSignal(graceful bool) syscall.Signal {
	if graceful {
		return syscall.SIGTERM
	}
	return syscall.SIGKILL
}

// groupAttr puts the process in a new process group whose id is its pid,
// so that signalGroup reaches everything it starts there, and asks for
// sig when this process dies (where the kernel has a parent-death signal).
func groupAttr(sig syscall.Signal) *syscall.SysProcAttr {
	return withDeathSignal(&syscall.SysProcAttr{Setpgid: true}, sig)
}

// signalGroup sends sig to p's whole process group. A group that is
// already gone is os.ErrProcessDone, which os/exec treats as success.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if p == nil || p.Pid <= 0 {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
