package events

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ids(evs []api.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func publishN(h *Hub, n int) {
	for range n {
		h.Publish(context.Background(), Draft{Kind: api.EventHookDecided, Session: "s", Data: api.DecisionData{Event: "stop", Decision: "block"}})
	}
}

// TestHistoryIsBoundedAndKeptAcrossAReopen: the hub keeps the last
// History events, in memory and in the store; a new hub on the same
// store has them and goes on with the next id.
func TestHistoryIsBoundedAndKeptAcrossAReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.db")
	st := openStore(t, path)
	h, err := Open(context.Background(), st, Options{History: 5})
	if err != nil {
		t.Fatal(err)
	}
	publishN(h, 12)
	backlog, sub, gap := h.Subscribe(3)
	sub.Close()
	if got := ids(backlog); len(got) != 5 || got[0] != 8 || got[4] != 12 || !gap {
		t.Errorf("after 12 events with a history of 5, Subscribe(3) = %v gap %v, want 8..12 and a gap", got, gap)
	}
	if got := ids(h.Recent()); len(got) != 5 || got[0] != 8 || got[4] != 12 {
		t.Errorf("after 12 events with a history of 5, Recent() = %v, want 8..12", got)
	}
	h.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, path)
	defer st.Close()
	h, err = Open(context.Background(), st, Options{History: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	publishN(h, 1)
	backlog, sub, gap = h.Subscribe(10)
	sub.Close()
	if got := ids(backlog); len(got) != 3 || got[0] != 11 || got[2] != 13 || gap {
		t.Errorf("reopened, Subscribe(10) = %v gap %v, want 11 12 13 and no gap", got, gap)
	}
}

// TestSubscriberThatFallsBehindIsDropped: publishing never waits for a
// subscriber; one whose buffer is full is dropped, the others go on.
func TestSubscriberThatFallsBehindIsDropped(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "drover.db"))
	defer st.Close()
	h, err := Open(context.Background(), st, Options{Buffer: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, slow, _ := h.Subscribe(0)
	_, fast, _ := h.Subscribe(0)
	var got []uint64
	for range 10 {
		publishN(h, 1)
		got = append(got, (<-fast.C).ID)
	}
	fast.Close()
	n := 0
	for range slow.C { // closed once it was dropped
		n++
	}
	if n != 3 || len(got) != 10 || got[9] != 10 {
		t.Errorf("slow got %d events (want its buffer, 3), fast got %v (want 1..10)", n, got)
	}
}

// TestSubscribeEncodedCarriesEachEventsJSON: the JSON the hub hands an
// encoded subscriber, in the backlog, live and from the history of a
// reopened store, is json.Marshal of the event it goes with.
func TestSubscribeEncodedCarriesEachEventsJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.db")
	st := openStore(t, path)
	h, err := Open(context.Background(), st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	publishN(h, 2)
	backlog, sub, _ := h.SubscribeEncoded(0)
	publishN(h, 2)
	live := []Encoded{<-sub.Encoded, <-sub.Encoded}
	sub.Close()
	h.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, path)
	defer st.Close()
	h, err = Open(context.Background(), st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	reopened, sub, _ := h.SubscribeEncoded(0)
	sub.Close()
	for _, tt := range []struct {
		name string
		evs  []Encoded
	}{
		{"backlog", backlog},
		{"live", live},
		{"reopened", reopened},
	} {
		if len(tt.evs) == 0 {
			t.Errorf("%s: no events", tt.name)
		}
		for _, e := range tt.evs {
			want, err := json.Marshal(e.Event)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := e.JSON(); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: event %d JSON = %s (%v), want %s", tt.name, e.ID, got, err, want)
			}
		}
	}
	if got := len(reopened); got != 4 {
		t.Errorf("reopened history has %d events, want 4", got)
	}
}
