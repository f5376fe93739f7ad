package loop

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	summary "github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/templates"
)

// The decisions of the loop's events, table-tested without processes: each
// case names the effects (by kind, in order) and what the state must hold.

const failingTests = "=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- FAIL: TestLex (0.00s)\n    lex_test.go:9: runes split\nFAIL\nFAIL\texample.com/parser\t0.01s"

// testIteration is one iteration that ran go test with output and ended
// on msg.
func testIteration(output, msg string) *summary.Iteration {
	return &summary.Iteration{
		ToolCalls: 1, ToolCounts: map[string]int{"Bash": 1},
		Calls:             []summary.ToolCall{{ID: "t1", Name: "Bash", Command: "go test -v ./...", Result: &summary.Result{Text: output, IsError: true}}},
		LastAssistantText: msg, AssistantMessages: 2, EndsOnText: true,
	}
}

func activeSession(mod func(*Session)) Session {
	s := Session{State: State{Active: true, Iteration: 1, MaxIterations: 10, CompletionPromise: "DONE", Prompt: "build the parser", StartedAt: t0}}
	if mod != nil {
		mod(&s)
	}
	return s
}

func stopFacts(msg string, mod func(*StopFacts)) StopFacts {
	f := StopFacts{
		Facts:        Facts{SessionID: "s1", TrackerPath: trackerPath, Now: t0.Add(time.Minute), EndOnConverged: true, ConvergedStreak: 2, StuckLimit: 3},
		Thresholds:   convergence.DefaultThresholds(),
		CheckTimeout: time.Minute,
	}
	f.LastAssistantMessage = &msg
	if mod != nil {
		mod(&f)
	}
	return f
}

// kinds names effects by type, for comparing lists.
func kinds(effects []Effect) []string {
	var out []string
	for _, e := range effects {
		out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", e), "loop."))
	}
	return out
}

