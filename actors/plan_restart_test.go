package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// crashOnSave saves, and then fails the session actor as a crash would
// when the saved record is the one crashAt picks (once armed, once): the
// record is committed, and none of its effects ran.
// With failAt armed instead, the save that it picks fails, once, as a
// full disk would.
type crashOnSave struct {
	Store
	crashAt  atomic.Pointer[func(session.Record) bool]
	failAt   atomic.Pointer[func(session.Record) bool]
	crashes  atomic.Int32
	failures atomic.Int32
}

func (c *crashOnSave) Save(ctx context.Context, rec session.Record) error {
	if p := c.failAt.Load(); p != nil && (*p)(rec) && c.failAt.CompareAndSwap(p, nil) {
		c.failures.Add(1)
		return errors.New("disk full")
	}
	if err := c.Store.Save(ctx, rec); err != nil {
		return err
	}
	if p := c.crashAt.Load(); p != nil && (*p)(rec) && c.crashAt.CompareAndSwap(p, nil) {
		c.crashes.Add(1)
		panic("injected crash between the commit and its effects")
	}
	return nil
}

// arm makes the next save of a record that at picks crash.
func (c *crashOnSave) arm(at func(session.Record) bool) { c.crashAt.Store(&at) }

// The saves after which the plan's effects run.
var (
	anySave       = func(session.Record) bool { return true }
	reviewStarted = func(rec session.Record) bool {
		return rec.Plan.Review != nil && rec.Plan.Review.Answered == nil
	}
	reviewAnswered = func(rec session.Record) bool {
		return rec.Plan.Review != nil && rec.Plan.Review.Answered != nil
	}
	reviewApplied = func(rec session.Record) bool {
		return rec.Plan.Review == nil && len(rec.Plan.Runs) > 0
	}
)

func newPlanCrashFixture(t *testing.T) (*planFixture, *crashOnSave) {
	t.Helper()
	var crash *crashOnSave
	f := newPlanFixtureEnv(t, SessionsOptions{RestartMax: 10}, func(e *Env) {
		crash = &crashOnSave{Store: e.Store}
		e.Store = crash
	})
	return f, crash
}

// runLines counts the lines of the plan's run log.
func (f *planFixture) runLines(planID string) int {
	data, _ := os.ReadFile(filepath.Join(f.planDir(planID), RunsFile))
	return strings.Count(string(data), "\n")
}

// TestPlanReviewSurvivesACrashAfterEachCommit: the session actor fails
// right after each commit of a review's life (its start, its answer, its
// application), before the effects of that commit ran. The restarted actor
// re-derives them from the stored record: the review runs exactly once, its
// file is written, its run is logged once, and the agent gets the answers
// it would have got without the crash.
func TestPlanReviewSurvivesACrashAfterEachCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(session.Record) bool
		// stopCrashes is whether the crash comes with the stop that
		// starts the review (else in the background, after it).
		stopCrashes bool
	}{
		{"start a review", reviewStarted, true},
		{"write the review file", reviewAnswered, false},
		{"log the run", reviewApplied, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, crash := newPlanCrashFixture(t)
			const sid = "plan-crash"
			f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})

			crash.arm(tc.at)
			r := f.stop(sid, "stop-1")
			if tc.stopCrashes != errors.Is(r.Err, ErrSessionFailed) {
				t.Fatalf("the stop that starts the review: %+v", r)
			}
			if !tc.stopCrashes && !r.Output.IsBlock() {
				t.Fatalf("the stop did not start the review: %+v", r)
			}
			if !eventually.Holds(testTimeout, func() bool {
				rec := f.storedPlan(sid)
				return crash.crashes.Load() == 1 && rec.Plan.Review == nil && rec.Plan.Iteration == 1 && f.runLines("demo") > 0
			}) {
				t.Fatalf("the restarted session never finished the review (%d crashes): %+v", crash.crashes.Load(), f.storedPlan(sid).Plan)
			}
			if n := f.fakeFile("count"); n != "1" {
				t.Errorf("the reviewer ran %s times, want once", n)
			}
			if n := f.runLines("demo"); n != 1 {
				t.Errorf("%d runs logged, want 1", n)
			}
			review, err := os.ReadFile(filepath.Join(f.planDir("demo"), "plan-review-1.md"))
			if err != nil || !strings.Contains(string(review), "Verdict: PASS") {
				t.Errorf("plan-review-1.md: %s (%v)", review, err)
			}

			// The hook client retries the stop: it gets the committed
			// answer, and nothing starts again.
			retried := f.stop(sid, "stop-1")
			if !retried.Replayed || !retried.Output.IsBlock() || !strings.Contains(retried.Output.Reason, "drover plan wait") {
				t.Errorf("the retried stop: %+v, want the recorded block", retried)
			}
			r = f.stop(sid, "stop-2")
			if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") || !strings.Contains(r.Output.Reason, "drover plan post-review-done") {
				t.Errorf("the stop after the review: %+v, want the post-review block", r)
			}
			st := f.mustPlan(sid, "status", api.PlanArgs{})
			if st.Totals.Runs != 1 || st.LastReview == nil || st.LastReview.Verdict != "PASS" || st.ConsecutiveClean != 1 {
				t.Errorf("status: %+v, last review %+v", st, st.LastReview)
			}

			// Another restart finds nothing left to do.
			f.system.Root.Send(f.pid, &Forget{SessionID: sid})
			if !eventually.Holds(testTimeout, func() bool { return !f.hasChild("session-" + sid) }) {
				t.Fatal("the session actor did not go away")
			}
			f.mustPlan(sid, "status", api.PlanArgs{})
			if n, runs := f.fakeFile("count"), f.runLines("demo"); n != "1" || runs != 1 {
				t.Errorf("after another restart: %s reviewer runs, %d logged, want 1 and 1", n, runs)
			}
		})
	}
}

