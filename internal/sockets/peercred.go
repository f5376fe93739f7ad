package sockets

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// PeerUID returns the uid of the process at the other end of c, a unix
// socket connection, as the kernel recorded it when the peer connected.
func PeerUID(c net.Conn) (uint32, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("peer credentials: %T is not a socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	var (
		uid  uint32
		cerr error
	)
	if err := raw.Control(func(fd uintptr) { uid, cerr = peerUID(int(fd)) }); err != nil {
		return 0, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	return uid, nil
}

// OwnerOnly wraps l so that Accept returns only connections from processes
// of our own uid. Others are closed and reported through logf (nil means
// silently), and Accept goes on waiting. The socket's 0600 mode already
// keeps other users out; this holds even if the file's mode or directory is
// loosened.
func OwnerOnly(l net.Listener, logf func(format string, args ...any)) net.Listener {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &ownerOnly{Listener: l, uid: uint32(os.Getuid()), logf: logf}
}

type ownerOnly struct {
	net.Listener
	uid  uint32
	logf func(format string, args ...any)
}

func (l *ownerOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := PeerUID(c)
		switch {
		case err != nil:
			l.logf("dropping a connection on %s: %v", l.Addr(), err)
		case uid != l.uid:
			l.logf("dropping a connection on %s from uid %d (only uid %d may connect)", l.Addr(), uid, l.uid)
		default:
			return c, nil
		}
		_ = c.Close()
	}
}
