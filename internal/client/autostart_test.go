package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/proctag"
)

// TestSpawnStripsProcessTags: a supervisor started by a hook inside an
// agent or reviewer does not carry their tags, so it is not killed with
// them.
func TestSpawnStripsProcessTags(t *testing.T) {
	root := t.TempDir()
	exe := filepath.Join(root, "fake-drover")
	// The fake supervisor writes its arguments and environment, then exits.
	script := "#!/bin/sh\necho \"$@\" > args.tmp && env > env.tmp && mv args.tmp args && mv env.tmp env\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "KEEP=1",
		proctag.SupervisorKey + "=old", proctag.AgentKey + "=agent", proctag.ReviewKey + "=review",
	}
	if err := (Spawner{Exe: exe, Root: root, Env: env}).Spawn(); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var err error
	if !eventually.Holds(10*time.Second, func() bool { got, err = os.ReadFile(filepath.Join(root, "env")); return err == nil }) {
		t.Fatalf("the spawned process wrote no environment: %v", err)
	}
	if !strings.Contains(string(got), "KEEP=1") {
		t.Errorf("the spawned environment lost KEEP=1:\n%s", got)
	}
	for _, k := range []string{proctag.SupervisorKey, proctag.AgentKey, proctag.ReviewKey} {
		if strings.Contains(string(got), k+"=") {
			t.Errorf("the spawned environment carries %s:\n%s", k, got)
		}
	}
	args, err := os.ReadFile(filepath.Join(root, "args"))
	if err != nil || strings.TrimSpace(string(args)) != "serve --no-console --project "+root {
		t.Errorf("spawned with %q (%v)", args, err)
	}
}

// drover finds droverd from $DROVERD_BIN, else beside itself, else on
// PATH, and names droverd when there is none.
func TestDaemon(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got, err := Daemon(env(map[string]string{DaemonEnv: "/opt/x/droverd"})); err != nil || got != "/opt/x/droverd" {
		t.Errorf("with %s: %q, %v", DaemonEnv, got, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, DaemonName)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := Daemon(env(nil)); err != nil || got != bin {
		t.Errorf("on PATH: %q, %v", got, err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := Daemon(env(nil))
	if err == nil || !strings.Contains(err.Error(), "droverd") || !strings.Contains(err.Error(), DaemonEnv) {
		t.Errorf("without droverd: %v", err)
	}
}

// A supervisor that cannot start says why, at once: OnExit gets the end of
// its output, so a hook need not wait out the start timeout in silence.
func TestSpawnReportsASupervisorThatExits(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "droverd")
	script := "#!/bin/sh\necho starting\necho 'droverd: unknown config key \"loop.bogus\"' >&2\nexit 1\n"
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "logs", "serve.out")
	got := make(chan error, 1)
	if err := (Spawner{Exe: exe, Root: dir, OutFile: out, OnExit: func(err error) { got <- err }}).Spawn(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, ErrSupervisorExited) || !strings.Contains(err.Error(), `unknown config key "loop.bogus"`) || !strings.Contains(err.Error(), out) {
			t.Errorf("OnExit got %v, want ErrSupervisorExited quoting the last line and naming %s", err, out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnExit was not called for a supervisor that exited with status 1")
	}
}
