package supervisor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/hook"
)

// askHook asks the session for the decision on hook m. A Stop the
// session may hold (m.Hold) is let go (actors.ReleaseHold) when its hook
// client goes away meanwhile (ctx ends: the hook was killed, the user
// interrupted the agent), the supervisor starts to stop, or it is given up
// on at the Stop budget (below): it is answered
// with what was committed, and the review's answer is kept for the next
// Stop instead of going to nobody.
//
// The hook client waits its Stop budget plus the hold, since it cannot tell
// a held Stop from a session that does not answer; the session says when
// it holds (HandleHook.OnHold), so a session that neither answers nor
// holds within the Stop budget is given up on here, as the client would
// have without a hold.
func (s *Server) askHook(ctx context.Context, id string, m *actors.HandleHook, timeout time.Duration) (any, error) {
	if m.Hold <= 0 {
		return s.askFor(id, m, timeout)
	}
	release := func() {
		s.system.Root.Send(s.root, &actors.ToSession{SessionID: id, Msg: &actors.ReleaseHold{RequestID: m.RequestID}})
	}
	held := make(chan struct{})
	var once sync.Once
	// gone is set once nobody waits for the hold: a session that holds
	// the Stop only after that (its ReleaseHold came first, or the Stop
	// was given up on before it was decided) is told to let go at once,
	// or the review's answer would go to nobody.
	var gone atomic.Bool
	m.OnHold = func() {
		if gone.Load() {
			release()
			return
		}
		once.Do(func() { close(held) })
	}
	giveUp := func() {
		gone.Store(true)
		release()
	}
	type reply struct {
		res any
		err error
	}
	// Buffered: the reply of a session given up on is dropped.
	ch := make(chan reply, 1)
	go func() {
		res, err := s.askFor(id, m, timeout)
		ch <- reply{res, err}
	}()
	undecided := time.NewTimer(s.cfg.Load().Budget(hook.Stop))
	defer undecided.Stop()
	wait := undecided.C
	for {
		select {
		case r := <-ch:
			return r.res, r.err
		case <-held:
			held, wait = nil, nil
		case <-wait:
			giveUp()
			return nil, fmt.Errorf("asking session %s: no decision within the Stop budget", id)
		case <-ctx.Done():
			giveUp()
			r := <-ch
			return r.res, r.err
		case <-s.draining:
			giveUp()
			r := <-ch
			return r.res, r.err
		}
	}
}
