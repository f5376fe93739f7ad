// Package sockets is the unix-socket plumbing between the drover
// supervisor and its clients: a listener that will not steal a live socket
// and cleans up only its own, the per-project lock, the peer-uid check and
// the dial that clients use (internal/client speaks HTTP over it).
package sockets

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/project"
)

// ErrInUse is wrapped by Listen when another process answers on the socket.
var ErrInUse = errors.New("sockets: socket in use")

// probeTimeout bounds Listen's check for a live server; a server that is up
// answers a local connect at once, the kernel queues it even when busy.
const probeTimeout = time.Second

// Listen listens on the unix socket at path, first making sure no one else
// is serving there: if a dial succeeds, it returns an error wrapping
// ErrInUse; a stale socket file left by a dead server is removed. The parent
// directory is created or checked with project.EnsureRuntimeDir, and the
// socket is made 0600. Closing the listener removes the socket file, unless
// it has been replaced by another listener's meanwhile.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	if err := project.EnsureRuntimeDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := clearStale(ctx, path); err != nil {
		return nil, err
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %q: %w", path, err)
	}
	// The file is removed by our Close, and only if it is still ours.
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		_ = ul.Close()
		_ = os.Remove(path)
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fail(fmt.Errorf("restricting socket %q to its owner: %w", path, err))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("checking socket %q: %w", path, err))
	}
	dev, ino, ok := fileID(fi)
	if !ok {
		return fail(fmt.Errorf("checking socket %q: no inode information", path))
	}
	return &listener{UnixListener: ul, path: path, dev: dev, ino: ino}, nil
}

// clearStale makes path free for a new socket: nothing there, or a socket
// no one listens on, which it removes. Anything else is an error.
func clearStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking socket %q: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%q exists and is not a socket (mode %v); refusing to replace it", path, fi.Mode())
	}
	dctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := Dial(dctx, path)
	if ctx.Err() != nil {
		return fmt.Errorf("probing socket %q: %w", path, ctx.Err())
	}
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("another supervisor is serving on %s: %w", path, ErrInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, fs.ErrNotExist) {
		// A timeout or a permission error: something may be alive there,
		// so the socket is not ours to remove.
		return fmt.Errorf("probing socket %q: %w (%w)", path, err, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket %q: %w", path, err)
	}
	return nil
}

// listener removes its socket file on Close if the file is still the one
// it bound: a successor may already have replaced it.
type listener struct {
	*net.UnixListener
	path     string
	dev, ino uint64

	once sync.Once
	err  error
}

func (l *listener) Close() error {
	l.once.Do(func() {
		l.err = l.UnixListener.Close()
		fi, err := os.Lstat(l.path)
		if err != nil {
			return
		}
		if dev, ino, ok := fileID(fi); ok && dev == l.dev && ino == l.ino {
			if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) && l.err == nil {
				l.err = fmt.Errorf("removing socket %q: %w", l.path, err)
			}
		}
	})
	return l.err
}

func fileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true
}

// Dial connects to the unix socket at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dialing %q: %w", path, err)
	}
	return c, nil
}
