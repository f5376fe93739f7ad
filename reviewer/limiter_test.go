package reviewer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
)

// waiting reports how many Acquires wait on l.
func (l *Limiter) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// acquireAsync starts an Acquire on l and returns the channel its error
// comes back on, once it waits (or holds a slot).
func acquireAsync(t *testing.T, ctx context.Context, l *Limiter) <-chan error {
	t.Helper()
	before := l.waiting()
	done := make(chan error, 1)
	go func() { done <- l.Acquire(ctx) }()
	// It queues, or it holds a slot at once.
	eventually.True(t, 10*time.Second, "the Acquire to queue", func() bool {
		if l.waiting() != before {
			return true
		}
		select {
		case err := <-done:
			done <- err
			return true
		default:
			return false
		}
	})
	return done
}

func granted(c <-chan error) bool {
	select {
	case err := <-c:
		return err == nil
	default:
		return false
	}
}

func TestLimiterResize(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(1)
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := acquireAsync(t, ctx, l), acquireAsync(t, ctx, l)

	// Growing lets both waiters in at once.
	l.Resize(3)
	if err, err2 := <-a, <-b; err != nil || err2 != nil {
		t.Fatalf("after growing to 3: %v, %v", err, err2)
	}
	if l.InUse() != 3 || l.Size() != 3 {
		t.Fatalf("in use %d of %d, want 3 of 3", l.InUse(), l.Size())
	}

	// Shrinking stops no run: the next waiter gets in once the runs in
	// progress are down below the new size.
	l.Resize(1)
	l.Release()
	c := acquireAsync(t, ctx, l)
	l.Release()
	if granted(c) || l.InUse() != 1 {
		t.Fatalf("a slot was granted above the new size (in use %d)", l.InUse())
	}
	l.Release()
	if err := <-c; err != nil || l.InUse() != 1 {
		t.Fatalf("after the runs drained: %v, in use %d", err, l.InUse())
	}

	l.Resize(0)
	if l.Size() != 1 {
		t.Errorf("Resize(0) left %d slots, want 1", l.Size())
	}
	var nilL *Limiter
	nilL.Resize(5)
}

func TestLimiterFirstComeFirstServed(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(1)
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first := acquireAsync(t, ctx, l)
	second := acquireAsync(t, ctx, l)
	l.Release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if granted(second) {
		t.Fatal("the second waiter got the slot too")
	}
	l.Release()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

func TestLimiterWaiterGivesUp(t *testing.T) {
	l := NewLimiter(1)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := acquireAsync(t, ctx, l)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiter: %v", err)
	}
	if l.waiting() != 0 {
		t.Errorf("%d waiters left after the only one gave up", l.waiting())
	}
	l.Release()
	if l.InUse() != 0 {
		t.Errorf("the slot went to a waiter that gave up: %d in use", l.InUse())
	}
}
