package gitobj

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, file, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// history makes a repository with a packed base commit and a branch of
// two commits beyond it that change a large file a little each (so that
// git packs one version as a delta of the other), add a file in a new
// directory and remove one. It returns the repository, the base and the
// branch's head.
func history(t testing.TB) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	var big strings.Builder
	for i := range 2000 {
		big.WriteString(strings.Repeat("line ", i%13) + "\n")
	}
	write(t, filepath.Join(dir, "big.txt"), big.String())
	write(t, filepath.Join(dir, "gone.txt"), "gone\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	git(t, dir, "repack", "-adq")
	base := git(t, dir, "rev-parse", "HEAD")
	git(t, dir, "checkout", "-qb", "task")
	write(t, filepath.Join(dir, "big.txt"), big.String()+"one more\n")
	write(t, filepath.Join(dir, "new", "dir", "f.go"), "package dir\n")
	git(t, dir, "rm", "-q", "gone.txt")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "one")
	write(t, filepath.Join(dir, "big.txt"), big.String()+"one more\nand another\n")
	git(t, dir, "commit", "-qam", "two")
	return dir, base, git(t, dir, "rev-parse", "HEAD")
}

// receiver is a repository with src's main (the base of history's
// branch), as a worker or supervisor has it.
func receiver(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	git(t, dst, "init", "-q")
	git(t, dst, "fetch", "-q", src, "main:refs/heads/main")
	return dst
}

// gitVerifies checks that git in dir reads the bundle data whole.
func gitVerifies(t testing.TB, dir string, data []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "b.bundle")
	write(t, file, string(data))
	git(t, dir, "bundle", "verify", "-q", file)
}

// TestBundleRoundTrip: a bundle made by MakeBundle is read by git (git
// bundle verify in a clone of the base) and by Unbundle, which writes
// objects git reads back whole: every object the branch reaches beyond
// the base, connected (git fsck and rev-list --objects).
func TestBundleRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, base, head := history(t)
	data, n, err := MakeBundle(ctx, src, "refs/heads/task", head, []string{base})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(git(t, src, "rev-list", "--objects", "--no-object-names", head, "^"+base))
	if n != len(want) {
		t.Errorf("MakeBundle: %d objects, git rev-list --objects lists %d", n, len(want))
	}

	dst := receiver(t, src)
	gitVerifies(t, dst, data)

	r, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Unbundle(data)
	if err != nil {
		t.Fatal(err)
	}
	if b.Refs["refs/heads/task"] != head || len(b.Prerequisites) != 1 || b.Prerequisites[0] != base {
		t.Errorf("Unbundle: %+v, want task at %s beyond %s", b, head, base)
	}
	for _, id := range want {
		if !r.Has(id) {
			t.Errorf("object %s: not written", id)
		}
	}
	git(t, dst, "update-ref", "refs/heads/task", head)
	if got := strings.Fields(git(t, dst, "rev-list", "--objects", "--no-object-names", head, "^"+base)); len(got) != len(want) {
		t.Errorf("git rev-list --objects in the receiver: %d objects, want %d", len(got), len(want))
	}
	git(t, dst, "fsck", "--strict", "--no-dangling")
	if got := git(t, dst, "show", head+":big.txt"); got != git(t, src, "show", head+":big.txt") {
		t.Error("big.txt differs in the receiver")
	}

	// A second time writes nothing new and says the same.
	if b2, err := r.Unbundle(data); err != nil || b2.Refs["refs/heads/task"] != head {
		t.Errorf("Unbundle again: %+v, %v", b2, err)
	}
}

// TestMakeBundleOfNothing: a head its have reach makes a bundle of no
// objects (git bundle create refuses one), which Unbundle reads.
func TestMakeBundleOfNothing(t *testing.T) {
	ctx := context.Background()
	src, base, head := history(t)
	data, n, err := MakeBundle(ctx, src, "refs/heads/task", base, []string{head})
	if err != nil || n != 0 {
		t.Fatalf("MakeBundle of an ancestor: %d objects, %v; want 0", n, err)
	}
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.Unbundle(data); err != nil || b.Refs["refs/heads/task"] != base {
		t.Errorf("Unbundle: %+v, %v", b, err)
	}
}

// TestUnbundleLacksPrerequisite: a bundle whose prerequisite the
// repository does not have is refused before any object is written.
func TestUnbundleLacksPrerequisite(t *testing.T) {
	ctx := context.Background()
	src, base, head := history(t)
	data, _, err := MakeBundle(ctx, src, "refs/heads/task", head, []string{base})
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	git(t, dst, "init", "-q")
	r, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Unbundle(data); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), base) {
		t.Errorf("Unbundle without the base: %v, want ErrUnsupported naming %s", err, base)
	}
	if r.Has(head) {
		t.Error("the head was written")
	}
}

