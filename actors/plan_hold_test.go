package actors

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/templates"
)

// heldStop is a Stop from a hook client that waits hold for a review.
func (f *planFixture) heldStop(id, reqID string, hold time.Duration) *HookResult {
	f.t.Helper()
	return f.ask(id, &HandleHook{RequestID: reqID, Event: hook.Stop, Hold: hold, Input: hook.Input{SessionID: id, HookEventName: "Stop"}}).(*HookResult)
}

// A Stop that starts a review is held while the reviewer runs: a review
// that ends within the hold is answered on that Stop, with what it found,
// and no turn goes to `drover plan wait`; a longer one gets the wait
// instruction at the hold. A hold of 0, from the configuration or from a
// hook client that does not wait (an older one), answers at once.
func TestPlanStopHeldForTheReview(t *testing.T) {
	tests := []struct {
		name string
		// hold is what the hook client waits, cfgHold review.hold.
		hold, cfgHold time.Duration
		slow          bool
		// want are in the first Stop's answer.
		want       []string
		wantAnswer bool // the review's answer came with the first Stop
	}{
		{name: "review within the hold", hold: time.Minute, cfgHold: config.DefaultReviewHold, want: []string{"plan-review-1.md", "1 blocking", "drover plan post-review-done"}, wantAnswer: true},
		{name: "review longer than the hold", hold: 100 * time.Millisecond, cfgHold: config.DefaultReviewHold, slow: true, want: []string{"drover plan wait"}},
		{name: "config hold shorter than the client's", hold: time.Minute, cfgHold: 100 * time.Millisecond, slow: true, want: []string{"drover plan wait"}},
		{name: "no hold configured", hold: time.Minute, cfgHold: 0, want: []string{"drover plan wait"}},
		{name: "a client that does not wait", hold: 0, cfgHold: config.DefaultReviewHold, want: []string{"drover plan wait"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(c *config.Config) { c.Review.Hold = tc.cfgHold })
			const sid = "plan-hold"
			f.write("demo", "plan.md", "# Demo\n")
			f.fakeScript("verdicts", "FAIL\n")
			if tc.slow {
				f.fakeScript("sleep", "3600")
				t.Cleanup(func() { f.mustPlan(sid, "stop-reviews", api.PlanArgs{}) })
			}
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})

			r := f.heldStop(sid, "stop-1", tc.hold)
			if r.Err != nil || !r.Output.IsBlock() {
				t.Fatalf("first stop: %+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Output.Reason, w) {
					t.Errorf("the first stop's answer lacks %q:\n%s", w, r.Output.Reason)
				}
			}
			if !tc.wantAnswer {
				return
			}
			// The answer was committed before it was sent: a retried
			// request gets it, and the next Stop does not get it again.
			if again := f.heldStop(sid, "stop-1", tc.hold); !again.Replayed || again.Output != r.Output {
				t.Errorf("a retried stop was not replayed: %+v", again)
			}
			rec := f.storedPlan(sid)
			if rec.Plan.Answer != nil || rec.Plan.Review != nil || rec.Plan.Phase != plan.PhasePlanReview || rec.Plan.NextPhase != plan.PhasePostPlanReview || rec.Plan.Iteration != 1 {
				t.Errorf("stored plan after the held stop: %+v", rec.Plan)
			}
			if n := f.fakeFile("count"); n != "1" {
				t.Errorf("%s reviewer runs, want 1", n)
			}
		})
	}
}

