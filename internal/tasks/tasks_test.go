package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// now is a fixed clock: no test depends on the wall clock.
var now = time.Date(2026, 2, 3, 14, 52, 12, 0, time.UTC)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestScan(t *testing.T) {
	t.Run("missing dir is empty", func(t *testing.T) {
		l, err := Scan(filepath.Join(t.TempDir(), "nope"))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Pending)+len(l.Done)+len(l.Stuck) != 0 {
			t.Errorf("Scan of a missing dir = %+v", l)
		}
	})

	t.Run("not a directory is an error", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		write(t, f, "x")
		if _, err := Scan(f); err == nil {
			t.Error("Scan of a file: no error")
		}
	})

	t.Run("sorts tasks into lists", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{
			"20260203T145230.md", "20260203T145212.md", // pending, written out of order
			"20260203T140100.done.md", "20260203T140000.done.md",
			"20260203T145300.stuck.md", "20260203T145245.stuck.md",
			"state.json", "notes.txt", ".task-123.tmp", ".hidden.md", "README", "loop.md", // not tasks
		} {
			write(t, filepath.Join(dir, n), "task")
		}
		if err := os.Mkdir(filepath.Join(dir, "sub.md"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "sub.md", "20260101T000000.md"), "nested")
		// A symlink to a file is a task; one to a directory is not.
		outside := t.TempDir()
		write(t, filepath.Join(outside, "x"), "linked")
		if err := os.Symlink(filepath.Join(outside, "x"), filepath.Join(dir, "20260203T150000.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "20260203T150001.md")); err != nil {
			t.Fatal(err)
		}

		l, err := Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := List{
			Pending: []string{"20260203T145212.md", "20260203T145230.md", "20260203T150000.md"},
			Done:    []string{"20260203T140000.done.md", "20260203T140100.done.md"},
			Stuck:   []string{"20260203T145245.stuck.md", "20260203T145300.stuck.md"},
		}
		for _, c := range []struct {
			what      string
			got, want []string
		}{{"pending", l.Pending, want.Pending}, {"done", l.Done, want.Done}, {"stuck", l.Stuck, want.Stuck}} {
			if !slices.Equal(names(c.got), c.want) {
				t.Errorf("%s = %v, want %v", c.what, names(c.got), c.want)
			}
			for _, p := range c.got {
				if p != filepath.Join(dir, filepath.Base(p)) {
					t.Errorf("%s path %q is not in %q", c.what, p, dir)
				}
			}
		}
	})

	t.Run("relative dir gives absolute paths", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "s", "20260203T145212.md"), "x")
		t.Chdir(dir)
		l, err := Scan("s")
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Pending) != 1 || !filepath.IsAbs(l.Pending[0]) {
			t.Errorf("Pending = %v, want one absolute path", l.Pending)
		}
	})
}

