package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// SocketEnv names the environment variable that overrides the socket path.
// The lock then sits next to it, so a test's supervisor lives entirely in the
// test's own directory.
const SocketEnv = "DROVER_SOCKET"

// Paths are the files and directories drover uses for one project.
type Paths struct {
	// Root is the project root (see Root).
	Root string
	// DroverDir is Root/.drover; everything below lives in it.
	DroverDir    string
	StateDir     string
	DB           string
	LogsDir      string
	LogFile      string
	SessionsDir  string
	TemplatesDir string
	ConfigFile   string
	// RuntimeDir holds the socket and the lock, outside the work tree: a
	// private (0700) directory of the current user, shared by all of the
	// user's projects.
	RuntimeDir string
	// Socket is the supervisor's unix socket, named by a hash of Root.
	Socket string
	// Lock is the file whose flock makes a supervisor the only one for Root.
	Lock string
}

// PathsFor returns the paths for the project at root, which must be
// absolute (Root's result). A nil getenv means os.Getenv.
//
// The runtime directory is $XDG_RUNTIME_DIR/drover when XDG_RUNTIME_DIR is a
// directory of the current user, else $TMPDIR/drover-<uid> (/tmp when TMPDIR
// is unset). When that makes the socket path too long for a unix socket, it
// is /tmp/drover-<uid>. DROVER_SOCKET, when set, names the socket directly.
// PathsFor creates nothing; see EnsureRuntimeDir.
func PathsFor(root string, getenv func(string) string) (Paths, error) {
	return pathsFor(root, getenv, maxSocketPath())
}

func pathsFor(root string, getenv func(string) string, maxSocket int) (Paths, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if !filepath.IsAbs(root) {
		return Paths{}, fmt.Errorf("project root %q is not absolute", root)
	}
	root = filepath.Clean(root)
	d := filepath.Join(root, ".drover")
	p := Paths{
		Root:         root,
		DroverDir:    d,
		StateDir:     filepath.Join(d, "state"),
		DB:           filepath.Join(d, "state", "drover.db"),
		LogsDir:      filepath.Join(d, "logs"),
		LogFile:      filepath.Join(d, "logs", "drover.log"),
		SessionsDir:  filepath.Join(d, "sessions"),
		TemplatesDir: filepath.Join(d, "templates"),
		ConfigFile:   filepath.Join(d, "config.yaml"),
	}

	if env := getenv(SocketEnv); env != "" {
		s, err := filepath.Abs(env)
		if err != nil {
			return Paths{}, fmt.Errorf("resolving %s %q: %w", SocketEnv, env, err)
		}
		if len(s) > maxSocket {
			return Paths{}, fmt.Errorf("%s %q is %d bytes; unix socket paths are limited to %d", SocketEnv, s, len(s), maxSocket)
		}
		p.Socket = s
		p.Lock = s + ".lock"
		p.RuntimeDir = filepath.Dir(s)
		return p, nil
	}

	sum := sha256.Sum256([]byte(root))
	name := hex.EncodeToString(sum[:])[:16]
	uid := strconv.Itoa(os.Getuid())
	for _, dir := range []string{runtimeDir(getenv, uid), filepath.Join("/tmp", "drover-"+uid)} {
		sock := filepath.Join(dir, name+".sock")
		if len(sock) <= maxSocket {
			p.RuntimeDir = dir
			p.Socket = sock
			p.Lock = filepath.Join(dir, name+".lock")
			return p, nil
		}
	}
	return Paths{}, fmt.Errorf("no socket path for %q fits the %d-byte unix socket limit", root, maxSocket)
}

// runtimeDir is the preferred directory for sockets and locks.
func runtimeDir(getenv func(string) string, uid string) string {
	if x := getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		if fi, err := os.Stat(x); err == nil && fi.IsDir() && ownedByUs(fi) {
			return filepath.Join(x, "drover")
		}
	}
	// os.TempDir's rule on unix, but read through getenv so callers and
	// tests see one environment.
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "drover-"+uid)
}

// maxSocketPath is the longest socket path bind accepts: sun_path less its
// terminating NUL.
func maxSocketPath() int {
	switch runtime.GOOS {
	case "linux", "android", "solaris", "illumos", "aix":
		return 107
	default: // darwin and the BSDs
		return 103
	}
}

// EnsureRuntimeDir makes dir a private directory for the socket and lock:
// it creates it with mode 0700, and accepts an existing one only if it is a
// real directory (not a symlink) owned by the current user. Our own
// directory that others can write to is narrowed to 0700, unless it is a
// sticky shared directory such as /tmp, which is refused: another user
// could otherwise plant or replace the socket.
func EnsureRuntimeDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating runtime directory %q: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking runtime directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("runtime directory %q is not a directory (mode %v)", dir, fi.Mode())
	}
	if !ownedByUs(fi) {
		return fmt.Errorf("runtime directory %q belongs to uid %d, not to us (uid %d); refusing to use it", dir, ownerUID(fi), os.Getuid())
	}
	if fi.Mode().Perm()&0o022 == 0 {
		return nil
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		return fmt.Errorf("runtime directory %q is a shared directory (mode %v); refusing to use it", dir, fi.Mode())
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("narrowing runtime directory %q to 0700: %w", dir, err)
	}
	return nil
}

func ownedByUs(fi fs.FileInfo) bool { return ownerUID(fi) == os.Getuid() }

// ownerUID returns fi's owner, or -1 when the platform does not say.
func ownerUID(fi fs.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}
