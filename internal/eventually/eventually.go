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

// Interval is how often a condition is polled.
const Interval = 10 * time.Millisecond

// Holds polls cond every Interval until it returns true or within has
// passed, and reports whether it held. cond is called once more at the
// bound, so a condition that became true during the last sleep counts.
func Holds(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(Interval)
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
