package router

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRouteOutcomeWordsGolden routes the outcome words seed 004's tooling
// writes (test_fail and its pass/fail counterparts for tests, build and
// lint) through ParseInput and the default rules, and shows what is still
// refused, each error naming its field. The table is
// testdata/outcome_words.golden (go test ./router -run Golden -update).
func TestRouteOutcomeWordsGolden(t *testing.T) {
	inputs := []struct{ phase, outcome, status string }{
		// Seed 004's routing cases.
		{"initial", "", ""},
		{"implementing", "test_fail", ""},
		{"implementing", "test_fail", "stuck_plateau"},
		// Its tooling's counterparts.
		{"implementing", "test_pass", ""},
		{"implementing", "build_fail", ""},
		{"implementing", "build_pass", ""},
		{"implementing", "lint_fail", ""},
		{"implementing", "lint_pass", ""},
		{"implementing", "lint_fail", "thrashing"},
		// Spellings of the same words.
		{"iterating", "tests_passed", ""},
		{"iterating", "Tests-Failed", ""},
		{"iterating", "test_failure", ""},
		{"iterating", "build_failure", ""},
		{"iterating", "build_error", ""},
		{"iterating", "build_success", ""},
		{"iterating", "lint failed", ""},
		{"iterating", "lint_ok", ""},
		{"iterating", "pass", ""},
		// drover's own words.
		{"iterating", "none", ""},
		{"iterating", "ok", "converged_success"},
		{"iterating", "tests_failed", "exploring"},
		{"iterating", "build_failed", ""},
		{"iterating", "lint_failed", ""},
		// Not outcomes: refused, naming the field.
		{"implementing", "test_flaky", ""},
		{"implementing", "deploy_fail", ""},
		{"implementing", "fail", ""},
		{"implementing", "lint", ""},
		{"implementing", "test_fail_pass", ""},
		{"testing", "test_pass", ""},
		{"implementing", "build_pass", "stuck"},
		{"", "lint_fail", ""},
	}
	var out bytes.Buffer
	for _, in := range inputs {
		fmt.Fprintf(&out, "phase=%q last_outcome=%q convergence_status=%q\n", in.phase, in.outcome, in.status)
		parsed, err := ParseInput(in.phase, in.outcome, in.status)
		if err != nil {
			fmt.Fprintf(&out, "  refused: %v\n", err)
			continue
		}
		role, rule := Route(DefaultRules(), parsed)
		fmt.Fprintf(&out, "  read as phase=%s last_outcome=%s status=%s\n  routed to %s by rule %d (%s)\n",
			parsed.Phase, normalize(parsed).LastOutcome, orNone(parsed.Status), role, rule, DefaultRules()[rule])
	}
	golden(t, filepath.Join("testdata", "outcome_words.golden"), out.Bytes())
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got, *update)
}
