package project

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// foreignDir returns a directory owned by another user: one made and given
// away when we are root, else the filesystem root (owned by root).
func foreignDir(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		return "/"
	}
	d := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return d
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestPathsForLayout(t *testing.T) {
	tmp := t.TempDir()
	p, err := PathsFor("/src/proj", envOf(map[string]string{"TMPDIR": tmp}))
	if err != nil {
		t.Fatal(err)
	}
	want := Paths{
		Root:         "/src/proj",
		DroverDir:    "/src/proj/.drover",
		StateDir:     "/src/proj/.drover/state",
		DB:           "/src/proj/.drover/state/drover.db",
		LogsDir:      "/src/proj/.drover/logs",
		LogFile:      "/src/proj/.drover/logs/drover.log",
		SessionsDir:  "/src/proj/.drover/sessions",
		TemplatesDir: "/src/proj/.drover/templates",
		ConfigFile:   "/src/proj/.drover/config.yaml",
		RuntimeDir:   filepath.Join(tmp, "drover-"+strconv.Itoa(os.Getuid())),
	}
	// sha256("/src/proj"), first 16 hex digits.
	const hash = "85876bec78d3e724"
	want.Socket = filepath.Join(want.RuntimeDir, hash+".sock")
	want.Lock = filepath.Join(want.RuntimeDir, hash+".lock")
	if p != want {
		t.Errorf("PathsFor =\n%+v\nwant\n%+v", p, want)
	}
}

func TestPathsForRuntimeDir(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	xdg := t.TempDir()
	tmp := t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	long := filepath.Join(tmp, strings.Repeat("d", 120))
	override := filepath.Join(t.TempDir(), "s.sock")

	tests := []struct {
		name     string
		env      map[string]string
		wantDir  string
		wantSock string // when set, the exact socket path
	}{
		{name: "xdg", env: map[string]string{"XDG_RUNTIME_DIR": xdg, "TMPDIR": tmp}, wantDir: filepath.Join(xdg, "drover")},
		{name: "no xdg", env: map[string]string{"TMPDIR": tmp}, wantDir: filepath.Join(tmp, "drover-"+uid)},
		{name: "no xdg no tmpdir", env: map[string]string{}, wantDir: "/tmp/drover-" + uid},
		{name: "xdg is a file", env: map[string]string{"XDG_RUNTIME_DIR": file, "TMPDIR": tmp}, wantDir: filepath.Join(tmp, "drover-"+uid)},
		{name: "xdg is relative", env: map[string]string{"XDG_RUNTIME_DIR": "run", "TMPDIR": tmp}, wantDir: filepath.Join(tmp, "drover-"+uid)},
		{name: "xdg is missing", env: map[string]string{"XDG_RUNTIME_DIR": filepath.Join(xdg, "nope"), "TMPDIR": tmp}, wantDir: filepath.Join(tmp, "drover-"+uid)},
		{name: "xdg is someone else's", env: map[string]string{"XDG_RUNTIME_DIR": foreignDir(t), "TMPDIR": tmp}, wantDir: filepath.Join(tmp, "drover-"+uid)},
		{name: "long tmpdir", env: map[string]string{"TMPDIR": long}, wantDir: "/tmp/drover-" + uid},
		{name: "xdg with a long tmpdir", env: map[string]string{"XDG_RUNTIME_DIR": xdg, "TMPDIR": long}, wantDir: filepath.Join(xdg, "drover")},
		{name: "override", env: map[string]string{"DROVER_SOCKET": override, "XDG_RUNTIME_DIR": xdg}, wantDir: filepath.Dir(override), wantSock: override},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PathsFor("/src/proj", envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if p.RuntimeDir != tt.wantDir {
				t.Errorf("RuntimeDir = %q, want %q", p.RuntimeDir, tt.wantDir)
			}
			if tt.wantSock != "" && p.Socket != tt.wantSock {
				t.Errorf("Socket = %q, want %q", p.Socket, tt.wantSock)
			}
			if filepath.Dir(p.Socket) != tt.wantDir || filepath.Dir(p.Lock) != tt.wantDir {
				t.Errorf("Socket %q and Lock %q are not in %q", p.Socket, p.Lock, tt.wantDir)
			}
			if p.Socket == p.Lock {
				t.Errorf("Socket and Lock are both %q", p.Socket)
			}
			if len(p.Socket) > maxSocketPath() {
				t.Errorf("Socket %q is %d bytes, over the limit", p.Socket, len(p.Socket))
			}
		})
	}
}

