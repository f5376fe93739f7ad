package loop

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	summary "github.com/drover-dev/drover/internal/transcript"
)

func TestUsageCost(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	s := State{Active: true, StartedAt: start}
	u := summary.Usage{Model: "claude-sonnet-4-5", InputTokens: 1_000_000, OutputTokens: 100_000}
	full := convergence.DefaultPrices().Cost(u)
	if full <= 0 {
		t.Fatalf("the default prices give %v for %+v; the test needs a priced usage", full, u)
	}
	cases := []struct {
		name string
		at   time.Time
		want float64
	}{
		{"before the loop started", start.Add(-time.Second), 0},
		{"at the start", start, full},
		{"during the loop", start.Add(time.Hour), full},
		{"without a time", time.Time{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := u
			u.Timestamp = c.at
			if got := UsageCost(s, u); got != c.want {
				t.Errorf("UsageCost() = %v, want %v", got, c.want)
			}
		})
	}
}
