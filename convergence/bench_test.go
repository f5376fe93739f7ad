package convergence

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/transcript"
)

// writeTranscript writes a synthetic transcript of about size bytes: many
// iterations of Bash test runs with failing and passing output, separated
// by Stop-hook feedback, the shape a long loop leaves behind.
func writeTranscript(tb testing.TB, path string, size int64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	out := strings.Repeat("=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:42: got 1, want 2\n", 40) + "FAIL\nFAIL\texample.com/p\t0.012s\n"
	var n int64
	// Stop only at an iteration boundary, so the last iteration is whole.
	for i := 0; n < size || i%12 != 0; i++ {
		if i%12 == 0 {
			c, _ := fmt.Fprintf(w, `{"type":"user","uuid":"f%d","isMeta":true,"message":{"role":"user","content":"Stop hook feedback:\nkeep going"}}`+"\n", i)
			n += int64(c)
		}
		c1, _ := fmt.Fprintf(w, `{"type":"assistant","uuid":"a%d","message":{"id":"m%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"go test ./..."}}]}}`+"\n", i, i, i)
		c2, _ := fmt.Fprintf(w, `{"type":"user","uuid":"u%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","is_error":true,"content":%q}]}}`+"\n", i, i, out)
		n += int64(c1 + c2)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReflect100MB measures what a loop's Stop costs on a 100 MB
// transcript read from the start (the first Stop after a restart that
// lost nothing, or after the file was replaced): streaming it to the last
// iteration, metrics, a reflection.
// peak-heap-MB is the highest live heap seen while it runs (sampled), to
// show the memory stays flat whatever the file's size.
func BenchmarkReflect100MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	const size = 100 << 20
	writeTranscript(b, path, size)
	b.SetBytes(size)

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		it, err := transcript.Summarize(context.Background(), f, transcript.SinceIteration)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		m := MetricsFrom(it)
		if m.TestsFailed == 0 {
			b.Fatalf("metrics missed the failing tests: %+v", m)
		}
		if _, ok := Reflect(it, m, nil, DefaultThresholds()); !ok {
			b.Fatalf("no reflection for an iteration of %d tool calls", it.ToolCalls)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
}

// BenchmarkReflect100MBIncremental measures what a loop's Stop costs on a
// 100 MB transcript when the last Stop's cursor is kept: the file is
// 100 MB with one more iteration's lines appended, and the Stop reads on
// from the cursor (checking it still fits the file), then metrics and a
// reflection. read-KB is what it read; cursor-KB the cursor's stored size.
func BenchmarkReflect100MBIncremental(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	const size = 100 << 20
	writeTranscript(b, path, size)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	p, err := transcript.NewCursor(transcript.SinceIteration).Read(context.Background(), f, nil)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	cur := p.Cursor
	stored, err := json.Marshal(cur)
	if err != nil {
		b.Fatal(err)
	}
	// One more iteration: the same shape as the file's last one.
	whole, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	last := whole[p.Iteration.StartOffset:]
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fh.Write(last); err != nil {
		b.Fatal(err)
	}
	fh.Close()
	whole = nil

	b.ResetTimer()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil || !cur.Resumable(f, fi.Size()) {
			b.Fatalf("the cursor does not fit the grown file: %v", err)
		}
		if _, err := f.Seek(cur.Offset(), io.SeekStart); err != nil {
			b.Fatal(err)
		}
		p, err := cur.Read(context.Background(), f, func(transcript.Usage) {})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		mustReflect(b, p.Iteration)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(last))/(1<<10), "read-KB")
	b.ReportMetric(float64(len(stored))/(1<<10), "cursor-KB")
}

// mustReflect fails b unless the iteration's metrics count its failing
// tests and it draws a reflection: what both Stop benchmarks do per Stop.
func mustReflect(b *testing.B, it transcript.Iteration) {
	b.Helper()
	m := MetricsFrom(it)
	if m.TestsFailed == 0 {
		b.Fatalf("metrics missed the failing tests: %+v", m)
	}
	if _, ok := Reflect(it, m, nil, DefaultThresholds()); !ok {
		b.Fatalf("no reflection for an iteration of %d tool calls", it.ToolCalls)
	}
}

// BenchmarkReflectOneIteration is the yardstick for
// BenchmarkReflect100MBIncremental: a Stop whose transcript holds nothing
// but the one iteration's lines that the incremental Stop reads.
func BenchmarkReflectOneIteration(b *testing.B) {
	dir := b.TempDir()
	big := filepath.Join(dir, "big.jsonl")
	writeTranscript(b, big, 1<<20)
	whole, err := os.ReadFile(big)
	if err != nil {
		b.Fatal(err)
	}
	it, err := transcript.Summarize(context.Background(), bytes.NewReader(whole), transcript.SinceIteration)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(path, whole[it.StartOffset:], 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		p, err := transcript.NewCursor(transcript.SinceIteration).Read(context.Background(), f, func(transcript.Usage) {})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		mustReflect(b, p.Iteration)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(whole)-int(it.StartOffset))/(1<<10), "read-KB")
}
