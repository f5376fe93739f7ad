package natsexec

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// blobProject is project with a second commit of 256 KiB that no
// compression shrinks: its repository, that commit, its identity and the
// bytes.
func blobProject(t *testing.T) (string, string, Identity, []byte) {
	t.Helper()
	repo, _, id := project(t)
	blob := make([]byte, 256<<10)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "blob"), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	mustGit(t, repo, "add", "blob")
	mustGit(t, repo, "commit", "--quiet", "-m", "blob")
	return repo, mustGit(t, repo, "rev-parse", "HEAD"), id, blob
}

// TestBaseTravelsOncePerWorker: a job's bundle holds only its branch's
// commits beyond the base; the base goes into the object store once, and
// a worker that has it (from an earlier job) does not fetch it again.
func TestBaseTravelsOncePerWorker(t *testing.T) {
	s := startServer(t)
	repo, base, id, blob := blobProject(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	gets := &countingStore{ObjectStore: wst.Bundles, gets: map[string]int{}}
	wst.Bundles = gets
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w1", Dir: t.TempDir(), Concurrency: 2, Runner: committer(t)})
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id, bases: &keyedMutex{}}

	ctx := testCtx(t)
	if _, err := d.Do(ctx, Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil); err != nil {
		t.Fatal(err)
	}
	// The base is stored once, under its commit.
	info, err := st.Bundles.GetInfo(ctx, baseObject(base))
	if err != nil {
		t.Fatalf("the base's bundle: %v", err)
	}
	if info.Size < uint64(len(blob)) {
		t.Fatalf("the base's bundle has %d bytes, want the whole history (> %d)", info.Size, len(blob))
	}
	// A job of a branch one commit beyond the base carries that commit.
	local := openLocal(ctx, repo)
	data, head, err := local.bundleJob(ctx, base, "drover/r1/a")
	if err != nil || data == nil || head == "" {
		t.Fatalf("bundleJob = %q, %d bytes, %v", head, len(data), err)
	}
	if len(data) > len(blob)/8 {
		t.Fatalf("the job's bundle has %d bytes; the base has %d", len(data), len(blob))
	}
	// A branch at the base has no bundle.
	mustGit(t, repo, "branch", "drover/r1/c", base)
	if data, _, err := local.bundleJob(ctx, base, "drover/r1/c"); err != nil || data != nil {
		t.Fatalf("a branch at its base: a bundle of %d bytes, %v", len(data), err)
	}

	// The next jobs from the base, on the worker that has it: the
	// second iteration of a, and b's first.
	for _, j := range []Job{
		{ID: "r1-a-2", RunID: "r1", Task: "a", Iteration: 2, Base: base, Branch: "drover/r1/a"},
		{ID: "r1-b-1", RunID: "r1", Task: "b", Iteration: 1, Base: base, Branch: "drover/r1/b"},
	} {
		res, err := d.Do(ctx, j, nil)
		if err != nil || res.Err != "" {
			t.Fatalf("job %s: %v, %+v", j.ID, err, res)
		}
	}
	if n := gets.count(baseObject(base)); n != 1 {
		t.Fatalf("the worker fetched the base %d times, want 1", n)
	}
	if n := gets.count("job/r1-a-1") + gets.count("job/r1-b-1"); n != 0 {
		t.Fatalf("the worker fetched %d bundles of first iterations, want none (their branches are at the base)", n)
	}
	if n := gets.count("job/r1-a-2"); n != 1 {
		t.Fatalf("the worker fetched the bundle of the second iteration %d times, want 1", n)
	}
	if n := mustGit(t, repo, "rev-list", "--count", base+"..drover/r1/a"); n != "2" {
		t.Fatalf("%s commits on branch a, want 2", n)
	}
}

// countingStore counts the objects a worker fetches.
type countingStore struct {
	jetstream.ObjectStore
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingStore) GetFile(ctx context.Context, name, file string, opts ...jetstream.GetObjectOpt) error {
	c.mu.Lock()
	c.gets[name]++
	c.mu.Unlock()
	return c.ObjectStore.GetFile(ctx, name, file, opts...)
}

func (c *countingStore) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[name]
}

