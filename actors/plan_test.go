package actors

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// fakeReviewer is a reviewer CLI for review.cli custom, run as
// `fake-reviewer MODEL PROMPT`. It is scripted by files in its own folder:
//
//	verdicts  line N is the verdict of run N (default PASS); FAIL comes
//	          with one blocking finding, MINOR is a PASS with one minor
//	          finding, anything else is printed as is
//	sleep     when present, run N starts `sleep $(cat sleep)` in the
//	          background, writes its pid to child-N, and waits for it
//
// and records run N in count, model-N, guard-N ($DROVER_REVIEWER),
// prompt-N and pid-N, and that model M ran in ran-M (count is not safe
// for runs at once; ran-M is).
const fakeReviewer = `#!/bin/sh
d=$(dirname "$0")
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
printf '%s' "$1" > "$d/model-$n"
: > "$d/ran-$1"
printf '%s' "${DROVER_REVIEWER:-}" > "$d/guard-$n"
printf '%s' "$2" > "$d/prompt-$n"
echo "$$" > "$d/pid-$n"
if [ -f "$d/sleep" ]; then
	sleep "$(cat "$d/sleep")" &
	echo "$!" > "$d/child-$n"
	wait
fi
v=$(sed -n "${n}p" "$d/verdicts" 2>/dev/null)
[ -n "$v" ] || v=PASS
f='[]'
[ "$v" = FAIL ] && f='[{"severity":"blocking","file":"plan.md","line":1,"summary":"the plan has no test section"}]'
[ "$v" = MINOR ] && { v=PASS; f='[{"severity":"minor","file":"plan.md","line":2,"summary":"a heading could be shorter"}]'; }
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"%s","findings":%s},"total_cost_usd":0.5}\n' "$v" "$f"
`

type planFixture struct {
	*fixture
	fake string
}

// newPlanFixture is a sessions actor whose reviewer is fakeReviewer.
func newPlanFixture(t *testing.T) *planFixture {
	return newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3})
}

func newPlanFixtureOpts(t *testing.T, opts SessionsOptions, mods ...func(*config.Config)) *planFixture {
	t.Helper()
	return newPlanFixtureEnv(t, opts, nil, mods...)
}

// newPlanFixtureEnv is newPlanFixtureOpts with envMod, when not nil,
// adjusting the session actors' Env (after the fixture's store is set).
func newPlanFixtureEnv(t *testing.T, opts SessionsOptions, envMod func(*Env), mods ...func(*config.Config)) *planFixture {
	t.Helper()
	f := &fixture{t: t, root: t.TempDir()}
	fake := t.TempDir()
	script := filepath.Join(fake, "fake-reviewer")
	if err := os.WriteFile(script, []byte(fakeReviewer), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(f.root, ".drover", "state", "drover.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.store = st
	cfg := config.Defaults()
	cfg.Review.CLI = reviewer.CLICustom
	cfg.Review.Command = "'" + script + "' {{model}} {{prompt}}"
	cfg.Review.Timeout = time.Minute
	for _, m := range mods {
		m(&cfg)
	}
	env := Env{
		Store:       st,
		Root:        f.root,
		SessionsDir: filepath.Join(f.root, ".drover", "sessions"),
		Config:      func() config.Config { return cfg },
		Templates:   func() (templates.Set, error) { return templates.Defaults(), nil },
		Dirty:       func(context.Context, string) (bool, []string, error) { return false, nil, nil },
		Reviewers:   reviewer.NewLimiter(2),
	}
	if envMod != nil {
		envMod(&env)
	}
	f.system = actor.NewActorSystem()
	pid, err := f.system.Root.SpawnNamed(NewSessionsProps(env, opts), "sessions")
	if err != nil {
		t.Fatal(err)
	}
	f.pid = pid
	t.Cleanup(f.close)
	return &planFixture{fixture: f, fake: fake}
}

func (f *planFixture) plan(id, verb string, args api.PlanArgs) (api.PlanStatus, error) {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	r := f.ask(id, &WorkflowCommand{Workflow: "plan", Verb: verb, Args: raw}).(*WorkflowResult)
	if r.Err != nil {
		return api.PlanStatus{}, r.Err
	}
	var st api.PlanStatus
	if err := json.Unmarshal(r.Response, &st); err != nil {
		f.t.Fatalf("plan %s answered %s: %v", verb, r.Response, err)
	}
	return st, nil
}

func (f *planFixture) mustPlan(id, verb string, args api.PlanArgs) api.PlanStatus {
	f.t.Helper()
	st, err := f.plan(id, verb, args)
	if err != nil {
		f.t.Fatalf("plan %s: %v", verb, err)
	}
	return st
}

// waitReview runs `drover plan wait` until no review is in flight.
func (f *planFixture) waitReview(id string) api.PlanStatus {
	f.t.Helper()
	var st api.PlanStatus
	if !eventually.Holds(testTimeout, func() bool { st = f.mustPlan(id, "wait", api.PlanArgs{}); return !st.ReviewRunning }) {
		f.t.Fatalf("the review never finished: %+v", st)
	}
	return st
}

func (f *planFixture) planDir(planID string) string {
	return filepath.Join(f.root, ".drover", "plans", planID)
}

func (f *planFixture) write(planID, name, content string) {
	f.t.Helper()
	if err := os.MkdirAll(f.planDir(planID), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.planDir(planID), name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// fakeFile reads a file the fake reviewer wrote ("" when missing).
func (f *planFixture) fakeFile(name string) string {
	data, _ := os.ReadFile(filepath.Join(f.fake, name))
	return strings.TrimSpace(string(data))
}

func (f *planFixture) fakeScript(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.fake, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *planFixture) storedPlan(id string) session.Record {
	f.t.Helper()
	rec, st, err := f.store.Load(context.Background(), id)
	if err != nil || st != store.Found {
		f.t.Fatalf("loading %s: status %v err %v", id, st, err)
	}
	return rec
}

// gone reports whether pid no longer runs; a zombie counts as gone.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestPlanAdvancesAfterTwoCleanReviews(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s1"
	f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n")

	st := f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
	if st.Phase != "new-plan" || st.NextPhase == nil || *st.NextPhase != "plan-review" || st.MaxReviews != 8 || st.ReviewModel != "opus" {
		t.Fatalf("after new: %+v", st)
	}
	view, err := os.ReadFile(filepath.Join(f.planDir("demo"), plan.ViewFile))
	if err != nil || !strings.Contains(string(view), `"phase": "new-plan"`) {
		t.Fatalf("state.json after new: %s (%v)", view, err)
	}

	// Review 1: the stop starts it and blocks; the answer (PASS) comes
	// with the next stop, as the post-review instructions.
	r := f.stop(sid, "stop-1")
	if r.Err != nil || !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan wait") {
		t.Fatalf("first stop: %+v", r)
	}
	f.waitReview(sid)
	r = f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan post-review-done") || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
		t.Fatalf("stop after review 1: %+v", r)
	}
	review, err := os.ReadFile(filepath.Join(f.planDir("demo"), "plan-review-1.md"))
	if err != nil || !strings.Contains(string(review), "Verdict: PASS") || !strings.Contains(string(review), "Reviewer: opus") {
		t.Fatalf("plan-review-1.md: %s (%v)", review, err)
	}
	if again := f.stop(sid, "stop-2"); !again.Replayed || again.Output != r.Output {
		t.Errorf("a retried stop was not replayed: %+v", again)
	}

	st = f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})
	if st.Phase != "post-plan-review" || *st.NextPhase != "plan-review" || st.ConsecutiveClean != 1 || st.ReviewModel != "sonnet" {
		t.Fatalf("after post-review: %+v", st)
	}

	// Review 2, clean again: the plan advances and the stop is allowed.
	if r := f.stop(sid, "stop-3"); !r.Output.IsBlock() {
		t.Fatalf("stop-3 did not start review 2: %+v", r)
	}
	f.waitReview(sid)
	r = f.stop(sid, "stop-4")
	if r.Err != nil || r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "passed: 2 clean review(s) in a row") {
		t.Fatalf("stop after two clean reviews: %+v", r)
	}
	rec := f.storedPlan(sid)
	if rec.Workflow != session.Plan || rec.Plan.Phase != plan.PhasePlanReview || rec.Plan.NextPhase != plan.PhaseCreateTasks || rec.Plan.Review != nil {
		t.Fatalf("stored plan after two clean reviews: %+v", rec.Plan)
	}
	if got := []string{f.fakeFile("model-1"), f.fakeFile("model-2")}; got[0] != "opus" || got[1] != "sonnet" {
		t.Errorf("models %v, want opus then sonnet", got)
	}
	if f.fakeFile("guard-1") != "1" {
		t.Errorf("the reviewer ran without %s=1", reviewer.GuardEnv)
	}
	if p := f.fakeFile("prompt-2"); !strings.Contains(p, "not the first review") || !strings.Contains(p, "plan-review-2.md") {
		t.Errorf("review 2's prompt is not a re-check of review 1:\n%s", p)
	}
	st = f.mustPlan(sid, "status", api.PlanArgs{})
	if st.Totals.Runs != 2 || st.Totals.CostUSD != 1 || st.Totals.SessionRuns != 2 || st.LastReview == nil || st.LastReview.Verdict != "PASS" {
		t.Errorf("status totals after two runs: %+v last %+v", st.Totals, st.LastReview)
	}
	if r := f.stop(sid, "stop-5"); r.Output.IsBlock() {
		t.Errorf("a stop after the plan review passed blocked: %+v", r)
	}
	// Every file drover wrote (state.json, the review files) went through
	// a temporary file; none is left.
	ents, err := os.ReadDir(f.planDir("demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in the plan folder", e.Name())
		}
	}
}

