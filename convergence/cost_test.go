package convergence

import (
	"math"
	"testing"

	"github.com/drover-dev/drover/internal/transcript"
)

func TestPricesCost(t *testing.T) {
	p := DefaultPrices()
	million := transcript.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadInputTokens: 1e6, CacheCreationInputTokens: 1e6}
	for _, tc := range []struct {
		model string
		want  float64
	}{
		{"claude-opus-4-5-20251101", 5 + 25 + 0.5 + 6.25},
		{"claude-opus-4-1-20250805", 15 + 75 + 1.5 + 18.75},
		{"claude-sonnet-4-5-20250929", 3 + 15 + 0.3 + 3.75},
		{"claude-haiku-4-5-20251001", 1 + 5 + 0.1 + 1.25},
		{"", 3 + 15 + 0.3 + 3.75},
		{"claude-opus-5-5", 4 + 20 + 0.2 + 5},
		{"claude-opus-5", 5 + 25 + 0.5 + 6.25},
		{"claude-sonnet-5-5", 2 + 10 + 0.2 + 2.5},
		{"claude-opus-4-20250514", 15 + 75 + 1.5 + 18.75},
	} {
		u := million
		u.Model = tc.model
		if got := p.Cost(u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%q) = %v, want %v", tc.model, got, tc.want)
		}
	}
	if got := p.Cost(transcript.Usage{Model: "claude-opus-4-5"}); got != 0 {
		t.Errorf("zero usage costs %v", got)
	}
}