func TestAdd(t *testing.T) {
	t.Run("creates session directory if needed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".drover", "sessions", "s1")
		p, err := Add(dir, "Fix the auth bug in login.ts", now)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			t.Fatalf("session dir not created: %v", err)
		}
		if fi.Mode().Perm()&0o700 != 0o700 {
			t.Errorf("session dir mode = %v", fi.Mode().Perm())
		}
		if filepath.Dir(p) != dir {
			t.Errorf("task %q is not in %q", p, dir)
		}
	})

	t.Run("creates timestamp-named file with the raw prompt", func(t *testing.T) {
		tests := []struct{ prompt, want string }{
			{"Fix the auth bug in login.ts", "Fix the auth bug in login.ts\n"},
			{"already ends in a newline\n", "already ends in a newline\n"},
			{"# Title\n\n- `code` $HOME {{next_task}} \"quoted\"\n\ttab", "# Title\n\n- `code` $HOME {{next_task}} \"quoted\"\n\ttab\n"},
			{"  leading space kept", "  leading space kept\n"},
		}
		for i, tt := range tests {
			dir := t.TempDir()
			p, err := Add(dir, tt.prompt, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Base(p); got != "20260203T145212.md" {
				t.Errorf("%d: name = %q, want 20260203T145212.md", i, got)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.want {
				t.Errorf("%d: content = %q, want %q", i, data, tt.want)
			}
			if got := entries(t, dir); !slices.Equal(got, []string{"20260203T145212.md"}) {
				t.Errorf("%d: dir holds %v, want only the task (no temp file)", i, got)
			}
		}
	})

	t.Run("multiple adds create sequential files", func(t *testing.T) {
		dir := t.TempDir()
		var got []string
		for i := range 3 {
			p, err := Add(dir, fmt.Sprintf("task %d", i), now)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, filepath.Base(p))
		}
		want := []string{"20260203T145212.md", "20260203T145213.md", "20260203T145214.md"}
		if !slices.Equal(got, want) {
			t.Fatalf("names = %v, want %v", got, want)
		}
		l, err := Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range l.Pending {
			data, _ := os.ReadFile(p)
			if string(data) != fmt.Sprintf("task %d\n", i) {
				t.Errorf("task %d holds %q: order lost", i, data)
			}
		}
	})

	t.Run("skips names taken by done and stuck tasks", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "20260203T145212.done.md"), "done")
		write(t, filepath.Join(dir, "20260203T145213.stuck.md"), "stuck")
		p, err := Add(dir, "new", now)
		if err != nil {
			t.Fatal(err)
		}
		if got := filepath.Base(p); got != "20260203T145214.md" {
			t.Errorf("name = %q, want 20260203T145214.md", got)
		}
	})

	t.Run("empty prompt is an error", func(t *testing.T) {
		for _, prompt := range []string{"", "   ", "\n\t\n"} {
			dir := filepath.Join(t.TempDir(), "s")
			if _, err := Add(dir, prompt, now); err == nil {
				t.Errorf("Add(%q): no error", prompt)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("Add(%q) created the session dir", prompt)
			}
		}
	})

	t.Run("concurrent adds never overwrite", func(t *testing.T) {
		dir := t.TempDir()
		const n = 16
		var wg sync.WaitGroup
		paths := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { paths[i], errs[i] = Add(dir, fmt.Sprintf("task %d", i), now) })
		}
		wg.Wait()
		seen := map[string]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if seen[paths[i]] {
				t.Fatalf("two adds got %s", paths[i])
			}
			seen[paths[i]] = true
			data, _ := os.ReadFile(paths[i])
			if string(data) != fmt.Sprintf("task %d\n", i) {
				t.Errorf("%s holds %q, want task %d", paths[i], data, i)
			}
		}
		if got := len(entries(t, dir)); got != n {
			t.Errorf("dir holds %d entries, want %d", got, n)
		}
	})
}

func TestUnstick(t *testing.T) {
	t.Run("renames stuck tasks to pending", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{"20260203T145245.stuck.md", "20260203T145300.stuck.md", "20260203T140000.done.md", "20260203T145212.md"} {
			write(t, filepath.Join(dir, n), n)
		}
		got, err := Unstick(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{filepath.Join(dir, "20260203T145245.md"), filepath.Join(dir, "20260203T145300.md")}; !slices.Equal(got, want) {
			t.Errorf("Unstick = %v, want %v", got, want)
		}
		l, err := Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Stuck) != 0 || len(l.Pending) != 3 || len(l.Done) != 1 {
			t.Errorf("after Unstick: %d pending, %d done, %d stuck; want 3, 1, 0", len(l.Pending), len(l.Done), len(l.Stuck))
		}
		// The content, with the agent's notes on why it was stuck, goes along.
		if data, _ := os.ReadFile(got[0]); string(data) != "20260203T145245.stuck.md" {
			t.Errorf("unstuck task holds %q", data)
		}
	})

	t.Run("nothing stuck", func(t *testing.T) {
		got, err := Unstick(filepath.Join(t.TempDir(), "missing"))
		if err != nil || len(got) != 0 {
			t.Errorf("Unstick of a missing dir = %v, %v", got, err)
		}
	})

	t.Run("never overwrites a pending task", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "20260203T145245.stuck.md"), "stuck one")
		write(t, filepath.Join(dir, "20260203T145245.md"), "pending one")
		write(t, filepath.Join(dir, "20260203T145300.stuck.md"), "stuck two")
		got, err := Unstick(dir)
		if err == nil || !strings.Contains(err.Error(), "20260203T145245.stuck.md") || !errors.Is(err, ErrNameTaken) {
			t.Errorf("error = %v, want an ErrNameTaken naming the stuck task", err)
		}
		if want := []string{filepath.Join(dir, "20260203T145300.md")}; !slices.Equal(got, want) {
			t.Errorf("renamed = %v, want %v", got, want)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "20260203T145245.md")); string(data) != "pending one" {
			t.Errorf("pending task overwritten with %q", data)
		}
	})
}