// startSleepingReview starts a plan whose first review sleeps until it is
// killed, and returns the pids of the reviewer and of its child.
func (f *planFixture) startSleepingReview(sid string) (reviewerPID, childPID int) {
	f.t.Helper()
	f.write("slow", "plan.md", "# Slow\n")
	f.fakeScript("sleep", "3600")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "slow"})
	if r := f.stop(sid, "stop-1"); !r.Output.IsBlock() {
		f.t.Fatalf("first stop: %+v", r)
	}
	eventually.True(f.t, testTimeout, "the reviewer to start", func() bool { return f.fakeFile("child-1") != "" })
	reviewerPID, _ = strconv.Atoi(f.fakeFile("pid-1"))
	childPID, _ = strconv.Atoi(f.fakeFile("child-1"))
	if reviewerPID <= 0 || childPID <= 0 {
		f.t.Fatalf("pids %d %d", reviewerPID, childPID)
	}
	f.t.Cleanup(func() {
		_ = syscall.Kill(reviewerPID, syscall.SIGKILL)
		_ = syscall.Kill(childPID, syscall.SIGKILL)
	})
	return reviewerPID, childPID
}

func TestPlanReviewDoesNotBlockTheMailbox(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s2"
	f.startSleepingReview(sid)

	// The reviewer sleeps for an hour: every answer below comes while it
	// runs, from the same session actor.
	st := f.mustPlan(sid, "status", api.PlanArgs{})
	if !st.ReviewRunning || st.Review == nil || !st.Review.Running || st.Review.Kind != "plan" || st.Review.Iteration != 1 || st.Review.Model != "opus" {
		t.Fatalf("status during the review: %+v %+v", st, st.Review)
	}
	r := f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "drover plan wait") {
		t.Fatalf("a stop during the review: %+v", r)
	}
	if _, err := f.plan(sid, "advance", api.PlanArgs{Phase: "create-tasks"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "review is running") {
		t.Errorf("advance during a review: %v", err)
	}
	if n := f.fakeFile("count"); n != "1" {
		t.Errorf("%s reviewer runs, want 1: a stop during a review must not start another", n)
	}
}

