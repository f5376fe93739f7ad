package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// isolateGit keeps the user's and the system's git config out of the test,
// and gives git an identity, through the environment the package passes on.
func isolateGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: drover needs it, and `make test` installs it")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(k, "drover test")
	}
	for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(k, "test@example.com")
	}
	t.Setenv("GIT_DIR", "")
	os.Unsetenv("GIT_DIR")
}

// run runs git in dir and returns its trimmed output, failing the test on
// an error.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes a repository on branch main with one commit.
func newRepo(t *testing.T) string {
	t.Helper()
	isolateGit(t)
	root := t.TempDir()
	run(t, root, "init", "-q", "-b", "main")
	write(t, filepath.Join(root, "a.txt"), "one\ntwo\nthree\n")
	run(t, root, "add", ".")
	run(t, root, "commit", "-q", "-m", "init")
	return root
}

// commit writes files in dir and commits them.
func commit(t *testing.T, dir, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", msg)
	return run(t, dir, "rev-parse", "HEAD")
}

func TestCreate(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()
	base := run(t, root, "rev-parse", "HEAD")

	wt, err := Create(ctx, root, "run1", "task-a", "")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := Worktree{
		Root:   root,
		Path:   filepath.Join(root, ".drover", "worktrees", "run1", "task-a"),
		Branch: "drover/run1/task-a",
		RunID:  "run1",
		TaskID: "task-a",
		Base:   base,
	}
	if wt != want {
		t.Fatalf("Create = %+v, want %+v", wt, want)
	}
	if got := run(t, wt.Path, "symbolic-ref", "--short", "HEAD"); got != wt.Branch {
		t.Errorf("work tree is on %q, want %q", got, wt.Branch)
	}
	if got := read(t, filepath.Join(wt.Path, "a.txt")); got != "one\ntwo\nthree\n" {
		t.Errorf("a.txt in the work tree = %q", got)
	}
	// The work trees are invisible to git in the main work tree.
	if got := run(t, root, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("main work tree status = %q, want clean", got)
	}

	// Again: the same work tree, reused, with what the task did.
	tip := commit(t, wt.Path, "task work", map[string]string{"b.txt": "task\n"})
	write(t, filepath.Join(wt.Path, "wip.txt"), "not committed\n")
	again, err := Create(ctx, root, "run1", "task-a", "")
	if err != nil {
		t.Fatalf("Create again: %v", err)
	}
	want.Reused = true
	if again != want {
		t.Errorf("Create again = %+v, want %+v", again, want)
	}
	if got := read(t, filepath.Join(wt.Path, "wip.txt")); got != "not committed\n" {
		t.Errorf("wip.txt after reuse = %q", got)
	}

	// After Remove, the branch and its commits come back.
	if err := Remove(ctx, wt); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("work tree still exists after Remove: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(wt.Path)); !os.IsNotExist(err) {
		t.Errorf("empty run directory still exists after Remove: %v", err)
	}
	if got := run(t, root, "rev-parse", "drover/run1/task-a"); got != tip {
		t.Errorf("branch after Remove is at %s, want %s", got, tip)
	}
	resumed, err := Create(ctx, root, "run1", "task-a", "")
	if err != nil {
		t.Fatalf("Create after Remove: %v", err)
	}
	if !resumed.Reused {
		t.Error("Create after Remove did not reuse the branch")
	}
	if got := run(t, resumed.Path, "rev-parse", "HEAD"); got != tip {
		t.Errorf("resumed work tree is at %s, want %s", got, tip)
	}

	// A directory deleted behind git's back is made again.
	if err := os.RemoveAll(resumed.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, root, "run1", "task-a", ""); err != nil {
		t.Fatalf("Create after the directory was deleted: %v", err)
	}
	if got := read(t, filepath.Join(resumed.Path, "b.txt")); got != "task\n" {
		t.Errorf("b.txt after re-creation = %q", got)
	}
}

func TestCreateFromBase(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()
	first := run(t, root, "rev-parse", "HEAD")
	commit(t, root, "second", map[string]string{"a.txt": "changed\n"})

	wt, err := Create(ctx, root, "r", "t", first)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if wt.Base != first || run(t, wt.Path, "rev-parse", "HEAD") != first {
		t.Errorf("work tree base = %s, head %s; want %s", wt.Base, run(t, wt.Path, "rev-parse", "HEAD"), first)
	}
	// Parallel tasks of one run get separate trees.
	other, err := Create(ctx, root, "r", "u", "main")
	if err != nil {
		t.Fatalf("Create second task: %v", err)
	}
	if other.Path == wt.Path || read(t, filepath.Join(other.Path, "a.txt")) != "changed\n" {
		t.Errorf("second task's work tree %s is not its own, from main", other.Path)
	}
}

