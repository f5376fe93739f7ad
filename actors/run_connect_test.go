package actors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/run"
)

// A run's executor that takes long to make (NATS that does not answer at
// all, not a refused port) holds up only its own run: while it connects,
// the runs actor still answers, and once the connection fails the start
// or resume that asked for it gets the error.
func TestRunExecutorConnectsOffTheRunsActor(t *testing.T) {
	const graph = "tasks:\n  - {id: one, description: Work., tests: [x]}\n"
	const url = "nats://192.0.2.1:4222"
	opts := api.RunOptions{
		Concurrency: 1, MaxIterations: 1, NoReview: true, Executor: executor.NATS, NATS: url,
		Agent: "true", TestCommand: "true {{packages}}", SuiteCommand: "true",
	}
	for _, c := range []struct {
		name string
		// ask returns the request that needs the executor; db is the store.
		ask func(t *testing.T, db RunStore) any
	}{
		{"start", func(*testing.T, RunStore) any {
			return &StartRun{Request: api.StartRunRequest{File: "one.yaml", Graph: graph, Options: opts}}
		}},
		{"resume", func(t *testing.T, db RunStore) any {
			g, err := rungraph.Parse([]byte(graph), "one.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rec := run.New("run-stored", "one.yaml", graph, opts, "main", g, time.Now())
			if err := db.SaveRun(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			return &ResumeRun{ID: rec.ID}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := benchRepo(t)
			db := openRunStore(t, root)
			cfg := config.Defaults()
			connecting, release := make(chan struct{}), make(chan error)
			// Released at the latest when the test ends, so that a failure
			// leaves no goroutine behind.
			released := false
			t.Cleanup(func() {
				if !released {
					close(release)
				}
			})
			env := RunsEnv{Store: db, Root: root, Config: func() config.Config { return cfg },
				Executors: map[string]func(config.Config, api.RunOptions) (executor.Executor, error){
					// Stands in for NATS that does not answer.
					executor.NATS: func(config.Config, api.RunOptions) (executor.Executor, error) {
						close(connecting)
						if err := <-release; err != nil {
							return nil, err
						}
						return nil, errors.New("released without an error")
					},
				}}
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

			released = true
			release <- errors.New("connecting to NATS at " + url + ": i/o timeout")
			res, err = asked.Result()
			if err != nil {
				t.Fatal(err)
			}
			rr, ok := res.(*RunReply)
			want := "executor nats: connecting to NATS at " + url
			if !ok || rr.Err == nil || !strings.Contains(rr.Err.Error(), want) || !errors.Is(rr.Err, ErrBadRequest) {
				t.Fatalf("reply %+v; want a bad request with %q", res, want)
			}
			runsIdle(t, system, pid)
		})
	}
}