func TestPlanStopCancelsTheReview(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s3"
	rpid, cpid := f.startSleepingReview(sid)

	st := f.mustPlan(sid, "stop-reviews", api.PlanArgs{})
	if st.ReviewRunning || st.NextPhase != nil || !strings.Contains(st.Message, "cancelled") {
		t.Fatalf("after stop-reviews: %+v", st)
	}
	for _, pid := range []int{rpid, cpid} {
		if !eventually.Holds(testTimeout, func() bool { return gone(pid) }) {
			t.Fatalf("process %d of the reviewer's group survived the stop", pid)
		}
	}
	if rec := f.storedPlan(sid); rec.Plan.Review != nil || rec.Plan.NextPhase != plan.PhaseNone {
		t.Errorf("stored plan after stop: %+v", rec.Plan)
	}
	if r := f.stop(sid, "stop-2"); r.Output.IsBlock() {
		t.Errorf("a stop after stop-reviews blocked: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.planDir("slow"), "plan-review-1.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cancelled review wrote its review file (%v)", err)
	}
}

// TestDroverStopCancelsThePlanReview is `drover stop` (the session's stop
// command, not a plan verb) while a review runs: the reviewer and its child
// die, the review is cancelled and recorded nowhere, and the session can be
// passivated again.
func TestDroverStopCancelsThePlanReview(t *testing.T) {
	f := newPlanFixtureOpts(t, SessionsOptions{IdleTimeout: 20 * time.Millisecond, RestartMax: 3})
	const sid = "plan-drover-stop"
	rpid, cpid := f.startSleepingReview(sid)

	r := f.command(sid, "stop")
	if r.Err != nil || r.Response.State != "new-plan" || !strings.Contains(r.Response.Message, "cancelled") {
		t.Fatalf("drover stop during a review: %+v", r)
	}
	for _, pid := range []int{rpid, cpid} {
		if !eventually.Holds(testTimeout, func() bool { return gone(pid) }) {
			t.Fatalf("process %d of the reviewer's group survived drover stop", pid)
		}
	}
	if rec := f.storedPlan(sid); rec.Plan.Review != nil || rec.Plan.NextPhase != plan.PhaseNone || rec.Plan.Iteration != 0 {
		t.Errorf("stored plan after drover stop: %+v", rec.Plan)
	}
	// With the review cancelled the idle timeout applies again.
	if !eventually.Holds(testTimeout, func() bool { return !f.hasChild("session-" + sid) }) {
		t.Error("the session actor was never passivated after drover stop")
	}
	st := f.mustPlan(sid, "status", api.PlanArgs{})
	if st.ReviewRunning || st.NextPhase != nil || st.Totals.Runs != 0 {
		t.Errorf("status after drover stop: %+v", st)
	}
	if r := f.stop(sid, "stop-2"); r.Output.IsBlock() {
		t.Errorf("a stop after drover stop blocked: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.planDir("slow"), "plan-review-1.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cancelled review wrote its review file (%v)", err)
	}
	if n := f.fakeFile("count"); n != "1" {
		t.Errorf("%s reviewer runs, want 1", n)
	}
}

func TestPlanReviewSurvivesTheIdleTimeout(t *testing.T) {
	f := newPlanFixtureOpts(t, SessionsOptions{IdleTimeout: 20 * time.Millisecond, RestartMax: 3})
	const sid = "plan-idle"
	rpid, _ := f.startSleepingReview(sid)
	// Many idle timeouts pass without a message: a passivated session
	// actor would take its reviewer down with it.
	time.Sleep(300 * time.Millisecond)
	if gone(rpid) {
		t.Fatal("the reviewer was killed while its session was idle")
	}
	if !f.hasChild("session-" + sid) {
		t.Fatal("the session actor was passivated during its review")
	}
	f.mustPlan(sid, "stop-reviews", api.PlanArgs{})
	// With the review over, the idle timeout applies again.
	if !eventually.Holds(testTimeout, func() bool { return !f.hasChild("session-" + sid) }) {
		t.Error("the session actor was never passivated after its review")
	}
}

// hasChild reports whether the sessions actor has a child named name.
func (f *planFixture) hasChild(name string) bool {
	_, ok := f.system.ProcessRegistry.GetLocal(f.pid.Id + "/" + name)
	return ok
}

func TestPlanReviewRerunsAfterTheActorRestarts(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s4"
	rpid, _ := f.startSleepingReview(sid)

	// The session actor goes away (as after a crash or a passivation):
	// its review child and the reviewer's group go with it, and the saved
	// state still holds the review in flight.
	f.system.Root.Send(f.pid, &Forget{SessionID: sid})
	if !eventually.Holds(testTimeout, func() bool { return gone(rpid) }) {
		t.Fatalf("the reviewer %d outlived its session actor", rpid)
	}
	if rec := f.storedPlan(sid); rec.Plan.Review == nil || rec.Plan.Review.Iteration != 1 {
		t.Fatalf("stored plan lost the review in flight: %+v", rec.Plan)
	}

	// `drover plan wait` on the fresh actor runs it again: same iteration,
	// same model.
	if err := os.Remove(filepath.Join(f.fake, "sleep")); err != nil {
		t.Fatal(err)
	}
	f.waitReview(sid)
	if f.fakeFile("count") != "2" || f.fakeFile("model-2") != "opus" || !strings.Contains(f.fakeFile("prompt-2"), "plan-review-1.md") {
		t.Errorf("rerun: count %s model %s", f.fakeFile("count"), f.fakeFile("model-2"))
	}
	r := f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
		t.Fatalf("stop after the rerun: %+v", r)
	}
	if rec := f.storedPlan(sid); rec.Plan.Iteration != 1 || rec.Plan.ConsecutiveClean != 1 {
		t.Errorf("stored plan after the rerun: %+v", rec.Plan)
	}
}

func TestPlanMaxReviewsIsAHardStop(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s5"
	f.write("capped", "plan.md", "# Capped\n")
	f.fakeScript("verdicts", "FAIL\nFAIL\n")
	one := 1
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "capped", MaxReviews: &one})

	f.stop(sid, "stop-1")
	f.waitReview(sid)
	r := f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "FAIL") {
		t.Fatalf("stop after a failing review: %+v", r)
	}
	// The post-review of the last allowed review does not promise
	// another one.
	if st := f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-plan-review"}); strings.Contains(st.Message, "iteration 2 of at most 1") || !strings.Contains(st.Message, "limit of 1 review(s)") {
		t.Errorf("post-review at the limit said: %s", st.Message)
	}

	// The limit is reached: no second review, the stop is allowed, and
	// the plan waits for the user instead of advancing.
	r = f.stop(sid, "stop-3")
	if r.Err != nil || r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "reached its limit") {
		t.Fatalf("stop at the limit: %+v", r)
	}
	st := f.mustPlan(sid, "status", api.PlanArgs{})
	if st.ReviewRunning || st.NextPhase == nil || *st.NextPhase != "plan-review" || st.PhaseIteration != 1 {
		t.Errorf("status at the limit: %+v", st)
	}
	if n := f.fakeFile("count"); n != "1" {
		t.Errorf("%s reviewer runs, want 1", n)
	}
	st = f.mustPlan(sid, "findings", api.PlanArgs{})
	if len(st.Findings) != 1 || !st.Findings[0].Open || st.Findings[0].Severity != "blocking" {
		t.Errorf("findings: %+v", st.Findings)
	}
}

