package natsexec

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/test/natstest"
)

func TestMain(m *testing.M) {
	// The object store's Put (nats.go v1.55 jetstream/object.go) cleans
	// up its publisher as soon as it is done, racing the reconnect
	// listener that publisher started: a listener that reads its channel
	// after the cleanup waits on a nil channel for ever. It is the
	// library's, one goroutine per lost race.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

// startServer runs a NATS server with JetStream on loopback for the test.
func startServer(tb testing.TB) *server.Server { return natstest.Start(tb, -1, tb.TempDir()) }

// dial connects to s until the test ends, with JetStream on the
// connection, setting nothing up.
func dial(t testing.TB, s *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := Connect(context.Background(), Config{URL: s.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// connect connects to s and sets up drover's streams.
func connect(t testing.TB, s *server.Server, ackWait time.Duration) (*nats.Conn, Streams) {
	t.Helper()
	nc, js := dial(t, s)
	st, err := Setup(context.Background(), js, ackWait)
	if err != nil {
		t.Fatal(err)
	}
	return nc, st
}

func mustGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(context.Background(), dir, append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// project makes a repository with one commit and returns it, its base
// commit and its identity.
func project(t *testing.T) (string, string, Identity) {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, dir, "init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("base\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "add", "README")
	mustGit(t, dir, "commit", "--quiet", "-m", "base")
	id, err := RepoIdentity(context.Background(), dir, "proj")
	if err != nil {
		t.Fatal(err)
	}
	return dir, mustGit(t, dir, "rev-parse", "HEAD"), id
}

// committer is a scripted iteration: in a work tree of the job's branch it
// commits a file named after the task and iteration, and reports once.
func committer(t *testing.T) RunnerFunc {
	return func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
		report(json.RawMessage(`{"tools":1}`))
		wt := filepath.Join(repo, ".wt", token(job.Branch))
		if _, err := os.Stat(wt); err != nil {
			if job.Head == "" {
				mustGit(t, repo, "worktree", "add", "--quiet", "-b", job.Branch, wt, job.Base)
			} else {
				mustGit(t, repo, "worktree", "add", "--quiet", wt, job.Branch)
			}
		}
		name := job.Task + "-" + string(rune('0'+job.Iteration))
		if err := os.WriteFile(filepath.Join(wt, name), []byte(name+"\n"), 0o600); err != nil {
			return nil, err
		}
		mustGit(t, wt, "add", name)
		mustGit(t, wt, "commit", "--quiet", "-m", name)
		return json.RawMessage(`{"committed":true}`), nil
	}
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, w *Worker) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return cancel
}

func testCtx(t *testing.T) context.Context {
	// A bound on a hung test, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestJobRoundTripThroughAWorker(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w1", Dir: t.TempDir(), Concurrency: 2, Runner: committer(t)})

	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	const branch = "drover/r1/a"
	var progress atomic.Int32
	// Two iterations: the first makes the branch, the second extends the
	// branch the worker kept.
	for it := 1; it <= 2; it++ {
		res, err := d.Do(testCtx(t), Job{ID: "r1-a-" + string(rune('0'+it)), RunID: "r1", Task: "a", Iteration: it, Base: base, Branch: branch},
			func(p Progress) { progress.Add(1) })
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if res.Worker != "w1" || string(res.Out) != `{"committed":true}` || res.Err != "" {
			t.Fatalf("iteration %d: result %+v", it, res)
		}
		if head := mustGit(t, repo, "rev-parse", branch); head != res.Head {
			t.Fatalf("iteration %d: branch at %s, result says %s", it, head, res.Head)
		}
	}
	if files := mustGit(t, repo, "ls-tree", "--name-only", branch); files != "README\na-1\na-2" {
		t.Fatalf("branch files = %q", files)
	}
	if n := mustGit(t, repo, "rev-list", "--count", base+".."+branch); n != "2" {
		t.Fatalf("%s commits on the branch, want 2", n)
	}
	eventually.True(t, 10*time.Second, "progress relayed", func() bool { return progress.Load() >= 2 })
	// The job and result bundles are gone from the object store once
	// applied; the base's stays, one for every job from it.
	l, err := st.Bundles.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range l {
		names = append(names, o.Name)
	}
	if want := []string{baseObject(base)}; !slices.Equal(names, want) {
		t.Fatalf("bundles left: %v, want %v", names, want)
	}
}

func TestKilledWorkersJobGoesToAnotherCountedOnce(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	const ackWait = 2 * time.Second
	nc, st := connect(t, s, ackWait)

	// Worker a starts the job and dies in the middle of it: its
	// connection goes first, so it can neither ack nor nak.
	anc, ast := connect(t, s, ackWait)
	started := make(chan struct{})
	var aRuns, bRuns atomic.Int32
	stopA := runWorker(t, &Worker{NC: anc, Streams: ast, Identity: id, Name: "a", Dir: t.TempDir(),
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			aRuns.Add(1)
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})})

	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	type done struct {
		res Result
		err error
	}
	out := make(chan done, 1)
	go func() {
		res, err := d.Do(testCtx(t), Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
		out <- done{res, err}
	}()
	<-started
	anc.Close()
	stopA()

	bnc, bst := connect(t, s, ackWait)
	commit := committer(t)
	runWorker(t, &Worker{NC: bnc, Streams: bst, Identity: id, Name: "b", Dir: t.TempDir(),
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			bRuns.Add(1)
			return commit(ctx, repo, job, report)
		})})
	r := <-out
	if r.err != nil || r.res.Worker != "b" {
		t.Fatalf("result %+v, %v; want one from worker b", r.res, r.err)
	}
	if a, b := aRuns.Load(), bRuns.Load(); a != 1 || b != 1 {
		t.Fatalf("runs: a %d, b %d; want 1 each", a, b)
	}
	if n := mustGit(t, repo, "rev-list", "--count", base+"..drover/r1/a"); n != "1" {
		t.Fatalf("%s commits on the branch, want 1", n)
	}
	stream, err := st.JS.Stream(testCtx(t), ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(testCtx(t))
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("results stream: %+v, %v; want 1 result", info.State, err)
	}
	jobs, err := st.JS.Stream(testCtx(t), JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := jobs.Info(testCtx(t)); err != nil || info.State.Msgs != 0 {
		t.Fatalf("jobs stream: %+v, %v; want the job acknowledged", info.State, err)
	}
}

