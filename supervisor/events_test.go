package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/project"
)

// stream is one client of GET /v1/events.
type stream struct {
	cancel context.CancelFunc
	events chan api.Event
	done   chan struct{}
}

// follow opens the event stream after since (Last-Event-ID) and sends
// each event it reads to the returned stream's channel.
func (a *apiServer) follow(since uint64) *stream {
	a.t.Helper()
	return a.followAt(a.client, a.url+api.PathEvents, "", since)
}

// followAt is follow on the stream at url through client, with auth as
// the Authorization header when set.
func (a *apiServer) followAt(client *http.Client, url, auth string, since uint64) *stream {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if since > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(since, 10))
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := client.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		a.t.Fatalf("GET %s = %d %q, want 200 text/event-stream", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &stream{cancel: cancel, events: make(chan api.Event, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var id, kind string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var e api.Event
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil || strconv.FormatUint(e.ID, 10) != id || string(e.Kind) != kind {
					a.t.Errorf("event %s %s: data %q does not match (%v)", id, kind, line, err)
					return
				}
				s.events <- e
			}
		}
	}()
	return s
}

// close ends the client and waits for its reader.
func (s *stream) close() {
	s.cancel()
	<-s.done
}

// until reads events until one satisfies stop, and returns them all.
func (s *stream) until(t testing.TB, stop func(api.Event) bool) []api.Event {
	t.Helper()
	var got []api.Event
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended after %d events", len(got))
			}
			got = append(got, e)
			if stop(e) {
				return got
			}
		case <-s.done:
			t.Fatalf("the stream ended after %d events", len(got))
		case <-timeout:
			t.Fatalf("no closing event after %d events", len(got))
		}
	}
}

// decided is the hook.decided payload of e, if it is one.
func decided(e api.Event) (api.DecisionData, bool) {
	var d api.DecisionData
	if e.Kind != api.EventHookDecided || json.Unmarshal(e.Data, &d) != nil {
		return d, false
	}
	return d, true
}

// startQueue makes session id an active queue with one pending task, so
// that each of its Stops is a decision committed.
func (a *apiServer) startQueue(id string) {
	a.t.Helper()
	var out json.RawMessage
	a.decode(http.MethodPost, api.SessionPath(id, "tasks"), api.AddRequest{Prompt: "write the parser"}, &out)
	a.decode(http.MethodPost, api.SessionPath(id, "start"), nil, &out)
}

// stops sends n Stops for session id, request ids <id>-<from> to
// <id>-<from+n-1>, in order, each after the previous one's answer.
func (a *apiServer) stops(id string, from, n int) error {
	for i := from; i < from+n; i++ {
		out := a.hook(hook.Stop, fmt.Sprintf("%s-%d", id, i), id)
		if !out.Output.IsBlock() {
			return fmt.Errorf("stop %d of %s = %+v, want a block", i, id, out)
		}
	}
	return nil
}

func eventsConfig() config.Config {
	cfg := config.Defaults()
	cfg.Queue.MaxIterations = 10000
	return cfg
}

// marker publishes an event no hook makes and returns its id, for a
// client to read up to.
func (a *apiServer) marker() uint64 {
	a.srv.events.Publish(context.Background(), eventsDraft())
	return a.srv.events.LastID()
}

