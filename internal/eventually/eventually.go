// Package eventually is the tests' one way to wait for something that
// happens in another goroutine or process: poll a condition until it holds
// or a bound passes. The bound only stops a hang; it measures nothing, as
// the machines that run the tests are shared and slow.
package eventually

import (
	"time"
)

// TB is the part of testing.TB that True uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Interval is the first wait between two polls of a condition; each wait
// doubles, up to MaxInterval. A condition that holds soon is seen soon,
// and a long wait on a costly condition (one that runs the CLI) does not
// keep the shared machine busy with polls.
const Interval = 10 * time.Millisecond

// MaxInterval is the longest wait between two polls.
const MaxInterval = 100 * time.Millisecond

// Holds polls cond until it returns true or within has passed, and
// reports whether it held. cond is called once more at the bound, so a
// condition that became true during the last sleep counts.
func Holds(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for wait := Interval; ; wait = min(2*wait, MaxInterval) {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(wait, left))
	}
}

// True is Holds that fails the test, naming what it waited for, when cond
// does not hold within the bound.
func True(t TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Holds(within, cond) {
		t.Fatalf("gave up after %s waiting for %s", within, what)
	}
}
