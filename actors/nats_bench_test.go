package actors

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/natsexec"
	"github.com/drover-dev/drover/test/natstest"
)

// natsAgent is the agent of BenchmarkRunNATS: 200 ms of "work", then a
// commit of a file of its task whose text is new on every run.
const natsAgent = `#!/bin/sh
sleep 0.2
echo "$DROVER_RUN_ID $$" > "out-$DROVER_TASK_ID"
git add "out-$DROVER_TASK_ID" && git commit -qm "$DROVER_TASK_ID" || exit 1
echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0,"result":"ok"}'
`

// BenchmarkRunNATS measures the nats executor against the local one, in
// the same run of the benchmark: N=16 tasks of one 200 ms agent each at
// concurrency 4, first with the local executor, then with the nats
// executor on two workers of concurrency 2 (in this process, on an
// embedded NATS server), in a repository of 1 MB and of 50 MB of
// incompressible data (packed). One op is one local and one nats run; ns/op is
// their sum, local-ns/op and nats-ns/op each one's wall time, nats/local
// their ratio and overhead-ns/iter what the nats executor added per
// iteration: (nats - local) / N. BenchmarkJobTransport (internal/natsexec)
// splits that overhead into its steps.
func BenchmarkRunNATS(b *testing.B) {
	const n, conc = 16, 4
	for _, size := range []struct {
		name  string
		bytes int64
	}{{"1MB", 1 << 20}, {"50MB", 50 << 20}} {
		b.Run("repo="+size.name, func(b *testing.B) {
			// The worker repositories have no git identity of their
			// own: the agent's commits take it from here.
			for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
				b.Setenv(k, "b")
			}
			for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
				b.Setenv(k, "b@example.com")
			}
			root := benchRepo(b)
			blob := filepath.Join(root, "blob.bin")
			writeRandom(b, blob, size.bytes)
			mustGit(b, root, "add", "blob.bin")
			mustGit(b, root, "commit", "-qm", "blob")
			// Packed, as a cloned repository's history is.
			mustGit(b, root, "repack", "-adq")
			agent := filepath.Join(b.TempDir(), "agent.sh")
			if err := os.WriteFile(agent, []byte(natsAgent), 0o755); err != nil {
				b.Fatal(err)
			}
			url := natstest.URL(b)
			startBenchWorkers(b, root, url, 2, 2)
			conns := natsexec.NewConnections(root)
			b.Cleanup(conns.Close)

			db := openRunStore(b, root)
			cfg := config.Defaults()
			ends := newRunEnds()
			env := RunsEnv{Store: db, Root: root, Config: func() config.Config { return cfg }, Events: ends.events,
				Executors: map[string]func(config.Config, api.RunOptions) (executor.Executor, error){
					executor.NATS: conns.Executor,
				}}
			system, pid := startRunsActor(b, env)
			var graph strings.Builder
			graph.WriteString("tasks:\n")
			for i := range n {
				fmt.Fprintf(&graph, "  - {id: t%d, description: Work., tests: [x]}\n", i)
			}
			run := func(exec string) time.Duration {
				req := api.StartRunRequest{File: "nats.yaml", Graph: graph.String(), Options: api.RunOptions{
					Concurrency: conc, MaxIterations: 1, NoReview: true, Executor: exec, NATS: url,
					Agent: "'" + agent + "'", TestCommand: "true {{packages}}", SuiteCommand: "true",
				}}
				start := time.Now()
				r := runToEnd(b, system, pid, db, ends, req)
				took := time.Since(start)
				if r.State != api.RunDone {
					b.Fatalf("%s run %s: %s", exec, r.State, r.Report)
				}
				runsIdle(b, system, pid)
				return took
			}

			var local, nats time.Duration
			b.ResetTimer()
			for range b.N {
				local += run(executor.Local)
				nats += run(executor.NATS)
			}
			b.ReportMetric(float64(local.Nanoseconds())/float64(b.N), "local-ns/op")
			b.ReportMetric(float64(nats.Nanoseconds())/float64(b.N), "nats-ns/op")
			b.ReportMetric(float64(nats)/float64(local), "nats/local")
			b.ReportMetric(float64((nats-local).Nanoseconds())/float64(b.N*n), "overhead-ns/iter")
		})
	}
}

// writeRandom writes size bytes that no compression shrinks to file.
func writeRandom(tb testing.TB, file string, size int64) {
	tb.Helper()
	f, err := os.Create(file)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// startBenchWorkers runs count workers of concurrency conc for the
// repository at root, as drover worker does, until tb ends.
func startBenchWorkers(tb testing.TB, root, url string, count, conc int) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	id, err := natsexec.RepoIdentity(ctx, root, natsexec.RepoName(root))
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []*nats.Conn
	// The workers stop before their connections close.
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, nc := range conns {
			nc.Close()
		}
	})
	for i := range count {
		nc, err := natsexec.Connect(ctx, natsexec.Config{URL: url})
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, nc)
		js, err := jetstream.New(nc)
		if err != nil {
			tb.Fatal(err)
		}
		st, err := natsexec.Setup(ctx, js, 0)
		if err != nil {
			tb.Fatal(err)
		}
		w := &natsexec.Worker{NC: nc, Streams: st, Identity: id, Name: fmt.Sprintf("w%d", i+1), Dir: tb.TempDir(), Concurrency: conc}
		w.Runner = natsexec.ExecutorRunner(NewLocalExecutor(w.Repo(), &sync.Mutex{}, nil, nil, ""), "")
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				tb.Error(err)
			}
		})
	}
}
