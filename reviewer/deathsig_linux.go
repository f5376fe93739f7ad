package reviewer

import "syscall"

// withDeathSignal asks the kernel to kill the child when the supervisor
// dies (kill -9 included), so no agent or reviewer is orphaned and keeps
// spending. Only the direct child gets the signal; its process group is
// killed by the usual paths when the supervisor lives.
func withDeathSignal(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
