package supervisor

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/internal/project"
	"github.com/drover-dev/drover/internal/sockets"
)

func lockTestOptions(t *testing.T, wait time.Duration, ready func()) Options {
	t.Helper()
	root := t.TempDir()
	sock := filepath.Join(t.TempDir(), "s.sock")
	p, err := project.PathsFor(root, func(k string) string {
		if k == project.SocketEnv {
			return sock
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Paths: p, Config: config.Defaults(), Log: logging.Nop(), Ready: ready, LockWait: wait}
}

// TestStartedWhileThePredecessorStops: a supervisor started on demand while
// the previous one still holds the lock but no longer answers (it is
// stopping) takes over once the lock is released, instead of giving up and
// leaving the hook that started it with no supervisor.
func TestStartedWhileThePredecessorStops(t *testing.T) {
	ready := make(chan struct{})
	opts := lockTestOptions(t, time.Hour, func() { close(ready) })
	release, err := sockets.Lock(opts.Paths.Lock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()

	// Let it find the lock taken before the predecessor lets go.
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the predecessor was stopping; want it to wait", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run returned %v instead of taking over", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestRunningPredecessorIsNotWaitedFor: a holder that answers on the socket
// is a running supervisor; the new one says so at once, whatever LockWait.
func TestRunningPredecessorIsNotWaitedFor(t *testing.T) {
	opts := lockTestOptions(t, time.Hour, nil)
	release, err := sockets.Lock(opts.Paths.Lock)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ln, err := net.Listen("unix", opts.Paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := Run(context.Background(), opts); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Run = %v, want ErrAlreadyRunning", err)
	}
}
