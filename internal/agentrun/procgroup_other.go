//go:build !unix

package agentrun

import "os/exec"

// setProcessGroup keeps exec's default on systems without process groups:
// cancelling kills the agent itself.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup has nothing to do without process groups.
func killProcessGroup(*exec.Cmd) {}
