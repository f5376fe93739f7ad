package convergence

import (
	"strings"
	"testing"
)

// FuzzParseOutput feeds arbitrary command output to every parser: no panic,
// no negative counts, totals that add up.
func FuzzParseOutput(f *testing.F) {
	f.Add("ok  \texample.com/calc\t0.002s")
	f.Fuzz(func(t *testing.T, out string) {
		if r, ok := ParseTestSummary(out); ok {
			if r.Passed < 0 || r.Failed < 0 || r.Skipped < 0 || r.Total < 0 || r.Framework == "" {
				t.Errorf("summary %+v", r)
			}
			if pr := r.PassRate(); pr != -1 && (pr < 0 || pr > 1) {
				t.Errorf("pass rate %v", pr)
			}
		} else if r != (TestResult{}) {
			t.Errorf("no summary but %+v", r)
		}
		if b, ok := ParseBuild(out); b.Errors < 0 || ok != (b.Failed || b.Errors > 0) {
			t.Errorf("build %+v %v", b, ok)
		}
		if l, ok := ParseLint(out); l.Issues < 0 || ok != (l.Tool != "") {
			t.Errorf("lint %+v %v", l, ok)
		}
		ff := FirstFailure(out)
		if len(ff) > maxFailure {
			t.Errorf("first failure of %d bytes", len(ff))
		}
		_ = ClassifyCommand(out)
	})
}

// FuzzErrorHash: hashing is deterministic, and a failure has a hash exactly
// when something is left of it after normalizing.
func FuzzErrorHash(f *testing.F) {
	f.Add("--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: got 5")
	f.Fuzz(func(t *testing.T, s string) {
		h := ErrorHash(s)
		if h != ErrorHash(s) {
			t.Fatal("not deterministic")
		}
		n := NormalizeFailure(s)
		if (h == "") != (n == "") {
			t.Errorf("hash %q for normalized %q", h, n)
		}
		if strings.TrimSpace(s) == "" && h != "" {
			t.Errorf("blank input hashed to %q", h)
		}
	})
}
