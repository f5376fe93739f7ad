package loop

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover/internal/goldenfile"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Fake paths and times: goldens must not depend on the machine or the clock.
const (
	sessionDir  = "/project/.drover/sessions/s1"
	trackerPath = sessionDir + "/loop.md"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// unportable matches what some file systems refuse in a name.
var unportable = regexp.MustCompile(`[^A-Za-z0-9_./-]+`)

// golden compares got with testdata/<test name>.golden, rewriting it under
// -update. Characters a file name cannot hold everywhere become "_".
func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(unportable.ReplaceAllString(t.Name(), "_"))+".golden")
	goldenfile.Check(t, path, []byte(got), *update)
}

// machinePath catches a real path leaking into a golden file.
var machinePath = regexp.MustCompile(`/(work|root|home|tmp|Users)/`)

func formatOutput(out hook.Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind: %s\n", out.Kind())
	if out.SystemMessage != "" {
		fmt.Fprintf(&b, "--- systemMessage ---\n%s\n", out.SystemMessage)
	}
	if out.Reason != "" {
		fmt.Fprintf(&b, "--- reason ---\n%s\n", out.Reason)
	}
	if s := out.HookSpecificOutput; s != nil {
		fmt.Fprintf(&b, "--- additionalContext (%s) ---\n%s\n", s.HookEventName, s.AdditionalContext)
	}
	return b.String()
}

func formatState(s State) string {
	out := fmt.Sprintf("active=%v iteration=%d/%d outcome=%q role=%q status=%q cost=%.2f",
		s.Active, s.Iteration, s.MaxIterations, s.Outcome, s.LastRole, s.LastStatus, s.CostUSD)
	if s.StuckIterations > 0 {
		// Only when set, so that the goldens of loops never stuck stay.
		out += fmt.Sprintf(" stuck=%d", s.StuckIterations)
	}
	return out
}