func TestPlanFailedReviewIsReportedNotCounted(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-s6"
	f.write("garbled", "plan.md", "# Garbled\n")
	f.fakeScript("verdicts", "MAYBE\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "garbled"})
	f.stop(sid, "stop-1")
	f.waitReview(sid)
	r := f.stop(sid, "stop-2")
	if r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "did not produce a verdict") {
		t.Fatalf("stop after a failed review: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.planDir("garbled"), "plan-review-1.log")); err != nil {
		t.Errorf("no log beside the plan: %v", err)
	}
	st := f.mustPlan(sid, "status", api.PlanArgs{})
	if st.PhaseIteration != 0 || st.ConsecutiveClean != 0 || st.Totals.FailedRuns != 1 {
		t.Errorf("a failed review was counted: %+v", st)
	}
	// The next stop runs the review again, as review 1.
	f.stop(sid, "stop-3")
	f.waitReview(sid)
	if f.fakeFile("count") != "2" || !strings.Contains(f.fakeFile("prompt-2"), "plan-review-1.md") {
		t.Errorf("the review was not run again as review 1")
	}
}

// TestPlanReviewFileWriteFailureIsAFailedRun has drover fail to write the
// review file (a folder is in its way): the run counts as failed, the agent
// is not sent to a file that does not exist, and once the way is clear the
// review runs again as review 1.
func TestPlanReviewFileWriteFailureIsAFailedRun(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-unwritable"
	f.write("blocked", "plan.md", "# Blocked\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "blocked"})
	reviewFile := filepath.Join(f.planDir("blocked"), "plan-review-1.md")
	if err := os.Mkdir(reviewFile, 0o755); err != nil {
		t.Fatal(err)
	}

	f.stop(sid, "stop-1")
	f.waitReview(sid)
	r := f.stop(sid, "stop-2")
	if r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "writing review file") || !strings.Contains(r.Output.SystemMessage, "not counted") {
		t.Fatalf("stop after a review whose file could not be written: %+v", r)
	}
	st := f.mustPlan(sid, "status", api.PlanArgs{})
	if st.PhaseIteration != 0 || st.ConsecutiveClean != 0 || derefStr(st.NextPhase) != "plan-review" || st.Totals.Runs != 1 || st.Totals.FailedRuns != 1 {
		t.Errorf("a review with no review file was counted: %+v", st)
	}
	if st.LastReview == nil || st.LastReview.Outcome != string(reviewer.Failed) || st.LastReview.Verdict != "PASS" || !strings.Contains(st.LastReview.Error, "writing review file") {
		t.Errorf("last review: %+v", st.LastReview)
	}
	if rec := f.storedPlan(sid); rec.Plan.Review != nil || rec.Plan.Iteration != 0 {
		t.Errorf("stored plan: %+v", rec.Plan)
	}

	if err := os.Remove(reviewFile); err != nil {
		t.Fatal(err)
	}
	f.stop(sid, "stop-3")
	f.waitReview(sid)
	r = f.stop(sid, "stop-4")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
		t.Fatalf("stop after the rerun: %+v", r)
	}
	if data, err := os.ReadFile(reviewFile); err != nil || !strings.Contains(string(data), "Verdict: PASS") {
		t.Errorf("plan-review-1.md after the rerun: %s (%v)", data, err)
	}
	if f.fakeFile("count") != "2" || !strings.Contains(f.fakeFile("prompt-2"), "plan-review-1.md") {
		t.Errorf("the review was not run again as review 1 (%s runs)", f.fakeFile("count"))
	}
}

func TestPlanNewRules(t *testing.T) {
	f := newPlanFixture(t)

	// Without plan.md the plan starts, and the first stop asks for it.
	st := f.mustPlan("fresh", "new", api.PlanArgs{PlanID: "empty", TDD: true})
	if !st.TDD || !strings.Contains(st.Message, "plan.md") {
		t.Fatalf("new without plan.md: %+v", st)
	}
	r := f.stop("fresh", "a")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "Missing required file: plan.md") {
		t.Errorf("stop without plan.md: %+v", r)
	}
	if f.fakeFile("count") != "" {
		t.Errorf("a review ran with nothing to review")
	}

	tests := []struct {
		name  string
		setup func(id string)
		args  api.PlanArgs
		want  string
	}{
		{"bad id", nil, api.PlanArgs{PlanID: "../x"}, "not a valid plan id"},
		{"queue running", func(id string) {
			f.add(id, "a task")
			if r := f.command(id, "start"); r.Err != nil {
				t.Fatal(r.Err)
			}
		}, api.PlanArgs{PlanID: "p"}, "task queue"},
		{"negative limit", nil, api.PlanArgs{PlanID: "p", MaxReviews: new(-1)}, "negative"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "rules-" + strconv.Itoa(i)
			if tt.setup != nil {
				tt.setup(id)
			}
			_, err := f.plan(id, "new", tt.args)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a bad request about %q", err, tt.want)
			}
		})
	}
	if _, err := f.plan("fresh", "frobnicate", api.PlanArgs{}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("unknown verb: %v", err)
	}
	if _, err := f.plan("fresh", "set", api.PlanArgs{Key: "review_model", Value: "haiku"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("set review_model outside review.models: %v", err)
	}
}

func TestPlanContinueAdoptsAPlanFromItsView(t *testing.T) {
	f := newPlanFixture(t)
	f.write("handover", "plan.md", "# Handover\n")
	f.write("handover", "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | first |\n")
	f.write("handover", "task-1.md", "# Task 1\n")
	f.write("handover", plan.ViewFile, `{"phase":"tasks-review","next_phase":"complete-task","current_task":null,"phase_iteration":2,"max_reviews":5,"review_model":"opus","consecutive_clean":2,"tdd":true}`)

	st := f.mustPlan("next-session", "continue", api.PlanArgs{})
	if st.PlanID != "handover" || st.Action != plan.ActionCompleteTask || st.Task != "1" || st.MaxReviews != 5 || !st.TDD {
		t.Fatalf("continue in a new session: %+v", st)
	}
	if !strings.Contains(st.Message, "picked up") || !strings.Contains(st.Message, "`drover plan complete-task 1 --tdd`") {
		t.Errorf("continue message:\n%s", st.Message)
	}
	if rec := f.storedPlan("next-session"); rec.Workflow != session.Plan || rec.Plan.Phase != plan.PhaseTasksReview {
		t.Errorf("stored: %+v", rec)
	}
}

// TestPlanContinueReadsTheWork checks that continue judges the plan and the
// current task from the files on disk, as seed 001's continue-plan does
// before a review: an unfinished plan.md goes back to new-plan, a task
// file with a subtask still pending to continue-task.
func TestPlanContinueReadsTheWork(t *testing.T) {
	f := newPlanFixture(t)
	f.write("draft", "plan.md", "# Draft\n\nhalf a plan\n")
	f.write("draft", plan.ViewFile, `{"phase":"new-plan","next_phase":"plan-review","current_task":null,"phase_iteration":0,"max_reviews":8,"review_model":"opus","consecutive_clean":0,"tdd":false}`)
	if st := f.mustPlan("draft-session", "continue", api.PlanArgs{PlanID: "draft"}); st.Action != plan.ActionNewPlan {
		t.Errorf("continue with a half-written plan.md: %s\n%s", st.Action, st.Message)
	}
	f.write("draft", "plan.md", "# Draft\n\n## Overview\n\nthe whole plan\n")
	if st := f.mustPlan("draft-session", "continue", api.PlanArgs{}); st.Action != plan.ActionStop {
		t.Errorf("continue with a finished plan.md: %s\n%s", st.Action, st.Message)
	}

	f.write("impl", "plan.md", "# Impl\n\n## Overview\n")
	f.write("impl", "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | first |\n")
	f.write("impl", "task-1.md", "# Task 1\n\n## Subtask 1.1\n**Status**: done\n\n## Subtask 1.2\n**Status**: pending\n")
	f.write("impl", plan.ViewFile, `{"phase":"complete-task","next_phase":"code-review","current_task":"1","phase_iteration":0,"max_reviews":8,"review_model":"opus","consecutive_clean":0,"tdd":false}`)
	if st := f.mustPlan("impl-session", "continue", api.PlanArgs{PlanID: "impl"}); st.Action != plan.ActionContinueTask || st.Task != "1" {
		t.Errorf("continue with a subtask pending: %s %s\n%s", st.Action, st.Task, st.Message)
	}
	f.write("impl", "task-1.md", "# Task 1\n\n## Subtask 1.1\n**Status**: done\n\n## Subtask 1.2\n**Status**: done\n")
	if st := f.mustPlan("impl-session", "continue", api.PlanArgs{}); st.Action != plan.ActionStop {
		t.Errorf("continue with every subtask done: %s\n%s", st.Action, st.Message)
	}
}

