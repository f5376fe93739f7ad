package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

func strp(s string) *string { return &s }

func TestNotesApply(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	base := Notes{Question: "tabs?", Doing: "the lexer", Decisions: []Decision{{Text: "v1 format", At: now}}}
	cases := []struct {
		name    string
		from    Notes
		change  NoteChange
		want    Notes
		wantErr bool
	}{
		{"a question", Notes{}, NoteChange{Question: strp("  tabs?  ")}, Notes{Question: "tabs?", UpdatedAt: now}, false},
		{"a decision is added", base, NoteChange{Decision: "no tabs"}, Notes{Question: "tabs?", Doing: "the lexer", Decisions: []Decision{{Text: "v1 format", At: now}, {Text: "no tabs", At: now}}, UpdatedAt: now}, false},
		{"an empty question clears it", base, NoteChange{Question: strp("")}, Notes{Doing: "the lexer", Decisions: base.Decisions, UpdatedAt: now}, false},
		{"clear", base, NoteChange{Clear: true}, Notes{UpdatedAt: now}, false},
		{"clear and doing", base, NoteChange{Clear: true, Doing: strp("the parser")}, Notes{Doing: "the parser", UpdatedAt: now}, false},
		{"nothing", base, NoteChange{Decision: "  "}, base, true},
		{"too long", base, NoteChange{Doing: strp(strings.Repeat("x", MaxNoteBytes+1))}, base, true},
		{"not UTF-8", base, NoteChange{Question: strp("\xff")}, base, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.from.Apply(c.change, now)
			if c.wantErr != errors.Is(err, ErrBadNote) {
				t.Fatalf("err %v, want a bad note: %v", err, c.wantErr)
			}
			if got.Question != c.want.Question || got.Doing != c.want.Doing || len(got.Decisions) != len(c.want.Decisions) || !got.UpdatedAt.Equal(c.want.UpdatedAt) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got.Decisions {
				if got.Decisions[i] != c.want.Decisions[i] {
					t.Errorf("decision %d: %+v, want %+v", i, got.Decisions[i], c.want.Decisions[i])
				}
			}
		})
	}
	// The original is not changed by a later Apply (its slice is shared
	// with the stored record).
	n := Notes{}
	for i := range MaxDecisions + 3 {
		n, _ = n.Apply(NoteChange{Decision: string(rune('a' + i))}, now)
	}
	if len(n.Decisions) != MaxDecisions || n.Decisions[0].Text != "d" {
		t.Errorf("after %d decisions: %+v", MaxDecisions+3, n.Decisions)
	}
	before := base.Decisions[0]
	if _, err := base.Apply(NoteChange{Clear: true}, now); err != nil || base.Decisions[0] != before {
		t.Errorf("Apply changed its receiver: %+v", base)
	}
}

func TestSnapshot(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	notes := Notes{Question: "tabs?", Decisions: []Decision{{Text: "v1 format", At: now}}}
	cases := []struct {
		name               string
		rec                Record
		item               string
		skill, step, doing string
	}{
		{"no workflow", Record{Notes: notes}, "", "", "", ""},
		{"queue", Record{Workflow: Queue, Queue: queue.Session{State: queue.On, Iteration: 2}, Notes: notes}, "20260101T000000.md", "queue", "iteration 2", "20260101T000000.md"},
		{"queue in review", Record{Workflow: Queue, Queue: queue.Session{State: queue.Review}}, "", "queue", "review", ""},
		{"loop", Record{Workflow: Loop, Loop: loop.State{Active: true, Iteration: 3, MaxIterations: 9}, Notes: Notes{Doing: "item 4"}}, "", "loop", "iteration 3 of 9", "item 4"},
		{"ended loop", Record{Workflow: Loop, Loop: loop.State{Iteration: 3}}, "", "", "", ""},
		{"plan", Record{Workflow: Plan, Plan: plan.State{PlanID: "p", Phase: plan.PhaseCodeReview, CurrentTask: "3"}}, "", "plan", "p/code-review task-3", "task-3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.rec.Snapshot(now, c.item)
			str := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			if s.Version != SnapshotVersion || !s.Timestamp.Equal(now) || str(s.ActiveSkill) != c.skill || str(s.CurrentStep) != c.step || str(s.InProgressItem) != c.doing {
				t.Errorf("snapshot %+v: skill %q step %q item %q", s, str(s.ActiveSkill), str(s.CurrentStep), str(s.InProgressItem))
			}
			if str(s.PendingQuestion) != c.rec.Notes.Question || len(s.RecentContext) != len(c.rec.Notes.Decisions) || s.RecentContext == nil {
				t.Errorf("notes in the snapshot: %+v", s)
			}
		})
	}
}

func TestLastIterationMetrics(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	started := now.Add(-time.Hour)
	m := convergence.UnknownMetrics(2)
	m.TestsPassed, m.TestsFailed = 3, 1
	rec := Record{Workflow: Loop, Loop: loop.State{Active: true, Iteration: 3, StartedAt: started, LastStatus: "exploring", LastRole: "debugger", CostUSD: 0.5},
		LoopHistory: []convergence.Metrics{convergence.UnknownMetrics(1), m}}
	got, ok := rec.LastIterationMetrics(now)
	if !ok || got.Iteration != 2 || got.TestsPassed != 3 || got.TestsFailed != 1 || got.Status != "exploring" || got.Role != "debugger" ||
		got.CostUSD != 0.5 || !got.Active || !got.LoopStartedAt.Equal(started) || !got.Time.Equal(now) {
		t.Errorf("line: %+v", got)
	}
	for name, r := range map[string]Record{
		"no history": {Workflow: Loop, Loop: loop.State{Active: true}},
		"a queue":    {Workflow: Queue, LoopHistory: rec.LoopHistory},
	} {
		if _, ok := r.LastIterationMetrics(now); ok {
			t.Errorf("%s: a line", name)
		}
	}
}