// running is an active loop on iteration it of max, started at t0.
func running(it, max int, mods ...func(*State)) State {
	s := State{
		Active: true, Iteration: it, MaxIterations: max, CompletionPromise: "DONE",
		Prompt: "make the parser handle unicode", StartedAt: t0,
	}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func promise(p string) func(*State) { return func(s *State) { s.CompletionPromise = p } }
func minutes(n int) func(*State)    { return func(s *State) { s.MaxMinutes = n } }
func usd(v float64) func(*State)    { return func(s *State) { s.MaxUSD = v } }
func spentUSD(v float64) func(*State) {
	return func(s *State) { s.CostUSD = v }
}
func requireChecks(s *State) { s.RequireChecks = true }
func last(st, reason string) func(*State) {
	return func(s *State) { s.LastStatus, s.LastStatusReason = st, reason }
}
func stuckFor(n int) func(*State) { return func(s *State) { s.StuckIterations = n } }
func succeededFor(n int) func(*State) {
	return func(s *State) { s.SuccessIterations = n }
}
func inactive(o Outcome) func(*State) {
	return func(s *State) { s.Active, s.Outcome = false, o }
}

// facts builds the Facts of session s1 at t0 plus 10 minutes; mods adjust
// them.
func facts(mods ...func(*Facts)) Facts {
	f := Facts{SessionID: "s1", TrackerPath: trackerPath, Now: t0.Add(10 * time.Minute)}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func said(msg string) func(*Facts) { return func(f *Facts) { f.LastAssistantMessage = &msg } }
func transcript(text string, caughtUp bool) func(*Facts) {
	return func(f *Facts) { f.TranscriptLastText, f.TranscriptCaughtUp = text, caughtUp }
}
func trackerDone(f *Facts) { f.TrackerComplete = true }
func trackerErr(f *Facts) {
	f.TrackerErr = fmt.Errorf("reading loop tracker %q: %w: front matter has no iteration", trackerPath, tracker.ErrMalformed)
}
func checks(passed bool, summary string) func(*Facts) {
	return func(f *Facts) { f.ChecksConfigured, f.ChecksPassed, f.ChecksSummary = true, &passed, summary }
}
func checksNotRun(f *Facts) { f.ChecksConfigured = true }
func at(d time.Duration) func(*Facts) {
	return func(f *Facts) { f.Now = t0.Add(d) }
}
func cost(v float64) func(*Facts) { return func(f *Facts) { f.CostUSD = v } }
func status(st, reason string) func(*Facts) {
	return func(f *Facts) { f.Status, f.StatusReason = st, reason }
}
func role(r string) func(*Facts)       { return func(f *Facts) { f.Role = r } }
func reflection(r string) func(*Facts) { return func(f *Facts) { f.Reflection = r } }
func consensus(c string) func(*Facts)  { return func(f *Facts) { f.CheckpointConsensus = c } }
func checkpointRunning(f *Facts)       { f.CheckpointDue = true }
func endOnConverged(f *Facts)          { f.EndOnConverged = true }
func stuckLimit(n int) func(*Facts)    { return func(f *Facts) { f.StuckLimit = n } }
func streak(n int) func(*Facts)        { return func(f *Facts) { f.ConvergedStreak = n } }

const (
	kept      = "The parser now handles unicode; all tests pass.\n\n<promise>DONE</promise>"
	failSumm  = "go test ./...: FAIL\n--- FAIL: TestLexUnicode (0.00s)\n    lexer_test.go:42: got 3 tokens, want 2"
	tooShort  = "Still working on the lexer."
	plateauRs = "test pass rate 0.70 → 0.72 over the last 3 iterations"
	reflText  = "Approach: byte-indexed lexer. Worked: ASCII cases. Failed: multi-byte runes split across tokens."
	convRs    = "test pass rate 0.95 (19 of 20) meets the success threshold 0.95"
	consText  = "2 of 3 reviewers: the lexer indexes bytes, not runes; switch to utf8.DecodeRuneInString."
)

func TestStop(t *testing.T) {
	tests := []struct {
		name  string
		in    State
		facts Facts
		want  State
		kind  string   // block, allow
		has   []string // phrases the output must contain
		not   []string // phrases it must not
	}{
		// Seed 004's stop-hook unit cases.
		{
			name: "seed 004 block-01: no promise blocks and counts", in: running(1, 5), facts: facts(said(tooShort)),
			want: running(2, 5), kind: "block", has: []string{"iteration 2 of 5", "make the parser handle unicode", "<promise>DONE</promise>"},
		},
		{
			name: "seed 004 allow-exit-02: no loop allows", in: State{}, facts: facts(said(tooShort)),
			want: State{}, kind: "allow",
		},
		{
			name: "seed 004 promise-match-03: promise on its own line ends the loop", in: running(2, 5), facts: facts(said("The task is complete.\n<promise>DONE</promise>")),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"Loop done in session s1 after 2 iteration(s)", "(promise)"},
		},
		{
			name: "seed 004 promise-match-03 as written: the tag after a sentence ends the loop", in: running(2, 5), facts: facts(said("The task is complete. <promise>DONE</promise>")),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"Loop done in session s1 after 2 iteration(s)", "(promise)"},
		},
		{
			name: "seed 004 max-iter-04: the last iteration ends the loop", in: running(5, 5), facts: facts(said("still trying")),
			want: running(5, 5, inactive(MaxIterationsSpent)), kind: "allow", has: []string{"max_iterations: 5 of 5 iterations"},
		},
		{
			name: "seed 004 increment-05: the counter moves on", in: running(3, 10, promise("ALL_PASS")), facts: facts(said(tooShort)),
			want: running(4, 10, promise("ALL_PASS")), kind: "block", has: []string{"iteration 4 of 10", "<promise>ALL_PASS</promise>"},
		},
		{
			name: "seed 004 corrupt-state-06: a corrupt tracker is reported and never decides", in: running(1, 5), facts: facts(said(tooShort), trackerErr, trackerDone),
			want: running(2, 5), kind: "block", has: []string{"could not be read", "front matter has no iteration", "iteration 2 of 5"},
		},

		// Seed 002's Stop handler cases.
		{
			name: "seed 002: no loop state", in: State{}, facts: facts(trackerDone),
			want: State{}, kind: "allow",
		},
		{
			name: "seed 002: inactive loop", in: running(3, 5, inactive(Cancelled)), facts: facts(said(kept)),
			want: running(3, 5, inactive(Cancelled)), kind: "allow",
		},
		{
			name: "seed 002: max iterations reached", in: running(5, 5), facts: facts(),
			want: running(5, 5, inactive(MaxIterationsSpent)), kind: "allow", has: []string{"budget is spent"},
		},
		{
			name: "seed 002: completion marker found", in: running(2, 5), facts: facts(trackerDone),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"(tracker)"},
		},
		{
			name: "seed 002: blocks and increments", in: running(2, 5), facts: facts(said("Still working...")),
			want: running(3, 5), kind: "block", has: []string{"iteration 3 of 5"},
		},

		// Where the final message comes from.
		{
			name: "payload absent, transcript caught up with the promise", in: running(2, 5), facts: facts(transcript(kept, true)),
			want: running(2, 5, inactive(Done)), kind: "allow",
		},
		{
			name: "payload absent, transcript behind is no signal", in: running(2, 5), facts: facts(transcript(kept, false)),
			want: running(3, 5), kind: "block",
		},
		{
			name: "payload present wins over the transcript", in: running(2, 5), facts: facts(said(tooShort), transcript(kept, true)),
			want: running(3, 5), kind: "block",
		},
		{
			name: "empty final message (tool call) keeps the loop going", in: running(2, 5), facts: facts(said("")),
			want: running(3, 5), kind: "block",
		},
		{
			name: "bare phrase alone on its line ends the loop", in: running(2, 5), facts: facts(said("All tests pass.\nDONE")),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"(promise)"},
		},
		{
			name: "bare phrase in a sentence is no promise", in: running(2, 5), facts: facts(said("I am DONE")),
			want: running(3, 5), kind: "block",
		},
		{
			name: "negated promise is no promise", in: running(2, 5), facts: facts(said("I will not output <promise>DONE</promise> yet")),
			want: running(3, 5), kind: "block",
		},
		{
			name: "quoted promise is no promise", in: running(2, 5), facts: facts(said("You asked me to end with:\n> <promise>DONE</promise>")),
			want: running(3, 5), kind: "block",
		},
		{
			name: "promise kept on the last iteration is done, not a spent budget", in: running(5, 5), facts: facts(said(kept)),
			want: running(5, 5, inactive(Done)), kind: "allow", has: []string{"Loop done"}, not: []string{"budget"},
		},

		// The checks gate.
		{
			name: "checks required and passed", in: running(2, 5, requireChecks), facts: facts(said(kept), checks(true, "ok")),
			want: running(2, 5, requireChecks, inactive(Done)), kind: "allow", has: []string{"checks: passed"},
		},
		{
			name: "checks required and failed blocks with the failures", in: running(2, 5, requireChecks), facts: facts(said(kept), checks(false, failSumm)),
			want: running(3, 5, requireChecks), kind: "block", has: []string{"necessary, not sufficient", "TestLexUnicode", "iteration 3 of 5"},
		},
		{
			name: "checks required but not run", in: running(2, 5, requireChecks), facts: facts(said(kept), checksNotRun),
			want: running(3, 5, requireChecks), kind: "block", has: []string{"No check results reached drover"},
		},
		{
			name: "checks required but none configured", in: running(2, 5, requireChecks), facts: facts(said(kept)),
			want: running(3, 5, requireChecks), kind: "block", has: []string{"No check results reached drover"},
		},
		{
			name: "checks required and failed without a summary", in: running(2, 5, requireChecks), facts: facts(said(kept), checks(false, "")),
			want: running(3, 5, requireChecks), kind: "block", has: []string{"## Check results\n\nFix what fails"}, not: []string{"No check results"},
		},
		{
			name: "checks required also gate the tracker marker", in: running(2, 5, requireChecks), facts: facts(trackerDone, checks(false, failSumm)),
			want: running(3, 5, requireChecks), kind: "block", has: []string{"(tracker)", "TestLexUnicode"},
		},
		{
			name: "checks not required: failing checks do not hold the promise back", in: running(2, 5), facts: facts(said(kept), checks(false, failSumm)),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"checks: not required"},
		},
		{
			name: "failed checks on the last iteration end on the budget", in: running(5, 5, requireChecks), facts: facts(said(kept), checks(false, failSumm)),
			want: running(5, 5, requireChecks, inactive(MaxIterationsSpent)), kind: "allow", has: []string{"max_iterations"},
		},

		// Budgets.
		{
			name: "wall time spent", in: running(2, 20, minutes(60)), facts: facts(at(61 * time.Minute)),
			want: running(2, 20, minutes(60), inactive(MaxMinutesSpent)), kind: "allow", has: []string{"max_minutes: 61 of 60 minutes"},
		},
		{
			name: "wall time exactly spent", in: running(2, 20, minutes(60)), facts: facts(at(60 * time.Minute)),
			want: running(2, 20, minutes(60), inactive(MaxMinutesSpent)), kind: "allow",
		},
		{
			name: "wall time left", in: running(2, 20, minutes(60)), facts: facts(at(59 * time.Minute)),
			want: running(3, 20, minutes(60)), kind: "block", has: []string{"59 of 60 minutes"},
		},
		{
			name: "dollars spent", in: running(2, 20, usd(5)), facts: facts(cost(5.10)),
			want: running(2, 20, usd(5), spentUSD(5.10), inactive(MaxUSDSpent)), kind: "allow", has: []string{"max_usd: $5.10 of $5.00"},
		},
		{
			name: "dollars left", in: running(2, 20, usd(5)), facts: facts(cost(1.25)),
			want: running(3, 20, usd(5), spentUSD(1.25)), kind: "block", has: []string{"$1.25 of $5.00"},
		},
		{
			name: "unknown cost keeps the last known spend", in: running(2, 20, usd(5), spentUSD(5)), facts: facts(),
			want: running(2, 20, usd(5), spentUSD(5), inactive(MaxUSDSpent)), kind: "allow",
		},
		{
			name: "iterations are checked before time and dollars", in: running(5, 5, minutes(1), usd(1)), facts: facts(at(time.Hour), cost(9)),
			want: running(5, 5, minutes(1), usd(1), spentUSD(9), inactive(MaxIterationsSpent)), kind: "allow", has: []string{"max_iterations"},
		},
		{
			name: "convergence says budget_exhausted", in: running(2, 20), facts: facts(status(StatusBudgetExhausted, "reviewer time spent")),
			want: func() State {
				s := running(2, 20, inactive(BudgetExhausted))
				s.LastStatus, s.LastStatusReason = StatusBudgetExhausted, "reviewer time spent"
				return s
			}(), kind: "allow", has: []string{"budget_exhausted: reviewer time spent"},
		},

		// Convergence, roles, reflections, checkpoints.
		{
			name: "converged_success with end_on_converged off goes on", in: running(4, 20), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs)),
			want: running(5, 20, last(StatusConvergedSuccess, convRs), succeededFor(1)), kind: "block", has: []string{"## Convergence: converged_success", "ends only on your completion signal"},
		},
		{
			name: "converged_success ends the loop", in: running(4, 20), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs), endOnConverged),
			want: running(4, 20, last(StatusConvergedSuccess, convRs), succeededFor(1), inactive(Converged)), kind: "allow",
			has: []string{"Ended the loop in session s1 after 4 iteration(s)", "drover's metrics say it converged (" + convRs + ")", "loop.end_on_converged"},
		},
		{
			name: "converged_success on the last iteration is converged, not a spent budget", in: running(5, 5), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs), endOnConverged),
			want: running(5, 5, last(StatusConvergedSuccess, convRs), succeededFor(1), inactive(Converged)), kind: "allow", not: []string{"budget"},
		},
		{
			name: "converged_success with required checks goes on to the promise", in: running(4, 20, requireChecks), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs), endOnConverged),
			want: running(5, 20, requireChecks, last(StatusConvergedSuccess, convRs), succeededFor(1)), kind: "block", has: []string{"this loop requires checks", "<promise>DONE</promise>"},
		},
		{
			name: "a kept promise beats converged_success", in: running(4, 20), facts: facts(said(kept), status(StatusConvergedSuccess, convRs), endOnConverged),
			want: running(4, 20, last(StatusConvergedSuccess, convRs), succeededFor(1), inactive(Done)), kind: "allow", has: []string{"Loop done"},
		},
		{
			name: "a first converged_success under a streak of 2 goes on", in: running(4, 20), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs), endOnConverged, streak(2)),
			want: running(5, 20, last(StatusConvergedSuccess, convRs), succeededFor(1)), kind: "block", has: []string{"## Convergence: converged_success", "if they still say so 1 iteration from now, drover ends the loop"},
		},
		{
			name: "a second converged_success in a row under a streak of 2 ends the loop", in: running(5, 20, succeededFor(1)), facts: facts(said(tooShort), status(StatusConvergedSuccess, convRs), endOnConverged, streak(2)),
			want: running(5, 20, last(StatusConvergedSuccess, convRs), succeededFor(2), inactive(Converged)), kind: "allow", has: []string{"drover's metrics say it converged"},
		},
		{
			name: "another status breaks the success streak", in: running(5, 20, succeededFor(1)), facts: facts(said(tooShort), status(StatusExploring, "too little history"), endOnConverged, streak(2)),
			want: running(6, 20, last(StatusExploring, "too little history")), kind: "block",
		},
		{
			name: "first stuck iteration goes to the architect with the end in sight", in: running(6, 20),
			facts: facts(said(tooShort), status(StatusStuckPlateau, plateauRs), role(RoleArchitect), stuckLimit(3)),
			want:  running(7, 20, last(StatusStuckPlateau, plateauRs), stuckFor(1), func(s *State) { s.LastRole = RoleArchitect }), kind: "block",
			has: []string{"stuck for 1 iteration in a row", "If it is still stuck when iteration 9 ends, drover ends the loop."},
		},
		{
			name: "stuck within the limit goes on", in: running(8, 20, stuckFor(2)),
			facts: facts(said(tooShort), status(StatusThrashing, "same error hash 3 times"), stuckLimit(3)),
			want:  running(9, 20, last(StatusThrashing, "same error hash 3 times"), stuckFor(3)), kind: "block",
			has: []string{"## Convergence: thrashing", "stuck for 3 iterations in a row", "If it is still stuck when iteration 9 ends"},
		},
		{
			name: "stuck past the limit ends the loop", in: running(9, 20, stuckFor(3)),
			facts: facts(said(tooShort), status(StatusThrashing, "same error hash 3 times"), stuckLimit(3)),
			want:  running(9, 20, last(StatusThrashing, "same error hash 3 times"), stuckFor(4), inactive(Stuck)), kind: "allow",
			has: []string{"Ended the loop in session s1 after 9 iteration(s): it stayed thrashing for 4 iterations in a row, more than loop.stuck_limit (3)", "same error hash 3 times"},
		},
		{
			name: "stuck_limit 0 never ends a stuck loop", in: running(9, 20, stuckFor(30)),
			facts: facts(said(tooShort), status(StatusStuckPlateau, plateauRs)),
			want:  running(10, 20, last(StatusStuckPlateau, plateauRs), stuckFor(31)), kind: "block",
			has: []string{"Change your approach"}, not: []string{"drover ends the loop"},
		},
		{
			name: "progress resets the stuck run", in: running(9, 20, stuckFor(3)),
			facts: facts(said(tooShort), status(StatusProgressing, "test pass rate rose from 0.50 to 0.70"), stuckLimit(3)),
			want:  running(10, 20, last(StatusProgressing, "test pass rate rose from 0.50 to 0.70")), kind: "block",
		},
		{
			name: "no status keeps the stuck run", in: running(9, 20, stuckFor(3)), facts: facts(said(tooShort), stuckLimit(3)),
			want: running(10, 20, stuckFor(3)), kind: "block",
		},
		{
			name: "a spent budget beats stuck", in: running(5, 5, stuckFor(3)), facts: facts(said(tooShort), status(StatusStuckPlateau, plateauRs), stuckLimit(3)),
			want: running(5, 5, last(StatusStuckPlateau, plateauRs), stuckFor(4), inactive(MaxIterationsSpent)), kind: "allow", has: []string{"max_iterations"},
		},
		{
			name: "stuck plateau routed to the architect with reflection and consensus", in: running(6, 20),
			facts: facts(said(tooShort), status(StatusStuckPlateau, plateauRs), role(RoleArchitect), reflection(reflText), consensus(consText)),
			want: func() State {
				s := running(7, 20, stuckFor(1))
				s.LastRole, s.LastStatus, s.LastStatusReason = RoleArchitect, StatusStuckPlateau, plateauRs
				return s
			}(), kind: "block",
			has: []string{"## Role: architect", "You are the architect", "`drover:architect`", "## Convergence: stuck_plateau", plateauRs, "## Last reflection", reflText, "## Checkpoint review", consText},
		},
		{
			name: "test failure routed to the debugger", in: running(3, 20), facts: facts(said(tooShort), role(RoleDebugger), status(StatusExploring, "different errors each time")),
			want: func() State {
				s := running(4, 20)
				s.LastRole, s.LastStatus, s.LastStatusReason = RoleDebugger, StatusExploring, "different errors each time"
				return s
			}(), kind: "block", has: []string{"You are the debugger", "`drover:debugger`"},
		},
		{
			name: "checkpoint running", in: running(4, 20), facts: facts(said(tooShort), checkpointRunning),
			want: running(5, 20), kind: "block", has: []string{"checkpoint review of the work so far is running"},
		},
		{
			name: "no role routed keeps the last one", in: running(4, 20, func(s *State) { s.LastRole = RoleDebugger }), facts: facts(said(tooShort)),
			want: running(5, 20, func(s *State) { s.LastRole = RoleDebugger }), kind: "block", has: []string{"## Role: debugger"},
		},
		{
			name: "a role the plugin does not ship brings its own prompt and agent", in: running(2, 20),
			facts: facts(said(tooShort), role("tester"), func(f *Facts) {
				f.RolePrompt, f.AgentName = "Write the missing tests first; do not touch the implementation.", "qa:tester"
			}),
			want: running(3, 20, func(s *State) { s.LastRole = "tester" }), kind: "block",
			has: []string{"## Role: tester", "Write the missing tests first"}, not: []string{"You are the developer"},
		},
		{
			name: "an unknown role without a prompt leaves the role section empty", in: running(2, 20), facts: facts(said(tooShort), role("tester")),
			want: running(3, 20, func(s *State) { s.LastRole = "tester" }), kind: "block", has: []string{"## Role: tester\n\n## This iteration"},
		},

		// A corrupt tracker.
		{
			name: "corrupt tracker with a kept promise still ends the loop, with a warning", in: running(2, 5), facts: facts(said(kept), trackerErr),
			want: running(2, 5, inactive(Done)), kind: "allow", has: []string{"could not be read", "Loop done"},
		},
		{
			name: "corrupt tracker on the last iteration ends on the budget, with a warning", in: running(5, 5), facts: facts(trackerErr),
			want: running(5, 5, inactive(MaxIterationsSpent)), kind: "allow", has: []string{"could not be read", "budget is spent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, err := Stop(tt.in, tt.facts, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("state = %s\nwant    %s", formatState(got), formatState(tt.want))
			}
			if out.Kind() != tt.kind {
				t.Errorf("kind = %s, want %s", out.Kind(), tt.kind)
			}
			if tt.kind == "block" && out.Reason == "" {
				t.Error("block without a reason")
			}
			if tt.kind == "allow" && out.Reason != "" {
				t.Errorf("allow with a reason: %q", out.Reason)
			}
			if !tt.in.Active && out != (hook.Output{}) {
				t.Errorf("an inactive loop said something: %+v", out)
			}
			if tt.in.Active && !got.Active && out.SystemMessage == "" {
				t.Error("the loop ended without telling the user")
			}
			text := formatOutput(out)
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("output does not contain %q:\n%s", h, text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("output contains %q", n)
				}
			}
			if strings.Contains(text, "{{") {
				t.Errorf("output holds an unfilled placeholder:\n%s", text)
			}
			if strings.Contains(text, "\n\n\n") {
				t.Errorf("output holds a run of blank lines:\n%s", text)
			}
			g := fmt.Sprintf("in:  %s\nout: %s\n%s", formatState(tt.in), formatState(got), text)
			if machinePath.MatchString(g) {
				t.Fatalf("golden would contain a machine path:\n%s", g)
			}
			golden(t, g)
		})
	}
}