func TestCreateErrors(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()

	tests := []struct {
		name        string
		setup       func(t *testing.T)
		run, task   string
		base        string
		errContains string
	}{
		{name: "bad run id", run: "../x", task: "t", errContains: `run id "../x" is not valid`},
		{name: "bad task id", run: "r", task: "a/b", errContains: `task id "a/b" is not valid`},
		{name: "base looks like a flag", run: "r", task: "t", base: "--orphan", errContains: "is not a revision"},
		{name: "unknown base", run: "r", task: "t", base: "nope", errContains: `base "nope" is not a commit`},
		{
			name: "branch checked out elsewhere",
			setup: func(t *testing.T) {
				run(t, root, "worktree", "add", "-q", "-b", "drover/r/busy", filepath.Join(t.TempDir(), "elsewhere"))
			},
			run: "r", task: "busy", errContains: "already checked out at",
		},
		{
			name: "path is another branch's work tree",
			setup: func(t *testing.T) {
				run(t, root, "worktree", "add", "-q", "-b", "other", filepath.Join(root, ".drover", "worktrees", "r", "squat"))
			},
			run: "r", task: "squat", errContains: "is a work tree on branch other",
		},
		{
			name: "path is a plain directory",
			setup: func(t *testing.T) {
				write(t, filepath.Join(root, ".drover", "worktrees", "r", "plain", "x"), "x")
			},
			run: "r", task: "plain", errContains: "exists and is not a work tree",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup(t)
			}
			wt, err := Create(ctx, root, tt.run, tt.task, tt.base)
			if err == nil || !strings.Contains(err.Error(), tt.errContains) {
				t.Fatalf("Create = %+v, %v; want an error containing %q", wt, err, tt.errContains)
			}
		})
	}
}

func TestRemoveKeepsNothingButTheBranch(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()
	wt, err := Create(ctx, root, "r", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Path, "a.txt"), "dirty\n")
	write(t, filepath.Join(wt.Path, "new.txt"), "untracked\n")
	if err := Remove(ctx, wt); err != nil {
		t.Fatalf("Remove of a dirty work tree: %v", err)
	}
	if got := run(t, root, "worktree", "list", "--porcelain"); strings.Contains(got, wt.Path) {
		t.Errorf("work tree still registered:\n%s", got)
	}
	if err := Remove(ctx, wt); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	run(t, root, "rev-parse", "--verify", "drover/r/t")
	if err := Remove(ctx, Worktree{Root: root, RunID: "r", TaskID: "../x"}); err == nil {
		t.Error("Remove with a bad task id succeeded")
	}
}

// state is what must not change in the main work tree when a merge is
// aborted: the head, the index and every file's bytes.
type state struct {
	head, index, status string
	files               map[string]string
}

