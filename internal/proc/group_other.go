//go:build !unix

package proc

import (
	"os"
	"syscall"
)

// sigKill is the signal that ends a process for certain.
const sigKill = syscall.SIGKILL

// stopSignal: without process groups the process itself is killed.
func stopSignal(bool) syscall.Signal { return syscall.SIGKILL }

// groupAttr keeps exec's default where there are no process groups.
func groupAttr(syscall.Signal) *syscall.SysProcAttr { return nil }

// signalGroup kills the process itself where there are no process groups.
func signalGroup(p *os.Process, _ syscall.Signal) error {
	if p == nil {
		return os.ErrProcessDone
	}
	return p.Kill()
}
