package actors

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/store"
)

// endedStore is a RunStore that counts saves and tells when a saved run
// is no longer running.
type endedStore struct {
	RunStore
	saves atomic.Int64
	once  sync.Once
	ended chan api.Run
}

func (s *endedStore) SaveRun(ctx context.Context, run api.Run) error {
	s.saves.Add(1)
	err := s.RunStore.SaveRun(ctx, run)
	if run.State != api.RunRunning {
		s.once.Do(func() { s.ended <- run })
	}
	return err
}

// cpuTimes returns the user and system CPU time of this process and of
// its children that have been waited for.
func cpuTimes(b *testing.B) (self, children time.Duration) {
	b.Helper()
	var ru syscall.Rusage
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatalf("getrusage: %v", err)
		}
		d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if who == syscall.RUSAGE_SELF {
			self = d
		} else {
			children = d
		}
	}
	return self, children
}

// benchRepo makes a git repository on branch main with one commit.
func benchRepo(b testing.TB) string {
	b.Helper()
	root := b.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		// The agents commit and the supervisor merges: both need a name.
		{"config", "user.name", "b"},
		{"config", "user.email", "b@example.com"},
		{"commit", "-q", "--allow-empty", "-m", "initial"},
	} {
		mustGit(b, root, args...)
	}
	return root
}

