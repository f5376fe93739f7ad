package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/faultfs"
)

// accessProbeEnv, set to "<socket>\n<store file>", makes the test binary
// an access probe (see accessProbe) instead of running the tests.
const accessProbeEnv = "DROVER_TEST_ACCESS_PROBE"

// nobody is the other user the probe runs as.
const nobody = 65534

// probeResult is what the probe could do: each field is "ok" or the error.
type probeResult struct {
	Connect string `json:"connect"`
	Request string `json:"request"`
	Read    string `json:"read"`
}

// accessProbe tries, as whatever user it runs as, to connect to the
// supervisor's socket and ask it for its status, and to read the store
// file; it prints a probeResult and exits 0.
func accessProbe(target string) int {
	sock, db, _ := strings.Cut(target, "\n")
	res := probeResult{Connect: "ok", Request: "ok", Read: "ok"}
	if c, err := net.DialTimeout("unix", sock, 5*time.Second); err != nil {
		res.Connect, res.Request = errText(err), "not connected"
	} else {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: drover\r\nConnection: close\r\n\r\n", api.PathStatus)
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			res.Request = errText(err)
		} else {
			_ = resp.Body.Close()
			res.Request = "answered " + resp.Status
		}
		_ = c.Close()
	}
	if f, err := os.Open(db); err != nil {
		res.Read = errText(err)
	} else {
		if _, err := io.ReadAll(f); err != nil {
			res.Read = errText(err)
		}
		_ = f.Close()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func errText(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "connection closed"
	}
	return err.Error()
}

// TestOtherUserIsShutOut runs the test binary as another user (nobody) on
// a project whose parent directories anyone may enter: it cannot connect
// to the supervisor's socket nor read .drover/state. Each of drover's
// protections is shown on its own by opening up the ones in front of it:
// the runtime directory (0700), then the socket (0600), then the state
// directory (0700) and the store file (0600); past a socket opened to
// all, the supervisor still drops a connection from another uid.
func TestOtherUserIsShutOut(t *testing.T) {
	faultfs.NeedRoot(t, "running a client as another uid")
	// The test binary and the project must be reachable by nobody: only
	// drover's own modes may keep it out.
	base, err := os.MkdirTemp("", "drover-access-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(base, "probe")
	if err := copyFile(exe, probe, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newProjIn(t, filepath.Join(base, "p"))
	for _, d := range []string{"p", "p/repo", "p/run", "p/home"} {
		if err := os.Chmod(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.must("", "add", "--session", "s1", "fix the login bug")
	sock := p.socket()
	runtime := filepath.Dir(sock)
	state := filepath.Join(p.root, ".drover", "state")
	db := filepath.Join(state, "drover.db")
	for path, want := range map[string]fs.FileMode{runtime: 0o700, sock: 0o600, state: 0o700, db: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %v, want %v", path, got, want)
		}
	}
	// The store is on disk and the socket answers its owner.
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}

	run := func() probeResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, probe)
		cmd.Dir = "/"
		cmd.Env = []string{accessProbeEnv + "=" + sock + "\n" + db}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("running the probe as uid %d: %v\n%s", nobody, err, out)
		}
		var res probeResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("the probe printed %q: %v", out, err)
		}
		return res
	}
	chmod := func(path string, mode fs.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name   string
		before func()
		want   probeResult
	}{
		{"as drover made them", func() {}, probeResult{Connect: "permission denied", Request: "not connected", Read: "permission denied"}},
		{"runtime and state directories opened", func() { chmod(runtime, 0o755); chmod(state, 0o755) },
			probeResult{Connect: "permission denied", Request: "not connected", Read: "permission denied"}},
		{"socket opened too", func() { chmod(sock, 0o666) },
			probeResult{Connect: "ok", Request: "connection closed", Read: "permission denied"}},
	} {
		step.before()
		if got := run(); got != step.want {
			t.Errorf("%s: uid %d got %+v, want %+v", step.name, nobody, got, step.want)
		}
	}
	// The owner still gets in.
	if st := p.session("s1"); st.ID != "s1" {
		t.Errorf("the owner's status: %+v", st)
	}
}

func copyFile(from, to string, mode fs.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	return nil
}
