package reviewer

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Limiter caps how many reviewer processes run at once. One Limiter is
// shared by every session of a supervisor, so that ten sessions reviewing at
// the same moment do not start ten reviewers on a small machine. Its size
// can change while it is in use (a config reload of review.max_parallel);
// callers waiting for a slot get one in the order they asked.
//
// A nil *Limiter imposes no limit.
type Limiter struct {
	mu    sync.Mutex
	size  int
	inUse int
	// waiters are the Acquires waiting for a slot, first come first; a
	// waiter's channel is closed when it is granted one.
	waiters []chan struct{}
}

// NewLimiter returns a Limiter with n slots; n below 1 is taken as 1.
func NewLimiter(n int) *Limiter {
	return &Limiter{size: max(n, 1)}
}

// Acquire waits for a free slot or for ctx to be done, whichever is first.
// Every successful Acquire must be paired with one Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	// A done context wins over a free slot, so that a cancelled caller
	// never starts a process.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reviewer limiter: %w", err)
	}
	l.mu.Lock()
	if l.inUse < l.size && len(l.waiters) == 0 {
		l.inUse++
		l.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w:
		// Granted while giving up: hand the slot on.
		l.inUse--
		l.grant()
	default:
		l.waiters = slices.DeleteFunc(l.waiters, func(c chan struct{}) bool { return c == w })
	}
	return fmt.Errorf("reviewer limiter: %w", ctx.Err())
}

// Release frees a slot taken by Acquire.
func (l *Limiter) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// More releases than acquires is a caller bug; ignoring it keeps the
	// limit from growing past its size.
	if l.inUse > 0 {
		l.inUse--
	}
	l.grant()
}

// Resize sets the number of slots; n below 1 is taken as 1. Growing lets
// waiters in at once; shrinking takes effect as the runs in progress
// release their slots (none is stopped).
func (l *Limiter) Resize(n int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.size = max(n, 1)
	l.grant()
}

// grant gives free slots to the waiters, first come first; l.mu is held.
func (l *Limiter) grant() {
	for l.inUse < l.size && len(l.waiters) > 0 {
		close(l.waiters[0])
		l.waiters = l.waiters[1:]
		l.inUse++
	}
}

// InUse reports how many slots are taken.
func (l *Limiter) InUse() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse
}

// Size reports the number of slots (0 for a nil Limiter: no limit).
func (l *Limiter) Size() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}