// session makes a session directory under root with the given task files,
// every file and the directory modified age before now.
func session(t *testing.T, root, id string, age time.Duration, files ...string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-age)
	for _, f := range files {
		write(t, filepath.Join(dir, f), "task")
		if err := os.Chtimes(filepath.Join(dir, f), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCleanup(t *testing.T) {
	const day = 24 * time.Hour
	const week = 7 * day // the CLI's default N

	type setup struct {
		id    string
		age   time.Duration
		files []string
	}
	sessions := []setup{
		{"old-done", 10 * day, []string{"20260101T000000.done.md", "20260101T000001.done.md"}},
		{"old-empty", 10 * day, nil},
		{"old-pending", 10 * day, []string{"20260101T000000.done.md", "20260101T000001.md"}},
		{"old-stuck", 10 * day, []string{"20260101T000000.stuck.md"}},
		{"old-active", 10 * day, []string{"20260101T000000.done.md"}},
		{"young-done", 6 * day, []string{"20260101T000000.done.md"}},
		{"boundary-done", week, []string{"20260101T000000.done.md"}},
		{"just-past-done", week + time.Second, []string{"20260101T000000.done.md"}},
	}
	isActive := func(id string) bool { return id == "old-active" }

	tests := []struct {
		name   string
		force  bool
		active func(string) bool
		want   []string // deleted ids
	}{
		{"deletes completed sessions older than N days", false, isActive, []string{"just-past-done", "old-done", "old-empty"}},
		{"force deletes all old sessions", true, isActive, []string{"just-past-done", "old-active", "old-done", "old-empty", "old-pending", "old-stuck"}},
		{"nil active deletes nothing without force", false, nil, nil},
		{"nil active with force", true, nil, []string{"just-past-done", "old-active", "old-done", "old-empty", "old-pending", "old-stuck"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			var all []string
			for _, s := range sessions {
				all = append(all, session(t, root, s.id, s.age, s.files...))
			}
			// A stray file and a symlinked directory are not sessions; the
			// link's target must survive even a forced cleanup.
			write(t, filepath.Join(root, "stray.txt"), "x")
			target := session(t, t.TempDir(), "elsewhere", 30*day, "20260101T000000.done.md")
			if err := os.Symlink(target, filepath.Join(root, "linked")); err != nil {
				t.Fatal(err)
			}

			deleted, kept, err := Cleanup(root, week, tt.force, now, tt.active)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(deleted), tt.want) {
				t.Errorf("deleted = %v, want %v", names(deleted), tt.want)
			}
			if len(deleted)+len(kept) != len(sessions) {
				t.Errorf("deleted %d + kept %d != %d sessions", len(deleted), len(kept), len(sessions))
			}
			for _, d := range all {
				_, err := os.Stat(d)
				if gone := os.IsNotExist(err); gone != slices.Contains(deleted, d) {
					t.Errorf("%s: gone=%v, reported deleted=%v", filepath.Base(d), gone, slices.Contains(deleted, d))
				}
			}
			if _, err := os.Stat(filepath.Join(target, "20260101T000000.done.md")); err != nil {
				t.Errorf("symlink target damaged: %v", err)
			}
		})
	}
}

func TestCleanupRecentFileKeepsSession(t *testing.T) {
	root := t.TempDir()
	dir := session(t, root, "s", 30*24*time.Hour, "20260101T000000.done.md")
	// A file deep inside was written an hour ago.
	f := filepath.Join(dir, "loop", "tracker.md")
	write(t, f, "x")
	recent := now.Add(-time.Hour)
	old := now.Add(-30 * 24 * time.Hour)
	for _, p := range []string{f, filepath.Dir(f)} {
		if err := os.Chtimes(p, recent, recent); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	deleted, kept, err := Cleanup(root, 7*24*time.Hour, true, now, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 0 || len(kept) != 1 {
		t.Errorf("deleted %v, kept %v; want the recently written session kept", deleted, kept)
	}
}

func TestCleanupZeroDays(t *testing.T) {
	root := t.TempDir()
	session(t, root, "s", time.Minute, "20260101T000000.done.md")
	deleted, _, err := Cleanup(root, 0, false, now, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 {
		t.Errorf("deleted %v, want the finished session gone with 0 days", deleted)
	}
}

func TestCleanupMissingDir(t *testing.T) {
	deleted, kept, err := Cleanup(filepath.Join(t.TempDir(), "nope"), 0, true, now, nil)
	if err != nil || deleted != nil || kept != nil {
		t.Errorf("Cleanup of a missing dir = %v, %v, %v", deleted, kept, err)
	}
}

func TestEnsureDroverDir(t *testing.T) {
	want := []string{"sessions/", "state/", "logs/", "worktrees/", "run/"}
	tests := []struct {
		name string
		old  *string
		// keep are lines of old that must survive.
		keep []string
		// absent are lines that must not have been added twice.
		once []string
	}{
		{name: "creates .gitignore for sessions/"},
		{name: "keeps user lines", old: ptr("# mine\n*.bak\nsessions/\n"), keep: []string{"# mine", "*.bak"}, once: []string{"sessions/"}},
		{name: "other spellings count", old: ptr("/sessions\nstate\n/logs/"), keep: []string{"/sessions", "state", "/logs/"}},
		{name: "all present is left alone", old: ptr("run/\nworktrees/\nlogs/\nstate/\nsessions/\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			gi := filepath.Join(root, ".drover", ".gitignore")
			if tt.old != nil {
				write(t, gi, *tt.old)
			}
			d, err := EnsureDroverDir(root)
			if err != nil {
				t.Fatal(err)
			}
			if d != filepath.Join(root, ".drover") {
				t.Errorf("EnsureDroverDir = %q", d)
			}
			data, err := os.ReadFile(gi)
			if err != nil {
				t.Fatal(err)
			}
			got := string(data)
			lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
			for _, w := range want {
				base := strings.Trim(w, "/")
				n := 0
				for _, l := range lines {
					if strings.Trim(l, "/") == base {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s appears %d times in:\n%s", w, n, got)
				}
			}
			for _, k := range tt.keep {
				if !slices.Contains(lines, k) {
					t.Errorf("user line %q lost:\n%s", k, got)
				}
			}
			if tt.old != nil && strings.HasSuffix(*tt.old, "\n") && !strings.HasPrefix(got, *tt.old) {
				t.Errorf("existing content was rewritten, not appended to:\n%s", got)
			}
			if tt.name == "all present is left alone" && got != *tt.old {
				t.Errorf("complete .gitignore changed to:\n%s", got)
			}

			// Idempotent.
			if _, err := EnsureDroverDir(root); err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(gi)
			if string(again) != got {
				t.Errorf("second call changed .gitignore:\n%s", again)
			}
			for _, e := range entries(t, d) {
				if strings.HasPrefix(e, ".task-") {
					t.Errorf("temporary file %s left behind", e)
				}
			}
		})
	}
}

func TestEnsureDroverDirNotADirectory(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, ".drover"), "a file")
	if _, err := EnsureDroverDir(root); err == nil {
		t.Error("EnsureDroverDir with .drover a file: no error")
	}
}

func ptr(s string) *string { return &s }