// The session goes on while a Stop is held: its status and commands are
// answered, and a command that ends the review (stop-reviews) answers the
// held Stop with what a Stop gets now.
func TestHeldStopDoesNotBlockTheSession(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-hold-cancel"
	f.write("slow", "plan.md", "# Slow\n")
	f.fakeScript("sleep", "3600")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "slow"})

	held := f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: sid, Msg: &HandleHook{RequestID: "stop-1", Event: hook.Stop, Hold: time.Minute, Input: hook.Input{SessionID: sid, HookEventName: "Stop"}}}, testTimeout)
	eventually.True(t, testTimeout, "the reviewer to start", func() bool { return f.fakeFile("child-1") != "" })
	if st := f.mustPlan(sid, "status", api.PlanArgs{}); !st.ReviewRunning {
		t.Fatalf("status while a stop is held: %+v", st)
	}
	if st := f.mustPlan(sid, "stop-reviews", api.PlanArgs{}); st.ReviewRunning {
		t.Fatalf("stop-reviews while a stop is held: %+v", st)
	}
	res, err := held.Result()
	if err != nil {
		t.Fatalf("the held stop: %v", err)
	}
	if r := res.(*HookResult); r.Err != nil || r.Output.IsBlock() {
		t.Errorf("the held stop after stop-reviews: %+v", r)
	}
}

// A held Stop whose asker went away (ReleaseHold: the hook was killed, the
// user interrupted) gets its committed answer at once, and the review's
// answer is not spent on it: the next Stop gets it.
func TestReleasedHoldKeepsTheAnswerForTheNextStop(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-hold-release"
	f.write("demo", "plan.md", "# Demo\n")
	f.fakeScript("verdicts", "FAIL\n")
	f.fakeScript("sleep", "1")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})

	held := f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: sid, Msg: &HandleHook{RequestID: "stop-1", Event: hook.Stop, Hold: time.Minute, Input: hook.Input{SessionID: sid, HookEventName: "Stop"}}}, testTimeout)
	eventually.True(t, testTimeout, "the reviewer to start", func() bool { return f.fakeFile("child-1") != "" })
	f.system.Root.Send(f.pid, &ToSession{SessionID: sid, Msg: &ReleaseHold{RequestID: "stop-1"}})
	res, err := held.Result()
	if err != nil {
		t.Fatalf("the released stop: %v", err)
	}
	if r := res.(*HookResult); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan wait") {
		t.Fatalf("the released stop: %+v, want the wait instruction", r)
	}
	f.waitReview(sid)
	if r := f.stop(sid, "stop-2"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") || !strings.Contains(r.Output.Reason, "1 blocking") {
		t.Errorf("the stop after the review: %+v, want its answer", r)
	}
}

// A held Stop whose second decision fails (the actor panics while it
// decides the Stop again, once the review ended) is still answered, with
// the wait instruction it was given and committed, rather than left to
// its asker's timeout.
func TestHeldStopAnsweredWhenItsSecondDecisionFails(t *testing.T) {
	var armed, panicked atomic.Bool
	f := newPlanFixtureEnv(t, SessionsOptions{RestartMax: 3}, func(env *Env) {
		load := env.Templates
		env.Templates = func() (templates.Set, error) {
			if armed.Load() && calledFrom("(*sessionActor).settleHeld") {
				panicked.Store(true)
				panic("injected failure while deciding a held stop again")
			}
			return load()
		}
	})
	const sid = "plan-hold-panic"
	f.write("slow", "plan.md", "# Slow\n")
	f.fakeScript("sleep", "3600")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "slow"})

	held := f.system.Root.RequestFuture(f.pid, &ToSession{SessionID: sid, Msg: &HandleHook{RequestID: "stop-1", Event: hook.Stop, Hold: time.Minute, Input: hook.Input{SessionID: sid, HookEventName: "Stop"}}}, testTimeout)
	eventually.True(t, testTimeout, "the reviewer to start", func() bool { return f.fakeFile("child-1") != "" })
	armed.Store(true)
	// stop-reviews ends the review: the held Stop is decided again, and
	// that decision panics.
	f.mustPlan(sid, "stop-reviews", api.PlanArgs{})
	res, err := held.Result()
	if err != nil {
		t.Fatalf("the held stop whose second decision failed: %v", err)
	}
	if !panicked.Load() {
		t.Fatal("the held stop was not decided again")
	}
	if r := res.(*HookResult); r.Err != nil || !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan wait") {
		t.Errorf("the held stop whose second decision failed: %+v, want the committed wait instruction", r)
	}
}

// calledFrom reports whether a function whose name ends in fn is on the
// caller's stack.
func calledFrom(fn string) bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		fr, more := frames.Next()
		if strings.HasSuffix(fr.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}
