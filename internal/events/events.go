// Package events is the engine's event stream: every state change the
// engine commits is published here as one api.Event, with a per-project id
// that only grows, kept in a bounded history (in memory and in the store,
// so that a client resumes by id across a supervisor restart) and fanned
// out to subscribers. Publishing never blocks on a subscriber or on the
// store: a subscriber that falls behind is dropped (it resumes by id), and
// the history is written to the store by a goroutine of its own.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// DefaultHistory is how many events are kept when Options.History is 0.
const DefaultHistory = 10000

// DefaultBuffer is a subscriber's buffer when Options.Buffer is 0.
const DefaultBuffer = 1024

// reserveBlock is how many ids the hub reserves in the store at a time:
// ids handed out but whose events a crash kept from the store are never
// handed out again.
const reserveBlock = 1024

// Store keeps the history. AppendEvents adds evs and keeps the last keep
// events; ReserveEventIDs records that ids up to upTo may be in use;
// LoadEvents returns the last keep events, oldest first, and the highest
// id reserved.
type Store interface {
	AppendEvents(ctx context.Context, evs []api.Event, keep int) error
	ReserveEventIDs(ctx context.Context, upTo uint64) error
	LoadEvents(ctx context.Context, keep int) ([]api.Event, uint64, error)
}

// EncodedStore is a Store that takes the events with their JSON already
// encoded (raws[i] is evs[i]'s), so that the hub's one encoding of each
// event is also the one saved.
type EncodedStore interface {
	Store
	AppendEncodedEvents(ctx context.Context, evs []api.Event, raws [][]byte, keep int) error
}

// Encoded is a published event with its JSON encoding (json.Marshal of the
// api.Event), made once for every subscriber and the store by the first
// that asks for it: not by Publish, which is on the path of a decision.
type Encoded struct {
	api.Event
	enc *encoding
}

type encoding struct {
	once sync.Once
	raw  []byte
	err  error
}

func encoded(e api.Event) Encoded { return Encoded{Event: e, enc: &encoding{}} }

// JSON returns json.Marshal of the event, encoded once.
func (e Encoded) JSON() ([]byte, error) {
	e.enc.once.Do(func() {
		e.enc.raw, e.enc.err = json.Marshal(e.Event)
		if e.enc.err != nil {
			e.enc.err = fmt.Errorf("encoding event %d: %w", e.ID, e.enc.err)
		}
	})
	return e.enc.raw, e.enc.err
}

// Draft is an event before it is published: the hub sets its id and time.
type Draft struct {
	Kind    api.EventKind
	Session string
	Run     string
	// Data is the kind's payload, marshalled to JSON.
	Data any
}

// Options configures a Hub.
type Options struct {
	// History is how many events are kept (DefaultHistory when 0).
	History int
	// Buffer is each subscriber's buffer (DefaultBuffer when 0).
	Buffer int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// OnError is told of a failed store write (the history in memory is
	// unaffected); nil ignores it.
	OnError func(error)
}

// Hub publishes events to its subscribers and keeps their history.
type Hub struct {
	st   Store
	opts Options

	mu       sync.Mutex
	next     uint64
	reserved uint64
	ring     []Encoded // the last events, oldest first: opts.History to twice that (see history)
	subs     map[*Subscription]struct{}
	pending  []Encoded
	closed   bool

	wake chan struct{}
	done chan struct{}
}

// Open loads the history from st and starts the hub's writer; Close stops
// it.
func Open(ctx context.Context, st Store, opts Options) (*Hub, error) {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	evs, reserved, err := st.LoadEvents(ctx, opts.History)
	if err != nil {
		return nil, fmt.Errorf("loading the event history: %w", err)
	}
	ring := make([]Encoded, len(evs))
	for i, e := range evs {
		ring[i] = encoded(e)
	}
	h := &Hub{st: st, opts: opts, ring: ring, reserved: reserved, subs: map[*Subscription]struct{}{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.next = reserved + 1
	if n := len(evs); n > 0 && evs[n-1].ID >= h.next {
		h.next = evs[n-1].ID + 1
	}
	go h.write()
	return h, nil
}

// Publish gives each draft the next id and the time, adds it to the
// history and sends it to every subscriber, in order. It never waits for
// a subscriber; it waits for the store only once every reserveBlock ids.
func (h *Hub) Publish(ctx context.Context, drafts ...Draft) {
	if h == nil || len(drafts) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if last := h.next + uint64(len(drafts)) - 1; last > h.reserved {
		upTo := last + reserveBlock
		if err := h.st.ReserveEventIDs(ctx, upTo); err != nil {
			h.fail(fmt.Errorf("reserving event ids: %w", err))
		} else {
			h.reserved = upTo
		}
	}
	now := h.opts.Now()
	for _, d := range drafts {
		e := api.Event{ID: h.next, Kind: d.Kind, Session: d.Session, Run: d.Run, Time: now}
		if d.Data != nil {
			raw, err := json.Marshal(d.Data)
			if err != nil {
				h.fail(fmt.Errorf("encoding a %s event: %w", d.Kind, err))
				continue
			}
			e.Data = raw
		}
		// Encoded once, for every subscriber and the store, rather than
		// once by each of them.
		enc := encoded(e)
		h.next++
		h.ring = append(h.ring, enc)
		h.pending = append(h.pending, enc)
		for s := range h.subs {
			if !s.send(enc) {
				// Fallen behind: dropped, it resumes by id.
				h.drop(s)
			}
		}
	}
	// The ring grows to twice the history before its oldest half is
	// dropped: a copy of the whole history on every publish would cost
	// each decision far more than the event.
	if len(h.ring) > 2*h.opts.History {
		h.ring = append(h.ring[:0:0], h.ring[len(h.ring)-h.opts.History:]...)
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *Hub) fail(err error) {
	if h.opts.OnError != nil {
		h.opts.OnError(err)
	}
}

// write appends the pending events to the store until Close.
func (h *Hub) write() {
	defer close(h.done)
	for {
		_, open := <-h.wake
		h.mu.Lock()
		batch := h.pending
		h.pending = nil
		h.mu.Unlock()
		if len(batch) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := h.save(ctx, batch); err != nil {
				h.fail(fmt.Errorf("saving %d events: %w", len(batch), err))
			}
			cancel()
		}
		if !open {
			return
		}
	}
}

// save appends batch to the store, with its JSON when the store takes it.
func (h *Hub) save(ctx context.Context, batch []Encoded) error {
	evs := plain(batch)
	es, ok := h.st.(EncodedStore)
	if !ok {
		return h.st.AppendEvents(ctx, evs, h.opts.History)
	}
	raws := make([][]byte, len(batch))
	for i, e := range batch {
		raw, err := e.JSON()
		if err != nil {
			return err
		}
		raws[i] = raw
	}
	return es.AppendEncodedEvents(ctx, evs, raws, h.opts.History)
}

// Close ends every subscription, writes what is pending to the store and
// stops the writer. Nothing is published after it.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for s := range h.subs {
		h.drop(s)
	}
	close(h.wake)
	last := h.next - 1
	h.mu.Unlock()
	<-h.done
	// A clean stop gives back the ids reserved but not used, so that the
	// next supervisor's ids follow on; only a crash leaves a gap.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.st.ReserveEventIDs(ctx, last); err != nil {
		h.fail(fmt.Errorf("releasing event ids: %w", err))
	}
}

