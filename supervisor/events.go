package supervisor

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/events"
)

// sseHeartbeat is how often an idle event stream sends a comment line.
const sseHeartbeat = 15 * time.Second

// sseWriteTimeout bounds one write of the event stream to its client.
const sseWriteTimeout = 30 * time.Second

// serveEvents streams the project's events as Server-Sent Events: first
// those of the history after the client's Last-Event-ID (or ?since=),
// then each as it is published (unless ?follow=false, which ends the
// stream after the history). A client that falls behind is dropped
// (its subscription's channel closes) and resumes by id; the stream also
// ends when the supervisor starts to stop, so that it does not hold up the
// shutdown.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	since, err := sinceOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	rc := http.NewResponseController(w)
	backlog, sub, gap := s.events.SubscribeEncoded(since)
	defer sub.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() error {
		// A client that takes no bytes for this long is gone or stuck:
		// the write fails and the handler ends, rather than hold its
		// goroutine (and the shutdown) until the client goes.
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if gap {
		// The history no longer holds every event after since.
		fmt.Fprintf(bw, ": events after %d have left the history (events.history)\n\n", since)
	}
	for _, e := range backlog {
		if err := writeEvent(bw, e); err != nil {
			return
		}
	}
	if err := flush(); err != nil || r.URL.Query().Get("follow") == "false" {
		return
	}
	every := s.heartbeat
	if every <= 0 {
		every = sseHeartbeat
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.draining:
			return
		case <-beat.C:
			bw.WriteString(": heartbeat\n\n")
		case e, ok := <-sub.Encoded:
			if !ok {
				return // fell behind, or the hub closed: resume by id
			}
			if err := writeEvent(bw, e); err != nil {
				return
			}
			// What is queued already goes in the same write.
			for n := len(sub.Encoded); n > 0; n-- {
				if err := writeEvent(bw, <-sub.Encoded); err != nil {
					return
				}
			}
		}
		if err := flush(); err != nil {
			return
		}
	}
}

// sinceOf reads the id a client resumes after: the Last-Event-ID header,
// else the since query parameter, else 0 (the whole history).
func sinceOf(r *http.Request) (uint64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("since")
	}
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("event id %q is not a number", v)
	}
	return id, nil
}

// writeEvent writes e as one Server-Sent Event: its id, its kind as the
// event name, and the whole api.Event as JSON on one data line. The JSON
// is the hub's, made once for every client; nothing here is formatted
// per client but the id.
func writeEvent(w *bufio.Writer, e events.Encoded) error {
	data, err := e.JSON()
	if err != nil {
		return err
	}
	var id [20]byte
	w.WriteString("id: ")
	w.Write(strconv.AppendUint(id[:0], e.ID, 10))
	w.WriteString("\nevent: ")
	w.WriteString(string(e.Kind))
	w.WriteString("\ndata: ")
	w.Write(data)
	_, err = w.WriteString("\n\n")
	return err
}
