package convergence

import "strings"

// otherPrices are the list prices per million tokens of the OpenAI models
// Codex CLI runs and the Google models Gemini CLI runs, as published on
// openai.com/api/pricing and ai.google.dev/gemini-api/docs/pricing (the
// Gemini Pro prices are those of prompts up to 200k tokens). Neither CLI
// reports a cost, so drover prices the tokens it reports with this table:
// an estimate for budgets, like DefaultPrices. Neither API bills cache
// writes; cached input is CacheRead. They are checked in order, the first
// substring that the lowercased model name holds wins.
var otherPrices = []struct {
	match string
	price Price
}{
	{"gpt-5-nano", Price{Input: 0.05, Output: 0.40, CacheRead: 0.005}},
	{"gpt-5-mini", Price{Input: 0.25, Output: 2, CacheRead: 0.025}},
	{"codex-mini", Price{Input: 1.50, Output: 6, CacheRead: 0.375}},
	{"gpt-4.1-mini", Price{Input: 0.40, Output: 1.60, CacheRead: 0.10}},
	{"gpt-4.1", Price{Input: 2, Output: 8, CacheRead: 0.50}},
	{"gpt-4o-mini", Price{Input: 0.15, Output: 0.60, CacheRead: 0.075}},
	{"gpt-4o", Price{Input: 2.50, Output: 10, CacheRead: 1.25}},
	{"o4-mini", Price{Input: 1.10, Output: 4.40, CacheRead: 0.275}},
	{"o3-mini", Price{Input: 1.10, Output: 4.40, CacheRead: 0.55}},
	{"o3", Price{Input: 2, Output: 8, CacheRead: 0.50}},
	{"gemini-2.5-flash-lite", Price{Input: 0.10, Output: 0.40, CacheRead: 0.01}},
	{"gemini-2.0-flash", Price{Input: 0.10, Output: 0.40, CacheRead: 0.025}},
	{"flash", Price{Input: 0.30, Output: 2.50, CacheRead: 0.03}},
	{"gemini-3", Price{Input: 2, Output: 12, CacheRead: 0.20}},
}

// Codex and Gemini models no entry of otherPrices names are priced as the
// family's flagship: GPT-5 (gpt-5, gpt-5-codex, gpt-5.1...) and Gemini 2.5
// Pro, so that an unknown model still counts toward a budget.
var (
	gpt5Price      = Price{Input: 1.25, Output: 10, CacheRead: 0.125}
	geminiProPrice = Price{Input: 1.25, Output: 10, CacheRead: 0.125}
)

// ModelCLI names the agent CLI whose provider serves model, by the
// model's name: "claude" for Claude Code's aliases (opus, sonnet, haiku,
// opusplan) and claude*, "codex" for gpt*, o<digit>* and *codex*,
// "gemini" for *gemini*, and "" when the name says none. Pricing and the
// routing of reviewer models (reviewer.ModelCLI) read names alike.
func ModelCLI(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	switch {
	case m == "opus" || m == "sonnet" || m == "haiku" || m == "opusplan" || strings.HasPrefix(m, "claude"):
		return "claude"
	case strings.HasPrefix(m, "gpt") || strings.Contains(m, "codex") || len(m) > 1 && m[0] == 'o' && m[1] >= '0' && m[1] <= '9':
		return "codex"
	case strings.Contains(m, "gemini"):
		return "gemini"
	}
	return ""
}

// otherPrice returns the price of a Codex or Gemini model, and false for a
// name that is neither (a Claude model).
func otherPrice(model string) (Price, bool) {
	cli := ModelCLI(model)
	if cli != "codex" && cli != "gemini" {
		return Price{}, false
	}
	m := strings.ToLower(model)
	for _, op := range otherPrices {
		if strings.Contains(m, op.match) {
			return op.price, true
		}
	}
	if cli == "gemini" {
		return geminiProPrice, true
	}
	return gpt5Price, true
}

// Tokens is the estimated dollar cost of a CLI's reported tokens for
// model: input not read from the cache, cached input, and output
// (reasoning included). It fits agentrun.Pricer.
func (p Prices) Tokens(model string, input, cached, output int64) float64 {
	return p.Cost(transcriptUsage(model, input, cached, output))
}
