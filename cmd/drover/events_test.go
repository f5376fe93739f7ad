package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
)

// TestEventsPrintsWhatTheSupervisorCommitted: a queue started and a Stop
// blocked through the real binaries show up in drover events, as JSON and
// as lines, and --since starts after the event it names.
func TestEventsPrintsWhatTheSupervisorCommitted(t *testing.T) {
	p := newProj(t)
	id := "events-session"
	p.must("", "do", "--session", id, "write the parser")
	if out := p.hook(hook.Stop, stopInput(id)); !out.IsBlock() {
		t.Fatalf("a stop of an active queue = %+v, want a block", out)
	}

	var evs []api.Event
	for _, line := range strings.Split(strings.TrimSpace(p.must("", "events", "--json", "--no-follow")), "\n") {
		var e api.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events --json printed %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	var started, blocked *api.Event
	for i, e := range evs {
		if i > 0 && e.ID != evs[i-1].ID+1 {
			t.Errorf("event %d follows event %d", e.ID, evs[i-1].ID)
		}
		var d api.DecisionData
		switch {
		case e.Kind == api.EventSessionStarted && e.Session == id:
			started = &evs[i]
		case e.Kind == api.EventHookDecided && e.Session == id && json.Unmarshal(e.Data, &d) == nil && d.Event == string(hook.Stop) && d.Decision == "block":
			blocked = &evs[i]
		}
	}
	if started == nil || blocked == nil || started.ID > blocked.ID {
		t.Fatalf("events = %+v, want the session started and then its Stop blocked", evs)
	}

	text := p.must("", "events", "--no-follow", "--since", strconv.FormatUint(started.ID, 10))
	if strings.Contains(text, "#"+strconv.FormatUint(started.ID, 10)+" ") {
		t.Errorf("--since %d printed that event:\n%s", started.ID, text)
	}
	want := "#" + strconv.FormatUint(blocked.ID, 10) + " hook.decided session " + id + " "
	if !strings.Contains(text, want) || !strings.Contains(text, `"decision":"block"`) {
		t.Errorf("events printed:\n%s\nwant a line with %q and the block", text, want)
	}
}
