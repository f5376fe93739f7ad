package gitstatus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var droverIgnore = []string{".drover/"}

func TestParsePorcelainZ(t *testing.T) {
	many := ""
	var first20 []string
	for i := range MaxFiles + 5 {
		name := fmt.Sprintf("f%02d", i)
		many += "?? " + name + "\x00"
		if i < MaxFiles {
			first20 = append(first20, name)
		}
	}
	tests := []struct {
		name   string
		out    string
		ignore []string
		want   []string
	}{
		{name: "empty", out: "", want: nil},
		{name: "modified", out: " M a.go\x00M  b.go\x00MM c.go\x00", want: []string{"a.go", "b.go", "c.go"}},
		{name: "added and deleted", out: "A  new.go\x00 D gone.go\x00D  rm.go\x00", want: []string{"new.go", "gone.go", "rm.go"}},
		{name: "untracked", out: "?? x/y/z.txt\x00", want: []string{"x/y/z.txt"}},
		{name: "unmerged", out: "UU conflict.go\x00", want: []string{"conflict.go"}},
		{name: "renamed", out: "R  new.go\x00old.go\x00 M after.go\x00", want: []string{"new.go", "after.go"}},
		{name: "renamed and modified", out: "RM new.go\x00old.go\x00", want: []string{"new.go"}},
		{name: "copied", out: "C  copy.go\x00orig.go\x00", want: []string{"copy.go"}},
		{name: "rename whose origin looks like an entry", out: "R  new\x00?? old\x00", want: []string{"new"}},
		{name: "paths with spaces", out: "?? my file.txt\x00 M dir with space/a b.go\x00", want: []string{"my file.txt", "dir with space/a b.go"}},
		{name: "newline and arrow in a path", out: "?? a\nb -> c\x00", want: []string{"a\nb -> c"}},
		{name: "only .drover changes is clean", out: "?? .drover/sessions/s1/t.md\x00 M .drover/config.yaml\x00", ignore: droverIgnore, want: nil},
		{name: "drover ignored among others", out: "?? .drover/x\x00 M main.go\x00", ignore: droverIgnore, want: []string{"main.go"}},
		{name: ".drover-other is not ignored", out: "?? .drover-other/x\x00?? .droverx\x00", ignore: droverIgnore, want: []string{".drover-other/x", ".droverx"}},
		{name: ".drover itself is ignored", out: " M .drover\x00", ignore: droverIgnore, want: nil},
		{name: "prefix without slash", out: "?? .drover/a\x00?? .drover-b/c\x00", ignore: []string{".drover"}, want: []string{".drover-b/c"}},
		{name: "nested .drover is not the root one", out: "?? sub/.drover/a\x00", ignore: droverIgnore, want: []string{"sub/.drover/a"}},
		{name: "empty ignore entry ignores nothing", out: "?? a\x00", ignore: []string{"", "/"}, want: []string{"a"}},
		{name: "rename out of ignored dir", out: "R  src/x\x00.drover/x\x00", ignore: droverIgnore, want: []string{"src/x"}},
		{name: "rename into ignored dir", out: "R  .drover/x\x00src/x\x00", ignore: droverIgnore, want: []string{"src/x"}},
		{name: "rename within ignored dir", out: "R  .drover/y\x00.drover/x\x00", ignore: droverIgnore, want: nil},
		{name: "cut off after a rename", out: "R  new.go", want: []string{"new.go"}},
		{name: "no trailing NUL", out: " M a.go\x00?? b.go", want: []string{"a.go", "b.go"}},
		{name: "malformed entries skipped", out: "\x00\x00x\x00?? \x00ab:c\x00 M ok\x00", want: []string{"ok"}},
		{name: "capped", out: many, want: first20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParsePorcelainZ([]byte(tt.out), tt.ignore)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParsePorcelainZ(%q, %q) = %q, want %q", tt.out, tt.ignore, got, tt.want)
			}
		})
	}
}

// naiveParse is a deliberately plain second reading of the format, for the
// fuzz target to compare against.
func naiveParse(out string, ignore []string) []string {
	isIgnored := func(p string) bool {
		for _, ig := range ignore {
			d := strings.TrimSuffix(ig, "/")
			if d != "" && (p == d || strings.HasPrefix(p, d+"/")) {
				return true
			}
		}
		return false
	}
	var files []string
	parts := strings.Split(out, "\x00")
	for i := 0; i < len(parts); i++ {
		e := parts[i]
		if len(e) < 4 || e[2] != ' ' {
			continue
		}
		path := e[3:]
		if strings.ContainsAny(e[:2], "RC") {
			orig := ""
			if i+1 < len(parts) {
				orig = parts[i+1]
				i++
			}
			if isIgnored(path) {
				path = orig
			}
		}
		if path != "" && !isIgnored(path) && len(files) < MaxFiles {
			files = append(files, path)
		}
	}
	return files
}

