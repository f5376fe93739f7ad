package natsexec

import (
	"context"
	"encoding/json"
	"net"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover/test/natstest"
)

// NATS lost while a job runs and back on the same port and store after
// it ended: the job's result reaches its supervisor, applied once, the
// job run once.
func TestJobSurvivesNATSRestart(t *testing.T) {
	store := t.TempDir()
	s := natstest.Start(t, -1, store)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	started, finished := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	var runs atomic.Int32
	commit := committer(t)
	runWorker(t, &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: t.TempDir(),
		Runner: RunnerFunc(func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
			runs.Add(1)
			close(started)
			<-release
			defer close(finished)
			return commit(ctx, repo, job, report)
		})})
	d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}
	type done struct {
		res Result
		err error
	}
	out := make(chan done, 1)
	go func() {
		res, err := d.Do(testCtx(t), Job{ID: "r1-a-1-1", RunID: "r1", Task: "a", Iteration: 1, Base: base, Branch: "drover/r1/a"}, nil)
		out <- done{res, err}
	}()
	<-started
	// NATS goes while the job runs, and is away when it ends.
	port := s.Addr().(*net.TCPAddr).Port
	s.Shutdown()
	s.WaitForShutdown()
	close(release)
	<-finished
	natstest.Start(t, port, store)
	r := <-out
	if r.err != nil || r.res.Head == "" || r.res.Worker != "w" {
		t.Fatalf("the job across the restart: %+v, %v", r.res, r.err)
	}
	if head := mustGit(t, repo, "rev-parse", "drover/r1/a"); head != r.res.Head {
		t.Fatalf("branch at %s, result says %s", head, r.res.Head)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want 1", n)
	}
}
