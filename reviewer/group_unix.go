//go:build unix

package reviewer

import (
	"errors"
	"os"
	"syscall"
)

// groupAttr puts the reviewer in a new process group whose id is its pid,
// so that killGroup reaches every process it starts.
func groupAttr() *syscall.SysProcAttr {
	return withDeathSignal(&syscall.SysProcAttr{Setpgid: true})
}

// killGroup sends SIGKILL to p's whole process group. A group that is
// already gone is os.ErrProcessDone, which os/exec treats as success.
func killGroup(p *os.Process) error {
	if p == nil || p.Pid <= 0 {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
