package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func event(kind api.EventKind, run string, data any) api.Event {
	e := api.Event{ID: 1, Kind: kind, Session: "s1", Run: run}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return e
}

// TestWord: which events are news for the user, under which notify.on
// word.
func TestWord(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    api.Event
		want string // "" = none
	}{
		{"a loop done", event(api.EventTaskDone, "", api.TaskData{Task: "loop", State: "done"}), Done},
		{"a queue finished", event(api.EventTaskDone, "", api.TaskData{Task: "queue", State: "done"}), Done},
		{"a plan complete", event(api.EventTaskDone, "", api.TaskData{Task: "p1", State: "complete"}), Done},
		{"a run's task done", event(api.EventTaskDone, "r1", api.TaskData{Task: "a", State: "done"}), ""},
		{"a run done", event(api.EventRunState, "r1", api.RunStateData{State: "done"}), Done},
		{"a run failed", event(api.EventRunState, "r1", api.RunStateData{State: "failed"}), Stuck},
		{"a run running", event(api.EventRunState, "r1", api.RunStateData{State: "running"}), ""},
		{"a loop stuck", event(api.EventTaskStuck, "", api.TaskData{Task: "loop", State: "stuck"}), Stuck},
		{"a run's task failed", event(api.EventTaskStuck, "r1", api.TaskData{Task: "a", State: "failed"}), Stuck},
		{"needs review", event(api.EventNeedsReview, "r1", api.ReviewData{Task: "a"}), NeedsReview},
		{"a budget", event(api.EventBudgetReached, "", api.BudgetData{What: "max_usd"}), Budget},
		{"a review FAIL", event(api.EventReviewFinished, "", api.ReviewData{Verdict: "FAIL"}), ReviewFail},
		{"a run review fail", event(api.EventReviewFinished, "r1", api.ReviewData{Verdict: "fail"}), ReviewFail},
		{"a review PASS", event(api.EventReviewFinished, "", api.ReviewData{Verdict: "PASS"}), ""},
		{"a review with no verdict", event(api.EventReviewFinished, "", api.ReviewData{Verdict: "failed"}), ""},
		{"a decision", event(api.EventHookDecided, "", api.DecisionData{Event: "stop", Decision: "allow"}), ""},
		{"a loop ended", event(api.EventLoopEnded, "", api.LoopIterationData{Outcome: "done"}), ""},
		{"a session ended", event(api.EventSessionEnded, "", api.SessionData{Workflow: "queue"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Word(tc.e)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("Word = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// memStore is an events.Store in memory.
type memStore struct{}

func (memStore) AppendEvents(context.Context, []api.Event, int) error { return nil }
func (memStore) ReserveEventIDs(context.Context, uint64) error        { return nil }
func (memStore) LoadEvents(context.Context, int) ([]api.Event, uint64, error) {
	return nil, 0, nil
}

// webhook is a test HTTP server that answers with the statuses given,
// then 200, and sends each body it read to got.
type webhook struct {
	srv *httptest.Server
	got chan Message
	mu  sync.Mutex
	// fail is how many requests are answered 500 first.
	fail  int
	tries int
}

func newWebhook(t *testing.T, fail int) *webhook {
	w := &webhook{got: make(chan Message, 16), fail: fail}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.tries++
		failing := w.tries <= w.fail
		w.mu.Unlock()
		if failing {
			rw.WriteHeader(http.StatusInternalServerError)
			return
		}
		var m Message
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &m) != nil {
			t.Errorf("webhook got %s %q %q", r.Method, r.Header.Get("Content-Type"), body)
		}
		w.got <- m
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) next(t *testing.T) Message {
	t.Helper()
	select {
	case m := <-w.got:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no notification at the webhook")
	}
	return Message{}
}

// start runs a notifier over a new hub with cfg until the test ends.
func start(t *testing.T, cfg config.Config) *events.Hub {
	t.Helper()
	return startHub(t, cfg, events.Options{})
}

// startHub is start with the hub's options.
func startHub(t *testing.T, cfg config.Config, opts events.Options) *events.Hub {
	t.Helper()
	hub, err := events.Open(context.Background(), memStore{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := Start(ctx, Options{Hub: hub, Config: func() config.Config { return cfg }, Project: "demo", Dir: t.TempDir(), Backoff: time.Millisecond})
	t.Cleanup(func() {
		cancel()
		wait()
		hub.Close()
	})
	return hub
}

// TestWebhookGetsTheJSONWithText: a notify.on event is POSTed as JSON
// with a Slack text line; an event the user did not ask for is not.
func TestWebhookGetsTheJSONWithText(t *testing.T) {
	w := newWebhook(t, 0)
	cfg := config.Defaults()
	cfg.Notify.On = "done,budget"
	cfg.Notify.Webhook = w.srv.URL + "/T0/B0/secret"
	hub := start(t, cfg)
	hub.Publish(context.Background(),
		events.Draft{Kind: api.EventTaskStuck, Session: "s1", Data: api.TaskData{Task: "loop"}},
		events.Draft{Kind: api.EventHookDecided, Session: "s1", Data: api.DecisionData{Event: "stop", Decision: "allow"}},
		events.Draft{Kind: api.EventTaskDone, Session: "s1", Data: api.TaskData{Task: "queue", State: "done"}},
	)
	m := w.next(t)
	if m.Event != Done || m.Kind != api.EventTaskDone || m.Session != "s1" || m.ID != 3 || m.Project != "demo" {
		t.Errorf("message = %+v, want the done of s1 (event 3)", m)
	}
	if want := "drover [demo]: session s1 is done (queue)"; m.Text != want {
		t.Errorf("text = %q, want %q", m.Text, want)
	}
	var d api.TaskData
	if err := json.Unmarshal(m.Data, &d); err != nil || d.Task != "queue" {
		t.Errorf("data = %s (%v), want the task's payload", m.Data, err)
	}
	hub.Publish(context.Background(), events.Draft{Kind: api.EventBudgetReached, Run: "r1", Data: api.BudgetData{What: "run", CostUSD: 2.5}})
	if m := w.next(t); m.Event != Budget || m.Text != "drover [demo]: run r1 reached its budget (run), $2.50 spent" {
		t.Errorf("message = %+v, want the run's budget", m)
	}
}

// TestWebhookRetriesAfterA500: a webhook that fails once gets the same
// notification again, and only once it answered 2xx is it done.
func TestWebhookRetriesAfterA500(t *testing.T) {
	w := newWebhook(t, 2)
	cfg := config.Defaults()
	cfg.Notify.Webhook = w.srv.URL
	hub := start(t, cfg)
	hub.Publish(context.Background(), events.Draft{Kind: api.EventNeedsReview, Run: "r1", Data: api.ReviewData{Task: "a"}})
	if m := w.next(t); m.Event != NeedsReview || m.Run != "r1" {
		t.Errorf("message = %+v, want r1's needs-review", m)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tries != 3 {
		t.Errorf("%d requests, want 3 (two 500s, then the 200)", w.tries)
	}
}

// TestCommandGetsTheEventOnStdin: notify.command runs with sh -c and
// the message's JSON on its stdin; a command that fails does not stop the
// next notification, nor the webhook's.
func TestCommandGetsTheEventOnStdin(t *testing.T) {
	w := newWebhook(t, 0)
	out := filepath.Join(t.TempDir(), "got")
	cfg := config.Defaults()
	cfg.Notify.Webhook = w.srv.URL
	// The first run fails (no file yet), each run writes its stdin.
	cfg.Notify.Command = "test -e " + out + "; ok=$?; cat >> " + out + "; echo >> " + out + "; exit $((1-ok))"
	hub := start(t, cfg)
	hub.Publish(context.Background(), events.Draft{Kind: api.EventTaskStuck, Session: "s1", Data: api.TaskData{Task: "loop"}})
	hub.Publish(context.Background(), events.Draft{Kind: api.EventTaskDone, Session: "s2", Data: api.TaskData{Task: "loop"}})
	w.next(t)
	w.next(t)
	// The webhook is sent before the command runs: wait for the second run.
	var lines []string
	if !eventually.Holds(30*time.Second, func() bool {
		b, _ := os.ReadFile(out)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) == 2
	}) {
		t.Fatalf("the command got %d messages, want 2: %q", len(lines), lines)
	}
	for i, want := range []string{Stuck, Done} {
		var m Message
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil || m.Event != want || m.Text == "" {
			t.Errorf("stdin %d = %q (%v), want the %s message", i, lines[i], err, want)
		}
	}
}

// TestASlowWebhookDelaysNoPublishAndLosesNoEvent: while the webhook holds
// its first request, publishing goes on (the hub drops the notifier that
// fell behind, it never waits for it), and once the webhook answers the
// notifier resumes by id and sends every event it had not.
func TestASlowWebhookDelaysNoPublishAndLosesNoEvent(t *testing.T) {
	release := make(chan struct{})
	got := make(chan Message, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var m Message
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("decoding: %v", err)
		}
		if m.ID == 1 {
			<-release
		}
		got <- m
	}))
	defer srv.Close()
	cfg := config.Defaults()
	cfg.Notify.Webhook = srv.URL
	hub := startHub(t, cfg, events.Options{Buffer: 2})
	const n = 20
	for i := range n {
		hub.Publish(context.Background(), events.Draft{Kind: api.EventTaskDone, Session: "s" + string(rune('a'+i)), Data: api.TaskData{Task: "queue"}})
	}
	// Every Publish returned while the webhook still holds event 1.
	close(release)
	for want := uint64(1); want <= n; want++ {
		select {
		case m := <-got:
			if m.ID != want {
				t.Fatalf("notification of event %d, want %d (in order, none lost or twice)", m.ID, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no notification of event %d", want)
		}
	}
}

// TestStaleSessions: a session is reported once per silence: when it goes
// stale, not again while it stays so, and again after it was heard from
// and went quiet once more; sessions that run no workflow or ended are
// never stale.
func TestStaleSessions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	const after = 30 * time.Minute
	rec := func(id string, lastHook time.Time, active bool, ended bool) session.Record {
		r := session.Record{ID: id, Workflow: session.Queue, UpdatedAt: t0, LastHookAt: lastHook}
		if active {
			r.Queue.State = queue.On
		}
		if ended {
			r.EndedAt = lastHook
		}
		return r
	}
	reported := map[string]time.Time{}
	for _, step := range []struct {
		name string
		recs []session.Record
		now  time.Time
		want []string
	}{
		{"all working", []session.Record{rec("a", t0, true, false), rec("b", t0, true, false)}, t0.Add(after), nil},
		{"a and b go quiet; idle and ended ones do not count", []session.Record{rec("a", t0, true, false), rec("b", t0, true, false), rec("idle", t0, false, false), rec("ended", t0, true, true)}, t0.Add(after + time.Second), []string{"a", "b"}},
		{"still quiet: reported already", []session.Record{rec("a", t0, true, false), rec("b", t0, true, false)}, t0.Add(2 * after), nil},
		{"a heard from", []session.Record{rec("a", t0.Add(2*after), true, false), rec("b", t0, true, false)}, t0.Add(2*after + time.Second), nil},
		{"a quiet again", []session.Record{rec("a", t0.Add(2*after), true, false), rec("b", t0, true, false)}, t0.Add(3*after + time.Second), []string{"a"}},
	} {
		var got []string
		for _, r := range StaleSessions(step.recs, step.now, after, reported) {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("%s: stale = %q, want %q", step.name, got, step.want)
		}
	}
}

// TestAStaleSessionIsNotified: the stale check on a ticker sends a
// session that went quiet, once, with the stale word.
func TestAStaleSessionIsNotified(t *testing.T) {
	w := newWebhook(t, 0)
	cfg := config.Defaults()
	cfg.Notify.Webhook = w.srv.URL
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	quiet := session.Record{ID: "s9", Workflow: session.Loop, Loop: loop.State{Active: true}, UpdatedAt: t0, LastHookAt: t0}
	hub, err := events.Open(context.Background(), memStore{}, events.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait := Start(ctx, Options{
		Hub: hub, Config: func() config.Config { return cfg }, Project: "demo",
		Sessions:   func(context.Context) ([]session.Record, error) { return []session.Record{quiet}, nil },
		StaleEvery: time.Millisecond,
		Now:        func() time.Time { return t0.Add(cfg.Status.StaleAfter + time.Minute) },
	})
	defer func() {
		cancel()
		wait()
	}()
	m := w.next(t)
	if m.Event != Stale || m.Kind != KindStale || m.Session != "s9" || m.Text != "drover [demo]: session s9 has sent no hook for a while (stale)" {
		t.Errorf("message = %+v, want s9 stale", m)
	}
	select {
	case m := <-w.got:
		t.Errorf("a second notification %+v: a stale session is reported once", m)
	case <-time.After(50 * time.Millisecond):
	}
}