// TestPlanFilesSurviveACrashAfterTheCommit: the plan folder and state.json
// are effects of a command's commit too; after a crash right after the
// commit, the restarted actor makes and writes them from the stored record.
func TestPlanFilesSurviveACrashAfterTheCommit(t *testing.T) {
	t.Run("make the plan folder", func(t *testing.T) {
		f, crash := newPlanCrashFixture(t)
		const sid = "plan-folder"
		crash.arm(anySave)
		if _, err := f.plan(sid, "new", api.PlanArgs{PlanID: "fresh"}); !errors.Is(err, ErrSessionFailed) {
			t.Fatalf("the crashing plan new: %v", err)
		}
		view := filepath.Join(f.planDir("fresh"), plan.ViewFile)
		if !eventually.Holds(testTimeout, func() bool {
			data, err := os.ReadFile(view)
			return err == nil && strings.Contains(string(data), `"phase": "new-plan"`)
		}) {
			t.Fatal("the restarted session did not make the plan folder and its state.json")
		}
		if st := f.mustPlan(sid, "status", api.PlanArgs{}); st.PlanID != "fresh" || st.Phase != "new-plan" {
			t.Errorf("status: %+v", st)
		}
	})
	t.Run("write the state.json view", func(t *testing.T) {
		f, crash := newPlanCrashFixture(t)
		const sid = "plan-view"
		f.write("demo", "plan.md", "# Demo\n")
		f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
		crash.arm(anySave)
		if _, err := f.plan(sid, "set", api.PlanArgs{Key: "max_reviews", Value: "3"}); !errors.Is(err, ErrSessionFailed) {
			t.Fatalf("the crashing plan set: %v", err)
		}
		if rec := f.storedPlan(sid); rec.Plan.MaxReviews != 3 {
			t.Fatalf("the set was not committed: %+v", rec.Plan)
		}
		view := filepath.Join(f.planDir("demo"), plan.ViewFile)
		if !eventually.Holds(testTimeout, func() bool {
			data, err := os.ReadFile(view)
			return err == nil && strings.Contains(string(data), `"max_reviews": 3`)
		}) {
			data, _ := os.ReadFile(view)
			t.Fatalf("the restarted session did not rewrite state.json:\n%s", data)
		}
	})
}

// TestPlanWaitAppliesAnAnswerWhoseCommitFailed: the commit that applies a
// review's answer fails (the store is full for a moment). Nothing runs the
// review again; `drover plan wait`, which the agent is told to run, writes
// the review file again and applies the answer.
func TestPlanWaitAppliesAnAnswerWhoseCommitFailed(t *testing.T) {
	f, store := newPlanCrashFixture(t)
	const sid = "plan-full"
	f.write("demo", "plan.md", "# Demo\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
	at := reviewApplied
	store.failAt.Store(&at)
	if r := f.stop(sid, "stop-1"); !r.Output.IsBlock() {
		t.Fatalf("the stop did not start the review: %+v", r)
	}
	if !eventually.Holds(testTimeout, func() bool {
		return store.failures.Load() == 1 && reviewAnswered(f.storedPlan(sid))
	}) {
		t.Fatalf("the answer was not left recorded after the failed commit: %+v", f.storedPlan(sid).Plan)
	}
	if r := f.stop(sid, "stop-2"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan wait") {
		t.Errorf("a stop while the answer waits: %+v, want to wait", r)
	}
	f.waitReview(sid)
	if rec := f.storedPlan(sid); rec.Plan.Review != nil || rec.Plan.Iteration != 1 {
		t.Fatalf("wait did not apply the answer: %+v", rec.Plan)
	}
	if n, runs := f.fakeFile("count"), f.runLines("demo"); n != "1" || runs != 1 {
		t.Errorf("%s reviewer runs, %d logged, want 1 and 1", n, runs)
	}
	if r := f.stop(sid, "stop-3"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
		t.Errorf("the stop after wait: %+v, want the post-review block", r)
	}
}