// Subscription is one subscriber: C (or, for SubscribeEncoded, Encoded)
// carries the events after the backlog; it is closed when the subscriber
// fell behind, or the hub closed.
type Subscription struct {
	h   *Hub
	c   chan api.Event
	enc chan Encoded
	// C carries the events published after Subscribe returned.
	C <-chan api.Event
	// Encoded carries the events published after SubscribeEncoded
	// returned, with their JSON.
	Encoded <-chan Encoded
}

// send queues e without waiting; false when the buffer is full.
func (s *Subscription) send(e Encoded) bool {
	if s.enc != nil {
		select {
		case s.enc <- e:
			return true
		default:
			return false
		}
	}
	select {
	case s.c <- e.Event:
		return true
	default:
		return false
	}
}

// end closes s's channel.
func (s *Subscription) end() {
	if s.enc != nil {
		close(s.enc)
		return
	}
	close(s.c)
}

// Subscribe returns the events of the history after since, oldest first,
// and a subscription to those published from now on; gap is set when
// events after since have left the history already (the client missed
// them for good).
func (h *Hub) Subscribe(since uint64) (backlog []api.Event, sub *Subscription, gap bool) {
	c := make(chan api.Event, h.opts.Buffer)
	enc, sub, gap := h.subscribe(&Subscription{h: h, c: c, C: c}, since)
	return plain(enc), sub, gap
}

// SubscribeEncoded is Subscribe with each event's JSON: the backlog's and
// those sub.Encoded (not sub.C) carries.
func (h *Hub) SubscribeEncoded(since uint64) (backlog []Encoded, sub *Subscription, gap bool) {
	c := make(chan Encoded, h.opts.Buffer)
	return h.subscribe(&Subscription{h: h, enc: c, Encoded: c}, since)
}

func (h *Hub) subscribe(sub *Subscription, since uint64) (backlog []Encoded, _ *Subscription, gap bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		sub.end()
		return nil, sub, false
	}
	ring := h.history()
	backlog = after(ring, since)
	// The history no longer reaches back to since.
	gap = since > 0 && len(ring) > 0 && ring[0].ID > since+1
	h.subs[sub] = struct{}{}
	return backlog, sub, gap
}

// Recent returns the events of the history, oldest first, without
// subscribing: a page that shows them and follows the stream by id later
// needs no subscription of its own.
func (h *Hub) Recent() []api.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return plain(h.history())
}

// plain returns the events of enc without their JSON.
func plain(enc []Encoded) []api.Event {
	evs := make([]api.Event, len(enc))
	for i, e := range enc {
		evs[i] = e.Event
	}
	return evs
}

// history returns the last opts.History events; h.mu is held.
func (h *Hub) history() []Encoded {
	return h.ring[max(0, len(h.ring)-h.opts.History):]
}

// after returns the events of evs (sorted by id) whose id is above since.
func after(evs []Encoded, since uint64) []Encoded {
	i := sort.Search(len(evs), func(i int) bool { return evs[i].ID > since })
	return append([]Encoded(nil), evs[i:]...)
}

// drop ends s; h.mu is held.
func (h *Hub) drop(s *Subscription) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.end()
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.drop(s)
}

// LastID returns the id of the last event published (0 for none).
func (h *Hub) LastID() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next - 1
}

// Closed reports whether Close was called: a subscriber whose channel
// closed resubscribes only while the hub is open.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
