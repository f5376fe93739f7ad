//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGitEnv(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{
			name: "another repository and an editor",
			env:  []string{"PATH=/bin", "GIT_DIR=/x/.git", "GIT_WORK_TREE=/x", "GIT_OPTIONAL_LOCKS=1", "LC_ALL=de_DE", "GIT_EDITOR=vim", "HOME=/h"},
			want: []string{"PATH=/bin", "HOME=/h", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_MERGE_AUTOEDIT=no", "GIT_EDITOR=true"},
		},
		{
			name: "index and config variables",
			env:  []string{"PATH=/bin", "GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere", "GIT_INDEX_FILE=x", "GIT_OPTIONAL_LOCKS=1", "LC_ALL=de_DE.UTF-8", "GIT_CONFIG_NOSYSTEM=1"},
			want: []string{"PATH=/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_MERGE_AUTOEDIT=no", "GIT_EDITOR=true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GitEnv(tt.env); !slices.Equal(got, tt.want) {
				t.Errorf("GitEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: drover needs it")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("HOME", t.TempDir())
	repo := t.TempDir()
	if _, err := Git(context.Background(), repo, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	// A parent git's variables do not redirect it.
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))

	out, err := Git(context.Background(), filepath.Join(repo, "."), "rev-parse", "--is-inside-work-tree")
	if err != nil || out != "true\n" {
		t.Errorf("rev-parse = %q, %v; want true", out, err)
	}

	_, err = Git(context.Background(), repo, "rev-parse", "--verify", "no-such-ref")
	var gerr *GitError
	var exit *exec.ExitError
	if !errors.As(err, &gerr) || !errors.As(err, &exit) || exit.ExitCode() != 128 ||
		!strings.HasPrefix(err.Error(), "git rev-parse --verify no-such-ref: exit status 128: fatal: Needed a single revision") {
		t.Errorf("Git(bad ref) = %v; want a *GitError with git's message", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Git(ctx, repo, "status"); !errors.Is(err, context.Canceled) {
		t.Errorf("Git(cancelled) = %v, want context.Canceled", err)
	}
}

func TestGitCmdStopsGently(t *testing.T) {
	c := GitCmd("/some/dir", "status")
	if !c.Graceful || c.Timeout != GitTimeout || c.Dir != "/some/dir" || c.Path != "git" || !slices.Contains(c.Env, "GIT_OPTIONAL_LOCKS=0") {
		t.Errorf("GitCmd = %+v", c)
	}
}

// Git commands run under a context's tags carry them, for the watchdog and
// a resumed run to find; a context without tags adds none.
func TestGitCarriesTheContextTags(t *testing.T) {
	dir := t.TempDir()
	if _, err := Git(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	// A hook is what git runs with its own environment, as a merge's or
	// a checkout's hooks are.
	hook := filepath.Join(dir, ".git", "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$DROVER_RUN_ID|$DROVER_SUPERVISOR_RUN\" >> \"$(git rev-parse --git-dir)/seen\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config", "user.name", "t"}, {"config", "user.email", "t@example.com"}, {"commit", "-q", "--allow-empty", "-m", "x"}} {
		if _, err := Git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no tags", context.Background(), "|"},
		{"run and supervisor", WithTags(WithTags(context.Background(), "DROVER_RUN_ID=r1"), "DROVER_SUPERVISOR_RUN=s1", ""), "r1|s1"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := Git(tc.ctx, dir, "checkout", "-q", "-b", "b"+string(rune('0'+i))); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			data, err := os.ReadFile(filepath.Join(dir, ".git", "seen"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("git's hook saw %q, want %q", got, tc.want)
			}
		})
	}
	if got := Tags(WithTags(context.Background(), "A=1", "A=1", "B=2")); !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Errorf("Tags = %q, want each tag once", got)
	}
}
