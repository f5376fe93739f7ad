package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzScanUnstick fills a session directory with files under arbitrary
// names (one per line of names), as an agent or a user may name task files
// by hand. Scan lists each file once, by the suffix its name ends with,
// and never a dot file, the tracker or a directory; Unstick turns every
// stuck task it renames into a pending one, and any it leaves stuck is
// named in its error.
func FuzzScanUnstick(f *testing.F) {
	f.Add("20260203T145212.md\n20260203T145213.done.md\n20260203T145214.stuck.md\nloop.md\n.task-1.tmp\nnotes.txt")
	f.Add("a.stuck.md\na.md\nb.stuck.md")
	f.Add("x.md.stuck.md\n.md\n.stuck.md\nsub/")
	f.Fuzz(func(t *testing.T, names string) {
		dir := t.TempDir()
		want := map[string]bool{}
		for _, name := range strings.Split(names, "\n") {
			isDir := strings.HasSuffix(name, "/")
			name = strings.TrimSuffix(name, "/")
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) > 200 {
				continue
			}
			p := filepath.Join(dir, name)
			var err error
			if isDir {
				err = os.Mkdir(p, 0o755)
			} else {
				err = os.WriteFile(p, []byte(name), 0o644)
			}
			if err != nil {
				continue
			}
			if !isDir && !strings.HasPrefix(name, ".") && strings.HasSuffix(name, PendingSuffix) && name != "loop.md" {
				want[name] = true
			}
		}
		l, err := Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, c := range []struct {
			paths []string
			is    func(string) bool
		}{
			{l.Pending, func(n string) bool {
				return !strings.HasSuffix(n, DoneSuffix) && !strings.HasSuffix(n, StuckSuffix)
			}},
			{l.Done, func(n string) bool { return strings.HasSuffix(n, DoneSuffix) }},
			{l.Stuck, func(n string) bool { return strings.HasSuffix(n, StuckSuffix) }},
		} {
			if !slices.IsSorted(c.paths) {
				t.Fatalf("Scan's list %q is not in file name order", c.paths)
			}
			for _, p := range c.paths {
				name := filepath.Base(p)
				if filepath.Dir(p) != dir || !c.is(name) || got[name] {
					t.Fatalf("Scan listed %q wrongly (pending %q, done %q, stuck %q)", p, l.Pending, l.Done, l.Stuck)
				}
				got[name] = true
			}
		}
		if len(got) != len(want) {
			t.Fatalf("Scan listed %v, want %v", got, want)
		}

		renamed, err := Unstick(dir)
		after, serr := Scan(dir)
		if serr != nil {
			t.Fatal(serr)
		}
		for _, p := range renamed {
			if !slices.Contains(after.Pending, p) {
				t.Fatalf("Unstick renamed a task to %q, which Scan does not read as pending (pending %q, done %q, stuck %q)", p, after.Pending, after.Done, after.Stuck)
			}
		}
		for _, p := range after.Stuck {
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("%q is still stuck after Unstick, and its error %v does not say so", p, err)
			}
		}
		if err != nil && !errors.Is(err, ErrNameTaken) && !errors.Is(err, ErrNotPendingName) {
			t.Fatalf("Unstick failed: %v", err)
		}
		if len(after.Pending)+len(after.Done)+len(after.Stuck) != len(got) {
			t.Fatalf("Unstick lost or made tasks: %d before, %+v after", len(got), after)
		}
	})
}