// TestStopRun drives a loop from Start to a kept promise, the way the
// actor would, with the checks gate on.
func TestStopRun(t *testing.T) {
	tm := templates.Defaults()
	s, err := Start(StartOptions{Prompt: "make the parser handle unicode", MaxIterations: 20, CompletionPromise: "DONE", RequireChecks: true}, t0, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what  string
		facts Facts
		iter  int
		kind  string
		has   string
	}{
		{"first iteration ends without a promise", facts(said(tooShort)), 2, "block", "iteration 2 of 20"},
		{"transcript not caught up", facts(transcript(kept, false)), 3, "block", "iteration 3 of 20"},
		{"promise with failing checks", facts(said(kept), checks(false, failSumm)), 4, "block", "TestLexUnicode"},
		{"promise with passing checks", facts(said(kept), checks(true, "ok")), 4, "allow", ""},
		{"later stops are free", facts(said(kept)), 4, "allow", ""},
	}
	for _, st := range steps {
		var out hook.Output
		s, out, err = Stop(s, st.facts, tm)
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if s.Iteration != st.iter || out.Kind() != st.kind || !strings.Contains(out.Reason, st.has) {
			t.Fatalf("%s: got %s %s %q, want iteration %d %s containing %q", st.what, formatState(s), out.Kind(), out.Reason, st.iter, st.kind, st.has)
		}
	}
	if s.Active || s.Outcome != Done {
		t.Errorf("final state %s, want done", formatState(s))
	}
}

