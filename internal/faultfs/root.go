// Package faultfs gives the fault tests the disks users meet: a small
// tmpfs that can be filled up until it refuses a write, and remounted
// read-only. Mounting needs root, which CI has: a test that is not root
// skips with the reason, and one that is root but cannot mount for another
// reason fails, so a CI run never counts a test it did not run.
package faultfs

import (
	"os"
	"testing"
)

// NeedRoot skips t, saying why, when it does not run as root: what is
// what needs root.
func NeedRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("%s needs root (uid %d); CI runs the tests as root", what, os.Geteuid())
	}
}