// BenchmarkRunIteration measures what the supervisor itself spends on one
// iteration of a run task when the agent and the targeted tests take no
// time (both are `true`): routing, the prompt, the work tree check, the
// agent and test processes started and reaped, the git checks of the
// commit, the convergence judgement and the saves to the store (bbolt,
// as the supervisor opens it). One op is one iteration: a single task
// that never commits runs b.N iterations, then fails on its budget.
func BenchmarkRunIteration(b *testing.B) {
	root := benchRepo(b)
	db := openRunStore(b, root)
	st := &endedStore{RunStore: db, ended: make(chan api.Run, 1)}
	cfg := config.Defaults()
	env := RunsEnv{Store: st, Root: root, Config: func() config.Config { return cfg }}
	system, pid := startRunsActor(b, env)
	req := api.StartRunRequest{
		File:  "bench.yaml",
		Graph: "tasks:\n  - {id: spin, description: Never commit., tests: [x]}\n",
		Options: api.RunOptions{
			Concurrency: 1, MaxIterations: b.N, NoReview: true,
			Agent: "true", TestCommand: "true {{packages}}", SuiteCommand: "true",
		},
	}

	b.ReportAllocs()
	self0, children0 := cpuTimes(b)
	b.ResetTimer()
	res, err := system.Root.RequestFuture(pid, &StartRun{Request: req}, time.Minute).Result()
	if err != nil {
		b.Fatal(err)
	}
	if rr := res.(*RunReply); rr.Err != nil {
		b.Fatal(rr.Err)
	}
	run := <-st.ended
	b.StopTimer()
	self1, children1 := cpuTimes(b)

	if len(run.Tasks) != 1 || run.Tasks[0].Runs != b.N || run.State != api.RunFailed {
		b.Fatalf("run %s after %d of %d iterations; want it failed after all of them: %s", run.State, run.Tasks[0].Runs, b.N, run.Report)
	}
	b.ReportMetric(float64(st.saves.Load())/float64(b.N), "saves/op")
	// Most of the wall time is spent waiting for the processes; this is
	// the CPU the supervisor itself used, and the CPU of what it ran.
	b.ReportMetric(float64((self1-self0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64((children1-children0).Nanoseconds())/float64(b.N), "child-cpu-ns/op")
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		b.Error(err)
	}
}

// waveAgent is the agent of BenchmarkRunWave: it takes a fixed time, as if
// it worked, then commits a file of its task (one per run, so that no two
// runs clash when merged).
const waveAgent = `#!/bin/sh
sleep %g
echo "$DROVER_RUN_ID" > "out-$DROVER_TASK_ID"
git add "out-$DROVER_TASK_ID" && git commit -qm "$DROVER_TASK_ID" || exit 1
echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0,"result":"ok"}'
`

// runsIdle waits until the runs actor works no run: a run's actor stops a
// little after it saved the run's end.
func runsIdle(b testing.TB, system *actor.ActorSystem, pid *actor.PID) {
	b.Helper()
	for {
		res, err := system.Root.RequestFuture(pid, &LiveRuns{}, time.Minute).Result()
		if err != nil {
			b.Fatal(err)
		}
		if len(res.(*LiveRunsReply).IDs) == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRunWave measures what working a wave's tasks side by side buys,
// through the run actor as drover runs it: a graph of one wave of N tasks
// at concurrency C, each task one agent process that takes agentTime and
// commits, then the merge of the wave and its (empty) suite; against the
// same N agent processes run one after the other without drover. One op
// is one run (ns/op its wall time, serial-ns/op the baseline's).
// wave/serial is the ratio of the wall times: about
// ceil(N/C)/N (reported as ideal) when drover's own work is small beside
// the agents'.
func BenchmarkRunWave(b *testing.B) {
	const agentTime = 100 * time.Millisecond
	for _, c := range []struct{ n, conc int }{{4, 1}, {4, 2}, {4, 4}, {8, 2}, {8, 4}} {
		b.Run(fmt.Sprintf("N=%d/C=%d", c.n, c.conc), func(b *testing.B) {
			root := benchRepo(b)
			agent := filepath.Join(b.TempDir(), "agent.sh")
			if err := os.WriteFile(agent, []byte(fmt.Sprintf(waveAgent, agentTime.Seconds())), 0o755); err != nil {
				b.Fatal(err)
			}
			db := openRunStore(b, root)
			cfg := config.Defaults()
			ends := newRunEnds()
			env := RunsEnv{Store: db, Root: root, Config: func() config.Config { return cfg }, Events: ends.events}
			system, pid := startRunsActor(b, env)
			var graph strings.Builder
			graph.WriteString("tasks:\n")
			for i := range c.n {
				fmt.Fprintf(&graph, "  - {id: t%d, description: Work., tests: [x]}\n", i)
			}
			req := api.StartRunRequest{File: "wave.yaml", Graph: graph.String(), Options: api.RunOptions{
				Concurrency: c.conc, MaxIterations: 1, NoReview: true,
				Agent: "'" + agent + "'", TestCommand: "true {{packages}}", SuiteCommand: "true",
			}}
			// The serial baseline: the same agents, in a repository of
			// their own, one after the other.
			scratch := benchRepo(b)
			serialRun := func(op int) {
				for i := range c.n {
					cmd := exec.Command(agent, "prompt")
					cmd.Dir = scratch
					cmd.Env = append(os.Environ(), fmt.Sprintf("DROVER_RUN_ID=serial-%d", op), fmt.Sprintf("DROVER_TASK_ID=t%d", i))
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("agent: %v\n%s", err, out)
					}
				}
			}

			var wave, serial time.Duration
			b.ResetTimer()
			for op := range b.N {
				start := time.Now()
				run := runToEnd(b, system, pid, db, ends, req)
				wave += time.Since(start)
				b.StopTimer()
				if run.State != api.RunDone {
					b.Fatalf("run %s: %s", run.State, run.Report)
				}
				runsIdle(b, system, pid)
				start = time.Now()
				serialRun(op)
				serial += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(serial.Nanoseconds())/float64(b.N), "serial-ns/op")
			b.ReportMetric(float64(wave)/float64(serial), "wave/serial")
			b.ReportMetric(float64((c.n+c.conc-1)/c.conc)/float64(c.n), "ideal")
		})
	}
}

// runEnds wakes runToEnd when a run's state changes (a RunsEnv.Events
// sink), so that the benchmarks do not poll the store: a poll every
// millisecond, decoding the whole run each time, took a third of the
// CPU of BenchmarkRunNATS, beside the runs it measured.
type runEnds chan struct{}

func newRunEnds() runEnds { return make(runEnds, 1) }

func (c runEnds) events(_ context.Context, evs ...events.Draft) {
	for _, e := range evs {
		if e.Kind == api.EventRunState {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// runToEnd starts a run of req with the runs actor pid and returns it
// once it ended, as db has it: the run's saves are what tell it ended,
// looked at when ends says its state changed (and every 100 ms, in case
// an event was missed).
func runToEnd(b *testing.B, system *actor.ActorSystem, pid *actor.PID, db *store.Store, ends runEnds, req api.StartRunRequest) api.Run {
	b.Helper()
	res, err := system.Root.RequestFuture(pid, &StartRun{Request: req}, time.Minute).Result()
	if err != nil {
		b.Fatal(err)
	}
	rr := res.(*RunReply)
	if rr.Err != nil {
		b.Fatal(rr.Err)
	}
	for {
		run, found, err := db.LoadRun(context.Background(), rr.Run.ID)
		if err != nil || !found {
			b.Fatalf("loading run %s: %v (found %v)", rr.Run.ID, err, found)
		}
		if run.State != api.RunRunning {
			return run
		}
		select {
		case <-ends:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// openRunStore opens root's store as the supervisor does (a short batch
// delay); it is closed when tb ends, after the actor system.
func openRunStore(tb testing.TB, root string) *store.Store {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(root, ".drover", "state", "drover.db"), store.Options{MaxBatchDelay: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// startRunsActor spawns the runs actor over env in an actor system of its
// own, shut down when tb ends.
func startRunsActor(tb testing.TB, env RunsEnv) (*actor.ActorSystem, *actor.PID) {
	tb.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	tb.Cleanup(system.Shutdown)
	pid, err := system.Root.SpawnNamed(NewRunsProps(env), RunsActorName)
	if err != nil {
		tb.Fatal(err)
	}
	return system, pid
}