// TestThinPackIsLeftToGit: a delta on an object outside the pack (what
// git pack-objects --thin writes) is ErrUnsupported.
func TestThinPackIsLeftToGit(t *testing.T) {
	src, base, head := history(t)
	cmd := exec.Command("git", "pack-objects", "--revs", "--stdout", "--thin", "-q")
	cmd.Dir = src
	cmd.Stdin = strings.NewReader(head + "\n^" + base + "\n")
	pack, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePack(pack); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ParsePack of a thin pack: %v, want ErrUnsupported", err)
	}
}

// TestParsePackRefusesDamage: a pack cut short, with a byte changed or
// with its count raised is an error, never a panic or objects.
func TestParsePackRefusesDamage(t *testing.T) {
	src, base, head := history(t)
	data, _, err := MakeBundle(context.Background(), src, "refs/heads/task", head, []string{base})
	if err != nil {
		t.Fatal(err)
	}
	_, pack, err := ParseBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePack(pack); err != nil {
		t.Fatalf("the pack itself: %v", err)
	}
	flip := bytes.Clone(pack)
	flip[len(flip)/2] ^= 1
	count := bytes.Clone(pack)
	count[11]++
	for name, p := range map[string][]byte{
		"cut":     pack[:len(pack)-30],
		"flipped": flip,
		"count":   count,
		"empty":   nil,
	} {
		if objs, err := ParsePack(p); err == nil {
			t.Errorf("%s: %d objects, no error", name, len(objs))
		}
	}
}

// TestRef: a branch read in process is what git says, loose or packed;
// a missing ref, or a name that is a directory of refs, is "".
func TestRef(t *testing.T) {
	ctx := context.Background()
	src, base, head := history(t)
	git(t, src, "branch", "nested/one", base)
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for ref, want := range map[string]string{
			"refs/heads/task":       head,
			"refs/heads/main":       base,
			"refs/heads/nested/one": base,
			"refs/heads/nested":     "",
			"refs/heads/absent":     "",
		} {
			if got, err := r.Ref(ref); err != nil || got != want {
				t.Errorf("%s: Ref(%s) = %q, %v; want %q", when, ref, got, err, want)
			}
		}
	}
	check("loose")
	git(t, src, "pack-refs", "--all")
	check("packed")
	// Moved after packing: the loose file wins, as in git.
	git(t, src, "update-ref", "refs/heads/main", head)
	if got, _ := r.Ref("refs/heads/main"); got != head {
		t.Errorf("a loose ref over a packed one: %s, want %s", got, head)
	}
	if _, err := r.Ref("HEAD"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Ref(HEAD): %v, want ErrUnsupported", err)
	}
}

// TestRefOfAWorkTree: a linked work tree reads the refs of its
// repository (the common directory).
func TestRefOfAWorkTree(t *testing.T) {
	ctx := context.Background()
	src, _, head := history(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, src, "worktree", "add", "-q", "-b", "other", wt, "task")
	r, err := Open(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Ref("refs/heads/task"); err != nil || got != head {
		t.Errorf("Ref from a work tree = %q, %v; want %s", got, err, head)
	}
	if !r.Has(head) {
		t.Error("Has from a work tree: false")
	}
}

// TestHas: loose and packed objects are found, through an alternate too;
// an absent one is not.
func TestHas(t *testing.T) {
	ctx := context.Background()
	src, base, head := history(t)
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Has(base) || !r.Has(head) {
		t.Errorf("Has: packed base %v, loose head %v", r.Has(base), r.Has(head))
	}
	if r.Has(strings.Repeat("ab", 20)) {
		t.Error("Has of an absent object: true")
	}
	shared := t.TempDir()
	git(t, shared, "clone", "-q", "--shared", src, "c")
	rc, err := Open(ctx, filepath.Join(shared, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if !rc.Has(head) {
		t.Error("Has through an alternate: false")
	}
}

// TestReadBundleHeader: the header read from a stream is the one
// ParseBundle reads, and the reader is left at the pack.
func TestReadBundleHeader(t *testing.T) {
	src, base, head := history(t)
	data, _, err := MakeBundle(context.Background(), src, "refs/heads/task", head, []string{base})
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(data))
	b, err := ReadBundleHeader(r)
	if err != nil || len(b.Prerequisites) != 1 || b.Prerequisites[0] != base || b.Refs["refs/heads/task"] != head {
		t.Fatalf("ReadBundleHeader = %+v, %v", b, err)
	}
	if rest, _ := r.Peek(4); string(rest) != "PACK" {
		t.Errorf("after the header: %q, want the pack", rest)
	}
	if _, err := ReadBundleHeader(bufio.NewReader(strings.NewReader(bundleSignature + "-" + base))); err == nil {
		t.Error("a header that does not end: no error")
	}
}

// TestUnbundleKeepsManyObjectsAsAPack: a bundle of more than maxLoose
// objects is kept as its pack with an index that git verifies, and git
// reads every object through it.
func TestUnbundleKeepsManyObjectsAsAPack(t *testing.T) {
	ctx := context.Background()
	src, base, _ := history(t)
	for i := range 3 * maxLoose {
		write(t, filepath.Join(src, "many", strings.Repeat("f", i+1)), strings.Repeat("x", i)+"\n")
	}
	git(t, src, "add", "-A")
	git(t, src, "commit", "-qm", "many")
	head := git(t, src, "rev-parse", "HEAD")
	data, n, err := MakeBundle(ctx, src, "refs/heads/task", head, []string{base})
	if err != nil || n <= maxLoose {
		t.Fatalf("MakeBundle: %d objects, %v; want more than %d", n, err, maxLoose)
	}
	dst := receiver(t, src)
	before, _ := filepath.Glob(filepath.Join(dst, ".git", "objects", "pack", "*.idx"))
	loose := git(t, dst, "count-objects")
	r, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Unbundle(data); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dst, ".git", "objects", "pack", "*.idx"))
	if len(after) != len(before)+1 {
		t.Fatalf("%d pack indexes, want %d", len(after), len(before)+1)
	}
	for _, idx := range after {
		git(t, dst, "verify-pack", idx)
	}
	if now := git(t, dst, "count-objects"); now != loose {
		t.Errorf("loose objects written: %s, before %s", now, loose)
	}
	git(t, dst, "update-ref", "refs/heads/task", head)
	git(t, dst, "fsck", "--strict", "--no-dangling")
	want := strings.Fields(git(t, src, "rev-list", "--objects", "--no-object-names", head, "^"+base))
	for _, id := range want {
		if !r.Has(id) {
			t.Errorf("object %s: not found", id)
		}
	}
	// The same bundle again leaves the pack as it is.
	if _, err := r.Unbundle(data); err != nil {
		t.Fatal(err)
	}
	if again, _ := filepath.Glob(filepath.Join(dst, ".git", "objects", "pack", "*.idx")); len(again) != len(after) {
		t.Errorf("%d pack indexes after the same bundle again, want %d", len(again), len(after))
	}
}