// TestPlanContinuePicksTheNewestPlan runs `drover plan continue` without a
// plan id in a new session, with two plan folders: it takes over the one
// whose state.json changed last, whatever the folders' names.
func TestPlanContinuePicksTheNewestPlan(t *testing.T) {
	f := newPlanFixture(t)
	old := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"alpha", "zeta"} {
		f.write(id, "plan.md", "# "+id+"\n")
		f.write(id, plan.ViewFile, `{"phase":"new-plan","next_phase":"plan-review","max_reviews":`+strconv.Itoa(3+i)+`}`)
	}
	// zeta sorts last and is the older one; alpha's state.json is newer.
	if err := os.Chtimes(filepath.Join(f.planDir("zeta"), plan.ViewFile), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(f.planDir("alpha"), plan.ViewFile), old.Add(time.Hour), old.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A folder with no state.json is no plan to take over, however new.
	if err := os.MkdirAll(filepath.Join(f.planDir("empty")), 0o755); err != nil {
		t.Fatal(err)
	}

	st := f.mustPlan("newest-session", "continue", api.PlanArgs{})
	if st.PlanID != "alpha" || st.MaxReviews != 3 || !strings.Contains(st.Message, "plan alpha, picked up") {
		t.Fatalf("continue with two plans took %s: %+v", st.PlanID, st)
	}
	if rec := f.storedPlan("newest-session"); rec.Plan.PlanID != "alpha" {
		t.Errorf("stored plan %q, want alpha", rec.Plan.PlanID)
	}
}