// TestEventsArriveInCommitOrderPerSession: 1,000 Stops from 20 sessions
// at once, through the API; a stream client gets every decision, once,
// with ids that only grow, and each session's in the order its Stops were
// answered.
func TestEventsArriveInCommitOrderPerSession(t *testing.T) {
	const sessions, perSession = 20, 50
	a := newAPIServerConfig(t, eventsConfig())
	for i := range sessions {
		a.startQueue(fmt.Sprintf("s%02d", i))
	}
	s := a.follow(0)
	defer s.close()

	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- a.stops(fmt.Sprintf("s%02d", i), 0, perSession)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	last := a.marker()
	got := s.until(t, func(e api.Event) bool { return e.ID == last })

	next := map[string]int{}
	var prev uint64
	for _, e := range got {
		if e.ID <= prev {
			t.Fatalf("event %d after event %d: ids must grow", e.ID, prev)
		}
		prev = e.ID
		d, ok := decided(e)
		if !ok || d.Event != string(hook.Stop) {
			continue
		}
		if want := fmt.Sprintf("%s-%d", e.Session, next[e.Session]); d.Request != want {
			t.Fatalf("session %s: decision of %s, want %s next (commit order)", e.Session, d.Request, want)
		}
		if d.Decision != "block" {
			t.Errorf("decision of %s = %q, want block", d.Request, d.Decision)
		}
		next[e.Session]++
	}
	total := 0
	for _, n := range next {
		total += n
	}
	if len(next) != sessions || total != sessions*perSession {
		t.Errorf("got %d Stop decisions from %d sessions, want %d from %d", total, len(next), sessions*perSession, sessions)
	}
}

// TestEventsResumeWithLastEventID: a client that disconnects while the
// sessions go on, and comes back with Last-Event-ID, gets every event
// exactly once: from the live stream, then from the history, and from
// the store after a supervisor restart.
func TestEventsResumeWithLastEventID(t *testing.T) {
	a := newAPIServerConfig(t, eventsConfig())
	a.startQueue("s1")
	s := a.follow(0)
	if err := a.stops("s1", 0, 10); err != nil {
		t.Fatal(err)
	}
	mark := a.marker()
	seen := s.until(t, func(e api.Event) bool { return e.ID == mark })
	s.close()

	// Gone: these are committed while no client listens.
	if err := a.stops("s1", 10, 10); err != nil {
		t.Fatal(err)
	}
	// A resume in the middle of the decisions: the client read some of a
	// batch before it lost the connection.
	cut := seen[len(seen)-3].ID
	seen = seen[:len(seen)-2]
	s = a.follow(cut)
	mark = a.marker()
	seen = append(seen, s.until(t, func(e api.Event) bool { return e.ID == mark })...)
	s.close()
	checkDense(t, seen)
	if n := countStops(seen); n != 20 {
		t.Errorf("%d Stop decisions seen, want 20", n)
	}
}

// TestEventsHistorySurvivesARestart: the history is in the store, so a
// client resumes by id from a new supervisor, and ids go on growing.
func TestEventsHistorySurvivesARestart(t *testing.T) {
	root := t.TempDir()
	p, err := project.PathsFor(root, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var seen []api.Event
	var cut uint64
	for round := range 2 {
		a, stop := newAPIServerWith(t, Options{Paths: p, Config: eventsConfig(), Version: testVersion})
		if round == 0 {
			a.startQueue("s1")
		}
		s := a.follow(cut)
		if err := a.stops("s1", 5*round, 5); err != nil {
			t.Fatal(err)
		}
		mark := a.marker()
		seen = append(seen, s.until(t, func(e api.Event) bool { return e.ID == mark })...)
		s.close()
		cut = seen[len(seen)-1].ID
		stop()
	}
	checkDense(t, seen)
	kinds := map[api.EventKind]int{}
	for _, e := range seen {
		kinds[e.Kind]++
	}
	// The first round's stopped event is read from the store by the
	// second round's client.
	if kinds[api.EventSupervisorStarted] != 2 || kinds[api.EventSupervisorStopped] != 1 || kinds[api.EventSessionStarted] != 1 {
		t.Errorf("event kinds = %v, want 2 supervisor starts, 1 stop and 1 session start", kinds)
	}
	if n := countStops(seen); n != 10 {
		t.Errorf("%d Stop decisions seen, want 10", n)
	}
}

// TestSlowEventClientDoesNotBlockDecisions: a subscriber that reads
// nothing, and an HTTP client that reads nothing, while a session's Stops
// are decided: every Stop is answered, and the subscriber that fell
// behind is dropped (to resume by id).
func TestSlowEventClientDoesNotBlockDecisions(t *testing.T) {
	root := t.TempDir()
	p, err := project.PathsFor(root, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newAPIServerWith(t, Options{Paths: p, Config: eventsConfig(), Version: testVersion, EventBuffer: 4})
	a.startQueue("s1")
	_, stalled, _ := a.srv.events.Subscribe(0)
	defer stalled.Close()
	// A raw connection that asks for the stream and never reads it.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", api.PathEvents); err != nil {
		t.Fatal(err)
	}
	if err := a.stops("s1", 0, 40); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range stalled.C {
		n++
	}
	if n != 4 {
		t.Errorf("the stalled subscriber got %d events before it was dropped, want its buffer of 4", n)
	}
}

func checkDense(t *testing.T, evs []api.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].ID != evs[i-1].ID+1 {
			t.Fatalf("event %d follows event %d: an event was missed or seen twice", evs[i].ID, evs[i-1].ID)
		}
	}
}

