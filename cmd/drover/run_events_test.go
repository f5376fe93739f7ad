package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
)

// twoWaves is a run graph of two waves, a task each: a, then b.
const twoWaves = `tasks:
  - id: a
    description: Write a.txt.
    tests: [a.txt]
  - id: b
    description: Write b.txt.
    tests: [b.txt]
    depends-on: [a]
`

// TestRunEventsFollowTheRun: a whole drover run of two waves (the scripted
// agent, the real supervisor) is on drover events --json --no-follow as
// its run, wave and task changes and its tasks done, in the order the run
// committed them: each wave's task done and merged before the next wave's
// task runs, and the run done once its last wave is merged.
func TestRunEventsFollowTheRun(t *testing.T) {
	f := newRunFixture(t)
	out := f.must("", f.withGraph(f.args, "two-waves.yaml", twoWaves)...)
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}

	// The trace is the run's events, a task's change that leaves its
	// state as it was (status, cost, iteration) left out: how many
	// progress reports an agent makes is not the test's to fix.
	var (
		trace []string
		last  uint64
	)
	state := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(f.must("", "events", "--json", "--no-follow")), "\n") {
		var e api.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events --json printed %q: %v", line, err)
		}
		if e.ID <= last {
			t.Errorf("event %d after event %d", e.ID, last)
		}
		last = e.ID
		if e.Run != id {
			continue
		}
		switch e.Kind {
		case api.EventRunState, api.EventRunWave:
			var d api.RunStateData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("event %d %s: %v", e.ID, e.Kind, err)
			}
			trace = append(trace, fmt.Sprintf("%s %s %d/%d", e.Kind, d.State, d.Merged, d.Waves))
		case api.EventRunTask, api.EventTaskDone:
			var d api.TaskData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("event %d %s: %v", e.ID, e.Kind, err)
			}
			if e.Kind == api.EventRunTask {
				if state[d.Task] == d.State {
					continue
				}
				state[d.Task] = d.State
			}
			trace = append(trace, fmt.Sprintf("%s %s %s wave %d", e.Kind, d.Task, d.State, d.Wave))
		default:
			trace = append(trace, string(e.Kind))
		}
	}
	want := []string{
		"run.state running 0/2",
		"run.task a running wave 1",
		"run.task b pending wave 2",
		"run.task a done wave 1",
		"task.done a done wave 1",
		"run.wave running 1/2",
		"run.task b running wave 2",
		"run.task b done wave 2",
		"task.done b done wave 2",
		"run.wave done 2/2",
		"run.state done 2/2",
	}
	if !slices.Equal(trace, want) {
		t.Errorf("the run's events:\n  %s\nwant:\n  %s", strings.Join(trace, "\n  "), strings.Join(want, "\n  "))
	}
}
