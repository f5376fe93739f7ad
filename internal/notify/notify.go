// Package notify tells a user who is not looking that something needs
// them: it follows the engine's event stream (internal/events) as one
// more subscriber, keeps the events whose notify.on word the user asked
// for, and sends each to notify.webhook (a JSON POST, with a Slack
// text field) and to notify.command (the JSON on its stdin).
//
// Nothing here is on a hook's path: the hub never waits for a subscriber,
// so a slow or unreachable webhook only makes this subscriber fall behind,
// and a subscriber that falls behind is dropped by the hub and resumes
// from the history by id.
package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/session"
)

// The notify.on words.
const (
	Done        = "done"
	Stuck       = "stuck"
	NeedsReview = "needs-review"
	Budget      = "budget"
	ReviewFail  = "review-fail"
	Stale       = "stale"
)

// KindStale is the Kind of a stale session's message. No event of the
// stream says a session went quiet (nothing was committed): the notifier
// finds it with session.Health on a ticker, and its message has no id.
const KindStale api.EventKind = "session.stale"

// StaleSessions returns the sessions of recs that are stale at now (see
// session.Health) and were not reported for the silence they are in yet.
// reported maps a session to the LastSeen it was reported at; it is
// updated, and forgets sessions that are no longer stale, so that a
// session heard from again is reported again at its next silence.
func StaleSessions(recs []session.Record, now time.Time, staleAfter time.Duration, reported map[string]time.Time) []session.Record {
	var out []session.Record
	stale := map[string]bool{}
	for _, r := range recs {
		if r.Health(now, staleAfter) != session.Stale {
			continue
		}
		stale[r.ID] = true
		if seen, ok := reported[r.ID]; ok && seen.Equal(r.LastSeen()) {
			continue
		}
		reported[r.ID] = r.LastSeen()
		out = append(out, r)
	}
	for id := range reported {
		if !stale[id] {
			delete(reported, id)
		}
	}
	return out
}

// Word returns the notify.on word of e, if it is one a user is told of.
// A run's own tasks that end are part of the run: the run's end is the
// news (done, or stuck when it failed), not each task's done; a run task
// that failed is stuck at once.
func Word(e api.Event) (string, bool) {
	switch e.Kind {
	case api.EventTaskDone:
		if e.Run != "" {
			return "", false
		}
		return Done, true
	case api.EventTaskStuck:
		return Stuck, true
	case api.EventNeedsReview:
		return NeedsReview, true
	case api.EventBudgetReached:
		return Budget, true
	case api.EventRunState:
		var d api.RunStateData
		if json.Unmarshal(e.Data, &d) != nil {
			return "", false
		}
		switch api.RunState(d.State) {
		case api.RunDone:
			return Done, true
		case api.RunFailed:
			return Stuck, true
		}
	case api.EventReviewFinished:
		var d api.ReviewData
		if json.Unmarshal(e.Data, &d) == nil && strings.EqualFold(d.Verdict, "fail") {
			return ReviewFail, true
		}
	}
	return "", false
}

// Message is what a notification sends: the JSON body of the webhook's
// POST and the command's stdin.
type Message struct {
	// Text is one line for a person; Slack's incoming webhooks show it.
	Text string `json:"text"`
	// Event is the notify.on word.
	Event   string        `json:"event"`
	Project string        `json:"project,omitempty"`
	ID      uint64        `json:"id"`
	Kind    api.EventKind `json:"kind"`
	Session string        `json:"session,omitempty"`
	Run     string        `json:"run,omitempty"`
	Time    time.Time     `json:"time"`
	// Data is the event's payload (api.EventKind's doc says which).
	Data json.RawMessage `json:"data,omitempty"`
}

// NewMessage returns the message of e, whose word is word, in project
// (the project's name, not its path).
func NewMessage(word, project string, e api.Event) Message {
	return Message{Text: text(word, project, e), Event: word, Project: project, ID: e.ID, Kind: e.Kind, Session: e.Session, Run: e.Run, Time: e.Time, Data: e.Data}
}

