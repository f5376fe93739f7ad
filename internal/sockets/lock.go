package sockets

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is wrapped by Lock when another process holds the lock.
var ErrLocked = errors.New("sockets: lock held by another process")

// Lock takes an exclusive, non-blocking flock on the file at path (created
// 0600 if missing) and writes our pid into it for diagnostics. It returns an
// error wrapping ErrLocked when another holder has it. The lock, not the
// socket, is what makes a supervisor the only one for its project: two
// supervisors starting together could both find the socket free.
//
// The lock belongs to the open file, so it ends when unlock is called or
// the process exits, however it exits. The file is left in place: removing
// it would let a third process lock a new file while a second still holds
// the old one.
func Lock(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("locking %q%s: %w", path, holder(path), ErrLocked)
		}
		return nil, fmt.Errorf("locking %q: %w", path, err)
	}
	// The pid is only a hint for the error above; failing to write it does
	// not weaken the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() error {
		// Closing the file releases the flock.
		if err := f.Close(); err != nil {
			return fmt.Errorf("releasing lock %q: %w", path, err)
		}
		return nil
	}, nil
}

// holder describes the pid recorded in the lock file, if any.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (held by pid %d)", pid)
}