// TestReadPackedDeltas: every object of a repository packed with deltas
// (git repack -adf) reads as git prints it.
func TestReadPackedDeltas(t *testing.T) {
	ctx := context.Background()
	src, _, _ := history(t)
	git(t, src, "checkout", "-q", "main")
	git(t, src, "merge", "-q", "--no-ff", "-m", "merged", "task")
	git(t, src, "repack", "-adfq", "--depth=10", "--window=50")
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Fields(git(t, src, "rev-list", "--objects", "--no-object-names", "--all"))
	deltas := strings.Count(git(t, src, "verify-pack", "-v", mustGlob(t, filepath.Join(src, ".git", "objects", "pack", "*.idx"))), "chain length")
	if deltas == 0 {
		t.Fatal("the repack made no deltas: the test reads none")
	}
	for _, id := range ids {
		o, err := r.Read(id)
		if err != nil {
			t.Fatalf("Read(%s): %v", id, err)
		}
		if want := git(t, src, "cat-file", "-t", id); o.Type.String() != want {
			t.Errorf("%s: type %s, want %s", id, o.Type, want)
		}
		if objectID(o.Type, o.Data) != id {
			t.Errorf("%s: data of another object", id)
		}
	}
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) != 1 {
		t.Fatalf("%s: %d files", pattern, len(m))
	}
	return m[0]
}

// TestNewBundleHasWhatGitWouldPack: the bundle made in process holds the
// objects git rev-list --objects lists beyond what the receiver has (a
// merge included), reads in the receiver as git's does, and git verifies
// it; a head whose history does not lead to have is left to git.
func TestNewBundleHasWhatGitWouldPack(t *testing.T) {
	ctx := context.Background()
	src, base, _ := history(t)
	// A merge of another branch beyond the base, on the task branch.
	git(t, src, "checkout", "-qb", "side", base)
	write(t, filepath.Join(src, "side.txt"), "side\n")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-qm", "side")
	git(t, src, "checkout", "-q", "task")
	git(t, src, "merge", "-q", "--no-edit", "side")
	head := git(t, src, "rev-parse", "HEAD")
	git(t, src, "repack", "-adq")

	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	data, n, err := r.NewBundle("refs/heads/task", head, []string{base})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(git(t, src, "rev-list", "--objects", "--no-object-names", head, "^"+base))
	_, pack, err := ParseBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ParsePack(pack)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, o := range objs {
		got[o.ID] = true
	}
	for _, id := range want {
		if !got[id] {
			t.Errorf("object %s: not in the bundle", id)
		}
	}
	if n != len(objs) || len(objs) != len(want) {
		t.Errorf("%d objects (said %d), git lists %d", len(objs), n, len(want))
	}

	dst := receiver(t, src)
	gitVerifies(t, dst, data)
	rd, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Unbundle(data); err != nil {
		t.Fatal(err)
	}
	git(t, dst, "update-ref", "refs/heads/task", head)
	git(t, dst, "fsck", "--strict", "--no-dangling")

	// have that head's history does not reach.
	if _, _, err := r.NewBundle("refs/heads/task", head, []string{strings.Repeat("ab", 20)}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewBundle beyond a commit not in the history: %v, want ErrUnsupported", err)
	}
}
