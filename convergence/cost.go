package convergence

import (
	"strings"

	"github.com/drover-dev/drover/internal/transcript"
)

// Price is what a model charges, in dollars per million tokens.
type Price struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
}

// Prices maps a model family ("opus", "sonnet", "haiku") to its price.
type Prices map[string]Price

// DefaultPrices are Anthropic's list prices per million tokens of each
// family (as for Claude Opus 4.5 and 5, Sonnet 4.5, Haiku 4.5):
// cache writes at the 5-minute rate (1.25x input) and cache reads at 0.1x
// input. They are an estimate for budgets, not a bill: the real cost
// depends on the plan, discounts and the exact model, so the table is a
// documented default rather than a source of truth.
func DefaultPrices() Prices {
	return Prices{
		"opus":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
		"sonnet": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
		"haiku":  {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
	}
}

// modelPrices are the models whose price differs from their family's, as
// published on Anthropic's model pages, checked in order before the family
// table. Where a page gives only input and output prices the cache rates
// follow the usual multipliers (write 1.25x, read 0.1x input).
func modelPrices() []struct {
	match string
	price Price
} {
	return []struct {
		match string
		price Price
	}{
		{"opus-5-5", Price{Input: 4, Output: 20, CacheRead: 0.20, CacheWrite: 5}},
		{"sonnet-5", Price{Input: 2, Output: 10, CacheRead: 0.20, CacheWrite: 2.50}},
		{"fable", Price{Input: 10, Output: 50, CacheRead: 1, CacheWrite: 12.50}},
		// Opus 4 and 4.1 (and Opus 3) cost three times what Opus 4.5 does.
		{"opus-4-1", legacyOpus},
		{"opus-4-2025", legacyOpus},
		{"opus-4-0", legacyOpus},
		{"3-opus", legacyOpus},
	}
}

var legacyOpus = Price{Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75}

// For returns the price of model: a model-specific price when there is
// one, else its family's. Codex (gpt*, o<digit>*, *codex*) and Gemini
// (gemini*) models are priced from otherPrices. A model that names no known family (or is empty)
// is priced as sonnet, the common default, so that an unknown model still
// counts toward a budget.
func (p Prices) For(model string) Price {
	if pr, ok := otherPrice(model); ok {
		return pr
	}
	m := strings.ToLower(model)
	for _, mp := range modelPrices() {
		if strings.Contains(m, mp.match) {
			return mp.price
		}
	}
	switch {
	case strings.Contains(m, "opus"):
		return p["opus"]
	case strings.Contains(m, "haiku"):
		return p["haiku"]
	}
	return p["sonnet"]
}

// Cost is the estimated dollar cost of one message's usage.
func (p Prices) Cost(u transcript.Usage) float64 {
	pr := p.For(u.Model)
	return (float64(u.InputTokens)*pr.Input +
		float64(u.OutputTokens)*pr.Output +
		float64(u.CacheReadInputTokens)*pr.CacheRead +
		float64(u.CacheCreationInputTokens)*pr.CacheWrite) / 1e6
}

func transcriptUsage(model string, input, cached, output int64) transcript.Usage {
	return transcript.Usage{Model: model, InputTokens: input, CacheReadInputTokens: cached, OutputTokens: output}
}
