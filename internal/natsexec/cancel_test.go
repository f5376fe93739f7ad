package natsexec

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/drover-dev/drover/internal/eventually"
)

// jobsLeft is what the jobs stream still holds (a job not acknowledged).
func jobsLeft(t *testing.T, st Streams) uint64 {
	t.Helper()
	s, err := st.JS.Stream(testCtx(t), JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// A job whose supervisor gives up on it (its run cancelled: Do's context
// ends) ends on the worker running it, and is acknowledged there rather
// than handed to another worker; asked for again, the same job runs anew.
func TestCancelledJobEndsOnItsWorker(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	started := make(chan struct{}, 2)
	var runs, ended atomic.Int32
	commit := committer(t)
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(),
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			if runs.Add(1) > 1 {
				return commit(ctx, repo, job, report)
			}
			started <- struct{}{}
			<-ctx.Done()
			ended.Add(1)
			return nil, ctx.Err()
		})})

	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	job := Job{ID: "r1-a-1-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}
	ctx, cancel := context.WithCancel(testCtx(t))
	out := make(chan error, 1)
	go func() {
		_, err := d.Do(ctx, job, nil)
		out <- err
	}()
	<-started
	cancel()
	if err := <-out; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do of a cancelled job: %v", err)
	}
	eventually.True(t, 10*time.Second, "the worker ends the cancelled job", func() bool { return ended.Load() == 1 })
	eventually.True(t, 10*time.Second, "the cancelled job acknowledged", func() bool { return jobsLeft(t, st) == 0 })

	// The run resumed: the same iteration is a job again, not the
	// cancelled one's result.
	res, err := d.Do(testCtx(t), job, nil)
	if err != nil || res.Cancelled || res.Err != "" || res.Head == "" {
		t.Fatalf("the job asked for again: %+v, %v", res, err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the runner ran %d times, want 2", n)
	}
}

// A job delivered to the worker that runs it (here: published twice)
// runs once; the second delivery is acknowledged once the first has its
// result.
func TestJobDeliveredTwiceToItsWorkerRunsOnce(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	jobs := make(chan Job, 2)
	release := make(chan struct{})
	var runs atomic.Int32
	commit := committer(t)
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(), Concurrency: 2,
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			runs.Add(1)
			jobs <- job
			<-release
			return commit(ctx, repo, job, report)
		})})

	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	out := make(chan error, 1)
	go func() {
		_, err := d.Do(testCtx(t), Job{ID: "r1-a-1-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
		out <- err
	}()
	job := <-jobs
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	// No message id: the stream takes it as a second message.
	if _, err := st.JS.Publish(testCtx(t), jobSubject(id, job.RunID), data); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the second delivery taken", func() bool { return jobsLeft(t, st) == 2 && pendingOf(t, st, id) == 0 })
	close(release)
	if err := <-out; err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "both deliveries acknowledged", func() bool { return jobsLeft(t, st) == 0 })
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want 1", n)
	}
}

// pendingOf is how many jobs of repo wait for a worker.
func pendingOf(t *testing.T, st Streams, repo Identity) uint64 {
	t.Helper()
	c, err := st.workers(testCtx(t), repo)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.NumPending
}

// A supervisor that dies while its job is at work, and one that adopts
// the job after the jobs stream's duplicate window: the job is not
// published again (another worker would run it), its result is the
// adopter's, the job ran once.
func TestJobAdoptedAfterTheDuplicateWindowRunsOnce(t *testing.T) {
	s := startServer(t)
	repo, base, id := project(t)
	_, st := connect(t, s, 0)
	// A short duplicate window, set before any consumer is (the server
	// races a stream's update with a consumer's creation); the other
	// connections attach to the streams without setting them up again.
	js, err := st.JS.Stream(testCtx(t), JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := js.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := st.JS.UpdateStream(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	var runs atomic.Int32
	commit := committer(t)
	runner := RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return commit(ctx, repo, job, report)
	})
	for _, name := range []string{"w1", "w2"} {
		wnc, wst := attach(t, s)
		runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: name, Dir: t.TempDir(), Runner: runner})
	}
	job := Job{ID: "r1-a-1-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}

	// The first supervisor: its connection goes with it.
	nc1, st1 := attach(t, s)
	ctx1, end1 := context.WithCancel(testCtx(t))
	gone1 := make(chan struct{})
	go func() {
		defer close(gone1)
		_, _ = Dispatcher{NC: nc1, Streams: st1, Repo: repo, Identity: id}.Do(ctx1, job, nil)
	}()
	<-started
	nc1.Close() // it can tell no one: its cancellation is lost
	end1()
	<-gone1
	time.Sleep(time.Second) // past the duplicate window
	nc2, st2 := attach(t, s)
	out := make(chan error, 1)
	var res Result
	go func() {
		var err error
		res, err = Dispatcher{NC: nc2, Streams: st2, Repo: repo, Identity: id}.Do(testCtx(t), job, nil)
		out <- err
	}()
	// Time for a job published again to reach the idle worker (only the
	// failure's detection depends on it, not the test's success).
	time.Sleep(300 * time.Millisecond)
	if n := jobsLeft(t, st); n != 1 {
		t.Errorf("the jobs stream holds %d jobs, want the adopted one", n)
	}
	close(release)
	if err := <-out; err != nil || res.Head == "" {
		t.Fatalf("the adopted job: %+v, %v", res, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want 1", n)
	}
}

// attach connects to s, whose streams are set up, without setting them up.
func attach(t *testing.T, s *server.Server) (*nats.Conn, Streams) {
	t.Helper()
	nc, js := dial(t, s)
	obs, err := js.ObjectStore(testCtx(t), BundleBucket)
	if err != nil {
		t.Fatal(err)
	}
	return nc, Streams{JS: js, Bundles: obs, AckWait: DefaultAckWait}
}
