package actors

import (
	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/internal/workflow/run"
)

// agentMeter follows what one agent process has spent and done, from its
// stream-json events as they arrive: the cost its result line gives, or
// until there is one (and for an agent killed before it printed one) an
// estimate from the token usage of its assistant messages, priced as the
// loop prices a transcript; and its tool calls.
type agentMeter struct {
	prices convergence.Prices
	// model is the one the init line named, for messages that name none.
	model string
	// usage holds each message's usage so far, by message id (see
	// transcript.Usage.Grow).
	usage map[string]transcript.Usage
	// estimate is the priced sum of usage (and of messages without id).
	estimate   float64
	sawResult  bool
	resultCost float64
	toolCalls  int
}

func newAgentMeter() *agentMeter {
	return &agentMeter{prices: convergence.DefaultPrices(), usage: map[string]transcript.Usage{}}
}

// add folds in one event and reports whether the cost or the tool calls
// changed.
func (m *agentMeter) add(ev agentrun.Event) bool {
	cost, tools := m.cost(), m.toolCalls
	m.toolCalls += len(ev.ToolCalls)
	switch {
	case ev.Type == agentrun.TypeSystem && ev.Model != "":
		m.model = ev.Model
	case ev.Type == agentrun.TypeResult:
		m.sawResult, m.resultCost = true, ev.CostUSD
	case ev.Usage != nil:
		model := ev.Model
		if model == "" {
			model = m.model
		}
		old, seen := m.usage[ev.MessageID]
		if ev.MessageID == "" || !seen {
			old = transcript.Usage{MessageID: ev.MessageID, Model: model}
		}
		u := old
		u.Grow(ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CacheReadInputTokens, ev.Usage.CacheCreationInputTokens)
		if seen && ev.MessageID != "" {
			m.estimate -= m.prices.Cost(old)
		}
		m.estimate += m.prices.Cost(u)
		if ev.MessageID != "" {
			m.usage[ev.MessageID] = u
		}
	}
	return m.cost() != cost || m.toolCalls != tools
}

// progress is what the meter has seen, as the run actor counts it.
func (m *agentMeter) progress() run.Progress {
	return run.Progress{CostUSD: m.cost(), ToolCalls: m.toolCalls, Finished: m.sawResult}
}

// cost is what the agent has cost so far: its result line's total once
// it printed one, else the estimate.
func (m *agentMeter) cost() float64 {
	if m.sawResult {
		return m.resultCost
	}
	return m.estimate
}
