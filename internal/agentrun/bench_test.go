//go:build unix

package agentrun

import (
	"context"
	"testing"
	"time"
)

// BenchmarkWave measures what running a wave's agents side by side buys:
// a wave of waveTasks fake agents that each take agentTime, run through a
// Pool of poolSize, against the same agents one after the other. It
// reports the wall time per wave of each and their ratio.
func BenchmarkWave(b *testing.B) {
	const (
		waveTasks = 4
		poolSize  = 2
		agentTime = 50 * time.Millisecond
	)
	spec := fakeSpec(b, "sleep", fakeSleep+"="+agentTime.String())
	ctx := context.Background()
	runOne := func() {
		res, err := Run(ctx, spec, nil)
		if err != nil || res.Err != nil {
			// Errorf, not Fatalf: this runs on the pool's goroutines too.
			b.Errorf("Run = %+v, %v", res, err)
		}
	}
	var parallel, serial time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		p := NewPool(poolSize)
		for range waveTasks {
			if err := p.Go(ctx, func(context.Context) { runOne() }); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		parallel += time.Since(start)

		start = time.Now()
		for range waveTasks {
			runOne()
		}
		serial += time.Since(start)
	}
	b.ReportMetric(float64(parallel.Nanoseconds())/float64(b.N), "ns-pool/wave")
	b.ReportMetric(float64(serial.Nanoseconds())/float64(b.N), "ns-serial/wave")
	b.ReportMetric(float64(serial)/float64(parallel), "serial/pool")
}
