package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/store"
)

func corruptRecord(t *testing.T, db, id string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutRaw(ctx, id, []byte(`{"id": "`+id+`", "queue": {"state": 7`)); err != nil {
		t.Fatal(err)
	}
}

// hookStop runs `drover hook stop` once as a process and returns its run
// time and what it printed.
func hookStop(b *testing.B, p *proj, env []string, stdin []byte) (time.Duration, string) {
	b.Helper()
	cmd := exec.Command(droverBin, "hook", "stop")
	cmd.Dir, cmd.Env = p.root, env
	cmd.Stdin = bytes.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), out.String()
}

// benchHook runs `drover hook stop` b.N times as a process and reports the
// median and p99 of the round trip.
func benchHook(b *testing.B, p *proj, env []string, stdin []byte) {
	b.Helper()
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, _ := hookStop(b, p, env, stdin)
		durs = append(durs, d)
	}
	b.StopTimer()
	b.ReportMetric(ms(quantile(durs, 0.5)), "median-ms")
	b.ReportMetric(ms(quantile(durs, 0.99)), "p99-ms")
}

// quantile returns the q-quantile of durs (sorted in place).
func quantile(durs []time.Duration, q float64) time.Duration {
	if len(durs) == 0 {
		return 0
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	return durs[int(float64(len(durs)-1)*q+0.5)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkHookStop is the full round trip of `drover hook stop` as a
// process against a warm supervisor: a session with a queue that blocks on
// every stop with its next task (no git check, no review). Each iteration
// also starts an empty Go program and runs `git status --porcelain` in the
// same repository, interleaved so that the machine's load weighs on all
// three alike, and the benchmark reports the ratio of the medians:
// round trip / (empty start + git status), what a hook costs against the
// least a hook that looks at the work tree could cost. It also reports the
// supervisor's median decision latency, the part of the round trip that is
// not the client's.
func BenchmarkHookStop(b *testing.B) {
	p := newBenchProj(b)
	floor := buildFloor(b)
	id := "bench-session"
	p.must("", "do", "--session", id, "benchmark task")
	env := append(p.env, "CLAUDE_PROJECT_DIR="+p.root)
	in, _ := json.Marshal(stopInput(id))
	// Warm: the supervisor is up and the session actor is live.
	p.must(string(in), "hook", "stop")
	logFile := filepath.Join(p.root, ".drover", "logs", "drover.log")
	before := fileSize(b, logFile)
	hooks := make([]time.Duration, 0, b.N)
	floors := make([]time.Duration, 0, b.N)
	gits := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, out := hookStop(b, p, env, in)
		if i == 0 && !strings.Contains(out, `"block"`) {
			b.Fatalf("the benchmarked stop did not block: %q", out)
		}
		hooks = append(hooks, d)
		floors = append(floors, runProgram(b, exec.Command(floor), "{}\n"))
		git := exec.Command("git", "status", "--porcelain")
		git.Dir, git.Env = p.root, p.env
		gits = append(gits, runProgram(b, git, ""))
	}
	b.StopTimer()
	hook, empty, status := quantile(hooks, 0.5), quantile(floors, 0.5), quantile(gits, 0.5)
	b.ReportMetric(ms(hook), "median-ms")
	b.ReportMetric(ms(quantile(hooks, 0.99)), "p99-ms")
	b.ReportMetric(ms(empty), "empty-ms")
	b.ReportMetric(ms(status), "git-ms")
	b.ReportMetric(float64(hook)/float64(empty+status), "ratio")
	// The supervisor's part of the round trip, from its log: the rest is
	// the client's start-up and work, and the socket.
	b.ReportMetric(ms(quantile(decisionLatencies(b, logFile, before), 0.5)), "decision-median-ms")
}

// BenchmarkHookStopConcurrent is many agents at once: 16 hook clients stop
// over and over, spread over 40 sessions with a queue each, against one
// warm supervisor. It reports the stops per second and the supervisor's
// median decision latency, read from its log ("hook decision" lines), which
// rises when the clients' own start-up takes the cores from it.
func BenchmarkHookStopConcurrent(b *testing.B) {
	const clients, sessions = 16, 40
	p := newBenchProj(b)
	env := append(p.env, "CLAUDE_PROJECT_DIR="+p.root)
	inputs := make([][]byte, sessions)
	for i := range inputs {
		id := fmt.Sprintf("bench-%02d", i)
		p.must("", "do", "--session", id, "benchmark task")
		inputs[i], _ = json.Marshal(stopInput(id))
		p.must(string(inputs[i]), "hook", "stop")
	}
	logFile := filepath.Join(p.root, ".drover", "logs", "drover.log")
	before := fileSize(b, logFile)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1) - 1
				if n >= int64(b.N) {
					return
				}
				in := inputs[n%sessions]
				cmd := exec.Command(droverBin, "hook", "stop")
				cmd.Dir, cmd.Env = p.root, env
				cmd.Stdin = bytes.NewReader(in)
				out, err := cmd.Output()
				if err != nil || !strings.Contains(string(out), `"block"`) {
					b.Errorf("stop %d: %v, printed %q", n, err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	lat := decisionLatencies(b, logFile, before)
	if len(lat) < b.N {
		b.Fatalf("the log holds %d stop decisions, want %d", len(lat), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "stops/s")
	b.ReportMetric(ms(quantile(lat, 0.5)), "decision-median-ms")
}

// BenchmarkHookStart is the cost of starting the binary alone: the same
// hook process with hooks disabled, which returns before any I/O. The
// difference to BenchmarkHookStop is drover's own work per stop.
func BenchmarkHookStart(b *testing.B) {
	p := newBenchProj(b)
	env := append(p.env, "CLAUDE_PROJECT_DIR="+p.root, "DROVER_HOOK_DISABLE=1")
	in, _ := json.Marshal(stopInput("bench-session"))
	benchHook(b, p, env, in)
}

func fileSize(b *testing.B, path string) int64 {
	b.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// decisionLatencies reads the supervisor's log from offset on and returns
// the latency of every stop decision it logged.
func decisionLatencies(b *testing.B, path string, offset int64) []time.Duration {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if offset > int64(len(data)) {
		offset = 0 // rotated: the lines before are in a backup
	}
	var out []time.Duration
	for _, line := range strings.Split(string(data[offset:]), "\n") {
		var rec struct {
			Msg     string  `json:"msg"`
			Event   string  `json:"event"`
			Latency float64 `json:"latency"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "hook decision" || rec.Event != "stop" {
			continue
		}
		out = append(out, time.Duration(rec.Latency*float64(time.Second)))
	}
	return out
}

func newBenchProj(b *testing.B) *proj {
	b.Helper()
	p := newProj(b)
	p.env = append(p.env, "DROVER_QUEUE_MAX_ITERATIONS=1000000000", "DROVER_QUEUE_GIT_COMMIT_CHECK=false")
	return p
}

// BenchmarkProcessFloor is the floor under every hook: starting a Go
// program that links nothing but the runtime and prints "{}". The ratio of
// BenchmarkHookStop to it, within one run, is what drover's binary and work
// add to the cost of being a process at all on this machine.
func BenchmarkProcessFloor(b *testing.B) {
	benchProgram(b, buildFloor(b))
}

// buildFloor builds the empty Go program of BenchmarkProcessFloor.
func buildFloor(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"{}\\n\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module floor\n\ngo 1.26\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the floor program: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkProcessActorFloor starts a program that links only
// protoactor-go's actor package (testdata/actorfloor): the part of
// BenchmarkHookStart that the actor library's dependency tree costs, since
// one binary holds both the supervisor and the hook client.
func BenchmarkProcessActorFloor(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "actorfloor")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./testdata/actorfloor")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the actor floor program: %v\n%s", err, out)
	}
	benchProgram(b, bin)
}

// benchProgram runs bin b.N times and reports the median and p99 of its
// run time; bin must print "{}".
func benchProgram(b *testing.B, bin string) {
	b.Helper()
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		durs = append(durs, runProgram(b, exec.Command(bin), "{}\n"))
	}
	b.StopTimer()
	b.ReportMetric(ms(quantile(durs, 0.5)), "median-ms")
	b.ReportMetric(ms(quantile(durs, 0.99)), "p99-ms")
}

// runProgram runs cmd and returns its run time; unless want is empty, cmd
// must print exactly want.
func runProgram(b *testing.B, cmd *exec.Cmd, want string) time.Duration {
	b.Helper()
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v", filepath.Base(cmd.Path), err)
	}
	d := time.Since(start)
	if want != "" && out.String() != want {
		b.Fatalf("%s printed %q", filepath.Base(cmd.Path), out.String())
	}
	return d
}
