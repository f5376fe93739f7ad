//go:build unix

package watchdog

import "syscall"

func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