// TestJobsOfOtherBranchesOverlapOnAWorker: a worker's slots do not wait
// for each other's transfers. While one job's result is being stored
// (held here), another job on the same worker runs from start to end.
func TestJobsOfOtherBranchesOverlapOnAWorker(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	held := &holdingStore{ObjectStore: wst.Bundles, prefix: "result/r1-a-1/", entered: make(chan struct{}), release: make(chan struct{})}
	wst.Bundles = held
	// Job a commits more than a result carries inline: its bundle is
	// stored.
	commit := committer(t)
	runner := RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
		if job.Task == "a" {
			big := make([]byte, 2*InlineMax)
			if _, err := rand.Read(big); err != nil {
				return nil, err
			}
			wt := filepath.Join(repo, ".wt", token(job.Branch))
			mustGit(t, repo, "worktree", "add", "--quiet", "-b", job.Branch, wt, job.Base)
			if err := os.WriteFile(filepath.Join(wt, "big"), big, 0o600); err != nil {
				return nil, err
			}
			mustGit(t, wt, "add", "big")
		}
		return commit(ctx, repo, job, report)
	})
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w1", Dir: t.TempDir(), Concurrency: 2, Runner: runner})
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id, bases: &keyedMutex{}}
	ctx := testCtx(t)

	errA := make(chan error, 1)
	go func() {
		_, err := d.Do(ctx, Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
		errA <- err
	}()
	select {
	case <-held.entered:
	case <-ctx.Done():
		t.Fatal("job a never stored its result")
	}
	res, err := d.Do(ctx, Job{ID: "r1-b-1", RunID: "r1", Task: "b", Iteration: 1, Base: base, Branch: "drover/r1/b"}, nil)
	if err != nil || res.Err != "" {
		t.Fatalf("job b while a stores its result: %v, %+v", err, res)
	}
	close(held.release)
	if err := <-errA; err != nil {
		t.Fatalf("job a: %v", err)
	}
}