// text is the line a person reads: what happened, where.
func text(word, project string, e api.Event) string {
	var b strings.Builder
	b.WriteString("drover")
	if project != "" {
		fmt.Fprintf(&b, " [%s]", project)
	}
	b.WriteString(": ")
	switch {
	case e.Run != "":
		fmt.Fprintf(&b, "run %s", e.Run)
	case e.Session != "":
		fmt.Fprintf(&b, "session %s", e.Session)
	default:
		b.WriteString("project")
	}
	what := map[string]string{Done: "is done", Stuck: "is stuck", NeedsReview: "needs your review", Budget: "reached its budget", ReviewFail: "failed a review", Stale: "has sent no hook for a while (stale)"}[word]
	fmt.Fprintf(&b, " %s", what)
	var d struct {
		Task    string  `json:"task"`
		What    string  `json:"what"`
		Plan    string  `json:"plan"`
		CostUSD float64 `json:"cost_usd"`
	}
	_ = json.Unmarshal(e.Data, &d)
	if name := cmp.Or(d.Task, d.What, d.Plan); name != "" {
		fmt.Fprintf(&b, " (%s)", name)
	}
	if d.CostUSD > 0 {
		fmt.Fprintf(&b, ", $%.2f spent", d.CostUSD)
	}
	return b.String()
}

// Hub is what the notifier follows: internal/events's Hub.
type Hub interface {
	Subscribe(since uint64) ([]api.Event, *events.Subscription, bool)
	LastID() uint64
}

// Options configures a notifier.
type Options struct {
	Hub Hub
	// Config is read at each event, so that a reloaded notify.* applies
	// to the next one.
	Config func() config.Config
	// Project is the project's name for the text (never its path).
	Project string
	// Dir is notify.command's working directory (the project root).
	Dir string
	// OwnerTag is the supervisor's watchdog tag for the command.
	OwnerTag string
	Log      *zap.Logger
	// Client sends the webhook's requests (a default client when nil).
	Client *http.Client
	// Attempts is how many times a webhook POST is tried (3 when 0);
	// Backoff is the wait after the first failure, doubled after each
	// (1s when 0).
	Attempts int
	Backoff  time.Duration
	// Resubscribe is the wait before following the stream again after
	// the hub dropped the notifier (100ms when 0).
	Resubscribe time.Duration
	// Sessions lists the project's sessions, for the stale check; nil
	// checks none. StaleEvery is how often it runs (30s when 0), and Now
	// the clock (time.Now when nil).
	Sessions   func(ctx context.Context) ([]session.Record, error)
	StaleEvery time.Duration
	Now        func() time.Time
}

