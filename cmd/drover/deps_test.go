package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// drover is the thin client: it runs as a new process on every hook event,
// so what it links is what every hook pays for at start-up. The engine,
// the store, the configuration loader and the actor library's tree are
// droverd's.
func TestDroverLinksNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/asynkron/protoactor-go",
		"go.etcd.io/bbolt",
		"github.com/knadh/koanf",
		"go.uber.org/zap",
		"google.golang.org/protobuf",
		"go.opentelemetry.io",
		"github.com/prometheus",
		"github.com/drover-dev/drover/actors",
		"github.com/drover-dev/drover/supervisor",
		"github.com/drover-dev/drover/internal/store",
		"github.com/drover-dev/drover/internal/config",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("drover links %s", d)
			}
		}
	}
}

// Without droverd beside it nor on PATH, the commands drover hands to
// droverd fail with an error that names it, and a hook lets the agent go
// on, naming it too.
func TestDroverWithoutDroverd(t *testing.T) {
	p := newProj(t)
	alone := filepath.Join(t.TempDir(), "drover")
	data, err := os.ReadFile(droverBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// git stays reachable; droverd does not: PATH is a folder that holds
	// git alone, wherever droverd may be installed on this machine.
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"PATH=" + bin}, p.env[1:]...)
	env = append(env, "CLAUDE_PROJECT_DIR="+p.root)
	run := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(alone, args...)
		cmd.Dir, cmd.Env = p.root, env
		cmd.Stdin = strings.NewReader(stdin)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	for _, args := range [][]string{{"config"}, {"serve"}, {"route", "--input", "x", "--output", "y"}, {"add", "--session", "s1", "task"}} {
		_, stderr, code := run("", args...)
		if code == 0 || !strings.Contains(stderr, "droverd") || !strings.Contains(stderr, "not found") {
			t.Errorf("drover %v without droverd: exit %d, stderr %q", args, code, stderr)
		}
	}
	// A project with a store: the hook would start a supervisor.
	if err := os.MkdirAll(filepath.Join(p.root, ".drover", "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "state", "drover.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := run(`{"session_id":"s1"}`, "hook", "stop")
	if code != 0 || !strings.Contains(stdout, "droverd") || strings.Contains(stdout, `"block"`) {
		t.Errorf("hook stop without droverd: exit %d, stdout %q", code, stdout)
	}
}
