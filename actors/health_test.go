package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A working session goes stale when it sends no hook for longer than
// status.stale_after (30m by default), any hook makes it working again,
// even one whose decision changes nothing, and SessionEnd marks it ended
// until a resumed session sends a hook; SessionEnd leaves the workflow as
// it was. The record keeps the times, so a new actor shows the same.
func TestSessionHealth(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f := newFixture(t, SessionsOptions{}, func(e *Env) { e.Now = clock.now })
	health := func(id string) string {
		t.Helper()
		res := f.ask(id, &StatusQuery{}).(*StatusResult)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		return res.Status.Health
	}
	send := func(id string, e hook.Event, in hook.Input) {
		t.Helper()
		in.SessionID = id
		if res := f.ask(id, &HandleHook{Event: e, Input: in}).(*HookResult); res.Err != nil {
			t.Fatalf("%s: %v", e, res.Err)
		}
	}
	f.add("s1", "a task")
	if r := f.command("s1", "start"); r.Err != nil {
		t.Fatal(r.Err)
	}
	steps := []struct {
		name string
		do   func()
		want session.Health
	}{
		{"queue started", func() {}, session.Working},
		{"silent 29m", func() { clock.advance(29 * time.Minute) }, session.Working},
		{"silent 31m", func() { clock.advance(2 * time.Minute) }, session.Stale},
		// UserPromptSubmit of a queue changes nothing but the hook time.
		{"a prompt", func() { send("s1", hook.UserPromptSubmit, hook.Input{Prompt: "go on"}) }, session.Working},
		{"silent again", func() { clock.advance(31 * time.Minute) }, session.Stale},
		{"a stop", func() { send("s1", hook.Stop, hook.Input{}) }, session.Working},
		{"session end", func() { send("s1", hook.SessionEnd, hook.Input{}) }, session.Ended},
		{"ended stays ended", func() { clock.advance(2 * time.Hour) }, session.Ended},
		{"resumed", func() { send("s1", hook.SessionStart, hook.Input{Source: "resume"}) }, session.Working},
	}
	for _, s := range steps {
		s.do()
		if got := health("s1"); got != string(s.want) {
			t.Fatalf("after %s: health %q, want %q", s.name, got, s.want)
		}
	}
	rec, st, err := f.store.Load(context.Background(), "s1")
	if err != nil || st != store.Found {
		t.Fatalf("loading s1: %v %v", st, err)
	}
	if !rec.LastHookAt.Equal(clock.now()) || !rec.EndedAt.IsZero() || !rec.Active() {
		t.Errorf("stored record: last hook %v ended %v active %v, want last hook %v, not ended, active", rec.LastHookAt, rec.EndedAt, rec.Active(), clock.now())
	}

	// A prompt within a tenth of stale_after (30m by default) of the
	// stored hook time is not saved again: a burst of prompts costs one
	// fsync, and the stored time stays the first one's.
	first := clock.now()
	clock.advance(10 * time.Second)
	send("s1", hook.UserPromptSubmit, hook.Input{Prompt: "and again"})
	if rec, _, err := f.store.Load(context.Background(), "s1"); err != nil || !rec.LastHookAt.Equal(first) {
		t.Errorf("after a prompt 10s later: stored last hook %v (%v), want %v kept", rec.LastHookAt, err, first)
	}
	clock.advance(3 * time.Minute)
	send("s1", hook.UserPromptSubmit, hook.Input{Prompt: "later"})
	if rec, _, err := f.store.Load(context.Background(), "s1"); err != nil || !rec.LastHookAt.Equal(clock.now()) {
		t.Errorf("after a prompt 3m later: stored last hook %v (%v), want %v", rec.LastHookAt, err, clock.now())
	}

	// A session that runs no workflow is idle, and ended after its
	// SessionEnd.
	f.add("s2", "never started")
	send("s2", hook.Stop, hook.Input{})
	if got := health("s2"); got != string(session.Idle) {
		t.Errorf("idle session: health %q", got)
	}
	send("s2", hook.SessionEnd, hook.Input{})
	if got := health("s2"); got != string(session.Ended) {
		t.Errorf("idle session after SessionEnd: health %q", got)
	}
}
