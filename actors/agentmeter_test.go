package actors

import (
	"math"
	"testing"

	"github.com/drover-dev/drover/internal/agentrun"
)

func TestAgentMeter(t *testing.T) {
	// Sonnet: $3 per million input tokens, $15 output, $0.30 cache read,
	// $3.75 cache write; opus $5/$25/$0.50/$6.25.
	sonnet := func(id string, in, out int64) agentrun.Event {
		return agentrun.Event{Type: agentrun.TypeAssistant, MessageID: id, Usage: &agentrun.Usage{InputTokens: in, OutputTokens: out}}
	}
	call := agentrun.Event{Type: agentrun.TypeAssistant, ToolCalls: []agentrun.ToolCall{{Name: "Bash"}, {Name: "Read"}}}
	cases := []struct {
		name    string
		events  []agentrun.Event
		changed []bool
		cost    float64
		tools   int
	}{
		{"nothing", nil, nil, 0, 0},
		{
			"lines of one message count once, at their largest",
			[]agentrun.Event{sonnet("m1", 100_000, 0), sonnet("m1", 100_000, 1000), sonnet("m1", 90_000, 1000)},
			[]bool{true, true, false}, 0.3 + 0.015, 0,
		},
		{
			"messages add up, with and without ids",
			[]agentrun.Event{sonnet("m1", 100_000, 0), sonnet("m2", 100_000, 0), sonnet("", 100_000, 0), sonnet("", 100_000, 0)},
			[]bool{true, true, true, true}, 1.2, 0,
		},
		{
			"the init line's model prices messages that name none",
			[]agentrun.Event{{Type: agentrun.TypeSystem, Model: "claude-opus-4-5"}, sonnet("m1", 1_000_000, 0), {Type: agentrun.TypeAssistant, MessageID: "m2", Model: "claude-haiku-4-5", Usage: &agentrun.Usage{CacheReadInputTokens: 1_000_000}}},
			[]bool{false, true, true}, 5 + 0.1, 0,
		},
		{
			"tool calls",
			[]agentrun.Event{call, {Type: agentrun.TypeUser}, call},
			[]bool{true, false, true}, 0, 4,
		},
		{
			"the result line's cost wins over the estimate",
			[]agentrun.Event{sonnet("m1", 1_000_000, 0), {Type: agentrun.TypeResult, CostUSD: 2.5}, sonnet("m2", 1_000_000, 0)},
			[]bool{true, true, false}, 2.5, 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newAgentMeter()
			for i, ev := range c.events {
				if got := m.add(ev); got != c.changed[i] {
					t.Errorf("event %d: changed = %v, want %v", i, got, c.changed[i])
				}
			}
			if math.Abs(m.cost()-c.cost) > 1e-9 || m.toolCalls != c.tools {
				t.Errorf("cost $%v, %d tool calls; want $%v, %d", m.cost(), m.toolCalls, c.cost, c.tools)
			}
		})
	}
}
