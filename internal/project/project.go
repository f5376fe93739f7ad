// Package project finds the project a directory belongs to and the paths
// drover uses for it: the .drover/ tree inside the work tree and the
// supervisor's socket and lock outside it.
//
// A project is a git repository, and all worktrees of one repository are
// one project, so that they share a single supervisor. The lookup reads the
// .git files itself instead of running git, because it sits on the path of
// every hook event.
package project

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Root returns the project root for dir: the top of the git work tree that
// contains dir, or, for a linked worktree, the top of its main work tree. A
// dir outside any repository is its own root. The result is absolute, clean
// and free of symlinks, so two spellings of one project agree.
func Root(dir string) (string, error) {
	_, root, err := WorkTree(dir)
	return root, err
}

// WorkTree returns the top of the git work tree that contains dir (for a
// linked worktree, the linked one, not the main one) and the project root
// it belongs to (see Root). A dir outside any repository is both. Both are
// absolute, clean and free of symlinks.
//
// The session actor needs the top as well as the root: worktrees share one
// supervisor, whose Root is the main work tree, but the commit gate must
// look at the tree the agent works in.
func WorkTree(dir string) (top, root string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("resolving project directory %q: %w", dir, err)
	}
	start, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("resolving project directory %q: %w", dir, err)
	}
	for d := start; ; {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Stat(dotgit)
		switch {
		case err == nil && fi.IsDir():
			return d, d, nil
		case err == nil && fi.Mode().IsRegular():
			root, err := rootFromGitFile(d, dotgit)
			return d, root, err
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", "", fmt.Errorf("looking for the git directory of %q: %w", dir, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return start, start, nil
		}
		d = parent
	}
}

// rootFromGitFile follows a .git file ("gitdir: <path>") found in the work
// tree top worktree. A linked worktree's gitdir has a commondir file naming
// the main repository's git directory; without one (a submodule, or a
// --separate-git-dir repository) the git directory serves this work tree
// alone and worktree is the root.
func rootFromGitFile(worktree, dotgit string) (string, error) {
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", fmt.Errorf("reading git file %q: %w", dotgit, err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	rest, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r"), "gitdir:")
	gitdir := strings.TrimSpace(rest)
	if !ok || gitdir == "" {
		return "", fmt.Errorf("reading git file %q: no \"gitdir:\" line", dotgit)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(worktree, gitdir)
	}

	commondirFile := filepath.Join(gitdir, "commondir")
	b, err = os.ReadFile(commondirFile)
	if errors.Is(err, fs.ErrNotExist) {
		return worktree, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", commondirFile, err)
	}
	common := strings.TrimSpace(string(b))
	if common == "" {
		return "", fmt.Errorf("reading %q: empty", commondirFile)
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	common, err = filepath.EvalSymlinks(common)
	if err != nil {
		return "", fmt.Errorf("resolving the common git directory of %q: %w", worktree, err)
	}
	// A bare repository's worktrees have no main work tree; its git
	// directory is the one place that belongs to this repository alone (its
	// parent may hold other repositories).
	if filepath.Base(common) != ".git" {
		return common, nil
	}
	return filepath.Dir(common), nil
}

// FromEnv returns the project root chosen by, in order: the --project flag,
// the CLAUDE_PROJECT_DIR environment variable (which Claude Code sets for
// hooks), and cwd. An empty cwd means the process's working directory. A nil
// getenv means os.Getenv.
func FromEnv(flagProject, cwd string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := flagProject
	if dir == "" {
		dir = getenv("CLAUDE_PROJECT_DIR")
	}
	if dir == "" {
		dir = cwd
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the working directory: %w", err)
		}
		dir = wd
	}
	return Root(dir)
}