// holdingStore holds the storing of the objects under prefix until
// release is closed, and closes entered when the first arrives.
type holdingStore struct {
	jetstream.ObjectStore
	prefix  string
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *holdingStore) Put(ctx context.Context, meta jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	if strings.HasPrefix(meta.Name, h.prefix) {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.ObjectStore.Put(ctx, meta, r)
}

// TestWorkerRepositoryCommitsUnderTheProjectsIdentity: on a machine with no
// git identity (no global or system config) an agent's commits on a worker
// take the project's identity, or a fallback when the project has none.
func TestWorkerRepositoryCommitsUnderTheProjectsIdentity(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, tc := range []struct {
		name, user, email string
		want              string
	}{
		{name: "project identity", user: "Ada Lovelace", email: "ada@example.com", want: "Ada Lovelace <ada@example.com>"},
		{name: "none", want: fallbackName + " <" + fallbackEmail + ">"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			repo, base, id := project(t)
			if tc.user != "" {
				mustGit(t, repo, "config", "user.name", tc.user)
				mustGit(t, repo, "config", "user.email", tc.email)
			}
			nc, st := connect(t, s, 0)
			wnc, wst := connect(t, s, 0)
			// The agent commits as agents do: plain git commit.
			runner := RunnerFunc(func(ctx context.Context, repo string, job Job, _ func(json.RawMessage)) (json.RawMessage, error) {
				wt := filepath.Join(repo, ".wt", token(job.Branch))
				if _, err := gitOut(ctx, repo, "worktree", "add", "--quiet", "-b", job.Branch, wt, job.Base); err != nil {
					return nil, err
				}
				if err := os.WriteFile(filepath.Join(wt, "f"), []byte("f\n"), 0o600); err != nil {
					return nil, err
				}
				if _, err := gitOut(ctx, wt, "add", "f"); err != nil {
					return nil, err
				}
				_, err := gitOut(ctx, wt, "-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "f")
				return json.RawMessage(`{}`), err
			})
			runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w1", Dir: t.TempDir(), Runner: runner})
			d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
			res, err := d.Do(testCtx(t), Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
			if err != nil || res.Err != "" {
				t.Fatalf("job: %v, %+v", err, res)
			}
			if got := mustGit(t, repo, "log", "-1", "--format=%an <%ae>", "drover/r1/a"); got != tc.want {
				t.Fatalf("the agent's commit is by %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBaseBeyondAnEarlierBase: the next run's base (the last one's
// merged) is stored as its commits beyond the base stored whole before,
// which a worker that has that one fetches alone, and a new worker
// fetches after it. When the older bundle is gone, the next job stores
// the base whole again, and a new worker still gets it.
func TestBaseBeyondAnEarlierBase(t *testing.T) {
	s := startServer(t)
	repo, first, id, blob := blobProject(t)
	nc, st := connect(t, s, 0)
	ctx := testCtx(t)
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id, bases: &keyedMutex{}, local: openLocal(ctx, repo), log: &baseLog{}}
	// One worker at a time, each with a repository of its own; a short
	// ack wait, so that a job handed to a stopped worker's last pull
	// comes back soon.
	worker := func(name string) (*countingStore, func()) {
		wnc, wst := connect(t, s, 2*time.Second)
		gets := &countingStore{ObjectStore: wst.Bundles, gets: map[string]int{}}
		wst.Bundles = gets
		wctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			_ = (&Worker{NC: wnc, Streams: wst, Identity: id, Name: name, Dir: t.TempDir(), Runner: committer(t)}).Run(wctx)
		})
		stop := func() {
			cancel()
			wg.Wait()
		}
		t.Cleanup(stop)
		return gets, stop
	}
	do := func(run, base string) {
		t.Helper()
		job := Job{ID: run + "-1", RunID: run, Task: run, Iteration: 1, Base: base, Branch: "drover/" + run}
		if res, err := d.Do(ctx, job, nil); err != nil || res.Err != "" {
			t.Fatalf("job %s: %v, %+v", job.ID, err, res)
		}
	}
	w1, stop1 := worker("w1")
	do("r1", first)
	// The run's branch merged: the next run's base.
	mustGit(t, repo, "merge", "--quiet", "--no-ff", "-m", "r1", "drover/r1")
	second := mustGit(t, repo, "rev-parse", "HEAD")
	do("r2", second)
	info, err := st.Bundles.GetInfo(ctx, baseObject(second))
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata[basePrerequisite] != first || info.Size > uint64(len(blob))/8 {
		t.Fatalf("the second base: %d bytes beyond %q; want a few beyond %s (the whole history is %d)", info.Size, info.Metadata[basePrerequisite], first, len(blob))
	}
	if w1.count(baseObject(first)) != 1 || w1.count(baseObject(second)) != 1 {
		t.Fatalf("the first worker fetched %v, want each base once", w1.gets)
	}

	// The run after: its base is stored beyond the second.
	mustGit(t, repo, "merge", "--quiet", "--no-ff", "-m", "r2", "drover/r2")
	third := mustGit(t, repo, "rev-parse", "HEAD")
	do("r3", third)
	if info, err := st.Bundles.GetInfo(ctx, baseObject(third)); err != nil || info.Metadata[basePrerequisite] != second {
		t.Fatalf("the third base: %+v, %v; want it beyond the second", info, err)
	}
	stop1()

	// A worker with none fetches the chain, each bundle once.
	w2, stop2 := worker("w2")
	do("r3b", third)
	for _, b := range []string{first, second, third} {
		if n := w2.count(baseObject(b)); n != 1 {
			t.Fatalf("a new worker fetched base %s %d times (%v), want once", b, n, w2.gets)
		}
	}
	stop2()

	// The oldest bundle gone (its age), the next job stores the base
	// whole, once the supervisor looks again.
	if err := st.Bundles.Delete(ctx, baseObject(first)); err != nil {
		t.Fatal(err)
	}
	d.log = &baseLog{}
	w3, _ := worker("w3")
	do("r4", third)
	if info, err := st.Bundles.GetInfo(ctx, baseObject(third)); err != nil || info.Metadata[basePrerequisite] != "" || info.Size < uint64(len(blob)) {
		t.Fatalf("the third base stored again: %+v, %v; want it whole", info, err)
	}
	if w3.count(baseObject(third)) != 1 || w3.count(baseObject(first)) != 0 || w3.count(baseObject(second)) != 0 {
		t.Fatalf("the third worker fetched %v, want the third base alone", w3.gets)
	}
}