func countStops(evs []api.Event) int {
	n := 0
	for _, e := range evs {
		if d, ok := decided(e); ok && d.Event == string(hook.Stop) {
			n++
		}
	}
	return n
}

// newAPIServerWith is newAPIServer with the options opts, whose project
// root may hold the store of an earlier server; stop ends it (also done
// at the test's end).
func newAPIServerWith(t testing.TB, opts Options) (*apiServer, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := proc.Git(ctx, opts.Paths.Root, "init", "-q"); err != nil {
		t.Fatalf("git init: %v", err)
	}
	s, closeServer, err := newServer(ctx, opts, "")
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ts := httptest.NewServer(s.routes())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ts.CloseClientConnections()
			ts.Close()
			if err := closeServer(); err != nil {
				t.Errorf("closing the server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &apiServer{t: t, srv: s, paths: opts.Paths, url: ts.URL, client: ts.Client()}, stop
}

// eventsDraft is the marker event of a test: a kind no engine commit
// makes.
func eventsDraft() events.Draft {
	return events.Draft{Kind: "test.marker"}
}

// TestIdleEventStreamSendsHeartbeats: a stream with nothing to say sends
// comment lines, so that a client sees its connection is alive; and a
// bad Last-Event-ID is refused.
func TestIdleEventStreamSendsHeartbeats(t *testing.T) {
	a := newAPIServer(t)
	a.srv.heartbeat = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+api.PathEvents+"?since="+strconv.FormatUint(a.srv.events.LastID(), 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	beat := false
	for !beat && sc.Scan() {
		switch line := sc.Text(); line {
		case ": heartbeat":
			beat = true
		case "":
		default:
			t.Fatalf("an idle stream sent %q", line)
		}
	}
	if !beat {
		t.Fatalf("the stream ended with no heartbeat (%v)", sc.Err())
	}
	cancel()

	if r := a.do(http.MethodGet, api.PathEvents+"?since=x", nil); r.status != http.StatusBadRequest {
		t.Errorf("?since=x = %d, want 400", r.status)
	}
}

// TestEventStreamSaysEverySessionEnd: a SessionEnd that decides nothing
// new (an active queue's) is on the stream as session.ended, and the
// first hook of the resumed session as session.started, in that order.
func TestEventStreamSaysEverySessionEnd(t *testing.T) {
	a := newAPIServerConfig(t, eventsConfig())
	a.startQueue("s1")
	s := a.follow(a.srv.events.LastID())
	defer s.close()
	a.hook(hook.SessionEnd, "end-1", "s1")
	a.hook(hook.SessionEnd, "end-2", "s1")
	a.hook(hook.SessionStart, "resume", "s1")
	mark := a.marker()
	var got []api.EventKind
	for _, e := range s.until(t, func(e api.Event) bool { return e.ID == mark }) {
		if e.Session == "s1" && (e.Kind == api.EventSessionEnded || e.Kind == api.EventSessionStarted) {
			got = append(got, e.Kind)
		}
	}
	if want := []api.EventKind{api.EventSessionEnded, api.EventSessionStarted}; !slices.Equal(got, want) {
		t.Errorf("session events of s1 = %v, want %v", got, want)
	}
}
