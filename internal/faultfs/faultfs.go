//go:build linux

package faultfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size bytes, owner-only, on dir (created if
// needed), and unmounts it when the test ends. Root without the right to
// mount (a container without CAP_SYS_ADMIN) skips with the reason; any
// other failure fails the test.
func MountTmpfs(t testing.TB, dir string, size int) {
	t.Helper()
	NeedRoot(t, "mounting a tmpfs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("creating mount point %s: %v", dir, err)
	}
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, options(size))
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("root may not mount here (%v): the container lacks CAP_SYS_ADMIN", err)
	}
	if err != nil {
		t.Fatalf("mounting a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
}

// Remount makes the tmpfs MountTmpfs mounted on dir read-only, or writable
// again. Linux refuses to make a file system read-only while a process has
// a file on it open for writing (EBUSY): close the store first.
func Remount(t testing.TB, dir string, size int, readOnly bool) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, options(size)); err != nil {
		t.Fatalf("remounting %s (read-only %v): %v", dir, readOnly, err)
	}
}

func options(size int) string { return fmt.Sprintf("size=%d,mode=0700", size) }

// Fill writes a new file at path until its file system is full and
// returns how many bytes it wrote; an error other than ENOSPC fails the
// test. Removing the file frees the space.
func Fill(t testing.TB, path string) int {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("creating %s: %v", path, err)
	}
	defer fh.Close()
	buf := make([]byte, 4096)
	n := 0
	for {
		k, err := fh.Write(buf)
		n += k
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatalf("filling %s: %v", path, err)
		}
	}
}
