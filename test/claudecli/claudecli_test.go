package claudecli

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestEnviron(t *testing.T) {
	parent := []string{
		"PATH=/bin", "HOME=/home/dev", "LANG=C",
		"ANTHROPIC_API_KEY=real-key", "ANTHROPIC_MODEL=x", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli",
		"CLAUDE_CONFIG_DIR=/home/dev/.claude", "XDG_CONFIG_HOME=/home/dev/.config", "GIT_DIR=/elsewhere", "DROVER_SOCKET=/s",
	}
	got := Environ(parent, "/tmp/h", "http://127.0.0.1:1", []string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0", "LANG=en"})
	want := []string{
		"PATH=/bin", "LANG=C", "DROVER_SOCKET=/s",
		"HOME=/tmp/h", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1",
		"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0", "LANG=en",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ =\n%q\nwant\n%q", got, want)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		run  Run
		want []string
	}{
		{Run{}, []string{"--print"}},
		{Run{Args: []string{"hi"}}, []string{"--print", "hi"}},
		{Run{PluginDir: "/p", Args: []string{"--model", "opus", "/x:y a"}}, []string{"--print", "--plugin-dir", "/p", "--model", "opus", "/x:y a"}},
	}
	for _, tt := range tests {
		if got := tt.run.args(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("args(%+v) = %q, want %q", tt.run, got, tt.want)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ModuleRoot(deep); err != nil || got != root {
		t.Errorf("ModuleRoot(%s) = %q, %v; want %q", deep, got, err, root)
	}
	if _, err := ModuleRoot(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("ModuleRoot without go.mod: %v", err)
	}
}

// writeScript writes an executable shell script and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	t.Setenv(BinEnv, "")

	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "make claude") {
		t.Errorf("Find without an install: %v, want the install hint", err)
	}

	platform := candidates(filepath.Join(root, "tools", "claude", "node_modules"))[1]
	if err := os.MkdirAll(filepath.Dir(platform), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Dir(platform), "claude", "exit 0\n")
	if got, err := Find(); err != nil || got != platform {
		t.Errorf("Find with the platform package only = %q, %v; want %q", got, err, platform)
	}

	bin := filepath.Join(root, "tools", "claude", "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	link := writeScript(t, bin, "claude", "exit 0\n")
	if got, err := Find(); err != nil || got != link {
		t.Errorf("Find = %q, %v; want %q", got, err, link)
	}

	other := writeScript(t, t.TempDir(), "my-claude", "exit 0\n")
	t.Setenv(BinEnv, other)
	if got, err := Find(); err != nil || got != other {
		t.Errorf("Find with %s = %q, %v; want %q", BinEnv, got, err, other)
	}
	t.Setenv(BinEnv, filepath.Join(root, "go.mod"))
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("Find with a non-executable %s: %v", BinEnv, err)
	}
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	bin := writeScript(t, dir, "claude", `
printf '%s\n' "$@"
echo "HOME=$HOME"
echo "BASE=$ANTHROPIC_BASE_URL"
echo "KEY=$ANTHROPIC_API_KEY"
echo "EXTRA=$EXTRA"
echo "PWD=$(pwd)"
echo oops >&2
exit 3
`)
	home := t.TempDir()
	res, err := Run{
		Bin: bin, Dir: dir, Home: home, BaseURL: "http://127.0.0.1:9",
		Args: []string{"--model", "opus", "a prompt"}, Env: []string{"EXTRA=yes"},
	}.Exec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"--print", "--model", "opus", "a prompt",
		"HOME=" + home, "BASE=http://127.0.0.1:9", "KEY=dummy", "EXTRA=yes", "PWD=" + dir}, "\n") + "\n"
	if res.Stdout != want || res.Stderr != "oops\n" || res.ExitCode != 3 {
		t.Errorf("Exec = %+v\nwant stdout %q, stderr oops, exit 3", res, want)
	}
}

func TestExecScratchHome(t *testing.T) {
	bin := writeScript(t, t.TempDir(), "claude", `echo "$HOME"; touch "$HOME/.claude.json"`)
	res, err := Run{Bin: bin, BaseURL: "http://127.0.0.1:9"}.Exec(t.Context())
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	home := strings.TrimSpace(res.Stdout)
	if home == "" || home == os.Getenv("HOME") {
		t.Fatalf("HOME = %q, want a scratch directory", home)
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch home %s was not removed: %v", home, err)
	}
}

func TestExecNeedsBaseURL(t *testing.T) {
	if _, err := (Run{Bin: "/bin/true"}).Exec(t.Context()); err == nil || !strings.Contains(err.Error(), "BaseURL") {
		t.Errorf("Exec without BaseURL: %v", err)
	}
}

func TestGitProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	if err := GitProject(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"log --format=%s":          "initial commit",
		"branch --show-current":    "main",
		"config user.email":        "test@drover.invalid",
		"status --porcelain":       "",
		"ls-files":                 "README.md",
		"rev-list --count HEAD":    "1",
		"config commit.gpgsign":    "false",
		"log --format=%an -1 HEAD": "drover test",
	} {
		got, err := Git(t.Context(), dir, strings.Fields(args)...)
		if err != nil || got != want {
			t.Errorf("git %s = %q, %v; want %q", args, got, err, want)
		}
	}
	if _, err := Git(t.Context(), dir, "no-such-command"); err == nil || !strings.Contains(err.Error(), "git no-such-command") {
		t.Errorf("failing git: %v", err)
	}
}

func TestGitEnv(t *testing.T) {
	got := gitEnv([]string{"PATH=/bin", "GIT_DIR=/x", "GIT_WORK_TREE=/y", "HOME=/h"})
	if slices.ContainsFunc(got, func(kv string) bool {
		return strings.HasPrefix(kv, "GIT_DIR") || strings.HasPrefix(kv, "GIT_WORK_TREE")
	}) {
		t.Errorf("gitEnv kept the caller's GIT_* variables: %q", got)
	}
	if !slices.Contains(got, "GIT_CONFIG_GLOBAL=/dev/null") || !slices.Contains(got, "PATH=/bin") {
		t.Errorf("gitEnv = %q", got)
	}
}