func FuzzParsePorcelainZ(f *testing.F) {
	f.Add([]byte(" M a.go\x00?? b c\x00R  n\x00o\x00"), ".drover/")
	f.Add([]byte("?? .drover/x\x00?? .drover-x/y\x00"), ".drover")
	f.Fuzz(func(t *testing.T, out []byte, ignore string) {
		ig := []string{ignore}
		got := ParsePorcelainZ(out, ig)
		if len(got) > MaxFiles {
			t.Fatalf("%d files, more than MaxFiles", len(got))
		}
		p := parser{ignore: ig}
		for _, f := range got {
			if f == "" || strings.Contains(f, "\x00") || !strings.Contains(string(out), f) {
				t.Fatalf("file %q is not a path from the input", f)
			}
			if p.ignored(f) {
				t.Fatalf("file %q is under ignored %q", f, ignore)
			}
		}
		if want := naiveParse(string(out), ig); !slices.Equal(got, want) {
			t.Fatalf("ParsePorcelainZ = %q, naive reading = %q", got, want)
		}
	})
}

// isolateGit keeps the user's and the system's git config out of the test.
func isolateGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not on PATH: drover needs it, and `make test` installs it")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("HOME", t.TempDir())
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
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

func TestDirty(t *testing.T) {
	isolateGit(t)
	ctx := context.Background()
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	write(t, filepath.Join(repo, "main.go"), "package main\n")
	write(t, filepath.Join(repo, "old name.txt"), "x\n")
	write(t, filepath.Join(repo, ".drover", "config.yaml"), "a: 1\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "init")

	check := func(t *testing.T, dir string, wantDirty bool, want []string) {
		t.Helper()
		dirty, files, err := Dirty(ctx, dir, droverIgnore)
		if err != nil {
			t.Fatalf("Dirty: %v", err)
		}
		slices.Sort(files)
		if dirty != wantDirty || !slices.Equal(files, want) {
			t.Errorf("Dirty = %v, %q; want %v, %q", dirty, files, wantDirty, want)
		}
	}

	check(t, repo, false, nil)

	// Drover's own files do not count, committed or not.
	write(t, filepath.Join(repo, ".drover", "sessions", "s1", "20260101T000000.md"), "task\n")
	write(t, filepath.Join(repo, ".drover", "config.yaml"), "a: 2\n")
	check(t, repo, false, nil)

	write(t, filepath.Join(repo, "main.go"), "package main // changed\n")
	write(t, filepath.Join(repo, "new dir", "a file.txt"), "new\n")
	write(t, filepath.Join(repo, ".drover-other", "x"), "not ours\n")
	git(t, repo, "mv", "old name.txt", "new name.txt")
	want := []string{".drover-other/x", "main.go", "new dir/a file.txt", "new name.txt"}
	check(t, repo, true, want)

	// Paths are relative to the repository root whatever the directory.
	check(t, filepath.Join(repo, "new dir"), true, want)

	// A variable left by a parent git process does not redirect the check.
	other := t.TempDir()
	git(t, other, "init", "-q")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	check(t, repo, true, want)
}

func TestDirtyCapsFiles(t *testing.T) {
	isolateGit(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	for i := range 3 * MaxFiles {
		write(t, filepath.Join(repo, "u", fmt.Sprintf("f%03d", i)), "")
	}
	dirty, files, err := Dirty(context.Background(), repo, droverIgnore)
	if err != nil {
		t.Fatal(err)
	}
	if !dirty || len(files) != MaxFiles {
		t.Errorf("Dirty = %v with %d files, want true with %d", dirty, len(files), MaxFiles)
	}
}

func TestDirtyNotARepo(t *testing.T) {
	isolateGit(t)
	dir := t.TempDir()
	// Stop git from finding a repository above the temp directory.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	// A translated message must still be recognised.
	t.Setenv("LANG", "de_DE.UTF-8")
	t.Setenv("LANGUAGE", "de")
	dirty, files, err := Dirty(context.Background(), dir, droverIgnore)
	if !errors.Is(err, ErrNotRepo) {
		t.Fatalf("Dirty outside a repository = %v, %q, %v; want ErrNotRepo", dirty, files, err)
	}
	if dirty || files != nil {
		t.Errorf("Dirty outside a repository = %v, %q; want false, nil", dirty, files)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
	}
}

func TestDirtyErrors(t *testing.T) {
	isolateGit(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name string
		ctx  context.Context
		dir  string
		is   error
	}{
		{name: "canceled", ctx: canceled, dir: repo, is: context.Canceled},
		{name: "missing dir", ctx: context.Background(), dir: filepath.Join(repo, "missing"), is: os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirty, files, err := Dirty(tt.ctx, tt.dir, droverIgnore)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Dirty = %v, %q, %v; want an error wrapping %v", dirty, files, err, tt.is)
			}
			if errors.Is(err, ErrNotRepo) {
				t.Errorf("%v should not read as ErrNotRepo", err)
			}
		})
	}
}
