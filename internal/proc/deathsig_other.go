//go:build unix && !linux

package proc

import "syscall"

// withDeathSignal is a no-op where the kernel has no parent-death signal.
func withDeathSignal(a *syscall.SysProcAttr, _ syscall.Signal) *syscall.SysProcAttr { return a }