func snapshot(t *testing.T, root string) state {
	t.Helper()
	s := state{
		head:   run(t, root, "rev-parse", "HEAD"),
		index:  run(t, root, "ls-files", "--stage"),
		status: run(t, root, "status", "--porcelain", "--untracked-files=all"),
		files:  map[string]string{},
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == ".git" || rel == ".drover") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			s.files[rel] = read(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s state) equal(o state) bool {
	if s.head != o.head || s.index != o.index || s.status != o.status || len(s.files) != len(o.files) {
		return false
	}
	for k, v := range s.files {
		if o.files[k] != v {
			return false
		}
	}
	return true
}

// task makes a task's work tree from main and commits files in it.
func task(t *testing.T, root, id string, files map[string]string) string {
	t.Helper()
	wt, err := Create(context.Background(), root, "run", id, "main")
	if err != nil {
		t.Fatal(err)
	}
	commit(t, wt.Path, "task "+id, files)
	return wt.Branch
}

func statuses(rep MergeReport) []Status {
	var out []Status
	for _, b := range rep.Branches {
		out = append(out, b.Status)
	}
	return out
}

func TestMergeInOrder(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()
	b1 := task(t, root, "one", map[string]string{"x.txt": "x\n"})
	b2 := task(t, root, "two", map[string]string{"y.txt": "y\n", "a.txt": "one\ntwo\nthree\nfour\n"})
	before := run(t, root, "rev-parse", "HEAD")

	rep, err := MergeInOrder(ctx, root, "main", []string{b1, b2}, StopOnConflict)
	if err != nil {
		t.Fatalf("MergeInOrder: %v", err)
	}
	if got, want := statuses(rep), []Status{Merged, Merged}; !slices.Equal(got, want) || !rep.OK() {
		t.Fatalf("statuses = %v, want %v (report %+v)", got, want, rep)
	}
	after := run(t, root, "rev-parse", "HEAD")
	if rep.Before != before || rep.After != after || rep.Branches[1].Commit != after {
		t.Errorf("report before %s after %s, last commit %s; git says %s..%s", rep.Before, rep.After, rep.Branches[1].Commit, before, after)
	}
	// --no-ff: each branch gets a merge commit, the first parent of the
	// second being the first.
	if got := run(t, root, "rev-list", "--parents", "-n", "1", after); len(strings.Fields(got)) != 3 {
		t.Errorf("last commit is not a merge: %s", got)
	}
	if got := run(t, root, "rev-parse", after+"^1"); got != rep.Branches[0].Commit {
		t.Errorf("second merge's first parent = %s, want the first merge %s", got, rep.Branches[0].Commit)
	}
	for name, want := range map[string]string{"x.txt": "x\n", "y.txt": "y\n", "a.txt": "one\ntwo\nthree\nfour\n"} {
		if got := read(t, filepath.Join(root, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	// Merging again changes nothing: a resumed run.
	rep, err = MergeInOrder(ctx, root, "refs/heads/main", []string{b1, b2}, StopOnConflict)
	if err != nil {
		t.Fatalf("MergeInOrder again: %v", err)
	}
	if got, want := statuses(rep), []Status{UpToDate, UpToDate}; !slices.Equal(got, want) || rep.After != after || !rep.OK() {
		t.Errorf("again: statuses = %v, after %s; want %v, %s", got, rep.After, want, after)
	}
}

func TestMergeConflictLeavesMainUntouched(t *testing.T) {
	for _, policy := range []OnConflict{StopOnConflict, ContinueOnConflict} {
		name := map[OnConflict]string{StopOnConflict: "stop", ContinueOnConflict: "continue"}[policy]
		t.Run(name, func(t *testing.T) {
			root := newRepo(t)
			ctx := context.Background()
			b1 := task(t, root, "first", map[string]string{"a.txt": "one\nTWO from first\nthree\n", "f.txt": "f\n"})
			b2 := task(t, root, "second", map[string]string{"a.txt": "one\nTWO from second\nthree\n", "g.txt": "g\n"})
			b3 := task(t, root, "third", map[string]string{"z.txt": "z\n"})
			// Something of the person's that git does not track.
			write(t, filepath.Join(root, "notes.txt"), "mine\n")

			rep, err := MergeInOrder(ctx, root, "main", []string{b1}, policy)
			if err != nil || !rep.OK() {
				t.Fatalf("first merge: %v, %+v", err, rep)
			}
			before := snapshot(t, root)

			rep, err = MergeInOrder(ctx, root, "main", []string{b2, b3}, policy)
			if err != nil {
				t.Fatalf("MergeInOrder: %v", err)
			}
			want := []Status{NeedsReview, Skipped}
			if policy == ContinueOnConflict {
				want = []Status{NeedsReview, Merged}
			}
			if got := statuses(rep); !slices.Equal(got, want) || rep.OK() {
				t.Fatalf("statuses = %v, want %v", got, want)
			}
			c := rep.Branches[0]
			if !slices.Equal(c.ConflictFiles, []string{"a.txt"}) {
				t.Errorf("conflict files = %q, want [a.txt]", c.ConflictFiles)
			}
			for _, s := range []string{"<<<<<<<", "TWO from first", "TWO from second", ">>>>>>>"} {
				if !strings.Contains(c.ConflictDiff, s) {
					t.Errorf("conflict diff does not show %q:\n%s", s, c.ConflictDiff)
				}
			}
			if c.Commit != before.head || rep.Before != before.head {
				t.Errorf("conflict result commit %s, report before %s; want %s", c.Commit, rep.Before, before.head)
			}
			if got := rep.NeedsReview(); len(got) != 1 || got[0].Branch != b2 {
				t.Errorf("NeedsReview = %+v", got)
			}

			if policy == StopOnConflict {
				if after := snapshot(t, root); !after.equal(before) {
					t.Errorf("main changed by an aborted merge:\nbefore %+v\nafter  %+v", before, after)
				}
				if rep.After != before.head {
					t.Errorf("report after = %s, want %s", rep.After, before.head)
				}
			} else {
				// The conflict left no trace; only the third branch came in.
				if got := read(t, filepath.Join(root, "a.txt")); got != "one\nTWO from first\nthree\n" {
					t.Errorf("a.txt = %q", got)
				}
				if _, err := os.Stat(filepath.Join(root, "g.txt")); !os.IsNotExist(err) {
					t.Errorf("g.txt from the conflicting branch is in main: %v", err)
				}
				if got := run(t, root, "rev-parse", "HEAD^1"); got != before.head {
					t.Errorf("third merge's parent = %s, want %s", got, before.head)
				}
				if got := run(t, root, "status", "--porcelain", "--untracked-files=no"); got != "" {
					t.Errorf("main is not clean: %q", got)
				}
			}
			if got := read(t, filepath.Join(root, "notes.txt")); got != "mine\n" {
				t.Errorf("untracked notes.txt = %q", got)
			}
		})
	}
}

func TestMergeFailures(t *testing.T) {
	ctx := context.Background()

	t.Run("not on target", func(t *testing.T) {
		root := newRepo(t)
		run(t, root, "switch", "-q", "-c", "feature")
		_, err := MergeInOrder(ctx, root, "main", []string{"x"}, StopOnConflict)
		if !errors.Is(err, ErrNotOnTarget) || !strings.Contains(err.Error(), "on feature") {
			t.Errorf("err = %v, want ErrNotOnTarget naming feature", err)
		}
	})

	t.Run("detached", func(t *testing.T) {
		root := newRepo(t)
		run(t, root, "switch", "-q", "--detach")
		if _, err := MergeInOrder(ctx, root, "main", nil, StopOnConflict); !errors.Is(err, ErrNotOnTarget) {
			t.Errorf("err = %v, want ErrNotOnTarget", err)
		}
	})

	t.Run("dirty", func(t *testing.T) {
		root := newRepo(t)
		write(t, filepath.Join(root, "a.txt"), "edited\n")
		_, err := MergeInOrder(ctx, root, "main", nil, StopOnConflict)
		if !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "a.txt") {
			t.Errorf("err = %v, want ErrDirty naming a.txt", err)
		}
	})

	t.Run("no such branch", func(t *testing.T) {
		root := newRepo(t)
		b := task(t, root, "ok", map[string]string{"x.txt": "x\n"})
		before := snapshot(t, root)
		rep, err := MergeInOrder(ctx, root, "main", []string{"drover/run/nope", b}, ContinueOnConflict)
		if err == nil || !strings.Contains(err.Error(), "no branch drover/run/nope") {
			t.Fatalf("err = %v", err)
		}
		if got, want := statuses(rep), []Status{Failed, Skipped}; !slices.Equal(got, want) {
			t.Errorf("statuses = %v, want %v", got, want)
		}
		if after := snapshot(t, root); !after.equal(before) {
			t.Error("main changed")
		}
	})

	t.Run("flag as branch", func(t *testing.T) {
		root := newRepo(t)
		rep, err := MergeInOrder(ctx, root, "main", []string{"--abort"}, StopOnConflict)
		if err == nil || len(rep.Branches) != 1 || rep.Branches[0].Status != Failed {
			t.Errorf("MergeInOrder(--abort) = %+v, %v", rep, err)
		}
	})

	t.Run("untracked file in the way", func(t *testing.T) {
		root := newRepo(t)
		b := task(t, root, "t", map[string]string{"new.txt": "from task\n"})
		write(t, filepath.Join(root, "new.txt"), "mine\n")
		before := snapshot(t, root)
		rep, err := MergeInOrder(ctx, root, "main", []string{b}, ContinueOnConflict)
		if err == nil || rep.Branches[0].Status != Failed || !strings.Contains(rep.Branches[0].Error, "untracked") {
			t.Fatalf("MergeInOrder = %+v, %v; want Failed naming the untracked file", rep, err)
		}
		if after := snapshot(t, root); !after.equal(before) {
			t.Error("main changed")
		}
	})

	t.Run("hook refuses the merge commit", func(t *testing.T) {
		root := newRepo(t)
		b := task(t, root, "t", map[string]string{"x.txt": "x\n"})
		write(t, filepath.Join(root, ".git", "hooks", "pre-merge-commit"), "#!/bin/sh\necho no merges today >&2\nexit 1\n")
		if err := os.Chmod(filepath.Join(root, ".git", "hooks", "pre-merge-commit"), 0o755); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, root)
		rep, err := MergeInOrder(ctx, root, "main", []string{b}, ContinueOnConflict)
		if err == nil || rep.Branches[0].Status != Failed || !strings.Contains(err.Error(), "no merges today") {
			t.Fatalf("MergeInOrder = %+v, %v; want Failed with the hook's message", rep, err)
		}
		if after := snapshot(t, root); !after.equal(before) {
			t.Errorf("main changed:\nbefore %+v\nafter  %+v", before, after)
		}
		if _, err := os.Stat(filepath.Join(root, ".git", "MERGE_HEAD")); !os.IsNotExist(err) {
			t.Errorf("merge still in progress: %v", err)
		}
	})
}

func TestParseWorktreeList(t *testing.T) {
	out := "worktree /repo\nHEAD 1111\nbranch refs/heads/main\n\n" +
		"worktree /repo/.drover/worktrees/r/t\nHEAD 2222\nbranch refs/heads/drover/r/t\nlocked reason\n\n" +
		"worktree /gone\nHEAD 3333\ndetached\nprunable gitdir file points to non-existent location\n\n" +
		"worktree /bare\nbare\nfuture-key x\n"
	want := []entry{
		{Path: "/repo", Head: "1111", Branch: "refs/heads/main"},
		{Path: "/repo/.drover/worktrees/r/t", Head: "2222", Branch: "refs/heads/drover/r/t"},
		{Path: "/gone", Head: "3333", Prunable: true},
		{Path: "/bare", Bare: true},
	}
	if got := parseWorktreeList(out); !slices.Equal(got, want) {
		t.Errorf("parseWorktreeList = %+v, want %+v", got, want)
	}
	if got := parseWorktreeList("HEAD x\n\n"); len(got) != 0 {
		t.Errorf("parseWorktreeList without worktree line = %+v", got)
	}
}

func TestClipDiff(t *testing.T) {
	if got := clipDiff("short\n", 100); got != "short\n" {
		t.Errorf("clipDiff(short) = %q", got)
	}
	long := strings.Repeat("line of text\n", 100)
	got := clipDiff(long, 200)
	if len(got) > 200 || !strings.HasSuffix(got, "[... cut by drover ...]\n") || !strings.HasPrefix(long, strings.TrimSuffix(got, "\n[... cut by drover ...]\n")+"\n") {
		t.Errorf("clipDiff(long, 200) = %q (%d bytes)", got, len(got))
	}
}

// TestCreateWithRelativeRootAndInParallel: concurrent callers that take
// turns, as Create asks (the run actor holds a lock), each get their own
// work tree from a relative root.
func TestCreateWithRelativeRootAndInParallel(t *testing.T) {
	root := newRepo(t)
	t.Chdir(filepath.Dir(root))
	rel := filepath.Base(root)
	ctx := context.Background()

	ids := []string{"a", "b", "c", "d"}
	wts := make([]Worktree, len(ids))
	errs := make([]error, len(ids))
	done := make(chan int)
	var turns sync.Mutex
	for i, id := range ids {
		go func() {
			turns.Lock()
			defer turns.Unlock()
			wts[i], errs[i] = Create(ctx, rel, "par", id, "main")
			done <- i
		}()
	}
	for range ids {
		<-done
	}
	for i, id := range ids {
		if errs[i] != nil {
			t.Errorf("Create(%s): %v", id, errs[i])
			continue
		}
		want := filepath.Join(root, ".drover", "worktrees", "par", id)
		if wts[i].Path != want || wts[i].Root != root {
			t.Errorf("Create(%s) = path %s root %s, want %s in %s", id, wts[i].Path, wts[i].Root, want, root)
		}
		if got := run(t, wts[i].Path, "symbolic-ref", "--short", "HEAD"); got != "drover/par/"+id {
			t.Errorf("work tree %s is on %s", id, got)
		}
	}
	for _, wt := range wts {
		wt.Root = rel
		if err := Remove(ctx, wt); err != nil {
			t.Errorf("Remove(%s) with a relative root: %v", wt.TaskID, err)
		}
	}
	if got := run(t, root, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("work trees left:\n%s", got)
	}
}

// TestMergeInOrderCleansUpAMergeLeftHalfDone: a MergeInOrder whose process
// was killed (kill -9) during a merge leaves MergeMarker, and whatever its
// git had done: lock files, a merge in progress, files checked out but not
// in the index, an index not committed. The next MergeInOrder cleans that
// up and merges each branch once. Without the marker, a merge in progress
// is a person's and is left alone.
func TestMergeInOrderCleansUpAMergeLeftHalfDone(t *testing.T) {
	gitDir := func(root string) string { return filepath.Join(root, ".git") }
	touch := func(t *testing.T, path string) { write(t, path, "") }
	cases := []struct {
		name string
		// leave makes the state a killed merge of b1 into main (pre)
		// left; mark says whether it wrote the marker.
		leave func(t *testing.T, root, b1, pre string)
		mark  bool
		want  []Status
		// dirty: MergeInOrder refuses with ErrDirty.
		dirty bool
	}{
		{
			name: "a merge in progress and a stale index.lock",
			leave: func(t *testing.T, root, b1, pre string) {
				run(t, root, "merge", "--no-ff", "--no-commit", b1)
				touch(t, filepath.Join(gitDir(root), "index.lock"))
			},
			mark: true, want: []Status{Merged, Merged},
		},
		{
			name: "files checked out, the index not written, its lock left",
			leave: func(t *testing.T, root, b1, pre string) {
				write(t, filepath.Join(root, "x.txt"), "x\n")
				write(t, filepath.Join(root, "a.txt"), "zero\none\ntwo\nthree\n")
				touch(t, filepath.Join(gitDir(root), "index.lock"))
			},
			mark: true, want: []Status{Merged, Merged},
		},
		{
			name: "the merge staged, killed in its pre-merge-commit hook",
			leave: func(t *testing.T, root, b1, pre string) {
				run(t, root, "merge", "--no-ff", "--no-commit", b1)
				for _, f := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"} {
					_ = os.Remove(filepath.Join(gitDir(root), f))
				}
			},
			mark: true, want: []Status{Merged, Merged},
		},
		{
			name: "the merge committed, the branch's ref lock left",
			leave: func(t *testing.T, root, b1, pre string) {
				run(t, root, "merge", "--no-ff", "--no-edit", "refs/heads/"+b1)
				touch(t, filepath.Join(gitDir(root), "refs", "heads", "main.lock"))
			},
			mark: true, want: []Status{UpToDate, Merged},
		},
		{
			name: "a person's merge in progress, no marker",
			leave: func(t *testing.T, root, b1, pre string) {
				run(t, root, "merge", "--no-ff", "--no-commit", b1)
			},
			dirty: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRepo(t)
			ctx := context.Background()
			b1 := task(t, root, "one", map[string]string{"x.txt": "x\n", "a.txt": "zero\none\ntwo\nthree\n"})
			b2 := task(t, root, "two", map[string]string{"y.txt": "y\n"})
			// A person's untracked file, which no cleanup may touch.
			write(t, filepath.Join(root, "notes.txt"), "mine\n")
			pre := run(t, root, "rev-parse", "HEAD")
			if tc.mark {
				if _, err := markMerge(ctx, root, "refs/heads/"+b1, pre); err != nil {
					t.Fatal(err)
				}
			}
			tc.leave(t, root, b1, pre)

			rep, err := MergeInOrder(ctx, root, "main", []string{b1, b2}, StopOnConflict)
			if tc.dirty {
				if !errors.Is(err, ErrDirty) {
					t.Fatalf("MergeInOrder: %v; want ErrDirty", err)
				}
				if _, err := os.Stat(filepath.Join(gitDir(root), "MERGE_HEAD")); err != nil {
					t.Errorf("the person's merge was aborted: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("MergeInOrder: %v", err)
			}
			if got := statuses(rep); !slices.Equal(got, tc.want) {
				t.Fatalf("statuses = %v, want %v (report %+v)", got, tc.want, rep)
			}
			for _, f := range append(slices.Clone(lockFiles), MergeMarker, filepath.Join("refs", "heads", "main.lock")) {
				if _, err := os.Stat(filepath.Join(gitDir(root), f)); err == nil {
					t.Errorf("%s is left in the git directory", f)
				}
			}
			log := run(t, root, "log", "--format=%s", "main")
			if n := strings.Count(log, "Merge branch 'refs/heads/"+b1+"'"); n != 1 {
				t.Errorf("main has %d merges of %s, want 1:\n%s", n, b1, log)
			}
			for name, want := range map[string]string{"x.txt": "x\n", "y.txt": "y\n", "a.txt": "zero\none\ntwo\nthree\n", "notes.txt": "mine\n"} {
				if got := read(t, filepath.Join(root, name)); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if st := run(t, root, "status", "--porcelain"); st != "?? notes.txt" {
				t.Errorf("status after the merges: %q", st)
			}
		})
	}
}

// TestReset puts a task's work tree back to its branch's last commit,
// whatever its killed agent left: changes, staged files, untracked files,
// another branch or a detached HEAD, a merge under way, stale locks.
// Ignored files and the branch's commits stay.
func TestReset(t *testing.T) {
	cases := []struct {
		name  string
		leave func(t *testing.T, wt Worktree)
	}{
		{"changes and files not added", func(t *testing.T, wt Worktree) {
			write(t, filepath.Join(wt.Path, "a.txt"), "changed\n")
			write(t, filepath.Join(wt.Path, "new", "half.txt"), "half\n")
			write(t, filepath.Join(wt.Path, "staged.txt"), "staged\n")
			run(t, wt.Path, "add", "staged.txt")
		}},
		{"another branch with a commit", func(t *testing.T, wt Worktree) {
			run(t, wt.Path, "checkout", "-q", "-b", "elsewhere")
			commit(t, wt.Path, "elsewhere", map[string]string{"a.txt": "elsewhere\n"})
		}},
		{"a detached HEAD", func(t *testing.T, wt Worktree) {
			run(t, wt.Path, "checkout", "-q", "--detach", "HEAD~1")
		}},
		{"a merge under way and stale locks", func(t *testing.T, wt Worktree) {
			run(t, wt.Path, "checkout", "-q", "-b", "side", "HEAD~1")
			commit(t, wt.Path, "side", map[string]string{"a.txt": "side\n"})
			run(t, wt.Path, "checkout", "-q", wt.Branch)
			cmd := exec.Command("git", "merge", "side")
			cmd.Dir = wt.Path
			_ = cmd.Run() // conflicts
			gitDir := run(t, wt.Path, "rev-parse", "--absolute-git-dir")
			write(t, filepath.Join(gitDir, "index.lock"), "")
			write(t, filepath.Join(wt.Root, ".git", "refs", "heads", filepath.FromSlash(wt.Branch)+".lock"), "")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRepo(t)
			write(t, filepath.Join(root, ".gitignore"), "*.log\n")
			commit(t, root, "ignore logs", nil)
			ctx := context.Background()
			wt, err := Create(ctx, root, "run", "t", "")
			if err != nil {
				t.Fatal(err)
			}
			last := commit(t, wt.Path, "task work", map[string]string{"a.txt": "work\n", "work.txt": "work\n"})
			write(t, filepath.Join(wt.Path, "build.log"), "cache\n")
			tc.leave(t, wt)

			if err := Reset(ctx, wt); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if head := run(t, wt.Path, "symbolic-ref", "--short", "HEAD"); head != wt.Branch {
				t.Errorf("HEAD is on %q, want %s", head, wt.Branch)
			}
			if got := run(t, wt.Path, "rev-parse", "HEAD"); got != last {
				t.Errorf("HEAD is %s, want the branch's last commit %s", got, last)
			}
			if st := run(t, wt.Path, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Errorf("status after Reset: %q", st)
			}
			if got := read(t, filepath.Join(wt.Path, "a.txt")); got != "work\n" {
				t.Errorf("a.txt = %q, want the branch's", got)
			}
			if got := read(t, filepath.Join(wt.Path, "build.log")); got != "cache\n" {
				t.Errorf("the ignored build.log = %q, want it kept", got)
			}
			// Git works in it again.
			commit(t, wt.Path, "more", map[string]string{"more.txt": "more\n"})
		})
	}
}

// A `git worktree add` killed before it registered the work tree leaves
// an empty folder, and the branch it made: Create makes the work tree
// again, on that branch. A folder with anything in it is still refused
// (TestCreateErrors).
func TestCreateOverAnEmptyFolder(t *testing.T) {
	root := newRepo(t)
	run(t, root, "branch", BranchName("r", "t"))
	if err := os.MkdirAll(PathFor(root, "r", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	wt, err := Create(context.Background(), root, "r", "t", "")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if !wt.Reused || run(t, wt.Path, "symbolic-ref", "--short", "HEAD") != wt.Branch {
		t.Errorf("the work tree is not the branch's: %+v", wt)
	}
}

// Reset touches only a work tree of its own at the task's path. A plain
// folder there (a work tree whose registration was lost, a folder a person
// made) is inside the main work tree, where git would find the main
// repository: resetting that would check the task's branch out over the
// person's checkout and throw away their changes.
func TestResetRefusesAFolderThatIsNotAWorkTree(t *testing.T) {
	root := newRepo(t)
	ctx := context.Background()
	wt, err := Create(ctx, root, "run", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	commit(t, wt.Path, "task work", map[string]string{"a.txt": "work\n"})
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	run(t, root, "worktree", "prune")
	write(t, filepath.Join(wt.Path, "x.txt"), "x\n")
	// The person's work in the main work tree.
	write(t, filepath.Join(root, "a.txt"), "mine\n")
	write(t, filepath.Join(root, "notes.txt"), "mine\n")
	head := run(t, root, "rev-parse", "HEAD")

	if err := Reset(ctx, wt); err == nil {
		t.Error("Reset of a folder that is not a work tree succeeded")
	}
	if got := run(t, root, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Errorf("the main work tree is on %q, want main", got)
	}
	if got := run(t, root, "rev-parse", "HEAD"); got != head {
		t.Errorf("the main work tree's HEAD moved to %s", got)
	}
	for _, f := range []string{"a.txt", "notes.txt"} {
		if got := read(t, filepath.Join(root, f)); got != "mine\n" {
			t.Errorf("%s = %q, want the person's %q", f, got, "mine\n")
		}
	}
	if got := read(t, filepath.Join(wt.Path, "x.txt")); got != "x\n" {
		t.Errorf("x.txt in the folder = %q, want it kept", got)
	}
}

// A person may change the main work tree between a supervisor killed mid-
// merge and the run it resumes. The cleanup undoes only what the merge
// could have written (the files that differ between the target and the
// branch); the person's change to any other file is kept, and the merge
// is refused as dirty until they commit or drop it.
func TestMergeCleanupKeepsAPersonsChanges(t *testing.T) {
	cases := []struct {
		name  string
		leave func(t *testing.T, root, b1 string)
	}{
		{"files checked out, the index not written", func(t *testing.T, root, b1 string) {
			write(t, filepath.Join(root, "x.txt"), "x\n")
			write(t, filepath.Join(root, "a.txt"), "zero\none\ntwo\nthree\n")
		}},
		{"the merge committed", func(t *testing.T, root, b1 string) {
			run(t, root, "merge", "--no-ff", "--no-edit", "refs/heads/"+b1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRepo(t)
			ctx := context.Background()
			commit(t, root, "b", map[string]string{"b.txt": "b\n"})
			b1 := task(t, root, "one", map[string]string{"x.txt": "x\n", "a.txt": "zero\none\ntwo\nthree\n"})
			pre := run(t, root, "rev-parse", "HEAD")
			if _, err := markMerge(ctx, root, "refs/heads/"+b1, pre); err != nil {
				t.Fatal(err)
			}
			tc.leave(t, root, b1)
			write(t, filepath.Join(root, "b.txt"), "the person's\n")

			_, err := MergeInOrder(ctx, root, "main", []string{b1}, StopOnConflict)
			if !errors.Is(err, ErrDirty) {
				t.Fatalf("MergeInOrder: %v; want ErrDirty", err)
			}
			if got := read(t, filepath.Join(root, "b.txt")); got != "the person's\n" {
				t.Errorf("b.txt = %q, want the person's change kept", got)
			}
			if st := run(t, root, "status", "--porcelain"); st != "M b.txt" {
				t.Errorf("status after the cleanup: %q, want only the person's change", st)
			}
		})
	}
}
