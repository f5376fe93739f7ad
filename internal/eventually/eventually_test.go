package eventually

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct {
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestHolds(t *testing.T) {
	var n atomic.Int32
	if !Holds(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("a condition true on the third poll did not hold")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("polled %d times, want 3 (it must stop once the condition holds)", got)
	}
	if Holds(30*time.Millisecond, func() bool { return false }) {
		t.Error("a condition that never holds held")
	}
}

func TestTrueNamesWhatItWaitedFor(t *testing.T) {
	var r recorder
	True(&r, 20*time.Millisecond, "the review file", func() bool { return false })
	if r.failed != "gave up after 20ms waiting for the review file" {
		t.Errorf("failure = %q", r.failed)
	}
	r = recorder{}
	True(&r, time.Second, "nothing", func() bool { return true })
	if r.failed != "" {
		t.Errorf("a held condition failed the test: %q", r.failed)
	}
}

func TestHoldsChecksAtTheBound(t *testing.T) {
	start := time.Now()
	calls := 0
	// True only once the bound has passed: the final call must see it.
	ok := Holds(25*time.Millisecond, func() bool {
		calls++
		return time.Since(start) >= 25*time.Millisecond
	})
	if !ok {
		t.Errorf("the condition true at the bound was not seen (%d calls)", calls)
	}
}

// TestHoldsBacksOff: the polls of a long wait thin out to one per
// MaxInterval, and it does not give up before the bound.
func TestHoldsBacksOff(t *testing.T) {
	const within = 600 * time.Millisecond
	start := time.Now()
	var calls int
	if Holds(within, func() bool { calls++; return false }) {
		t.Fatal("a condition that never holds held")
	}
	// 10, 20, 40, 80ms, then 100ms waits: 10 polls and the one at the
	// bound. Polling every Interval would be about 60.
	if calls > 15 {
		t.Errorf("%d polls in %s, want at most 15", calls, within)
	}
	if took := time.Since(start); took < within {
		t.Errorf("Holds gave up after %s, before the bound %s", took, within)
	}
}