func TestPathsForLongXDG(t *testing.T) {
	xdg := filepath.Join(t.TempDir(), strings.Repeat("x", 110))
	mkdirs(t, xdg)
	p, err := PathsFor("/src/proj", envOf(map[string]string{"XDG_RUNTIME_DIR": xdg}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/tmp/drover-" + strconv.Itoa(os.Getuid()); p.RuntimeDir != want {
		t.Errorf("RuntimeDir = %q, want the short fallback %q", p.RuntimeDir, want)
	}
}

func TestPathsForHashPerRoot(t *testing.T) {
	env := envOf(map[string]string{"TMPDIR": "/tmp"})
	a, err := PathsFor("/src/a", env)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := PathsFor("/src/a/", env)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PathsFor("/src/b", env)
	if err != nil {
		t.Fatal(err)
	}
	if a.Socket != a2.Socket {
		t.Errorf("one root, two sockets: %q and %q", a.Socket, a2.Socket)
	}
	if a.Socket == b.Socket || a.Lock == b.Lock {
		t.Errorf("two roots share socket %q / lock %q", a.Socket, a.Lock)
	}
	name := strings.TrimSuffix(filepath.Base(a.Socket), ".sock")
	if len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" {
		t.Errorf("socket name %q is not 16 hex digits", name)
	}
}

func TestPathsForErrors(t *testing.T) {
	tests := []struct {
		name      string
		root      string
		env       map[string]string
		max       int
		wantInErr string
	}{
		{name: "relative root", root: "src/proj", max: 107, wantInErr: "not absolute"},
		{name: "even the fallback is too long", root: "/src/proj", env: map[string]string{"TMPDIR": "/tmp"}, max: 20, wantInErr: "20-byte"},
		{name: "override too long", root: "/src/proj", env: map[string]string{"DROVER_SOCKET": "/" + strings.Repeat("s", 120)}, max: 107, wantInErr: "DROVER_SOCKET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pathsFor(tt.root, envOf(tt.env), tt.max)
			if err == nil {
				t.Fatalf("pathsFor = %+v, want an error", p)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantInErr)
			}
		})
	}
}

func TestEnsureRuntimeDir(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T) string
		wantErr  string // substring; empty means success
		wantPerm fs.FileMode
	}{
		{
			name:     "created",
			setup:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "run") },
			wantPerm: 0o700,
		},
		{
			name:     "ours and private",
			setup:    func(t *testing.T) string { return mkdirMode(t, 0o700) },
			wantPerm: 0o700,
		},
		{
			name:     "ours, readable by others",
			setup:    func(t *testing.T) string { return mkdirMode(t, 0o755) },
			wantPerm: 0o755,
		},
		{
			name:     "ours, writable by all",
			setup:    func(t *testing.T) string { return mkdirMode(t, 0o777) },
			wantPerm: 0o700,
		},
		{
			name:     "ours, writable by group",
			setup:    func(t *testing.T) string { return mkdirMode(t, 0o770) },
			wantPerm: 0o700,
		},
		{
			name:    "ours but shared and sticky",
			setup:   func(t *testing.T) string { return mkdirMode(t, 0o777|fs.ModeSticky) },
			wantErr: "shared directory",
		},
		{
			name:    "someone else's",
			setup:   foreignDir,
			wantErr: "refusing",
		},
		{
			name: "a symlink to our dir",
			setup: func(t *testing.T) string {
				d := mkdirMode(t, 0o700)
				l := d + ".link"
				if err := os.Symlink(d, l); err != nil {
					t.Fatal(err)
				}
				return l
			},
			wantErr: "not a directory",
		},
		{
			name: "a file",
			setup: func(t *testing.T) string {
				f := filepath.Join(t.TempDir(), "f")
				writeFile(t, f, "")
				return f
			},
			wantErr: "not a directory",
		},
		{
			name:    "parent missing",
			setup:   func(t *testing.T) string { return filepath.Join(t.TempDir(), "a", "b") },
			wantErr: "creating",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			err := EnsureRuntimeDir(dir)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("EnsureRuntimeDir(%q) succeeded, want an error", dir)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), dir) {
					t.Errorf("error %q should mention %q and the directory", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureRuntimeDir(%q): %v", dir, err)
			}
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (fs.ModePerm | fs.ModeSticky); got != tt.wantPerm {
				t.Errorf("mode after EnsureRuntimeDir = %v, want %v", got, tt.wantPerm)
			}
		})
	}
}

// mkdirMode makes a directory with exactly mode, whatever the umask.
func mkdirMode(t *testing.T, mode fs.FileMode) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}