func TestOnStop(t *testing.T) {
	withChecks := func(f *StopFacts) { f.CheckCommand = "make test" }
	requireChecks := func(s *Session) { s.State.RequireChecks = true }
	for _, tc := range []struct {
		name    string
		s       Session
		f       StopFacts
		block   bool
		reason  []string
		effects []string
		check   func(t *testing.T, n Session, effects []Effect)
	}{
		{name: "inactive: allowed, nothing to do", s: Session{}, f: stopFacts("hi", nil)},
		{
			name: "a claim that needs checks starts them and waits", s: activeSession(requireChecks), f: stopFacts("<promise>DONE</promise>", withChecks),
			block: true, reason: []string{"running the project's checks (make test)"}, effects: []string{"StartChecks"},
			check: func(t *testing.T, n Session, effects []Effect) {
				if c := n.State.Checks; c == nil || !c.Running || c.Iteration != 1 || n.State.Iteration != 1 {
					t.Errorf("checks %+v at iteration %d", c, n.State.Iteration)
				}
				if e := effects[0].(StartChecks); e.Command != "make test" || e.Iteration != 1 || e.Timeout != time.Minute {
					t.Errorf("start checks %+v", e)
				}
			},
		},
		{
			name: "a claim while the checks run waits again, starting nothing",
			s:    activeSession(func(s *Session) { requireChecks(s); s.State.Checks = &Checks{Iteration: 1, Running: true} }),
			f:    stopFacts("<promise>DONE</promise>", withChecks), block: true, reason: []string{"(make test) are still running"},
		},
		{
			name: "passed checks accept the claim and end every run",
			s: activeSession(func(s *Session) {
				requireChecks(s)
				s.State.Checks = &Checks{Iteration: 1, Passed: true, Summary: "ok"}
			}),
			f: stopFacts("<promise>DONE</promise>", withChecks), effects: []string{"CancelChecks", "CancelCheckpoint", "CancelMetrics", "WriteTracker"},
			check: func(t *testing.T, n Session, _ []Effect) {
				if n.State.Active || n.State.Outcome != Done || n.State.Checks != nil {
					t.Errorf("state %+v", n.State)
				}
			},
		},
		{
			name: "failed checks refuse the claim and move on",
			s: activeSession(func(s *Session) {
				requireChecks(s)
				s.State.Checks = &Checks{Iteration: 1, Summary: "make test failed: exit status 2"}
			}),
			f: stopFacts("<promise>DONE</promise>", withChecks), block: true, reason: []string{"necessary, not sufficient", "make test failed: exit status 2"},
			effects: []string{"WriteTracker"},
			check: func(t *testing.T, n Session, _ []Effect) {
				if !n.State.Active || n.State.Iteration != 2 || n.State.Checks != nil {
					t.Errorf("state %+v", n.State)
				}
			},
		},
		{
			name: "failing tests: a reflection, the debugger, and the metric commands",
			s:    activeSession(nil), f: stopFacts("working", func(f *StopFacts) {
				f.Iteration = testIteration(failingTests, "working")
				f.Thresholds.MinToolCalls = 1
				f.MetricCommands = []string{"go test ./..."}
			}),
			block: true, reason: []string{"drover:debugger", "Iteration 1:"}, effects: []string{"WriteReflection", "StartMetrics", "WriteTracker"},
			check: func(t *testing.T, n Session, effects []Effect) {
				if len(n.History) != 1 || len(n.Reflections) != 1 || n.State.MetricsFor != 1 || n.State.LastRole != "debugger" {
					t.Errorf("session %+v", n)
				}
				if e := effects[1].(StartMetrics); e.Iteration != 1 || !reflect.DeepEqual(e.Commands, []string{"go test ./..."}) {
					t.Errorf("start metrics %+v", e)
				}
				if w := effects[2].(WriteTracker); w.State.Iteration != 2 || w.Fresh || !strings.Contains(w.Body, "build the parser") {
					t.Errorf("write tracker %+v", w)
				}
			},
		},
		{
			name: "a checkpoint falls due after the first iteration",
			s:    activeSession(func(s *Session) { s.State.CheckpointEvery = 1 }), f: stopFacts("working", nil),
			block: true, effects: []string{"StartCheckpoint", "WriteTracker"},
			check: func(t *testing.T, n Session, effects []Effect) {
				if e := effects[0].(StartCheckpoint); e.Iteration != 1 || !strings.Contains(e.Prompt, "build the parser") || n.State.CheckpointFor != 1 {
					t.Errorf("checkpoint %+v, state %+v", e, n.State)
				}
			},
		},
		{
			name: "a checkpoint still running is not started twice, and is said to be pending",
			s: activeSession(func(s *Session) {
				s.State.CheckpointEvery, s.State.Iteration, s.State.CheckpointFor = 1, 2, 1
			}),
			f: stopFacts("working", nil), block: true, reason: []string{"checkpoint review"}, effects: []string{"WriteTracker"},
			check: func(t *testing.T, n Session, _ []Effect) {
				if n.State.CheckpointFor != 1 {
					t.Errorf("checkpoint for %d, want 1", n.State.CheckpointFor)
				}
			},
		},
		{
			name: "the consensus goes into the block reason once",
			s:    activeSession(func(s *Session) { s.Consensus, s.Findings = "After iteration 1: FAIL", "After iteration 1: FAIL" }),
			f:    stopFacts("working", nil), block: true, reason: []string{"After iteration 1: FAIL"}, effects: []string{"WriteTracker"},
			check: func(t *testing.T, n Session, _ []Effect) {
				if n.Consensus != "" || n.Findings == "" {
					t.Errorf("consensus %q, findings %q", n.Consensus, n.Findings)
				}
			},
		},
		{
			name: "the last iteration ends the loop and every run",
			s: activeSession(func(s *Session) {
				s.State.Iteration, s.State.MaxIterations, s.State.MetricsFor, s.State.CheckpointFor = 3, 3, 2, 2
			}),
			f:       stopFacts("working", func(f *StopFacts) { f.MetricCommands = []string{"true"} }),
			effects: []string{"CancelChecks", "CancelCheckpoint", "CancelMetrics", "WriteTracker"},
			check: func(t *testing.T, n Session, _ []Effect) {
				if n.State.Active || n.State.Outcome != MaxIterationsSpent || n.State.MetricsFor != 0 || n.State.CheckpointFor != 0 {
					t.Errorf("state %+v", n.State)
				}
			},
		},
		{
			name: "metric commands no longer configured: the pending run is cancelled",
			s:    activeSession(func(s *Session) { s.State.MetricsFor = 1 }), f: stopFacts("working", nil),
			block: true, effects: []string{"CancelMetrics", "WriteTracker"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, out, effects, err := OnStop(tc.s, tc.f, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if out.IsBlock() != tc.block {
				t.Fatalf("block %v, want %v: %+v", out.IsBlock(), tc.block, out)
			}
			for _, w := range tc.reason {
				if !strings.Contains(out.Reason, w) {
					t.Errorf("reason lacks %q:\n%s", w, out.Reason)
				}
			}
			if got := kinds(effects); !reflect.DeepEqual(got, tc.effects) {
				t.Errorf("effects %v, want %v", got, tc.effects)
			}
			if tc.check != nil {
				tc.check(t, n, effects)
			}
		})
	}
}

func TestOnStopFailsWithoutChange(t *testing.T) {
	s := activeSession(nil)
	n, _, effects, err := OnStop(s, stopFacts("working", nil), templates.Set{})
	if err == nil || !reflect.DeepEqual(n, s) || effects != nil {
		t.Errorf("with no templates: err %v, session changed %v, effects %v", err, !reflect.DeepEqual(n, s), kinds(effects))
	}
}

func TestBeginAndCancel(t *testing.T) {
	old := activeSession(func(s *Session) {
		s.State.Iteration, s.State.MetricsFor = 4, 3
		s.Reflections = []convergence.Reflection{{Iteration: 3}}
		s.Consensus = "old"
	})
	st, err := Start(StartOptions{Prompt: "the new task", MaxIterations: 5}, t0, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	f := stopFacts("", nil).Facts
	n, text, effects, err := Begin(old, st, f, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n, Session{State: st}) || !strings.Contains(text, "the new task") {
		t.Errorf("begin: %+v, %q", n, text)
	}
	if got, want := kinds(effects), []string{"CancelChecks", "CancelCheckpoint", "CancelMetrics", "SetAsideReflections", "WriteTracker"}; !reflect.DeepEqual(got, want) {
		t.Errorf("begin effects %v, want %v", got, want)
	}
	if w := effects[4].(WriteTracker); !w.Fresh || !strings.Contains(w.Body, "the new task") {
		t.Errorf("begin writes the tracker %+v", w)
	}

	c, text, effects, err := CancelLoop(old, f, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Active || c.State.Outcome != Cancelled || c.State.MetricsFor != 0 || !strings.Contains(text, "Cancelled the loop of session s1 at iteration 4") {
		t.Errorf("cancel: %+v, %q", c.State, text)
	}
	if got, want := kinds(effects), []string{"CancelChecks", "CancelCheckpoint", "CancelMetrics", "WriteTracker"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cancel effects %v, want %v", got, want)
	}
	// A loop that is not running (cancelled, ended, or none) is refused.
	for _, s := range []Session{c, {}} {
		if _, _, eff, err := CancelLoop(s, f, templates.Defaults()); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no loop is running in session s1") || len(eff) != 0 {
			t.Errorf("cancel of %+v: %v, effects %v; want a refusal and no effect", s.State, err, eff)
		}
	}
}

func TestPending(t *testing.T) {
	f := stopFacts("", func(f *StopFacts) { f.CheckCommand, f.MetricCommands = "make test", []string{"make lint"} })
	started := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ended := Session{State: State{Iteration: 3, StartedAt: started}}
	onDisk := func(active bool, at time.Time) func(*StopFacts) {
		return func(f *StopFacts) { f.TrackerActive, f.TrackerStartedAt = active, at }
	}
	for _, tc := range []struct {
		name string
		s    Session
		want []string
		// tracker sets what the tracker file says.
		tracker func(*StopFacts)
	}{
		{"an ended loop waits for nothing", Session{State: State{Iteration: 3}}, nil, nil},
		{"an ended loop whose tracker is gone waits for nothing", ended, nil, onDisk(false, time.Time{})},
		{"an ended loop whose tracker says it ended waits for nothing", ended, nil, onDisk(false, started)},
		{"an ended loop whose tracker still says it runs rewrites it", ended, []string{"WriteTracker"}, onDisk(true, started)},
		{"an ended loop leaves an active tracker of another loop alone", ended, nil, onDisk(true, started.Add(time.Hour))},
		{"an ended loop leaves a tracker that does not read alone", ended, nil, func(f *StopFacts) {
			onDisk(true, started)(f)
			f.TrackerErr = errors.New("malformed")
		}},
		{"a new loop sets an earlier loop's reflections aside and writes its tracker", activeSession(nil), []string{"SetAsideReflections", "WriteTracker"}, nil},
		{"a loop under way rewrites its last reflection and its tracker", activeSession(func(s *Session) {
			s.State.Iteration, s.Reflections = 2, []convergence.Reflection{{Iteration: 1}}
		}), []string{"WriteReflection", "WriteTracker"}, nil},
		{"the check run, metric commands and checkpoint the state says run start again", activeSession(func(s *Session) {
			s.State.Iteration, s.Reflections = 3, []convergence.Reflection{{Iteration: 2}}
			s.State.Checks, s.State.MetricsFor, s.State.CheckpointFor = &Checks{Iteration: 3, Running: true}, 2, 2
		}), []string{"WriteReflection", "WriteTracker", "StartChecks", "StartMetrics", "StartCheckpoint"}, nil},
		{"a finished check run or one of an earlier iteration is not started", activeSession(func(s *Session) {
			s.State.Iteration, s.Reflections = 3, []convergence.Reflection{{Iteration: 2}}
			s.State.Checks = &Checks{Iteration: 2, Running: true}
		}), []string{"WriteReflection", "WriteTracker"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := f
			if tc.tracker != nil {
				tc.tracker(&f)
			}
			effects := Pending(tc.s, f, templates.Defaults())
			if got := kinds(effects); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pending %v, want %v", got, tc.want)
			}
			if !tc.s.State.Active && len(effects) > 0 {
				if w := effects[0].(WriteTracker); w.State.Active || !w.State.StartedAt.Equal(started) || w.Fresh {
					t.Errorf("tracker write %+v, want the ended loop's state, keeping the body", w)
				}
			}
		})
	}
}

func TestResults(t *testing.T) {
	tm := templates.Defaults()
	waiting := activeSession(func(s *Session) {
		s.State.Checks, s.State.MetricsFor, s.State.CheckpointFor = &Checks{Iteration: 1, Running: true}, 1, 1
		s.History = []convergence.Metrics{convergence.UnknownMetrics(1)}
	})
	t.Run("check results", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			s        Session
			it       int
			r        CheckResult
			changed  bool
			passed   bool
			contains string
		}{
			{"passed", waiting, 1, CheckResult{Command: "make test", Output: "ok"}, true, true, "make test passed\nok"},
			{"failed", waiting, 1, CheckResult{Command: "make test", Output: "boom", Err: "exit status 2"}, true, false, "make test failed: exit status 2\nboom"},
			{"timed out", waiting, 1, CheckResult{Command: "make test", TimedOut: true, Err: "timed out", Timeout: time.Minute}, true, false, "make test timed out after 1m0s"},
			{"another iteration's", waiting, 2, CheckResult{Command: "make test"}, false, false, ""},
			{"an ended loop's", Session{State: State{Checks: &Checks{Iteration: 1, Running: true}}}, 1, CheckResult{}, false, false, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n, changed, err := ChecksDone(tc.s, tc.it, tc.r, tm)
				if err != nil || changed != tc.changed {
					t.Fatalf("changed %v err %v, want changed %v", changed, err, tc.changed)
				}
				if !changed {
					if !reflect.DeepEqual(n, tc.s) {
						t.Errorf("an unwanted result changed the session")
					}
					return
				}
				if c := n.State.Checks; c.Running || c.Passed != tc.passed || !strings.Contains(c.Summary, tc.contains) {
					t.Errorf("checks %+v, want passed %v and %q", c, tc.passed, tc.contains)
				}
			})
		}
	})
	t.Run("metric command results", func(t *testing.T) {
		n, changed := MetricsDone(waiting, 1, []convergence.CommandResult{{Command: "go test ./...", Output: failingTests, Failed: true}})
		if !changed || n.State.MetricsFor != 0 || n.History[0].CommandOutcome != convergence.OutcomeTestsFailed {
			t.Errorf("changed %v, state %+v, history %+v", changed, n.State, n.History)
		}
		if waiting.History[0].CommandOutcome != "" {
			t.Errorf("MetricsDone changed its argument's history")
		}
		if _, changed := MetricsDone(waiting, 2, nil); changed {
			t.Errorf("another iteration's results were taken")
		}
	})
	t.Run("checkpoint consensus", func(t *testing.T) {
		n, changed := CheckpointDone(waiting, 1, "After iteration 1: PASS")
		if !changed || n.State.CheckpointFor != 0 || n.Consensus != "After iteration 1: PASS" || n.Findings != n.Consensus {
			t.Errorf("changed %v, session %+v", changed, n)
		}
		if n, changed := CheckpointDone(waiting, 1, ""); !changed || n.State.CheckpointFor != 0 || n.Consensus != "" {
			t.Errorf("a review that could not start: changed %v, session %+v", changed, n)
		}
		if _, changed := CheckpointDone(waiting, 2, "x"); changed {
			t.Errorf("another iteration's consensus was taken")
		}
	})
}

