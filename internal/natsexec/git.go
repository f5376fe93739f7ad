package natsexec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/drover-dev/drover/internal/gitobj"
	"github.com/drover-dev/drover/internal/proc"
)

// Identity names the repository a job belongs to: its root commit and the
// name it was configured with. A worker serves one identity and refuses
// the jobs of any other.
type Identity struct {
	Name string `json:"name"`
	Root string `json:"root"`
}

// String is the identity as people read it.
func (i Identity) String() string {
	r := i.Root
	if len(r) > 12 {
		r = r[:12]
	}
	return i.Name + "@" + r
}

// Key is the identity as one name: the directory of a worker's repository
// of it.
func (i Identity) Key() string {
	h := sha256.Sum256([]byte(i.Name + "\x00" + i.Root))
	return hex.EncodeToString(h[:8])
}

// Subjects is the identity's part that NATS subjects are keyed by: the
// root commit, what must match for a job's bundles to apply. A worker
// started under another name (--repo-name, a folder named otherwise)
// gets the jobs of the same history and refuses them, with a result the
// supervisor reports, rather than never seeing them.
func (i Identity) Subjects() string {
	h := sha256.Sum256([]byte(i.Root))
	return hex.EncodeToString(h[:8])
}

// RepoIdentity returns the identity of the repository at dir under name:
// its first root commit (a history with several roots names the least).
func RepoIdentity(ctx context.Context, dir, name string) (Identity, error) {
	out, err := gitOut(ctx, dir, "rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		return Identity{}, fmt.Errorf("the identity of repository %q: %w", dir, err)
	}
	roots := strings.Fields(out)
	if len(roots) == 0 {
		return Identity{}, fmt.Errorf("the identity of repository %q: no root commit", dir)
	}
	if name == "" {
		return Identity{}, fmt.Errorf("the identity of repository %q: no name", dir)
	}
	return Identity{Name: name, Root: slices.Min(roots)}, nil
}

// gitOut runs git in dir with drover's process rules (proc.Git: process
// group, timeout, output cap, GIT_* variables of a hook dropped) and
// returns its trimmed output.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := proc.Git(ctx, dir, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// localRepo is a repository of a supervisor or worker with what is kept
// of it between jobs: its object storage, opened once (gitobj: its refs
// and the bundles of jobs read and written in process, git being the
// fallback), and the git identity its jobs carry.
type localRepo struct {
	dir string
	git *gitobj.Repo

	mu       sync.Mutex
	author   Author
	authorAt time.Time
}

// openLocal returns the localRepo of dir. A repository gitobj cannot open
// is worked by git alone.
func openLocal(ctx context.Context, dir string) *localRepo {
	g, _ := gitobj.Open(ctx, dir)
	return &localRepo{dir: dir, git: g}
}

// authorFresh is how long a git identity read by jobAuthor serves: a
// change of the project's git config reaches the jobs after it.
const authorFresh = time.Minute

// jobAuthor is the project's git identity (gitAuthor), read again once
// authorFresh has passed rather than by a git process per job.
func (r *localRepo) jobAuthor(ctx context.Context) Author {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.authorAt.IsZero() || time.Since(r.authorAt) > authorFresh {
		r.author, r.authorAt = gitAuthor(ctx, r.dir), time.Now()
	}
	return r.author
}

// refHead returns the commit ref names, or "" when there is no such ref:
// read in process, or by git when the repository keeps its refs in a way
// gitobj does not read.
func (r *localRepo) refHead(ctx context.Context, ref string) (string, error) {
	if r.git != nil {
		if id, err := r.git.Ref(ref); !errors.Is(err, gitobj.ErrUnsupported) {
			return id, err
		}
	}
	return gitOut(ctx, r.dir, "for-each-ref", "--format=%(objectname)", ref)
}

// makeBundle returns a bundle of ref at head beyond have and its number
// of objects: made in process (gitobj.Repo.NewBundle), or by git when
// the history or the repository is one gitobj does not walk.
func (r *localRepo) makeBundle(ctx context.Context, ref, head string, have []string) ([]byte, int, error) {
	if r.git != nil {
		data, n, err := r.git.NewBundle(ref, head, have)
		if !errors.Is(err, gitobj.ErrUnsupported) {
			return data, n, err
		}
	}
	return gitobj.MakeBundle(ctx, r.dir, ref, head, have)
}