// Start follows opts.Hub from its next event until ctx ends, and returns
// a function that waits for that.
func Start(ctx context.Context, opts Options) (wait func()) {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.Resubscribe <= 0 {
		opts.Resubscribe = 100 * time.Millisecond
	}
	if opts.StaleEvery <= 0 {
		opts.StaleEvery = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	n := &notifier{opts: opts}
	since := opts.Hub.LastID()
	var wg sync.WaitGroup
	wg.Go(func() { n.follow(ctx, since) })
	if opts.Sessions != nil {
		wg.Go(func() { n.watchStale(ctx) })
	}
	return wg.Wait
}

// watchStale reports the sessions that went stale, every StaleEvery,
// until ctx ends.
func (n *notifier) watchStale(ctx context.Context) {
	reported := map[string]time.Time{}
	t := time.NewTicker(n.opts.StaleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cfg := n.opts.Config()
		if cfg.Status.StaleAfter <= 0 {
			continue
		}
		recs, err := n.opts.Sessions(ctx)
		if err != nil {
			n.opts.Log.Warn("notifications: listing sessions for the stale check", zap.Error(err))
			continue
		}
		now := n.opts.Now()
		for _, r := range StaleSessions(recs, now, cfg.Status.StaleAfter, reported) {
			data, _ := json.Marshal(api.SessionData{Workflow: string(r.Workflow)})
			n.send(ctx, Stale, api.Event{Kind: KindStale, Session: r.ID, Time: now, Data: data})
		}
	}
}

type notifier struct {
	opts Options
}

// follow handles every event after since until ctx ends. When the hub
// drops it (it fell behind while a webhook was slow) it waits a moment and
// subscribes again after the last event it handled: the history gives it
// what it missed, or says that some left the history.
func (n *notifier) follow(ctx context.Context, since uint64) {
	for ctx.Err() == nil {
		backlog, sub, gap := n.opts.Hub.Subscribe(since)
		if gap {
			n.opts.Log.Warn("notifications: some events left the history before they were sent (events.history)", zap.Uint64("after", since))
		}
		for _, e := range backlog {
			n.handle(ctx, e)
			since = e.ID
		}
		since = n.drain(ctx, sub, since)
		sub.Close()
		t := time.NewTimer(n.opts.Resubscribe)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// drain handles sub's events until it is closed or ctx ends, and returns
// the id of the last one handled.
func (n *notifier) drain(ctx context.Context, sub *events.Subscription, since uint64) uint64 {
	for {
		select {
		case <-ctx.Done():
			return since
		case e, ok := <-sub.C:
			if !ok {
				return since
			}
			n.handle(ctx, e)
			since = e.ID
		}
	}
}

// handle sends e if the user asked for its word.
func (n *notifier) handle(ctx context.Context, e api.Event) {
	if word, ok := Word(e); ok {
		n.send(ctx, word, e)
	}
}

// send sends e, whose word is word, if the user asked for that word.
func (n *notifier) send(ctx context.Context, word string, e api.Event) {
	cfg := n.opts.Config()
	nc := cfg.Notify
	if (nc.Webhook == "" && nc.Command == "") || !slices.Contains(cfg.NotifyOn(), word) {
		return
	}
	body, err := json.Marshal(NewMessage(word, n.opts.Project, e))
	if err != nil {
		n.opts.Log.Warn("notifications: encoding", zap.Uint64("event", e.ID), zap.Error(err))
		return
	}
	if nc.Webhook != "" {
		if err := n.post(ctx, nc.Webhook, nc.Timeout, body); err != nil {
			// The URL may hold a token: only its host is logged.
			n.opts.Log.Warn("notifications: webhook", zap.String("host", host(nc.Webhook)), zap.Uint64("event", e.ID), zap.String("notify", word), zap.Error(err))
		}
	}
	if nc.Command != "" {
		res, err := proc.Shell(ctx, nc.Command, proc.Cmd{Dir: n.opts.Dir, Stdin: bytes.NewReader(body), Timeout: nc.Timeout, OwnerTag: n.opts.OwnerTag, OutputCap: 4096})
		if err != nil {
			n.opts.Log.Warn("notifications: notify.command", zap.Uint64("event", e.ID), zap.String("notify", word), zap.Int("exit", res.ExitCode), zap.Error(err))
		}
	}
}

// post POSTs body to u, trying opts.Attempts times with a doubling wait
// while the failure may pass (no answer, a 5xx, a 429). Its error never
// holds the URL.
func (n *notifier) post(ctx context.Context, u string, timeout time.Duration, body []byte) error {
	wait := n.opts.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		var retry bool
		retry, err = n.postOnce(ctx, u, timeout, body)
		if err == nil || !retry || attempt >= n.opts.Attempts {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %d attempts)", ctx.Err(), attempt)
		case <-t.C:
		}
		wait *= 2
	}
	return err
}

// postOnce makes one POST; retry says whether another might succeed.
func (n *notifier) postOnce(ctx context.Context, u string, timeout time.Duration, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("the webhook URL does not parse")
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := n.opts.Client.Do(req)
	if err != nil {
		// A *url.Error names the URL, token and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, fmt.Errorf("posting: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 {
		return false, nil
	}
	return res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests, fmt.Errorf("the webhook answered %s", res.Status)
}

// host is u's host, what the log may say of a webhook.
func host(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	return p.Host
}
