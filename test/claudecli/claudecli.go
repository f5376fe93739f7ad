// Package claudecli runs the real Claude Code CLI for end-to-end tests:
// pinned (tools/claude), offline against a fake model server, in a scratch
// home directory, with nothing of the caller's Claude or Anthropic settings.
package claudecli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// BinEnv names the environment variable that overrides where Find looks
// for the claude binary.
const BinEnv = "DROVER_CLAUDE_BIN"

// DefaultTimeout bounds a Run without a Timeout. One scripted run takes a
// few seconds; this only stops a hang.
const DefaultTimeout = 3 * time.Minute

// InstallHint says how to install the pinned CLI; Find's errors carry it.
const InstallHint = "install the pinned Claude Code CLI with `make claude` (or `sh tools/claude/install.sh`), or set " + BinEnv

// Find returns the path of the claude binary: $DROVER_CLAUDE_BIN if set,
// else the one tools/claude/install.sh put under the module root (found by
// walking up from the working directory to go.mod).
func Find() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		if err := CheckExecutable(p); err != nil {
			return "", fmt.Errorf("claude binary from %s: %w", BinEnv, err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding claude binary: %w", err)
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		return "", fmt.Errorf("finding claude binary: %w", err)
	}
	var tried []string
	for _, p := range candidates(filepath.Join(root, "tools", "claude", "node_modules")) {
		if CheckExecutable(p) == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("claude binary not found (tried %s): %s", strings.Join(tried, ", "), InstallHint)
}

// candidates lists where npm puts the binary: the package's bin link, and
// the platform package's native binary (which is all there is when npm
// skipped the package's postinstall step that copies it over the link's
// placeholder).
func candidates(nodeModules string) []string {
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	return []string{
		filepath.Join(nodeModules, ".bin", "claude"),
		filepath.Join(nodeModules, "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude"),
	}
}

// CheckExecutable says why p is not an executable file, or nil.
func CheckExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// ModuleRoot returns the nearest directory at or above dir that holds a
// go.mod file.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding module root: %w", err)
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = parent
	}
}

// Run is one `claude --print` invocation. The zero value of each optional
// field is usable.
type Run struct {
	// Bin is the claude binary; empty means Find().
	Bin string
	// Dir is the working directory (the project); empty means the current
	// one.
	Dir string
	// Home becomes HOME, where the CLI keeps ~/.claude.json, settings and
	// transcripts. Empty means a fresh temporary directory, removed after
	// the run; pass t.TempDir() to look at transcripts afterwards.
	Home string
	// BaseURL is the model server, e.g. fakemodel's Server.URL(). Required,
	// so that no test can reach a real API by accident.
	BaseURL string
	// PluginDir, when set, is passed as --plugin-dir.
	PluginDir string
	// Args follow --print (and --plugin-dir): flags such as
	// --dangerously-skip-permissions, --model sonnet, --output-format json,
	// then the prompt.
	Args []string
	// Env adds or overrides environment variables (KEY=VALUE); it is
	// applied last.
	Env []string
	// Timeout bounds the run; zero means DefaultTimeout. On timeout the
	// CLI's whole process group (hooks, tools) is killed.
	Timeout time.Duration
}

// Result is what a run printed and how it exited.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the CLI's exit status, or -1 if it was killed.
	ExitCode int
	// Duration is the wall time of the run.
	Duration time.Duration
}

// Exec runs the CLI and waits for it. A non-zero exit is not an error (tests
// may expect one; check Result.ExitCode); errors are failures to start it
// and timeouts, which come with whatever the CLI printed so far. When the
// model API answers with an error, 2.1.197 prints "API Error: <status>
// <message>" on stdout and exits 1.
func (r Run) Exec(ctx context.Context) (Result, error) {
	if r.BaseURL == "" {
		return Result{}, errors.New("running claude: Run.BaseURL is empty")
	}
	bin := r.Bin
	if bin == "" {
		var err error
		if bin, err = Find(); err != nil {
			return Result{}, err
		}
	}
	home := r.Home
	if home == "" {
		tmp, err := os.MkdirTemp("", "claudecli-home-")
		if err != nil {
			return Result{}, fmt.Errorf("creating home for claude: %w", err)
		}
		defer os.RemoveAll(tmp)
		home = tmp
	}
	return ExecCommand(ctx, "claude", r.Timeout, r.Dir, Environ(os.Environ(), home, r.BaseURL, r.Env), bin, r.args()...)
}

// ExecCommand runs bin with args in dir with environment env, stdin
// empty, in a process group of its own, and waits for it at most timeout
// (zero means DefaultTimeout); name names the CLI in errors. It is how
// the test harnesses of every agent CLI (this package, test/othercli) run
// theirs. A non-zero exit is not an error; errors are failures to start
// it and timeouts, which come with whatever it printed so far.
func ExecCommand(ctx context.Context, name string, timeout time.Duration, dir string, env []string, bin string, args ...string) (Result, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// Stdin stays empty: with a pipe or terminal, a CLI's print mode
	// would read it.
	setProcessGroup(cmd)
	// Hooks and tools inherit the output pipes; if one outlives the kill,
	// stop waiting for it after a while.
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err := cmd.Run()
	// Nothing the run started (a backgrounded tool, a slow hook) may
	// outlive it.
	killProcessGroup(cmd)
	res := Result{
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
		ExitCode: cmd.ProcessState.ExitCode(),
		Duration: time.Since(start),
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("running %s in %q: %w (after %s)", name, dir, ctx.Err(), res.Duration.Round(time.Millisecond))
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return res, fmt.Errorf("running %s in %q: %w", name, dir, err)
	}
	return res, nil
}

// args builds the command line: --print, --plugin-dir, then r.Args.
func (r Run) args() []string {
	args := []string{"--print"}
	if r.PluginDir != "" {
		args = append(args, "--plugin-dir", r.PluginDir)
	}
	return append(args, r.Args...)
}

// Environ builds the CLI's environment from the parent's: it drops every
// ANTHROPIC_*, CLAUDE* (CLAUDECODE too, which a parent Claude Code sets),
// XDG_* and GIT_* variable and HOME, then sets the offline configuration
// and appends extra, whose entries win.
func Environ(parent []string, home, baseURL string, extra []string) []string {
	env := make([]string, 0, len(parent)+len(extra)+8)
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if dropped(k) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY=dummy",
		// Only the model endpoint: no telemetry, title or quota requests.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		// CI runs as root, where --dangerously-skip-permissions needs it.
		"IS_SANDBOX=1",
	)
	return append(env, extra...)
}

func dropped(key string) bool {
	for _, p := range []string{"ANTHROPIC_", "CLAUDE", "XDG_", "GIT_"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return key == "HOME"
}

// Version runs `bin --version` and returns the version number it prints
// first, e.g. "2.1.197" from "2.1.197 (Claude Code)".
func Version(ctx context.Context, bin string) (string, error) {
	home, err := os.MkdirTemp("", "claudecli-home-")
	if err != nil {
		return "", fmt.Errorf("creating home for claude: %w", err)
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, bin, "--version")
	// Port 9 (discard) on loopback: nothing to reach, should it try.
	cmd.Env = Environ(os.Environ(), home, "http://127.0.0.1:9", nil)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s --version: %w", bin, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return "", fmt.Errorf("running %s --version: empty output", bin)
	}
	return fields[0], nil
}