// hasCommit says whether the repository has commit (and so its history:
// a worker's repository gets commits only from bundles, whole).
func (r *localRepo) hasCommit(ctx context.Context, commit string) bool {
	if r.git != nil && r.git.Has(commit) {
		return true
	}
	_, err := gitOut(ctx, r.dir, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// bundleBase writes to file a bundle of base and its whole history,
// under baseRef (a temporary ref): what a worker lacking base fetches
// once.
func bundleBase(ctx context.Context, repo, file, baseRef, base string) error {
	if _, err := gitOut(ctx, repo, "update-ref", baseRef, base); err != nil {
		return fmt.Errorf("marking base %s: %w", base, err)
	}
	// The temporary ref goes whatever happens; a failed delete only
	// leaves a ref under refs/drover/ behind.
	defer func() { _, _ = gitOut(context.WithoutCancel(ctx), repo, "update-ref", "-d", baseRef) }()
	if _, err := gitOut(ctx, repo, "bundle", "create", "--quiet", file, baseRef); err != nil {
		return fmt.Errorf("bundling base %s: %w", base, err)
	}
	return nil
}

// bundleJob returns a bundle of the commits of branch that base lacks,
// the only part of a job's repository state that is the job's own (the
// worker gets base once, by bundleBase), and the branch's commit ("" when
// the branch does not exist yet). It returns no bundle when the branch is
// absent or base has all its commits.
func (r *localRepo) bundleJob(ctx context.Context, base, branch string) ([]byte, string, error) {
	ref := "refs/heads/" + branch
	head, err := r.refHead(ctx, ref)
	if err != nil || head == "" {
		return nil, head, err
	}
	data, n, err := r.makeBundle(ctx, ref, head, []string{base})
	if err != nil {
		return nil, "", fmt.Errorf("bundling branch %s beyond %s: %w", branch, base, err)
	}
	if n == 0 {
		return nil, head, nil
	}
	return data, head, nil
}

// The git identity of a worker's repository when neither the job nor the
// worker's machine has one: an agent's commits need one.
const (
	fallbackName  = "drover worker"
	fallbackEmail = "drover-worker@localhost"
)

// gitAuthor returns the git identity repo commits under (its own config,
// the user's or the system's), either part empty when unset.
func gitAuthor(ctx context.Context, repo string) Author {
	// Exit status 1 is "none of them set": an empty identity.
	out, _ := gitOut(ctx, repo, "config", "--get-regexp", `^user\.(name|email)$`)
	var a Author
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "user.name":
			a.Name = v
		case "user.email":
			a.Email = v
		}
	}
	return a
}

// baseLog is what a supervisor knows of the base bundles it stored: the
// last one, which the next base is stored beyond, and for each the
// chain of bundles it needs (Dispatcher.putBase) and when it was last
// found whole in the object store.
type baseLog struct {
	mu    sync.Mutex
	last  string
	bases map[string]baseEntry
}

type baseEntry struct {
	// root is when the whole-history bundle its chain starts from was
	// stored: the first of the chain to expire.
	root time.Time
	// depth is how many bundles come before it in its chain (0: whole).
	depth   int
	checked time.Time
}

// baseCheckEvery is how long a base bundle found whole is taken as there
// without a look: other supervisors never delete one, only its age does.
const baseCheckEvery = 10 * time.Minute

// maxBaseChain bounds a chain of base bundles: a base that would be the
// next is stored whole.
const maxBaseChain = 16

// stored notes base stored at now, beyond from ("" : whole).
func (l *baseLog) stored(base, from string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := baseEntry{root: now, checked: now}
	if f, ok := l.bases[from]; ok && from != "" {
		e.root, e.depth = f.root, f.depth+1
	}
	if l.bases == nil {
		l.bases = map[string]baseEntry{}
	}
	l.bases[base], l.last = e, base
}

// seen notes base found whole, with its chain, at now; root is when the
// whole bundle its chain starts from was stored.
func (l *baseLog) seen(base string, root, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.bases[base]
	if !ok {
		// Stored by another supervisor: not one to chain from.
		e = baseEntry{root: root, depth: maxBaseChain}
	}
	e.checked = now
	if l.bases == nil {
		l.bases = map[string]baseEntry{}
	}
	l.bases[base] = e
}

// fresh says whether base was found whole within baseCheckEvery and its
// chain has half of its life left at least.
func (l *baseLog) fresh(base string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.bases[base]
	return ok && now.Sub(e.checked) < baseCheckEvery && now.Sub(e.root) < bundleTTL/2
}

