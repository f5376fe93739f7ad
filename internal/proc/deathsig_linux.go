package proc

import "syscall"

// withDeathSignal asks the kernel to send sig to the child when the
// thread that started it dies (with the supervisor, kill -9 included), so
// no agent or reviewer is orphaned and keeps spending. Only the direct
// child gets it; the watchdog ends the rest (see Cmd.OwnerTag).
func withDeathSignal(a *syscall.SysProcAttr, sig syscall.Signal) *syscall.SysProcAttr {
	a.Pdeathsig = sig
	return a
}
