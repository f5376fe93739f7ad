package reviewer

import (
	"context"
	"fmt"
)

// Limiter caps how many reviewer processes run at once. One Limiter is
// shared by every session of a supervisor, so that ten sessions reviewing at
// the same moment do not start ten reviewers on a small machine.
//
// A nil *Limiter imposes no limit.
type Limiter struct {
	slots chan struct{}
}

// NewLimiter returns a Limiter with n slots; n below 1 is taken as 1.
func NewLimiter(n int) *Limiter {
	if n < 1 {
		n = 1
	}
	return &Limiter{slots: make(chan struct{}, n)}
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
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reviewer limiter: %w", ctx.Err())
	}
}

// Release frees a slot taken by Acquire.
func (l *Limiter) Release() {
	if l == nil {
		return
	}
	select {
	case <-l.slots:
	default:
		// More releases than acquires is a caller bug; ignoring it keeps
		// the limit from growing past its size.
	}
}

// InUse reports how many slots are taken.
func (l *Limiter) InUse() int {
	if l == nil {
		return 0
	}
	return len(l.slots)
}

// Size reports the number of slots (0 for a nil Limiter: no limit).
func (l *Limiter) Size() int {
	if l == nil {
		return 0
	}
	return cap(l.slots)
}