// chainFrom returns the last base stored, when the next may be stored
// beyond it at now: its chain has half of its life left and is not at
// its longest.
func (l *baseLog) chainFrom(now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.bases[l.last]
	if !ok || now.Sub(e.root) >= bundleTTL/2 || e.depth+1 >= maxBaseChain {
		return ""
	}
	return l.last
}

// baseObject is the object store name of base's bundle: one per commit,
// so that a bundle once stored is never overwritten under a reader.
func baseObject(base string) string { return "base/" + base }

// keyedMutex locks per key (a base commit, a branch): work on different
// keys goes on at once.
type keyedMutex struct {
	mu   sync.Mutex
	keys map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[string]*keyedLock{}
	}
	l := k.keys[key]
	if l == nil {
		l = &keyedLock{}
		k.keys[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		defer k.mu.Unlock()
		if l.users--; l.users == 0 {
			delete(k.keys, key)
		}
	}
}

// unbundle writes the objects of the bundle file into the repository,
// under no ref, and returns the bundle's refs: ref name to commit. A
// bundle gitobj reads is written in process, as loose objects; any other
// (too big, a thin pack, a prerequisite found only by git) by git bundle
// unbundle, which checks the prerequisites too. The caller points a ref
// at what it needs; until then the objects are unreferenced, which git
// keeps for weeks (gc's prune expiry).
func (r *localRepo) unbundle(ctx context.Context, file string) (map[string]string, error) {
	return r.unbundleData(ctx, nil, file)
}

// unbundleData is unbundle of the bundle data, or when data is nil of the
// bundle file; git reads data from a file of its own.
func (r *localRepo) unbundleData(ctx context.Context, data []byte, file string) (map[string]string, error) {
	if data == nil && r.git != nil {
		if fi, err := os.Stat(file); err == nil && fi.Size() <= gitobj.MaxObject {
			if data, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("reading bundle %q: %w", file, err)
			}
		}
	}
	if data != nil && r.git != nil {
		b, err := r.git.Unbundle(data)
		if err == nil {
			return b.Refs, nil
		}
		if !errors.Is(err, gitobj.ErrUnsupported) {
			return nil, err
		}
	}
	if file == "" {
		dir, err := os.MkdirTemp("", "drover-bundle-")
		if err != nil {
			return nil, fmt.Errorf("a directory for a bundle: %w", err)
		}
		defer os.RemoveAll(dir)
		file = filepath.Join(dir, "inline.bundle")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing a bundle: %w", err)
		}
	}
	out, err := gitOut(ctx, r.dir, "bundle", "unbundle", file)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if commit, ref, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			refs[ref] = commit
		}
	}
	return refs, nil
}

// ErrBranchMoved is the result of a job whose task branch moved in the
// project while the job ran: its commits are not applied.
var ErrBranchMoved = errors.New("the task branch moved while the job ran")

// setBranch points branch at head if it is still at old ("" : absent).
func setBranch(ctx context.Context, repo, branch, head, old string) error {
	if old == "" {
		old = strings.Repeat("0", len(head))
	}
	if _, err := gitOut(ctx, repo, "update-ref", "refs/heads/"+branch, head, old); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBranchMoved, branch, err)
	}
	return nil
}

// putBytes stores the bundle data as object name.
func putBytes(ctx context.Context, obs jetstream.ObjectStore, data []byte, name string) error {
	return putBytesMeta(ctx, obs, data, jetstream.ObjectMeta{Name: name})
}

// putBytesMeta stores the bundle data as the object meta names.
func putBytesMeta(ctx context.Context, obs jetstream.ObjectStore, data []byte, meta jetstream.ObjectMeta) error {
	if _, err := obs.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("storing bundle %s: %w", meta.Name, err)
	}
	return nil
}

// putBundleMeta stores the bundle at file as the object meta names.
func putBundleMeta(ctx context.Context, obs jetstream.ObjectStore, file string, meta jetstream.ObjectMeta) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("opening bundle %q: %w", file, err)
	}
	defer f.Close()
	if _, err := obs.Put(ctx, meta, f); err != nil {
		return fmt.Errorf("storing bundle %s: %w", meta.Name, err)
	}
	return nil
}

// RepoName is the name in the identity of the repository at root, the
// same on a supervisor and on its workers unless they are told another:
// its directory's name.
func RepoName(root string) string { return filepath.Base(root) }
