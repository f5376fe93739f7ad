package reviewer

import (
	"context"
	"io"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRunOverhead measures what drover adds to one review: spawning
// the reviewer (no shell, own process group, null stdin), capturing its
// output, killing the group and parsing the answer, with a reviewer that
// prints a PASS at once (the fake CLI, this test binary). One op is one
// review; allocs are the supervisor's. "exec-only" is the floor: the same
// process started with os/exec and its output discarded, so the difference
// is Run's own cost.
func BenchmarkRunOverhead(b *testing.B) {
	ctx := context.Background()
	b.Run("exec-only", func(b *testing.B) {
		s := fake()
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(s.Path, "--print", "Review the work.")
			cmd.Env = s.Env
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, s := range []Spec{fake(), fakeAs(CLICodex, "gpt-5-codex"), fakeAs(CLIGemini, "gemini-2.5-pro")} {
		b.Run(s.CLI, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := Run(ctx, s); r.Outcome != Pass {
					b.Fatalf("%s: %s %v", s.CLI, r.Outcome, r.Err)
				}
			}
		})
	}
}

// BenchmarkParse is the parsing share of BenchmarkRunOverhead: each CLI's
// output of a passing review with no findings.
func BenchmarkParse(b *testing.B) {
	for _, tt := range []struct{ cli, stdout string }{
		{CLIClaude, envPass},
		{CLICodex, codexPass},
		{CLIGemini, geminiPass},
	} {
		b.Run(tt.cli, func(b *testing.B) {
			stdout := []byte(tt.stdout)
			b.ReportAllocs()
			for b.Loop() {
				if p, err := Parse(tt.cli, stdout); err != nil || p.Verdict != VerdictPass {
					b.Fatal(p, err)
				}
			}
		})
	}
}

// BenchmarkRunParallel compares a batch of reviewers that each sleep a
// fixed time run one after the other and run in parallel; the speedup
// metric is sequential time over parallel time (ideally the batch size).
func BenchmarkRunParallel(b *testing.B) {
	const n = 4
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = fake("FAKE_SLEEP=200ms")
	}
	var seq, par time.Duration
	for b.Loop() {
		start := time.Now()
		for _, s := range specs {
			if r := Run(context.Background(), s); r.Outcome != Pass {
				b.Fatalf("sequential run: %s %v", r.Outcome, r.Err)
			}
		}
		seq += time.Since(start)

		start = time.Now()
		c, _ := RunParallel(context.Background(), specs, n, All)
		if c.Outcome != Pass {
			b.Fatalf("parallel run: %s %v", c.Outcome, c.Err)
		}
		par += time.Since(start)
	}
	b.ReportMetric(float64(seq)/float64(par), "speedup")
	b.ReportMetric(float64(seq.Milliseconds())/float64(b.N), "seq-ms/op")
	b.ReportMetric(float64(par.Milliseconds())/float64(b.N), "par-ms/op")
}