func TestNewestPlan(t *testing.T) {
	old := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		plans map[string]time.Duration // plan id -> age of its state.json past old
		extra []string                 // folders with no state.json
		want  string
	}{
		{"no plans folder", nil, nil, ""},
		{"one", map[string]time.Duration{"p": 0}, nil, "p"},
		{"newest wins over name order", map[string]time.Duration{"a": 2 * time.Hour, "b": time.Hour, "c": 0}, nil, "a"},
		{"newest last by name", map[string]time.Duration{"a": 0, "b": time.Hour}, nil, "b"},
		{"folders without state.json are skipped", map[string]time.Duration{"a": 0}, []string{"z", ".hidden"}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "plans")
			for id, age := range tt.plans {
				if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
					t.Fatal(err)
				}
				view := filepath.Join(dir, id, plan.ViewFile)
				if err := os.WriteFile(view, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(view, old.Add(age), old.Add(age)); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range tt.extra {
				if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := newestPlan(dir)
			if err != nil || got != tt.want {
				t.Errorf("newestPlan = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestWriteFileAtomicLeavesNoTempFiles writes, overwrites, and fails to
// write (a folder in the way of the rename): the folder holds no temporary
// file after any of them.
func TestWriteFileAtomicLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, plan.ViewFile)
	blocked := filepath.Join(dir, "plan-review-1.md")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		data    string
		wantErr bool
	}{
		{"new file", path, "one", false},
		{"overwrite", path, "two", false},
		{"rename fails", blocked, "three", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := writeFileAtomic(tt.path, []byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("writeFileAtomic: %v, want error %t", err, tt.wantErr)
			}
			if !tt.wantErr {
				if got, err := os.ReadFile(tt.path); err != nil || string(got) != tt.data {
					t.Errorf("%s holds %q (%v), want %q", tt.path, got, err, tt.data)
				}
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// runCleanReviews drives plan id of session sid through plan reviews (the
// fake reviewer passes them all) until the plan advances, and returns how
// many reviews that took.
func (f *planFixture) runCleanReviews(sid string) int {
	f.t.Helper()
	for n := 1; n <= 5; n++ {
		if r := f.stop(sid, "stop-review-"+strconv.Itoa(n)); !r.Output.IsBlock() {
			f.t.Fatalf("stop %d did not start review %d: %+v", n, n, r)
		}
		f.waitReview(sid)
		r := f.stop(sid, "stop-answer-"+strconv.Itoa(n))
		if r.Err != nil {
			f.t.Fatalf("stop after review %d: %v", n, r.Err)
		}
		if !r.Output.IsBlock() {
			if rec := f.storedPlan(sid); rec.Plan.NextPhase != plan.PhaseCreateTasks {
				f.t.Fatalf("allowed after review %d without advancing: %+v", n, rec.Plan)
			}
			return n
		}
		f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})
	}
	f.t.Fatal("the plan review never passed")
	return 0
}

func TestPlanCleanStreakFromConfig(t *testing.T) {
	for _, c := range []struct{ streak, want int }{{1, 1}, {3, 3}} {
		t.Run("clean_streak "+strconv.Itoa(c.streak), func(t *testing.T) {
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(cfg *config.Config) { cfg.Review.CleanStreak = c.streak })
			const sid = "plan-streak"
			f.write("demo", "plan.md", "# Demo\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
			if got := f.runCleanReviews(sid); got != c.want {
				t.Errorf("clean_streak %d: the plan advanced after %d clean reviews, want %d", c.streak, got, c.want)
			}
			if n := f.fakeFile("count"); n != strconv.Itoa(c.want) {
				t.Errorf("%s reviewer runs, want %d", n, c.want)
			}
		})
	}
}

// TestPlanCountMinorFromConfig drives two reviews that pass with a minor
// finding each: by default they are clean and the plan advances; with
// review.count_minor they are not, and the cycle goes on.
func TestPlanCountMinorFromConfig(t *testing.T) {
	for _, c := range []struct {
		countMinor bool
		wantClean  int
		advances   bool
	}{{false, 2, true}, {true, 0, false}} {
		t.Run("count_minor "+strconv.FormatBool(c.countMinor), func(t *testing.T) {
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(cfg *config.Config) { cfg.Review.CountMinor = c.countMinor })
			const sid = "plan-minor"
			f.write("demo", "plan.md", "# Demo\n")
			f.fakeScript("verdicts", "MINOR\nMINOR\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
			var last api.PlanStatus
			for n := 1; n <= 2; n++ {
				if r := f.stop(sid, "stop-review-"+strconv.Itoa(n)); !r.Output.IsBlock() {
					t.Fatalf("stop %d did not start review %d: %+v", n, n, r)
				}
				f.waitReview(sid)
				r := f.stop(sid, "stop-answer-"+strconv.Itoa(n))
				if n == 2 {
					if r.Output.IsBlock() == c.advances {
						t.Fatalf("count_minor %t: the stop after review 2 blocked %t: %+v", c.countMinor, r.Output.IsBlock(), r)
					}
					last = f.mustPlan(sid, "status", api.PlanArgs{})
					break
				}
				if !r.Output.IsBlock() {
					t.Fatalf("stop after review 1 did not ask for the post-review: %+v", r)
				}
				f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})
			}
			if last.ConsecutiveClean != c.wantClean {
				t.Errorf("count_minor %t: %d clean in a row after two reviews with a minor finding, want %d", c.countMinor, last.ConsecutiveClean, c.wantClean)
			}
			wantNext := "post-plan-review"
			if c.advances {
				wantNext = "create-tasks"
			}
			if derefStr(last.NextPhase) != wantNext {
				t.Errorf("count_minor %t: next_phase %s, want %s", c.countMinor, derefStr(last.NextPhase), wantNext)
			}
		})
	}
}

func TestPlanParallelUnanimousPassAdvances(t *testing.T) {
	f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(cfg *config.Config) { cfg.Review.Strategy = "parallel" })
	const sid = "plan-parallel"
	f.write("demo", "plan.md", "# Demo\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
	if got := f.runCleanReviews(sid); got != 1 {
		t.Errorf("a parallel review all reviewers passed advanced after %d reviews, want 1", got)
	}
	// Both default models ran the one review.
	for _, m := range []string{"opus", "sonnet"} {
		if _, err := os.Stat(filepath.Join(f.fake, "ran-"+m)); err != nil {
			t.Errorf("%s did not review: %v", m, err)
		}
	}
	if st := f.mustPlan(sid, "status", api.PlanArgs{}); st.Totals.CostUSD != 1 || st.Totals.Runs != 2 || st.Totals.SessionRuns != 2 {
		t.Errorf("the parallel review's totals %+v, want 2 runs costing 1 (0.5 each)", st.Totals)
	}
	// Each reviewer's run is its own line of reviews.jsonl, not one line
	// for the combined review.
	data, err := os.ReadFile(filepath.Join(f.planDir("demo"), RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for line := range strings.Lines(string(data)) {
		var r api.PlanReviewRun
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("reviews.jsonl line %q: %v", line, err)
		}
		if r.Kind != "plan" || r.Iteration != 1 || r.Verdict != "PASS" || r.Outcome != string(reviewer.Pass) || r.ExitCode != 0 || r.CostUSD != 0.5 || r.Findings != 0 {
			t.Errorf("reviews.jsonl run: %+v", r)
		}
		models = append(models, r.Model)
	}
	if !slices.Equal(models, []string{"opus", "sonnet"}) {
		t.Errorf("reviews.jsonl runs by %q, want one by opus and one by sonnet", models)
	}
}

func TestPlanBudgetStopsReviews(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-budget"
	f.write("spend", "plan.md", "# Spend\n")
	f.fakeScript("verdicts", "FAIL\nFAIL\nFAIL\n")
	st := f.mustPlan(sid, "new", api.PlanArgs{PlanID: "spend", BudgetUSD: 0.9})
	if st.BudgetUSD != 0.9 {
		t.Fatalf("budget after new: %+v", st)
	}
	// Each run costs $0.50: runs 1 and 2 start ($0 and $0.50 spent), the
	// third is refused ($1.00 spent).
	for n := 1; n <= 2; n++ {
		if r := f.stop(sid, "stop-review-"+strconv.Itoa(n)); !r.Output.IsBlock() {
			t.Fatalf("review %d did not start: %+v", n, r)
		}
		f.waitReview(sid)
		if r := f.stop(sid, "stop-answer-"+strconv.Itoa(n)); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "FAIL") {
			t.Fatalf("stop after failing review %d: %+v", n, r)
		}
		f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})
	}
	r := f.stop(sid, "stop-review-3")
	if r.Err != nil || r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "budget of $0.90 is spent ($1.00 so far)") {
		t.Fatalf("stop past the budget: %+v", r)
	}
	if n := f.fakeFile("count"); n != "2" {
		t.Errorf("%s reviewer runs, want 2", n)
	}
	st = f.mustPlan(sid, "status", api.PlanArgs{})
	if st.ReviewRunning || st.NextPhase == nil || *st.NextPhase != "plan-review" || st.PhaseIteration != 2 || st.Totals.CostUSD != 1 {
		t.Errorf("status past the budget: %+v", st)
	}

	// Raising the budget lets the next stop review again.
	st = f.mustPlan(sid, "set", api.PlanArgs{Key: "budget_usd", Value: "2"})
	if st.BudgetUSD != 2 || !strings.Contains(st.Message, "$2.00") {
		t.Fatalf("set budget_usd: %+v", st)
	}
	if r := f.stop(sid, "stop-review-3b"); !r.Output.IsBlock() {
		t.Fatalf("no review after raising the budget: %+v", r)
	}
	f.waitReview(sid)
	if _, err := f.plan(sid, "set", api.PlanArgs{Key: "budget_usd", Value: "-1"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a negative budget: %v", err)
	}
}

