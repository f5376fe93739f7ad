package claudecli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitProject makes dir (created if missing) a git repository with a local
// user identity, no commit signing, branch main, and one commit holding a
// README.md, so that the model's `git commit`s work under a scratch HOME.
func GitProject(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating git project %q: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# scratch project\n"), 0o644); err != nil {
		return fmt.Errorf("creating git project %q: %w", dir, err)
	}
	steps := [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "drover test"},
		{"config", "user.email", "test@drover.invalid"},
		{"config", "commit.gpgsign", "false"},
		{"add", "README.md"},
		{"commit", "-q", "-m", "initial commit"},
	}
	for _, args := range steps {
		if _, err := Git(ctx, dir, args...); err != nil {
			return fmt.Errorf("creating git project %q: %w", dir, err)
		}
	}
	return nil
}

// Git runs git in dir, ignoring the user's and the system's git config,
// and returns its trimmed standard output.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitEnv is the parent's environment without GIT_* variables (a test run
// from a git hook has GIT_DIR set) and without global or system config.
func gitEnv(parent []string) []string {
	env := make([]string, 0, len(parent)+2)
	for _, kv := range parent {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}
