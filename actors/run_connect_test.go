package actors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/run"
)

const connectGraph = "tasks:\n  - {id: one, description: Work., tests: [x]}\n"
const connectURL = "nats://192.0.2.1:4222"

var connectOpts = api.RunOptions{
	Concurrency: 1, MaxIterations: 1, NoReview: true, Executor: executor.NATS, NATS: connectURL,
	Agent: "true", TestCommand: "true {{packages}}", SuiteCommand: "true",
}

// connectCases are the requests that make a run's executor: ask returns
// one, db being the store.
var connectCases = []struct {
	name string
	ask  func(t *testing.T, db RunStore) any
}{
	{"start", func(*testing.T, RunStore) any {
		return &StartRun{Request: api.StartRunRequest{File: "one.yaml", Graph: connectGraph, Options: connectOpts}}
	}},
	{"resume", func(t *testing.T, db RunStore) any {
		g, err := rungraph.Parse([]byte(connectGraph), "one.yaml")
		if err != nil {
			t.Fatal(err)
		}
		rec := run.New("run-stored", "one.yaml", connectGraph, connectOpts, "main", g, time.Now())
		if err := db.SaveRun(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		return &ResumeRun{ID: rec.ID}
	}},
}

// connectingEnv is the env of a runs actor whose NATS executor stands in
// for NATS that does not answer: its maker closes connecting, then waits
// for the error sent on release.
func connectingEnv(t *testing.T, db RunStore, root string) (env RunsEnv, connecting <-chan struct{}, release chan<- error) {
	cfg := config.Defaults()
	conn, rel := make(chan struct{}), make(chan error, 1)
	// Released at the latest when the test ends, so that a failure leaves
	// no goroutine behind.
	t.Cleanup(func() {
		select {
		case rel <- errors.New("the test ended"):
		default:
		}
	})
	env = RunsEnv{Store: db, Root: root, Config: func() config.Config { return cfg },
		Executors: map[string]func(config.Config, api.RunOptions) (executor.Executor, error){
			executor.NATS: func(config.Config, api.RunOptions) (executor.Executor, error) {
				close(conn)
				if err := <-rel; err != nil {
					return nil, err
				}
				return nil, errors.New("released without an error")
			},
		}}
	return env, conn, rel
}

// wantConnectError fails t unless res, the answer to the request that
// made the executor, is the bad request of a connection that failed.
func wantConnectError(t *testing.T, asked *actor.Future) {
	t.Helper()
	res, err := asked.Result()
	if err != nil {
		t.Fatal(err)
	}
	rr, ok := res.(*RunReply)
	want := "executor nats: connecting to NATS at " + connectURL
	if !ok || rr.Err == nil || !strings.Contains(rr.Err.Error(), want) || !errors.Is(rr.Err, ErrBadRequest) {
		t.Fatalf("reply %+v; want a bad request with %q", res, want)
	}
}

// A run's executor that takes long to make (NATS that does not answer at
// all, not a refused port) holds up only its own run: while it connects,
// the runs actor still answers, and once the connection fails the start
// or resume that asked for it gets the error.
func TestRunExecutorConnectsOffTheRunsActor(t *testing.T) {
	for _, c := range connectCases {
		t.Run(c.name, func(t *testing.T) {
			root := benchRepo(t)
			db := openRunStore(t, root)
			env, connecting, release := connectingEnv(t, db, root)
			system, pid := startRunsActor(t, env)
			asked := system.Root.RequestFuture(pid, c.ask(t, db), time.Minute)
			<-connecting

			// The factory is not released before the runs actor answers:
			// a runs actor that waits for the connection cannot answer,
			// and the request times out.
			res, err := system.Root.RequestFuture(pid, &LiveRuns{}, 10*time.Second).Result()
			if err != nil {
				t.Fatalf("the runs actor did not answer while the executor connects: %v", err)
			}
			if _, ok := res.(*LiveRunsReply); !ok {
				t.Fatalf("LiveRuns answered %T", res)
			}

			release <- errors.New("connecting to NATS at " + connectURL + ": i/o timeout")
			wantConnectError(t, asked)
			runsIdle(t, system, pid)
		})
	}
}

// A cancel of a run whose executor still connects waits in the run's
// actor; when the connection fails and the run does not begin, the cancel
// is answered as one of a run that is not live, not left to time out.
func TestRunCancelWhileExecutorConnects(t *testing.T) {
	for _, c := range connectCases {
		t.Run(c.name, func(t *testing.T) {
			root := benchRepo(t)
			db := openRunStore(t, root)
			env, connecting, release := connectingEnv(t, db, root)
			system, pid := startRunsActor(t, env)
			asked := system.Root.RequestFuture(pid, c.ask(t, db), time.Minute)
			<-connecting

			res, err := system.Root.RequestFuture(pid, &LiveRuns{}, time.Minute).Result()
			if err != nil {
				t.Fatal(err)
			}
			ids := res.(*LiveRunsReply).IDs
			if len(ids) != 1 {
				t.Fatalf("live runs %v while the executor connects; want one", ids)
			}
			var id string
			for k := range ids {
				id = k
			}
			// A guard, not a measure: on a fix that does not work the
			// cancel times out and the test fails rather than hangs.
			cancelled := system.Root.RequestFuture(pid, &CancelRun{ID: id}, 30*time.Second)
			// The runs actor answers in order: once it answered this, it
			// forwarded the cancel to the run's actor, which connects.
			if _, err := system.Root.RequestFuture(pid, &LiveRuns{}, time.Minute).Result(); err != nil {
				t.Fatal(err)
			}

			release <- errors.New("connecting to NATS at " + connectURL + ": i/o timeout")
			wantConnectError(t, asked)
			got, err := cancelled.Result()
			if err != nil {
				t.Fatalf("the cancel of a run whose executor could not be made was not answered: %v", err)
			}
			runsIdle(t, system, pid)

			// The answer is the runs actor's to a cancel of a run not live.
			want, err := system.Root.RequestFuture(pid, &CancelRun{ID: id}, time.Minute).Result()
			if err != nil {
				t.Fatal(err)
			}
			gr, ok := got.(*RunReply)
			wr := want.(*RunReply)
			if !ok || gr.Err == nil || wr.Err == nil || gr.Err.Error() != wr.Err.Error() ||
				!errors.Is(gr.Err, ErrBadRequest) || !errors.Is(gr.Err, run.ErrRefused) {
				t.Fatalf("cancel answered %+v; want %+v", got, want)
			}
		})
	}
}