func TestStopReasonFitsTheHookCap(t *testing.T) {
	long := func(n int) string { return strings.Repeat("ü", n) }
	s := running(2, 20, requireChecks, minutes(60), usd(5))
	s.Prompt = long(MaxPromptChars)
	f := facts(said(kept), checks(false, long(10*maxChecks)), status(StatusThrashing, long(10*maxStatusReason)),
		reflection(long(10*maxReflection)), consensus(long(10*maxConsensus)), trackerErr,
		func(f *Facts) { f.RolePrompt = long(10 * maxRolePrompt) })
	_, out, err := Stop(s, f, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(out.Reason); n > 10000 {
		t.Errorf("block reason is %d characters, more than Claude Code's 10,000", n)
	}
	if !strings.Contains(out.Reason, "[…]") {
		t.Error("long pieces were not marked as cut")
	}
}

func TestStopTemplateErrorChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		in State
		f  Facts
	}{
		{running(2, 5), facts(said(tooShort))},
		{running(2, 5), facts(said(kept))},
		{running(5, 5), facts()},
		{running(2, 5, requireChecks), facts(said(kept), checks(false, failSumm))},
		{running(2, 5), facts(trackerErr)},
	} {
		got, out, err := Stop(tc.in, tc.f, templates.Set{})
		if err == nil {
			t.Fatalf("Stop with an empty template set: no error (out %+v)", out)
		}
		if got != tc.in {
			t.Errorf("on error the state became %s, want it unchanged", formatState(got))
		}
	}
}

