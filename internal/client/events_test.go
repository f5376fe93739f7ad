package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
)

// TestEventsReadsAStreamAsItComes: the hand-written transport reads Go's
// chunked Server-Sent Events as they are flushed (the second event is
// sent only once the client has the first), sends Last-Event-ID, skips
// comments, and says when the server ended the stream; a refusal is the
// server's error.
func TestEventsReadsAStreamAsItComes(t *testing.T) {
	got := make(chan uint64, 10)
	path := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "7" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"Last-Event-ID is %s"}`, r.Header.Get("Last-Event-ID"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, id := range []uint64{8, 9} {
			data, _ := json.Marshal(api.Event{ID: id, Kind: api.EventHookDecided, Session: "s", Data: json.RawMessage(`{"event":"stop"}`)})
			fmt.Fprintf(w, ": heartbeat\n\nid: %d\nevent: hook.decided\ndata: %s\n\n", id, data)
			w.(http.Flusher).Flush()
			if id == 8 {
				<-got // the client has it before the next is sent
			}
		}
	}))
	c := New(path)
	var ids []uint64
	collect := func(e api.Event) error {
		ids = append(ids, e.ID)
		if e.ID == 8 {
			got <- e.ID
		}
		return nil
	}
	err := c.Events(context.Background(), 7, true, collect)
	if !errors.Is(err, ErrStreamEnded) || len(ids) != 2 || ids[1] != 9 {
		t.Errorf("Events = %v after %v, want ErrStreamEnded after 8 9", err, ids)
	}
	ids = nil
	if err := c.Events(context.Background(), 7, false, collect); err != nil || len(ids) != 2 {
		t.Errorf("Events without follow = %v after %v, want nil after 8 9", err, ids)
	}
	stop := errors.New("enough")
	if err := c.Events(context.Background(), 7, true, func(e api.Event) error { got <- e.ID; return stop }); !errors.Is(err, stop) {
		t.Errorf("Events with a failing callback = %v, want its error", err)
	}
	if err := c.Events(context.Background(), 3, true, func(api.Event) error { return nil }); err == nil || !strings.Contains(err.Error(), "Last-Event-ID is 3") {
		t.Errorf("Events refused = %v, want the server's error", err)
	}
}