func TestConsensus(t *testing.T) {
	finding := Finding{Model: "sonnet", File: "parser.go", Line: 3, Summary: "unicode letters are rejected"}
	for _, tc := range []struct {
		name string
		r    CheckpointReport
		want string
	}{
		{"no run reached a verdict", CheckpointReport{Iteration: 4, FailedRuns: 2, FirstErrorModel: "opus", FirstError: "exited\nsecond line"},
			"After iteration 4: no review: all 2 reviewer run(s) failed, so nobody judged the work (first error (opus): exited). Go on with the task; tell the user that the checkpoint reviewers do not run."},
		{"no run at all", CheckpointReport{Iteration: 4},
			"After iteration 4: no review: all 0 reviewer run(s) failed, so nobody judged the work (no reviewer ran). Go on with the task; tell the user that the checkpoint reviewers do not run."},
		{"findings, each once", CheckpointReport{Iteration: 2, FailVotes: 2, Findings: []Finding{finding, {Model: "opus", File: "parser.go", Line: 3, Summary: " Unicode letters are rejected"}, {Model: "opus", File: "lex.go", Summary: "runes split"}}},
			"After iteration 2: FAIL (0 pass, 2 fail, 0 reviewer run(s) failed).\n- parser.go:3 (sonnet): unicode letters are rejected\n- lex.go (opus): runes split"},
		{"a pass without findings", CheckpointReport{Iteration: 2, Passed: true, PassVotes: 2},
			"After iteration 2: PASS (2 pass, 0 fail, 0 reviewer run(s) failed).\nNo blocking findings."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Consensus(tc.r, templates.Defaults())
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

func TestReflectionLineAndSnapshot(t *testing.T) {
	tm := templates.Defaults()
	for _, tc := range []struct {
		r    convergence.Reflection
		want string
	}{
		{convergence.Reflection{Iteration: 2, Approach: "Ran go test."}, "Iteration 2: Ran go test."},
		{convergence.Reflection{Iteration: 3, Approach: "Ran go test.", Failures: []string{"TestLex fails", "later"}, Thrashing: true},
			"Iteration 3: Ran go test. Failures: TestLex fails (the same failure keeps coming back)"},
	} {
		if got, err := ReflectionLine(tc.r, tm); err != nil || got != tc.want {
			t.Errorf("ReflectionLine(%+v) = %q, %v; want %q", tc.r, got, err, tc.want)
		}
	}
	s := activeSession(func(s *Session) {
		s.Reflections = []convergence.Reflection{{Iteration: 1, Approach: "Ran go test.", Failures: []string{"TestLex fails"}}}
		s.Findings = "After iteration 1: FAIL\n- parser.go:3 (opus): unicode"
	})
	text, err := Snapshot(s, stopFacts("", nil).Facts, tm)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Iteration 1: Ran go test. Failures: TestLex fails", "## Open findings", "parser.go:3 (opus): unicode", "build the parser"} {
		if !strings.Contains(text, w) {
			t.Errorf("snapshot lacks %q:\n%s", w, text)
		}
	}
	if text, err := Snapshot(Session{}, stopFacts("", nil).Facts, tm); err != nil || text != "" {
		t.Errorf("snapshot of no loop: %q, %v", text, err)
	}
}