func TestWorkerRefusesAnotherRepositorysJob(t *testing.T) {
	s := startServer(t)
	_, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	var runs atomic.Int32
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(),
		Runner: RunnerFunc(func(context.Context, string, Job, func(json.RawMessage)) (json.RawMessage, error) {
			runs.Add(1)
			return nil, nil
		})})
	// A job on this worker's subject that names another repository.
	other := Identity{Name: "other", Root: id.Root}
	job := Job{ID: "r1-a-1", Repo: other, RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a", Bundle: "job/none"}
	data, _ := json.Marshal(job)
	if _, err := st.JS.Publish(testCtx(t), jobSubject(id, "r1"), data); err != nil {
		t.Fatal(err)
	}
	d := Dispatcher{NC: nc, Streams: st, Identity: id}
	res, err := d.Wait(testCtx(t), job)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refused || !strings.Contains(res.Err, "other@") || runs.Load() != 0 {
		t.Fatalf("result %+v after %d runs; want refused naming the other repository, no run", res, runs.Load())
	}
}

func TestConnectUnreachableNamesTheURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Connect(testCtx(t), Config{URL: "nats://drover:s3cret@" + addr, ConnectTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v; want one naming %s without the password", err, addr)
	}
}

// TestJobWithAResultIsNotRunAgain: a worker that died between sending a
// job's result and acknowledging it leaves the job to be delivered again;
// the next worker sees the result and acknowledges without running it.
func TestJobWithAResultIsNotRunAgain(t *testing.T) {
	s := startServer(t)
	_, base, id := project(t)
	_, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	job := Job{ID: "r1-a-1", Repo: id, RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a", Bundle: "job/none"}
	first, _ := json.Marshal(Result{JobID: job.ID, Worker: "dead"})
	if _, err := st.JS.Publish(testCtx(t), resultSubject(id, job.ID), first, jetstream.WithMsgID(job.ID)); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(job)
	if _, err := st.JS.Publish(testCtx(t), jobSubject(id, "r1"), data, jetstream.WithMsgID(job.ID)); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(),
		Runner: RunnerFunc(func(context.Context, string, Job, func(json.RawMessage)) (json.RawMessage, error) {
			runs.Add(1)
			return nil, nil
		})})
	jobs, err := st.JS.Stream(testCtx(t), JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the job acknowledged", func() bool {
		info, err := jobs.Info(testCtx(t))
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 0 {
		t.Fatalf("the job ran %d times; its result was out", runs.Load())
	}
}

