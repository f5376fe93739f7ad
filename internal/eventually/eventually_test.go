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
