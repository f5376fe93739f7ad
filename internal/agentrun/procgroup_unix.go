//go:build unix

package agentrun

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the agent in a process group of its own, and makes
// cancelling the command kill that whole group: the agent's tools, hooks
// and MCP servers would otherwise keep running, and keep its output open.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = withDeathSignal(&syscall.SysProcAttr{Setpgid: true})
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killProcessGroup kills what is left of the agent's process group after
// it exited. ESRCH (nothing left) is the usual outcome and not worth
// reporting.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
