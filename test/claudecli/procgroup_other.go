//go:build !unix

package claudecli

import "os/exec"

// setProcessGroup leaves the default: only the CLI itself is killed on
// cancellation.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup has no group to kill.
func killProcessGroup(*exec.Cmd) {}
