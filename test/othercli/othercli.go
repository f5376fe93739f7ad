//go:build unix

// Package othercli runs the real Codex CLI and Gemini CLI for end-to-end
// tests, the way test/claudecli runs Claude Code: pinned (tools/codex,
// tools/gemini), offline against test/fakemodel on loopback, in a scratch
// home directory, with nothing of the caller's OpenAI, Codex, Google or
// Gemini settings. The configuration and trust steps are the ones measured
// in the reference notes on these CLIs (Codex 0.169.0, Gemini CLI 0.61.0).
package othercli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
)

// DefaultTimeout bounds a Run without a Timeout. A scripted run takes a few
// seconds; this only stops a hang.
const DefaultTimeout = claudecli.DefaultTimeout

// CLI is one of the agent CLIs this package runs.
type CLI struct {
	// Name is "codex" or "gemini".
	Name string
	// Package is the npm package tools/<Name>/package.json pins.
	Package string
	// BinEnv overrides where Find looks for the binary.
	BinEnv string
	// bins are where npm puts the binary, relative to tools/<Name>.
	bins []string
	// versionField is the field of `--version`'s first line that holds
	// the version number.
	versionField int
}

// Codex is the OpenAI Codex CLI.
var Codex = CLI{
	Name:         "codex",
	Package:      "@openai/codex",
	BinEnv:       "DROVER_CODEX_BIN",
	bins:         []string{"node_modules/.bin/codex"},
	versionField: 1, // "codex-cli 0.169.0"
}

// Gemini is the Google Gemini CLI.
var Gemini = CLI{
	Name:         "gemini",
	Package:      "@google/gemini-cli",
	BinEnv:       "DROVER_GEMINI_BIN",
	bins:         []string{"node_modules/.bin/gemini"},
	versionField: 0, // "0.61.0"
}

// InstallHint says how to install the pinned CLI; Find's errors carry it.
func (c CLI) InstallHint() string {
	return fmt.Sprintf("install the pinned %s CLI with `make %s` (or `sh tools/%s/install.sh`), or set %s", c.Name, c.Name, c.Name, c.BinEnv)
}

// Find returns the path of the CLI's binary: $BinEnv if set, else the one
// tools/<name>/install.sh put under the module root.
func (c CLI) Find() (string, error) {
	if p := os.Getenv(c.BinEnv); p != "" {
		if err := claudecli.CheckExecutable(p); err != nil {
			return "", fmt.Errorf("%s binary from %s: %w", c.Name, c.BinEnv, err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding %s binary: %w", c.Name, err)
	}
	root, err := claudecli.ModuleRoot(wd)
	if err != nil {
		return "", fmt.Errorf("finding %s binary: %w", c.Name, err)
	}
	var tried []string
	for _, rel := range c.bins {
		p := filepath.Join(root, "tools", c.Name, rel)
		if claudecli.CheckExecutable(p) == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%s binary not found (tried %s): %s", c.Name, strings.Join(tried, ", "), c.InstallHint())
}

// Version runs `bin --version` in a scratch home and returns the version
// number it prints.
func (c CLI) Version(ctx context.Context, bin string) (string, error) {
	home, err := os.MkdirTemp("", "othercli-home-")
	if err != nil {
		return "", fmt.Errorf("creating home for %s: %w", c.Name, err)
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, bin, "--version")
	// Port 9 (discard) on loopback: nothing to reach, should it try.
	cmd.Env = c.Environ(os.Environ(), home, "http://127.0.0.1:9", nil)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s --version: %w", bin, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	fields := strings.Fields(line)
	if len(fields) <= c.versionField {
		return "", fmt.Errorf("running %s --version: unexpected output %q", bin, out)
	}
	return fields[c.versionField], nil
}

// Environ builds the CLI's environment from the parent's: it drops HOME,
// TMPDIR and every variable that could point the CLI at a real API or at
// the caller's configuration (OPENAI_*, CODEX_*, GEMINI_*, GOOGLE_*,
// CLAUDE*, ANTHROPIC_*, XDG_*, GIT_*), sets the offline configuration for
// the server at baseURL (the fake model's URL()), and appends extra, whose
// entries win. Error reports and scratch files go to home/tmp.
func (c CLI) Environ(parent []string, home, baseURL string, extra []string) []string {
	env := make([]string, 0, len(parent)+len(extra)+10)
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if dropped(k) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "TMPDIR="+filepath.Join(home, "tmp"))
	switch c.Name {
	case "codex":
		env = append(env,
			"CODEX_HOME="+CodexHome(home),
			// The provider of WriteCodexConfig reads its key from here.
			"FAKE_OPENAI_KEY=sk-fake-offline-key",
		)
	case "gemini":
		env = append(env,
			"GEMINI_CLI_HOME="+home,
			"GEMINI_API_KEY=fake-offline-key",
			"GOOGLE_GEMINI_BASE_URL="+baseURL,
			"GEMINI_TELEMETRY_ENABLED=false",
			// Without it the CLI re-spawns itself, and the parent ignores
			// SIGTERM.
			"GEMINI_CLI_NO_RELAUNCH=true",
		)
	}
	return append(env, extra...)
}

func dropped(key string) bool {
	for _, p := range []string{"OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "ANTHROPIC_", "CLAUDE", "XDG_", "GIT_"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return key == "HOME" || key == "TMPDIR"
}

// Run is one non-interactive run of a CLI: `codex exec ...` or
// `gemini -p ...`. Set the home up first with SetupCodex or SetupGemini.
type Run struct {
	CLI CLI
	// Bin is the binary; empty means CLI.Find().
	Bin string
	// Dir is the working directory (the project).
	Dir string
	// Home is the scratch HOME the Setup function prepared.
	Home string
	// BaseURL is the fake model's URL(). Required, so that no test can
	// reach a real API by accident. The Gemini CLI gets it in its
	// environment; Codex reads its provider's base_url from the config
	// SetupCodex wrote.
	BaseURL string
	// Args are the whole command line after the binary, e.g.
	// CodexExec(prompt) or GeminiPrompt(prompt).
	Args []string
	// Env adds or overrides environment variables (KEY=VALUE).
	Env []string
	// Timeout bounds the run; zero means DefaultTimeout. On timeout the
	// CLI's whole process group (hooks, tools) is killed.
	Timeout time.Duration
}

// Result is what a run printed and how it exited.
type Result = claudecli.Result

// Exec runs the CLI with stdin on /dev/null (with a pipe, both read it) and
// waits for it. A non-zero exit is not an error; errors are failures to
// start it and timeouts.
func (r Run) Exec(ctx context.Context) (Result, error) {
	if r.BaseURL == "" {
		return Result{}, fmt.Errorf("running %s: Run.BaseURL is empty", r.CLI.Name)
	}
	if r.Home == "" {
		return Result{}, fmt.Errorf("running %s: Run.Home is empty", r.CLI.Name)
	}
	bin := r.Bin
	if bin == "" {
		var err error
		if bin, err = r.CLI.Find(); err != nil {
			return Result{}, err
		}
	}
	if err := os.MkdirAll(filepath.Join(r.Home, "tmp"), 0o755); err != nil {
		return Result{}, fmt.Errorf("running %s: %w", r.CLI.Name, err)
	}
	return claudecli.ExecCommand(ctx, r.CLI.Name, r.Timeout, r.Dir, r.CLI.Environ(os.Environ(), r.Home, r.BaseURL, r.Env), bin, r.Args...)
}
