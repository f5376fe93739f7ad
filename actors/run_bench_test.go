package actors

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
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
func benchRepo(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "initial"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
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
	db, err := store.Open(context.Background(), filepath.Join(root, ".drover", "state", "drover.db"), store.Options{MaxBatchDelay: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := &endedStore{RunStore: db, ended: make(chan api.Run, 1)}
	cfg := config.Defaults()
	env := RunsEnv{Store: st, Root: root, Config: func() config.Config { return cfg }}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer system.Shutdown()
	pid, err := system.Root.SpawnNamed(NewRunsProps(env), RunsActorName)
	if err != nil {
		b.Fatal(err)
	}
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
