package sockets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a client dialing the socket it
// names, then reporting what it read: a stand-in for another user's process.
const helperEnv = "DROVER_SOCKETS_TEST_DIAL"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(dialHelper(path))
	}
	os.Exit(m.Run())
}

func dialHelper(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("dial:", err)
		return 2
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		// The server may already have closed it: that is the expected
		// outcome, reported the same way as a closed read.
		fmt.Println("closed")
		return 0
	}
	b := make([]byte, 16)
	n, err := c.Read(b)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		fmt.Println("closed")
		return 0
	}
	fmt.Printf("read %q, %v\n", b[:n], err)
	return 1
}

// sockPath returns a socket path in a fresh private directory, short enough
// for bind.
func sockPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "s.sock")
}

func listen(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatalf("Listen(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// serve echoes one line per connection until ln closes.
func serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				_, _ = c.Write([]byte(line))
			}
		}()
	}
}

func TestListenMode(t *testing.T) {
	path := sockPath(t)
	listen(t, path)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("%s is %v, want a socket", path, fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode = %v, want 0600", perm)
	}
}

func TestListenTwice(t *testing.T) {
	path := sockPath(t)
	ln := listen(t, path)
	go serve(ln)

	ln2, err := Listen(context.Background(), path)
	if err == nil {
		_ = ln2.Close()
		t.Fatal("second Listen succeeded")
	}
	if !errors.Is(err, ErrInUse) {
		t.Errorf("second Listen: %v, want ErrInUse", err)
	}
	if !strings.Contains(err.Error(), "another supervisor is serving on "+path) {
		t.Errorf("error %q does not name the socket", err)
	}
	// The live socket is untouched.
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatalf("the first listener's socket is gone: %v", err)
	}
	_ = c.Close()
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := sockPath(t)
	// A server that died without cleaning up leaves its socket file.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	if err := ul.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket was not left behind: %v", err)
	}

	ln := listen(t, path)
	go serve(ln)
	assertEcho(t, path)
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := sockPath(t)
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(context.Background(), path); err == nil {
		_ = ln.Close()
		t.Fatal("Listen replaced a regular file")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "precious" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}

func TestListenRefusesForeignDir(t *testing.T) {
	if os.Getuid() != 0 {
		// Only root can make a directory owned by someone else; for other
		// users the filesystem root is such a directory, but bind there
		// would fail anyway, so that would not test Listen's check.
		t.Skip("needs root to create a directory owned by another user")
	}
	dir := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(context.Background(), filepath.Join(dir, "s.sock"))
	if err == nil {
		_ = ln.Close()
		t.Fatal("Listen used a directory owned by another user")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
	}
}

func TestListenCreatesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	listen(t, filepath.Join(dir, "s.sock"))
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("runtime dir mode = %v, want 0700", perm)
	}
}

func TestListenCanceled(t *testing.T) {
	path := sockPath(t)
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ul.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ln, err := Listen(ctx, path); !errors.Is(err, context.Canceled) {
		if ln != nil {
			_ = ln.Close()
		}
		t.Fatalf("Listen with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the socket was removed: %v", err)
	}
}

func TestCloseRemovesSocket(t *testing.T) {
	path := sockPath(t)
	ln, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
	if err := ln.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseLeavesSuccessorsSocket(t *testing.T) {
	path := sockPath(t)
	old, err := Listen(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Someone removed our file and a new supervisor took the path.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ln := listen(t, path)
	go serve(ln)

	if err := old.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the old listener's Close removed its successor's socket: %v", err)
	}
	assertEcho(t, path)
}

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("lock file mode = %v, want 0600", perm)
	}

	// flock belongs to the open file, so a second open in this process
	// competes like another process would.
	_, err = Lock(path)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the holder (%s)", err, want)
	}

	if err := unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	unlock2, err := Lock(path)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	if err := unlock2(); err != nil {
		t.Fatal(err)
	}
}

func TestLockErrors(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing", "x.lock"), link} {
		if unlock, err := Lock(path); err == nil {
			_ = unlock()
			t.Errorf("Lock(%q) succeeded", path)
		} else if errors.Is(err, ErrLocked) {
			t.Errorf("Lock(%q): %v, should not be ErrLocked", path, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lock followed a symlink and created its target: %v", err)
	}
}

func TestPeerUID(t *testing.T) {
	path := sockPath(t)
	ln := listen(t, path)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, ok := <-accepted
	if !ok {
		t.Fatal("Accept failed")
	}
	defer sc.Close()

	for name, conn := range map[string]net.Conn{"server side": sc, "client side": c} {
		uid, err := PeerUID(conn)
		if err != nil {
			t.Fatalf("%s: PeerUID: %v", name, err)
		}
		if uid != uint32(os.Getuid()) {
			t.Errorf("%s: PeerUID = %d, want %d", name, uid, os.Getuid())
		}
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := PeerUID(a); err == nil {
		t.Error("PeerUID of a net.Pipe succeeded")
	}
}

func TestOwnerOnlyAcceptsOwner(t *testing.T) {
	path := sockPath(t)
	var logs logSink
	ln := OwnerOnly(listen(t, path), logs.logf)
	go serve(ln)
	assertEcho(t, path)
	if got := logs.String(); got != "" {
		t.Errorf("our own connection was logged: %s", got)
	}
}

// TestOwnerOnlyDropsOtherUsers connects as uid 65534 from a child process.
// Only root can start a process as another user.
func TestOwnerOnlyDropsOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	// The child runs as nobody, so it needs a directory it can reach and a
	// copy of the test binary it can run. t.TempDir's are private.
	dir, err := os.MkdirTemp("", "drover-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	copyFile(t, bin, 0o755)
	path := filepath.Join(dir, "s.sock")

	var logs logSink
	ln := OwnerOnly(listen(t, path), logs.logf)
	// Loosen the socket as a misconfiguration would; OwnerOnly must still
	// keep the other user out.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	go serve(ln)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the foreign client was not simply closed: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "closed" {
		t.Errorf("foreign client saw %q, want its connection closed", got)
	}
	if got := logs.String(); !strings.Contains(got, "from uid 65534") {
		t.Errorf("the dropped connection was not logged; logs: %q", got)
	}
	// Accept kept going after dropping it.
	assertEcho(t, path)
}

func assertEcho(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatalf("dialing %s: %v", path, err)
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo over %s = %q, %v; want \"ping\\n\"", path, line, err)
	}
}

func copyFile(t *testing.T, dst string, mode fs.FileMode) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// logSink collects OwnerOnly's log lines; Accept runs on another goroutine.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}
