package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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

// benchHook runs `drover hook stop` b.N times as a process and reports the
// median and p99 of the round trip.
func benchHook(b *testing.B, p *proj, env []string, stdin []byte) {
	b.Helper()
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(droverBin, "hook", "stop")
		cmd.Dir, cmd.Env = p.root, env
		cmd.Stdin = bytes.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if i == 0 && !strings.Contains(strings.Join(env, " "), "DROVER_HOOK_DISABLE") && !strings.Contains(out.String(), `"block"`) {
			b.Fatalf("the benchmarked stop did not block: %q", out.String())
		}
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(durs[(len(durs)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkHookStop is the full round trip of `drover hook stop` as a
// process against a warm supervisor: a session with a queue that blocks on
// every stop with its next task (no git check, no review).
func BenchmarkHookStop(b *testing.B) {
	p := newBenchProj(b)
	id := "bench-session"
	p.must("", "do", "--session", id, "benchmark task")
	env := append(p.env, "CLAUDE_PROJECT_DIR="+p.root)
	in, _ := json.Marshal(stopInput(id))
	// Warm: the supervisor is up and the session actor is live.
	p.must(string(in), "hook", "stop")
	benchHook(b, p, env, in)
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
	benchProgram(b, bin)
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
		cmd := exec.Command(bin)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if out.String() != "{}\n" {
			b.Fatalf("%s printed %q", filepath.Base(bin), out.String())
		}
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(durs[(len(durs)*99)/100].Microseconds())/1000, "p99-ms")
}