func TestStopUsesOverrides(t *testing.T) {
	d := t.TempDir()
	for name, text := range map[string]string{
		"loop_continue.md":  "MY LOOP #{{iteration}}: {{prompt}} as {{role}}\n",
		"role_developer.md": "MY DEVELOPER",
	} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tm, err := templates.Load(d)
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := Stop(running(1, 5), facts(said(tooShort)), tm)
	if err != nil {
		t.Fatal(err)
	}
	if want := "MY LOOP #2: make the parser handle unicode as developer"; out.Reason != want {
		t.Errorf("reason = %q, want %q", out.Reason, want)
	}
}

func TestStart(t *testing.T) {
	valid := StartOptions{Prompt: "  make the parser handle unicode\n", MaxIterations: 20, CompletionPromise: " all  tests\tpass ", MaxMinutes: 90, MaxUSD: 12.5, CheckpointEvery: 3, RequireChecks: true}
	got, err := Start(valid, t0, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want := State{
		Active: true, Iteration: 1, MaxIterations: 20, CompletionPromise: "all tests pass",
		Prompt: "make the parser handle unicode", StartedAt: t0, MaxMinutes: 90, MaxUSD: 12.5,
		CheckpointEvery: 3, RequireChecks: true,
	}
	if got != want {
		t.Errorf("Start = %+v\nwant    %+v", got, want)
	}

	if got, err := Start(StartOptions{Prompt: "x", MaxIterations: 1}, t0, templates.Defaults()); err != nil || got.CompletionPromise != DefaultPromise {
		t.Errorf("no --completion-promise: %+v, %v; want %q", got, err, DefaultPromise)
	}

	tests := []struct {
		name string
		mod  func(*StartOptions)
		says []string
	}{
		{"empty prompt", func(o *StartOptions) { o.Prompt = " \n\t" }, []string{"the loop prompt is empty"}},
		{"prompt too long", func(o *StartOptions) { o.Prompt = strings.Repeat("é", MaxPromptChars+1) }, []string{"the loop prompt is 3001 characters"}},
		{"zero iterations", func(o *StartOptions) { o.MaxIterations = 0 }, []string{"--max-iterations is 0"}},
		{"negative iterations", func(o *StartOptions) { o.MaxIterations = -3 }, []string{"--max-iterations is -3"}},
		{"negative minutes", func(o *StartOptions) { o.MaxMinutes = -1 }, []string{"--max-minutes is -1"}},
		{"negative dollars", func(o *StartOptions) { o.MaxUSD = -0.01 }, []string{"--max-usd is -0.01"}},
		{"NaN dollars", func(o *StartOptions) { o.MaxUSD = math.NaN() }, []string{"--max-usd is NaN"}},
		{"infinite dollars", func(o *StartOptions) { o.MaxUSD = math.Inf(1) }, []string{"--max-usd is +Inf"}},
		{"negative checkpoint", func(o *StartOptions) { o.CheckpointEvery = -2 }, []string{"--checkpoint-every is -2"}},
		{"promise with a tag", func(o *StartOptions) { o.CompletionPromise = "</promise>" }, []string{"--completion-promise"}},
		{"promise too long", func(o *StartOptions) { o.CompletionPromise = strings.Repeat("x", MaxPromiseChars+1) }, []string{"--completion-promise is longer"}},
		{"every problem at once", func(o *StartOptions) {
			*o = StartOptions{MaxIterations: 0, MaxMinutes: -1, MaxUSD: -1, CheckpointEvery: -1}
		},
			[]string{"prompt is empty", "--max-iterations", "--max-minutes", "--max-usd", "--checkpoint-every"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.mod(&o)
			got, err := Start(o, t0, templates.Defaults())
			if err == nil {
				t.Fatalf("Start accepted %+v", o)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if got != (State{}) {
				t.Errorf("failed Start returned %+v", got)
			}
		})
	}
}

func TestStartText(t *testing.T) {
	s, err := Start(StartOptions{Prompt: "make the parser handle unicode", MaxIterations: 20, CompletionPromise: "DONE", MaxMinutes: 60}, t0, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	text, err := StartText(s, facts(at(0)), templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Started a loop in session s1", "up to 20 iteration(s)", "iteration 1 of 20", "make the parser handle unicode", "You are the developer", "<promise>DONE</promise>", trackerPath, "0 of 60 minutes"} {
		if !strings.Contains(text, h) {
			t.Errorf("start text does not contain %q", h)
		}
	}
	golden(t, text+"\n")
}

func TestCancel(t *testing.T) {
	got := Cancel(running(3, 5))
	if got.Active || got.Outcome != Cancelled || got.Iteration != 3 {
		t.Errorf("Cancel = %s", formatState(got))
	}
	// A cancelled loop never blocks again.
	if _, out, err := Stop(got, facts(said(tooShort)), templates.Defaults()); err != nil || out != (hook.Output{}) {
		t.Errorf("Stop after Cancel: %+v, %v", out, err)
	}
	// An ended loop keeps how it ended.
	done := running(2, 5, inactive(Done))
	if got := Cancel(done); got != done {
		t.Errorf("Cancel of a finished loop = %s", formatState(got))
	}
	if got := Cancel(State{}); got != (State{}) {
		t.Errorf("Cancel of no loop = %s", formatState(got))
	}
}

func TestContextSnapshot(t *testing.T) {
	withLast := func(s *State) {
		s.LastRole, s.LastStatus, s.LastStatusReason = RoleDebugger, StatusThrashing, "same error hash 3 times"
	}
	tests := []struct {
		name  string
		in    State
		facts Facts
		has   []string
		not   []string
	}{
		{name: "no loop no output", in: State{}, facts: facts()},
		{name: "ended loop no output", in: running(5, 5, inactive(MaxIterationsSpent)), facts: facts()},
		{
			name: "active loop from state alone", in: running(4, 20, withLast), facts: facts(),
			has: []string{"[drover] Active loop in session s1: iteration 4 of 20, started 2026-03-01T09:00:00Z", trackerPath, "make the parser handle unicode", "## Role: debugger", "## Convergence: thrashing", "same error hash 3 times", "<promise>DONE</promise>"},
		},
		{
			name: "fresh facts win over the last stop", in: running(4, 20, withLast), facts: facts(role(RoleArchitect), status(StatusStuckPlateau, plateauRs), reflection(reflText)),
			has: []string{"## Role: architect", "## Convergence: stuck_plateau", reflText},
			not: []string{"same error hash 3 times", "## Open findings"},
		},
		{
			name: "open findings of the last checkpoint", in: running(7, 20, withLast, stuckFor(2)), facts: facts(stuckLimit(3), func(f *Facts) { f.OpenFindings = consText }),
			has: []string{"## Open findings", consText, "## Role: debugger", "stuck for 2 iterations in a row", "If it is still stuck when iteration 8 ends"},
			not: []string{"## Checkpoint review"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := ContextSnapshot(tt.in, tt.facts, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if (text == "") != (len(tt.has) == 0) {
				t.Fatalf("text = %q; want it empty only for an inactive loop", text)
			}
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("snapshot does not contain %q", h)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("snapshot contains %q", n)
				}
			}
			golden(t, text+"\n")
		})
	}
	if _, err := ContextSnapshot(running(1, 2), facts(), templates.Set{}); err == nil {
		t.Error("ContextSnapshot with no templates: no error")
	}
}

func TestCheckpointDue(t *testing.T) {
	every3 := func(s *State) { s.CheckpointEvery = 3 }
	tests := []struct {
		name string
		s    State
		want bool
	}{
		{"no checkpoints", running(4, 20), false},
		{"first iteration", running(1, 20, every3), false},
		{"after 2 finished", running(3, 20, every3), false},
		{"after 3 finished", running(4, 20, every3), true},
		{"after 4 finished", running(5, 20, every3), false},
		{"after 6 finished", running(7, 20, every3), true},
		{"ended loop", running(4, 20, every3, inactive(Done)), false},
	}
	for _, tt := range tests {
		if got := CheckpointDue(tt.s); got != tt.want {
			t.Errorf("%s: CheckpointDue = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Through Stop: a loop with --checkpoint-every 3 falls due once the
	// third iteration has ended.
	s := running(3, 20, every3)
	s, _, err := Stop(s, facts(said(tooShort)), templates.Defaults())
	if err != nil || !CheckpointDue(s) {
		t.Errorf("after the third iteration: due = %v, err %v", CheckpointDue(s), err)
	}
}

func TestTracker(t *testing.T) {
	s := running(1, 20, minutes(60), func(s *State) { s.LastRole = RoleDeveloper })
	body, err := TrackerBody(s, facts(), templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, body)

	path := tracker.Path(filepath.Join(t.TempDir(), "s1"))
	if err := tracker.Write(path, TrackerView(s, body)); err != nil {
		t.Fatal(err)
	}
	tr, err := tracker.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Iteration != 1 || tr.MaxIterations != 20 || !tr.Active || tr.Prompt != s.Prompt || tr.CompletionPromise != "DONE" || tr.MaxMinutes != 60 || tr.Role != RoleDeveloper || !tr.StartedAt.Equal(t0) {
		t.Errorf("tracker front matter does not mirror the state: %+v", tr)
	}
	if tr.Complete() {
		t.Fatal("a new tracker, whose body explains the marker, counts as complete")
	}

	// The agent finishes and marks the tracker; Stop ends the loop on it.
	tr.Body += "\n### Iteration 1\nDone: lexer and parser handle unicode.\n\n" + tracker.DefaultCompletionMarker + "\n"
	if !tr.Complete() {
		t.Fatal("a tracker ending in the marker is not complete")
	}
	next, out, err := Stop(s, facts(func(f *Facts) { f.TrackerComplete = tr.Complete() }), templates.Defaults())
	if err != nil || next.Active || next.Outcome != Done || out.IsBlock() {
		t.Errorf("Stop on a complete tracker: %s %s %v", formatState(next), out.Kind(), err)
	}

	// The actor rewrites the front matter and keeps the agent's body.
	if err := tracker.Write(path, TrackerView(next, tr.Body)); err != nil {
		t.Fatal(err)
	}
	if again, err := tracker.Read(path); err != nil || again.Active || again.Body != tr.Body {
		t.Errorf("rewritten tracker: active=%v body kept=%v, %v", again.Active, again.Body == tr.Body, err)
	}
}

func TestVars(t *testing.T) {
	v := Vars(running(3, 20, minutes(60), usd(5), spentUSD(1)), facts(at(25*time.Minute+59*time.Second), cost(2.5)), templates.Defaults())
	want := map[string]string{
		"session_id":         "s1",
		"tracker_path":       trackerPath,
		"iteration":          "3",
		"max_iterations":     "20",
		"completion_promise": "DONE",
		"completion_marker":  "<!-- WORKFLOW_COMPLETE -->",
		"started_at":         "2026-03-01T09:00:00Z",
		"elapsed_minutes":    "25",
		"cost_usd":           "2.50",
		"max_usd":            "5.00",
		"budgets":            "iteration 3 of 20; 25 of 60 minutes; $2.50 of $5.00",
		"require_checks":     "no",
		"role":               "developer",
		"agent_name":         "drover:developer",
	}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %q, want %q", k, v[k], w)
		}
	}

	custom := Vars(running(1, 2), facts(role("tester")), templates.Defaults())
	if custom["role"] != "tester" || custom["agent_name"] != "" {
		t.Errorf("custom role: role %q agent %q", custom["role"], custom["agent_name"])
	}
	named := Vars(running(1, 2), facts(role(RoleDebugger), func(f *Facts) { f.AgentName = "my:debugger" }), templates.Defaults())
	if named["agent_name"] != "my:debugger" {
		t.Errorf("agent_name = %q, want the one from Facts", named["agent_name"])
	}
	errVars := Vars(running(1, 2), facts(func(f *Facts) { f.TrackerErr = errors.New(strings.Repeat("x", 1000)) }), templates.Defaults())
	if n := utf8.RuneCountInString(errVars["tracker_error"]); n > maxTrackerError+4 {
		t.Errorf("tracker_error is %d characters", n)
	}
	noTime := Vars(State{}, Facts{}, templates.Defaults())
	if noTime["elapsed_minutes"] != "0" || noTime["started_at"] != "" {
		t.Errorf("vars of no loop: elapsed %q started %q", noTime["elapsed_minutes"], noTime["started_at"])
	}
}

func TestEndReason(t *testing.T) {
	tests := []struct {
		s    State
		want string
	}{
		{running(3, 5), ""},
		{running(3, 5, inactive(Done)), "the agent signalled completion"},
		{running(5, 5, inactive(MaxIterationsSpent)), "its budget is spent (max_iterations)"},
		{running(4, 20, last(StatusConvergedSuccess, convRs), inactive(Converged)), "drover's metrics say it converged: " + convRs},
		{running(9, 20, last(StatusThrashing, "same error hash 3 times"), stuckFor(4), inactive(Stuck)), "it stayed stuck (thrashing) for 4 iterations in a row: same error hash 3 times"},
		{running(2, 5, inactive(Cancelled)), "the user cancelled it"},
	}
	for _, tt := range tests {
		got, err := EndReason(tt.s, templates.Defaults())
		if err != nil {
			t.Fatalf("EndReason(%s): %v", formatState(tt.s), err)
		}
		if got != tt.want {
			t.Errorf("EndReason(%s) = %q, want %q", formatState(tt.s), got, tt.want)
		}
	}
}

func TestTidy(t *testing.T) {
	got := tidy("a\n\n\n  \nb\n\t\n\nc\n")
	if want := "a\n\nb\n\nc\n"; got != want {
		t.Errorf("tidy = %q, want %q", got, want)
	}
}