// unsureJS is a JetStream whose look-ups of the results stream fail while
// failing is set, counting them.
type unsureJS struct {
	jetstream.JetStream
	failing atomic.Bool
	asked   atomic.Int32
}

func (u *unsureJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == ResultsStream && u.failing.Load() {
		u.asked.Add(1)
		return nil, jetstream.ErrStreamNotFound
	}
	return u.JetStream.Stream(ctx, name)
}

// TestJobIsNotRunOnAnUnknownResult: a delivered job whose result the
// worker cannot look up is handed back, not run; it runs once the answer
// is known.
func TestJobIsNotRunOnAnUnknownResult(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	js := &unsureJS{JetStream: wst.JS}
	js.failing.Store(true)
	wst.JS = js
	// The results stream looked up through js, not the handle Setup kept.
	wst.results = nil
	var runs atomic.Int32
	commit := committer(t)
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(),
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			runs.Add(1)
			return commit(ctx, repo, job, report)
		})})
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	type done struct {
		res Result
		err error
	}
	out := make(chan done, 1)
	go func() {
		res, err := d.Do(testCtx(t), Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
		out <- done{res, err}
	}()
	eventually.True(t, 20*time.Second, "the job delivered twice (or run)", func() bool { return js.asked.Load() >= 2 || runs.Load() > 0 })
	if n := runs.Load(); n != 0 {
		t.Fatalf("the job ran %d times without knowing whether it had a result", n)
	}
	js.failing.Store(false)
	r := <-out
	if r.err != nil || r.res.Worker != "w" {
		t.Fatalf("result %+v, %v", r.res, r.err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want 1", n)
	}
}

// TestIdentityIgnoresAHooksGitDir: drover run from inside a git hook has
// GIT_DIR set to the hook's repository; the identity is still the one of
// the directory asked for.
func TestIdentityIgnoresAHooksGitDir(t *testing.T) {
	dir, _, want := project(t)
	other, _, _ := project(t)
	mustGit(t, other, "commit", "--quiet", "--amend", "-m", "another root")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	got, err := RepoIdentity(context.Background(), dir, "proj")
	if err != nil || got != want {
		t.Fatalf("RepoIdentity = %v, %v; want %v", got, err, want)
	}
}

// TestPrepareErrorNamesTheJob: a worker that cannot put a job's branch
// where the supervisor has it (its stale work tree is locked) says which
// job failed.
func TestPrepareErrorNamesTheJob(t *testing.T) {
	proj, base, id := project(t)
	w := &Worker{Identity: id, Dir: t.TempDir()}
	if err := w.initRepo(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	repo := w.Repo()
	mustGit(t, repo, "fetch", "--quiet", proj, "main:refs/heads/drover/r1/a")
	mustGit(t, repo, "worktree", "add", "--quiet", filepath.Join(repo, ".wt", "a"), "drover/r1/a")
	mustGit(t, repo, "worktree", "lock", filepath.Join(repo, ".wt", "a"))
	err := w.prepare(testCtx(t), Job{ID: "r1-a-7", Task: "a", Base: base, Branch: "drover/r1/a", Author: Author{Name: "t", Email: "t@t"}}, filepath.Join(t.TempDir(), "job.bundle"))
	if err == nil || !strings.Contains(err.Error(), "r1-a-7") {
		t.Fatalf("prepare: %v; want an error naming job r1-a-7", err)
	}
}

// TestDoFailsOnAnUnknownResult: a supervisor that cannot tell whether a
// job has a result (a cancellation, an earlier run's) does not publish it
// as new: it fails with the look-up's error.
func TestDoFailsOnAnUnknownResult(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	js := &unsureJS{JetStream: st.JS}
	js.failing.Store(true)
	st.JS = js
	st.results = nil
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	// A bound on a hung Do, not a timing assertion.
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	_, err := d.Do(ctx, Job{ID: "r1-a-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
	if err == nil || !strings.Contains(err.Error(), "looking for the result of job r1-a-1") {
		t.Fatalf("Do: %v; want the failed look-up of its result", err)
	}
	if n := jobsLeft(t, st); n != 0 {
		t.Fatalf("%d jobs published on an unknown answer", n)
	}
}