// TestPlanAdvanceAcceptsEveryPhase is issue 6's list of phases `drover plan
// advance` takes, each reported from a state where it makes sense.
func TestPlanAdvanceAcceptsEveryPhase(t *testing.T) {
	f := newPlanFixture(t)
	waitingFor := func(post string) func(s *plan.State) {
		return func(s *plan.State) {
			kind, _ := plan.Phase(post).PostReviewKind()
			s.Phase, s.NextPhase, s.Iteration, s.CurrentTask = kind.ReviewPhase(), plan.Phase(post), 1, "1"
		}
	}
	tests := []struct {
		phase     string
		task      string
		prepare   func(s *plan.State)
		wantPhase string
		wantNext  string
	}{
		{phase: "new-plan", wantPhase: "new-plan", wantNext: "plan-review"},
		{phase: "create-tasks", wantPhase: "create-tasks", wantNext: "tasks-review"},
		{phase: "complete-task", task: "1", wantPhase: "complete-task", wantNext: "code-review"},
		{phase: "complete-task-tdd", task: "1", wantPhase: "complete-task-tdd", wantNext: "code-review"},
		{phase: "next-task", task: "1", wantPhase: "next-task"},
		{phase: "continue-task", prepare: func(s *plan.State) {
			s.Phase, s.NextPhase, s.CurrentTask = plan.PhaseCompleteTask, plan.PhaseCodeReview, "1"
		}, wantPhase: "continue-task", wantNext: "code-review"},
		{phase: "post-plan-review", prepare: waitingFor("post-plan-review"), wantPhase: "post-plan-review", wantNext: "plan-review"},
		{phase: "post-tasks-review", prepare: waitingFor("post-tasks-review"), wantPhase: "post-tasks-review", wantNext: "tasks-review"},
		{phase: "post-code-review", prepare: waitingFor("post-code-review"), wantPhase: "post-code-review", wantNext: "code-review"},
		{phase: "post-all-code-review", prepare: waitingFor("post-all-code-review"), wantPhase: "post-all-code-review", wantNext: "all-code-review"},
	}
	for i, tt := range tests {
		t.Run(tt.phase, func(t *testing.T) {
			if !slices.Contains(plan.AdvancePhases(), tt.phase) {
				t.Errorf("plan.AdvancePhases() lacks %s", tt.phase)
			}
			sid := "advance-" + strconv.Itoa(i)
			id := "adv" + strconv.Itoa(i)
			f.write(id, "plan.md", "# Plan\n")
			f.write(id, "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | pending | one |\n")
			f.write(id, "task-1.md", "# Task 1\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: id})
			if tt.prepare != nil {
				f.setPlanState(sid, tt.prepare)
			}
			st, err := f.plan(sid, "advance", api.PlanArgs{Phase: tt.phase, Task: tt.task})
			if err != nil {
				t.Fatalf("advance %s: %v", tt.phase, err)
			}
			if st.Phase != tt.wantPhase || orNone(derefStr(st.NextPhase)) != orNone(tt.wantNext) {
				t.Errorf("advance %s: phase %s next %s, want %s next %s", tt.phase, st.Phase, derefStr(st.NextPhase), tt.wantPhase, orNone(tt.wantNext))
			}
			view, _ := os.ReadFile(filepath.Join(f.planDir(id), plan.ViewFile))
			if !strings.Contains(string(view), `"phase": "`+tt.wantPhase+`"`) {
				t.Errorf("state.json after advance %s:\n%s", tt.phase, view)
			}
		})
	}
	if _, err := f.plan("advance-0", "advance", api.PlanArgs{Phase: "plan-review"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "unknown phase") {
		t.Errorf("advance plan-review (a review, not a finished step): %v", err)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// setPlanState edits session sid's stored plan state and retires its actor
// (which saves nothing on its way out), so that the next message recovers
// the edited state, as after a supervisor restart.
func (f *planFixture) setPlanState(sid string, edit func(s *plan.State)) {
	f.t.Helper()
	rec := f.storedPlan(sid)
	edit(&rec.Plan)
	if err := f.store.Save(context.Background(), rec); err != nil {
		f.t.Fatal(err)
	}
	f.system.Root.Send(f.pid, &Forget{SessionID: sid})
}

// TestPlanStandaloneReview runs `drover plan code-review 2` in the middle of
// a plan: as seed 001's standalone review commands, it is one review, even
// one that fails: no post-review follows, and the plan stays where it was,
// with next_phase null.
func TestPlanStandaloneReview(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-standalone"
	f.write("solo", "plan.md", "# Solo\n")
	f.write("solo", "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | done | one |\n| 2 | pending | two |\n")
	f.write("solo", "task-1.md", "# Task 1\n")
	f.write("solo", "task-2.md", "# Task 2\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "solo"})
	if _, err := f.plan(sid, "review", api.PlanArgs{Phase: "bogus-review"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("an unknown review: %v", err)
	}
	if _, err := f.plan(sid, "review", api.PlanArgs{Phase: "code-review"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "no current task") {
		t.Errorf("a code review with no task: %v", err)
	}
	st := f.mustPlan(sid, "review", api.PlanArgs{Phase: "code-review", Task: "2"})
	if !st.Standalone || derefStr(st.NextPhase) != "code-review" || derefStr(st.CurrentTask) != "2" || st.Phase != "new-plan" || !strings.Contains(st.Message, "standalone code review of task 2") {
		t.Fatalf("after review code-review 2: %+v", st)
	}
	if view, _ := os.ReadFile(filepath.Join(f.planDir("solo"), plan.ViewFile)); !strings.Contains(string(view), `"standalone": true`) {
		t.Errorf("state.json does not say standalone:\n%s", view)
	}
	f.fakeScript("verdicts", "FAIL\n")
	if r := f.stop(sid, "stop-review"); !r.Output.IsBlock() {
		t.Fatalf("the stop did not start the review: %+v", r)
	}
	f.waitReview(sid)
	r := f.stop(sid, "stop-answer")
	if r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "standalone code review of task 2") || !strings.Contains(r.Output.SystemMessage, "task-2-review-1.md") || !strings.Contains(r.Output.SystemMessage, "one review") {
		t.Fatalf("the stop after the standalone review: %+v", r)
	}
	if review, err := os.ReadFile(filepath.Join(f.planDir("solo"), "task-2-review-1.md")); err != nil || !strings.Contains(string(review), "FAIL") {
		t.Errorf("task-2-review-1.md: %s (%v)", review, err)
	}
	st = f.mustPlan(sid, "status", api.PlanArgs{})
	if st.Standalone || st.NextPhase != nil || st.Phase != "code-review" || st.PhaseIteration != 1 || st.ConsecutiveClean != 0 {
		t.Errorf("status after the standalone review: %+v", st)
	}
	if r := f.stop(sid, "stop-after"); r.Output.IsBlock() || f.fakeFile("count") != "1" {
		t.Errorf("the stop after the standalone cycle: %+v, %s reviewer runs", r, f.fakeFile("count"))
	}
	// continue leaves the decision to the user (seed 001's catch-all).
	if st := f.mustPlan(sid, "continue", api.PlanArgs{}); st.Action != plan.ActionAskUser {
		t.Errorf("continue after a standalone review: %+v", st)
	}
}

// TestPlanActionPrompt renders /drover:plan ACTION through the session
// actor: with the plan's values, from the project's templates.
func TestPlanActionPrompt(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-actions"
	if _, err := f.plan(sid, "action", api.PlanArgs{Phase: "create-tasks"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "no plan") {
		t.Errorf("an action without a plan: %v", err)
	}
	f.write("acts", "plan.md", "# Acts\n")
	f.write("acts", "tasks.md", "| Id | Status | Description |\n|----|--------|-------------|\n| 1 | done | one |\n| 2 | pending | two |\n")
	f.write("acts", "task-1.md", "# Task 1\n")
	f.write("acts", "task-2.md", "# Task 2\n")
	st := f.mustPlan(sid, "new", api.PlanArgs{PlanID: "acts"})
	if !strings.Contains(st.Message, "[drover] Started plan acts") || !strings.Contains(st.Message, "Write the plan to "+filepath.Join(f.planDir("acts"), "plan.md")+" (") {
		t.Errorf("new printed:\n%s", st.Message)
	}
	for _, c := range []struct{ action, task, want string }{
		{"complete-task", "", "`drover plan complete-task 2`"},
		{"complete-task-tdd", "", "`drover plan complete-task 2 --tdd`"},
		{"code-review", "1", "`drover plan code-review 1`"},
		{"add-task", "", "`drover plan add-task 3`"},
		{"tasks-review", "", "`drover plan tasks-review`"},
	} {
		st := f.mustPlan(sid, "action", api.PlanArgs{Phase: c.action, Task: c.task})
		if !strings.Contains(st.Message, c.want) || !strings.Contains(st.Message, f.planDir("acts")) {
			t.Errorf("action %s:\n%s", c.action, st.Message)
		}
	}
	if _, err := f.plan(sid, "action", api.PlanArgs{Phase: "continue-task"}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "no current task") {
		t.Errorf("continue-task with no current task: %v", err)
	}
	// Rendering changes nothing.
	if rec := f.storedPlan(sid); rec.Plan.Phase != plan.PhaseNewPlan || rec.Plan.NextPhase != plan.PhasePlanReview {
		t.Errorf("an action prompt changed the plan: %+v", rec.Plan)
	}
}

// TestPlanAnswerSurvivesTheActor: a review that finished between stops is
// answered at the next stop even when the session actor went away in
// between (idle passivation, a supervisor restart): the agent must still
// get the post-review instructions.
func TestPlanAnswerSurvivesTheActor(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-answer"
	f.write("demo", "plan.md", "# Demo\n\nDo the thing.\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "demo"})
	if err := os.WriteFile(filepath.Join(f.fake, "verdicts"), []byte("FAIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.stop(sid, "stop-1"); !r.Output.IsBlock() {
		t.Fatalf("stop-1 did not start the review: %+v", r)
	}
	f.waitReview(sid)
	f.system.Root.Send(f.pid, &Forget{SessionID: sid})
	eventually.True(t, testTimeout, "the session actor to go away", func() bool { return !f.hasChild("session-" + sid) })

	r := f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") || !strings.Contains(r.Output.Reason, "drover plan post-review-done") {
		t.Fatalf("stop after the actor came back: %+v, want the post-review block", r)
	}
	// Given once: a later stop is the seed's ordinary one.
	if r := f.stop(sid, "stop-3"); r.Output.IsBlock() {
		t.Errorf("the answer was given twice: %+v", r)
	}
}

// TestPlanNewRefusesAnotherSessionsPlan: drover plan new on a folder that
// already holds a started plan (its state.json) would reset that plan
// under the session driving it; it is refused and points at plan continue.
// The session that owns the plan may start it over.
func TestPlanNewRefusesAnotherSessionsPlan(t *testing.T) {
	f := newPlanFixture(t)
	f.write("shared", "plan.md", "# Shared\n\n## Overview\n\nThe plan.\n")
	f.mustPlan("owner", "new", api.PlanArgs{PlanID: "shared"})
	f.mustPlan("owner", "stop-reviews", api.PlanArgs{})

	_, err := f.plan("other", "new", api.PlanArgs{PlanID: "shared"})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "drover plan continue shared") {
		t.Fatalf("plan new over another session's plan: %v, want a bad request naming plan continue", err)
	}
	if rec, found, err := f.store.Load(context.Background(), "other"); err != nil || found == store.Found && rec.Plan.Active() {
		t.Errorf("the refused session has a plan: %+v (%v)", rec.Plan, err)
	}
	view, err := os.ReadFile(filepath.Join(f.planDir("shared"), plan.ViewFile))
	if err != nil || !strings.Contains(string(view), `"next_phase": null`) {
		t.Errorf("state.json of the owner's plan changed: %s (%v)", view, err)
	}

	if st := f.mustPlan("owner", "new", api.PlanArgs{PlanID: "shared"}); st.Phase != "new-plan" {
		t.Errorf("the owner could not start its plan over: %+v", st)
	}
}

// TestPlanThatWaitsForTheUserPublishesNeedsReview: a stop let through
// because the plan's next review would pass max_reviews, or because its
// reviewer budget is spent, publishes needs_review (notify's
// needs-review), once the decision is committed; the stops before it,
// which ran reviews, do not.
func TestPlanThatWaitsForTheUserPublishesNeedsReview(t *testing.T) {
	one := 1
	cases := []struct {
		name string
		args api.PlanArgs
	}{
		{"max_reviews spent", api.PlanArgs{PlanID: "capped", MaxReviews: &one}},
		// A run costs $0.50: the second review is refused.
		{"the plan budget spent", api.PlanArgs{PlanID: "capped", BudgetUSD: 0.4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				mu        sync.Mutex
				published []events.Draft
			)
			f := newPlanFixtureEnv(t, SessionsOptions{RestartMax: 3}, func(env *Env) {
				env.Events = func(_ context.Context, evs ...events.Draft) {
					mu.Lock()
					defer mu.Unlock()
					published = append(published, evs...)
				}
			})
			needsReview := func() []events.Draft {
				mu.Lock()
				defer mu.Unlock()
				var out []events.Draft
				for _, e := range published {
					if e.Kind == api.EventNeedsReview {
						out = append(out, e)
					}
				}
				return out
			}
			const sid = "plan-waits"
			f.write("capped", "plan.md", "# Capped\n")
			f.fakeScript("verdicts", "FAIL\nFAIL\n")
			f.mustPlan(sid, "new", c.args)
			if r := f.stop(sid, "stop-review"); !r.Output.IsBlock() {
				t.Fatalf("the review did not start: %+v", r)
			}
			f.waitReview(sid)
			if r := f.stop(sid, "stop-answer"); !r.Output.IsBlock() {
				t.Fatalf("stop after the failing review: %+v", r)
			}
			f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})
			if got := needsReview(); len(got) != 0 {
				t.Fatalf("needs_review before the plan waits: %+v", got)
			}
			if r := f.stop(sid, "stop-waits"); r.Err != nil || r.Output.IsBlock() {
				t.Fatalf("the stop past the limit: %+v", r)
			}
			// The actor runs the effects of its decision before its
			// next message: after this answer they have run.
			f.mustPlan(sid, "status", api.PlanArgs{})
			want := api.ReviewData{Plan: "capped", Kind: "plan", Phase: "post-plan-review", Iteration: 1}
			if got := needsReview(); len(got) != 1 || got[0].Session != sid || got[0].Data != want {
				t.Errorf("needs_review events %+v, want one for %s with %+v", got, sid, want)
			}
		})
	}
}
