package project

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// realDir returns dir with symlinks resolved, as Root reports it (the temp
// directory itself may sit behind a symlink).
func realDir(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noGitAbove skips when an ancestor of dir is a git work tree, because then
// "outside any repository" cannot be set up there.
func noGitAbove(t *testing.T, dir string) {
	t.Helper()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			t.Skipf("the temp directory is inside a git repository (%s)", d)
		}
		if filepath.Dir(d) == d {
			return
		}
	}
}

// git runs git in dir, isolated from the user's and the system's config.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestRoot(t *testing.T) {
	base := realDir(t, t.TempDir())
	noGitAbove(t, base)

	// A plain repository with a nested directory.
	repo := filepath.Join(base, "repo")
	mkdirs(t, filepath.Join(repo, ".git"), filepath.Join(repo, "a", "b"))

	// Symlinks to the repository and into it.
	mkdirs(t, filepath.Join(base, "links"))
	if err := os.Symlink(repo, filepath.Join(base, "links", "repo")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "a"), filepath.Join(base, "links", "a")); err != nil {
		t.Fatal(err)
	}

	// A linked worktree whose .git file and commondir are relative (git
	// writes them so with worktree.useRelativePaths).
	rel := filepath.Join(base, "rel")
	mkdirs(t, filepath.Join(rel, "main", ".git", "worktrees", "wt"), filepath.Join(rel, "wt", "sub"))
	writeFile(t, filepath.Join(rel, "wt", ".git"), "gitdir: ../main/.git/worktrees/wt\n")
	writeFile(t, filepath.Join(rel, "main", ".git", "worktrees", "wt", "commondir"), "../..\n")

	// A submodule: its .git file points into the superproject's modules,
	// with no commondir, so it is a project of its own.
	super := filepath.Join(base, "super")
	mkdirs(t, filepath.Join(super, ".git", "modules", "sub"), filepath.Join(super, "sub", "x"))
	writeFile(t, filepath.Join(super, "sub", ".git"), "gitdir: ../.git/modules/sub\n")

	// A worktree of a bare repository: the bare directory is the root.
	bare := filepath.Join(base, "bare")
	mkdirs(t, filepath.Join(bare, "repo.git", "worktrees", "wt"), filepath.Join(bare, "wt"))
	writeFile(t, filepath.Join(bare, "wt", ".git"), "gitdir: "+filepath.Join(bare, "repo.git", "worktrees", "wt")+"\r\n")
	writeFile(t, filepath.Join(bare, "repo.git", "worktrees", "wt", "commondir"), "../..")

	// No repository at all.
	plain := filepath.Join(base, "plain", "x")
	mkdirs(t, plain)

	tests := []struct {
		name, dir, want string
	}{
		{"repo root", repo, repo},
		{"nested dir", filepath.Join(repo, "a", "b"), repo},
		{"unclean spelling", repo + "/a/../a/b/", repo},
		{"the .git dir itself", filepath.Join(repo, ".git"), repo},
		{"symlink to repo", filepath.Join(base, "links", "repo", "a"), repo},
		{"symlink into repo", filepath.Join(base, "links", "a", "b"), repo},
		{"relative worktree", filepath.Join(rel, "wt", "sub"), filepath.Join(rel, "main")},
		{"submodule", filepath.Join(super, "sub", "x"), filepath.Join(super, "sub")},
		{"bare worktree", filepath.Join(bare, "wt"), filepath.Join(bare, "repo.git")},
		{"no git", plain, plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Root(tt.dir)
			if err != nil {
				t.Fatalf("Root(%q): %v", tt.dir, err)
			}
			if got != tt.want {
				t.Errorf("Root(%q) = %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}

func TestRootRelative(t *testing.T) {
	base := realDir(t, t.TempDir())
	mkdirs(t, filepath.Join(base, ".git"), filepath.Join(base, "sub"))
	t.Chdir(filepath.Join(base, "sub"))
	got, err := Root(".")
	if err != nil {
		t.Fatal(err)
	}
	if got != base {
		t.Errorf("Root(\".\") = %q, want %q", got, base)
	}
}

func TestRootErrors(t *testing.T) {
	base := realDir(t, t.TempDir())
	bad := filepath.Join(base, "bad")
	mkdirs(t, bad)
	writeFile(t, filepath.Join(bad, ".git"), "not a gitdir line\n")
	dangling := filepath.Join(base, "dangling")
	mkdirs(t, dangling, filepath.Join(base, "gd"))
	writeFile(t, filepath.Join(dangling, ".git"), "gitdir: ../gd\n")
	writeFile(t, filepath.Join(base, "gd", "commondir"), "../nowhere\n")

	tests := []struct {
		name, dir, wantInErr string
	}{
		{"missing dir", filepath.Join(base, "missing"), "missing"},
		{"malformed .git file", bad, "gitdir:"},
		{"commondir names nothing", dangling, "common git directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Root(tt.dir)
			if err == nil {
				t.Fatalf("Root(%q) = %q, want an error", tt.dir, got)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("Root(%q) error %q does not mention %q", tt.dir, err, tt.wantInErr)
			}
		})
	}
}

// TestRootGitWorktree checks the layout real git writes: a worktree and its
// main repository share one root.
func TestRootGitWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: drover needs it, and `make test` installs it")
	}
	base := realDir(t, t.TempDir())
	main := filepath.Join(base, "main")
	wt := filepath.Join(base, "elsewhere", "wt")
	mkdirs(t, filepath.Join(main, "pkg"), filepath.Join(base, "elsewhere"))
	git(t, main, "init", "-q")
	git(t, main, "commit", "-q", "--allow-empty", "-m", "init")
	git(t, main, "worktree", "add", "-q", "-b", "feature", wt)
	mkdirs(t, filepath.Join(wt, "deep", "er"))

	for _, dir := range []string{main, filepath.Join(main, "pkg"), wt, filepath.Join(wt, "deep", "er")} {
		got, err := Root(dir)
		if err != nil {
			t.Fatalf("Root(%q): %v", dir, err)
		}
		if got != main {
			t.Errorf("Root(%q) = %q, want the main work tree %q", dir, got, main)
		}
	}

	// WorkTree names the tree the directory is in, and the shared root.
	for _, tc := range []struct{ dir, top string }{
		{main, main},
		{filepath.Join(main, "pkg"), main},
		{wt, wt},
		{filepath.Join(wt, "deep", "er"), wt},
	} {
		top, root, err := WorkTree(tc.dir)
		if err != nil {
			t.Fatalf("WorkTree(%q): %v", tc.dir, err)
		}
		if top != tc.top || root != main {
			t.Errorf("WorkTree(%q) = %q, %q; want %q, %q", tc.dir, top, root, tc.top, main)
		}
	}
}

func TestFromEnv(t *testing.T) {
	base := realDir(t, t.TempDir())
	flagDir, envDir, cwdDir := filepath.Join(base, "flag"), filepath.Join(base, "env"), filepath.Join(base, "cwd")
	for _, d := range []string{flagDir, envDir, cwdDir} {
		mkdirs(t, filepath.Join(d, ".git"), filepath.Join(d, "sub"))
	}
	wd := realDir(t, t.TempDir())
	mkdirs(t, filepath.Join(wd, ".git"))
	t.Chdir(wd)

	tests := []struct {
		name       string
		flag, cwd  string
		env        map[string]string
		want       string
		nilGetenv  bool
		wantErrSub string
	}{
		{name: "flag wins", flag: filepath.Join(flagDir, "sub"), cwd: cwdDir, env: map[string]string{"CLAUDE_PROJECT_DIR": envDir}, want: flagDir},
		{name: "env over cwd", cwd: cwdDir, env: map[string]string{"CLAUDE_PROJECT_DIR": filepath.Join(envDir, "sub")}, want: envDir},
		{name: "cwd", cwd: filepath.Join(cwdDir, "sub"), want: cwdDir},
		{name: "working directory", want: wd},
		{name: "nil getenv", cwd: cwdDir, nilGetenv: true, want: cwdDir},
		{name: "missing flag dir", flag: filepath.Join(base, "nope"), cwd: cwdDir, wantErrSub: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if tt.nilGetenv {
				t.Setenv("CLAUDE_PROJECT_DIR", "")
				getenv = nil
			}
			got, err := FromEnv(tt.flag, tt.cwd, getenv)
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("FromEnv = %q, %v; want an error mentioning %q", got, err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("FromEnv = %q, want %q", got, tt.want)
			}
		})
	}
}
