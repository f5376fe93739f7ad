//go:build !linux

package agentrun

import "syscall"

// withDeathSignal is a no-op where the kernel has no parent-death signal.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
