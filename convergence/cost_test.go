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

func TestPricesOtherCLIs(t *testing.T) {
	p := DefaultPrices()
	for _, tc := range []struct {
		model string
		want  float64 // a million input, cached input and output tokens each
	}{
		{"gpt-5-codex", 1.25 + 0.125 + 10},
		{"gpt-5.5", 1.25 + 0.125 + 10},
		{"codex", 1.25 + 0.125 + 10},
		{"gpt-5-mini", 0.25 + 0.025 + 2},
		{"o3", 2 + 0.5 + 8},
		{"o4-mini", 1.1 + 0.275 + 4.4},
		{"gemini-2.5-pro", 1.25 + 0.125 + 10},
		{"gemini-2.5-flash", 0.30 + 0.03 + 2.5},
		{"gemini-2.5-flash-lite", 0.10 + 0.01 + 0.40},
		{"gemini-3-pro-preview", 2 + 0.2 + 12},
		{"opus", 5 + 0.5 + 25},
	} {
		if got := p.Tokens(tc.model, 1e6, 1e6, 1e6); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Tokens(%q) = %v, want %v", tc.model, got, tc.want)
		}
	}
}
