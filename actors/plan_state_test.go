package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// readView reads plan id's state.json as a map.
func (f *planFixture) readView(id string) map[string]any {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.planDir(id), plan.ViewFile))
	if err != nil {
		f.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		f.t.Fatalf("state.json: %v\n%s", err, data)
	}
	return m
}

// editView edits plan id's state.json as a user of seed 001 would: read
// the JSON, change fields, write it back.
func (f *planFixture) editView(id string, edit func(m map[string]any)) {
	f.t.Helper()
	m := f.readView(id)
	edit(m)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.planDir(id), plan.ViewFile), data, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// TestPlanHandEditsOfStateJSON edits state.json between stops, as seed
// 001 tells its users to: next_phase null (the escape hatch every block
// message names) ends the review loop and max_reviews changes the cap,
// each said in the answer; any other edit is undone with a message that
// names drover plan set. An edit made while the session actor is away
// (passivated, restarted) is not overwritten when it comes back.
func TestPlanHandEditsOfStateJSON(t *testing.T) {
	tests := []struct {
		name string
		// edit is made after the post-review of a failing first review,
		// with the second review due at the next stop.
		edit func(m map[string]any)
		// away retires the session actor between the edit and the stop.
		away bool
		// runs is how many reviews ran in all; block whether the stop
		// after the edit blocks.
		runs  int
		block bool
		has   []string
		// next and maxReviews are the plan's afterwards, in state.json
		// as in the status.
		next       *string
		maxReviews int
		phase      string
		clean      int
	}{
		{
			name: "next_phase null ends the review loop",
			edit: func(m map[string]any) { m["next_phase"] = nil },
			runs: 1, has: []string{"next_phase to null", "ended the review loop", "`drover plan set next_phase=null`"},
			maxReviews: 8, phase: "post-plan-review",
		},
		{
			name: "next_phase null made while the session actor was away",
			edit: func(m map[string]any) { m["next_phase"] = nil },
			away: true, runs: 1, has: []string{"next_phase to null"},
			maxReviews: 8, phase: "post-plan-review",
		},
		{
			name: "max_reviews lowered to the reviews done: the hard stop",
			edit: func(m map[string]any) { m["max_reviews"] = 1 },
			runs: 1, has: []string{"max_reviews to 1 (it was 8)", "reached its limit"},
			next: ptr("plan-review"), maxReviews: 1, phase: "post-plan-review",
		},
		{
			name: "max_reviews raised: the review runs",
			edit: func(m map[string]any) { m["max_reviews"] = 12 },
			runs: 2, block: true, has: []string{"max_reviews to 12 (it was 8)"},
			next: ptr("post-plan-review"), maxReviews: 12, phase: "plan-review", clean: 1,
		},
		{
			name: "phase and consecutive_clean are undone",
			edit: func(m map[string]any) { m["phase"] = "complete"; m["consecutive_clean"] = 2 },
			runs: 2, block: true, has: []string{"edited by hand (phase, consecutive_clean)", "undone", "`drover plan set KEY=VALUE`"},
			next: ptr("post-plan-review"), maxReviews: 8, phase: "plan-review", clean: 1,
		},
		{
			name: "next_phase null with phase complete: null is taken, the phase undone",
			edit: func(m map[string]any) { m["next_phase"] = nil; m["phase"] = "complete" },
			runs: 1, has: []string{"next_phase to null", "edited by hand (phase)", "`drover plan set KEY=VALUE`"},
			maxReviews: 8, phase: "post-plan-review",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlanFixture(t)
			sid := "plan-edit-" + strconv.Itoa(i)
			f.write("edited", "plan.md", "# Edited\n")
			f.fakeScript("verdicts", "FAIL\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "edited"})
			f.stop(sid, "stop-1")
			f.waitReview(sid)
			if r := f.stop(sid, "stop-2"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "set next_phase to null") && !strings.Contains(r.Output.Reason, "drover plan stop-reviews") {
				t.Fatalf("stop after the failing review: %+v", r)
			}
			f.mustPlan(sid, "advance", api.PlanArgs{Phase: "post-review"})

			f.editView("edited", tt.edit)
			if tt.away {
				f.system.Root.Send(f.pid, &Forget{SessionID: sid})
				eventually.True(t, testTimeout, "the session actor to go away", func() bool { return !f.hasChild("session-" + sid) })
				// The actor comes back for a status: its resume must
				// leave the edit for the stop.
				f.mustPlan(sid, "wait", api.PlanArgs{})
				if v := f.readView("edited"); v["next_phase"] != nil {
					t.Fatalf("the edit was overwritten when the actor came back: %v", v)
				}
			}
			r := f.stop(sid, "stop-3")
			if r.Err != nil || r.Output.IsBlock() != tt.block {
				t.Fatalf("stop after the edit: %+v, want block %v", r, tt.block)
			}
			for _, want := range tt.has {
				if !strings.Contains(r.Output.SystemMessage, want) {
					t.Errorf("the answer lacks %q:\n%s", want, r.Output.SystemMessage)
				}
			}
			if tt.block && !strings.Contains(r.Output.Reason, "edited by hand") {
				t.Errorf("a blocking answer does not tell the agent about the edit:\n%s", r.Output.Reason)
			}
			if tt.runs == 2 {
				f.waitReview(sid)
			}
			if n := f.fakeFile("count"); n != strconv.Itoa(tt.runs) {
				t.Errorf("%s reviewer runs, want %d", n, tt.runs)
			}
			st := f.mustPlan(sid, "status", api.PlanArgs{})
			if derefStr(st.NextPhase) != derefStr(tt.next) || st.MaxReviews != tt.maxReviews || st.Phase != tt.phase {
				t.Errorf("status: next_phase %s max_reviews %d phase %s, want %s %d %s", orNone(derefStr(st.NextPhase)), st.MaxReviews, st.Phase, orNone(derefStr(tt.next)), tt.maxReviews, tt.phase)
			}
			v := f.readView("edited")
			if np, _ := v["next_phase"].(string); np != derefStr(tt.next) || v["max_reviews"] != float64(tt.maxReviews) || v["phase"] != tt.phase || v["consecutive_clean"] != float64(tt.clean) {
				t.Errorf("state.json after the stop: %v", v)
			}
			// The edit was answered once: the next stop is an ordinary one.
			if tt.runs == 1 {
				if r := f.stop(sid, "stop-4"); strings.Contains(r.Output.SystemMessage, "edited by hand") {
					t.Errorf("the edit was answered twice: %+v", r)
				}
			}
		})
	}
}

// TestPlanEditDuringAReview sets next_phase null while a review runs: the
// reviewer is stopped and the stop is allowed, as drover plan stop-reviews
// would.
func TestPlanEditDuringAReview(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-edit-running"
	rpid, cpid := f.startSleepingReview(sid)
	f.editView("slow", func(m map[string]any) { m["next_phase"] = nil })
	r := f.stop(sid, "stop-2")
	if r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "next_phase to null") || !strings.Contains(r.Output.SystemMessage, "cancelled") {
		t.Fatalf("stop after next_phase null during a review: %+v", r)
	}
	for _, pid := range []int{rpid, cpid} {
		if !eventually.Holds(testTimeout, func() bool { return gone(pid) }) {
			t.Fatalf("process %d of the reviewer survived next_phase null", pid)
		}
	}
	if rec := f.storedPlan(sid); rec.Plan.Review != nil || rec.Plan.NextPhase != plan.PhaseNone {
		t.Errorf("stored plan: %+v", rec.Plan)
	}
}

// TestPlanTakenOverBySecondSession: session B runs drover plan continue on
// the plan session A drives while A's reviewer runs. The plan is B's: A's
// reviewer is stopped, A's next stop is allowed with a message naming B
// and starts no reviewer, and only B's reviewer writes the review file.
func TestPlanTakenOverBySecondSession(t *testing.T) {
	f := newPlanFixture(t)
	const a, b = "plan-owner-a", "plan-owner-b"
	rpid, cpid := f.startSleepingReview(a)
	if v := f.readView("slow"); v["session_id"] != a {
		t.Fatalf("state.json does not name its session: %v", v)
	}

	st := f.mustPlan(b, "continue", api.PlanArgs{PlanID: "slow"})
	if st.PlanID != "slow" || !strings.Contains(st.Message, "Session "+b+" now drives plan slow") {
		t.Fatalf("continue in session B: %+v", st)
	}
	for _, pid := range []int{rpid, cpid} {
		if !eventually.Holds(testTimeout, func() bool { return gone(pid) }) {
			t.Fatalf("process %d of session A's reviewer survived the takeover", pid)
		}
	}
	if v := f.readView("slow"); v["session_id"] != b {
		t.Errorf("state.json after the takeover: %v", v)
	}
	eventually.True(t, testTimeout, "session A to learn of the takeover", func() bool {
		return f.mustPlan(a, "status", api.PlanArgs{}).TakenBy == b
	})

	r := f.stop(a, "a-stop-2")
	if r.Err != nil || r.Output.IsBlock() || !strings.Contains(r.Output.SystemMessage, "now driven by session "+b) || !strings.Contains(r.Output.SystemMessage, "starts no reviewer") {
		t.Fatalf("session A's stop after the takeover: %+v", r)
	}
	if r := f.stop(a, "a-stop-3"); r.Output.IsBlock() || r.Output.SystemMessage != "" {
		t.Errorf("session A's later stop: %+v", r)
	}
	if _, err := f.plan(a, "advance", api.PlanArgs{Phase: "create-tasks"}); err == nil || !strings.Contains(err.Error(), "now driven by session "+b) {
		t.Errorf("a command in session A after the takeover: %v", err)
	}
	if n := f.fakeFile("count"); n != "1" {
		t.Fatalf("%s reviewer runs before B's stop, want 1", n)
	}

	// B runs the review A had started, again at iteration 1.
	if err := os.Remove(filepath.Join(f.fake, "sleep")); err != nil {
		t.Fatal(err)
	}
	if r := f.stop(b, "b-stop-1"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
		t.Fatalf("session B's stop: %+v", r)
	}
	f.waitReview(b)
	if n := f.fakeFile("count"); n != "2" {
		t.Errorf("%s reviewer runs, want 2 (A's, cancelled, and B's)", n)
	}
	if r := f.stop(a, "a-stop-4"); r.Output.IsBlock() || f.fakeFile("count") != "2" {
		t.Errorf("session A started a reviewer after the takeover: %+v", r)
	}
	if v := f.readView("slow"); v["session_id"] != b {
		t.Errorf("state.json was written by session A after the takeover: %v", v)
	}

	// A takes the plan back the same way; B lets go in turn.
	if st := f.mustPlan(a, "continue", api.PlanArgs{}); st.PlanID != "slow" || st.TakenBy != "" {
		t.Fatalf("session A taking the plan back: %+v", st)
	}
	eventually.True(t, testTimeout, "session B to learn of the takeover", func() bool {
		return f.mustPlan(b, "status", api.PlanArgs{}).TakenBy == a
	})
}

// TestPlanEditTakenByACommand: a hand edit is taken by whichever decision
// reads state.json first, here the agent's drover plan post-review-done
// after the user set next_phase to null. The command is refused (no
// post-review is waited for any more) and says why; the stop after is an
// ordinary one, with no reviewer.
func TestPlanEditTakenByACommand(t *testing.T) {
	f := newPlanFixture(t)
	const sid = "plan-edit-command"
	f.write("cmd", "plan.md", "# Cmd\n")
	f.fakeScript("verdicts", "FAIL\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "cmd"})
	f.stop(sid, "stop-1")
	f.waitReview(sid)
	if r := f.stop(sid, "stop-2"); !r.Output.IsBlock() {
		t.Fatalf("stop after the failing review: %+v", r)
	}
	f.editView("cmd", func(m map[string]any) { m["next_phase"] = nil; m["tdd"] = true })
	_, err := f.plan(sid, "advance", api.PlanArgs{Phase: "post-review"})
	if err == nil || !strings.Contains(err.Error(), "next_phase to null") || !strings.Contains(err.Error(), "edited by hand (tdd)") {
		t.Fatalf("post-review-done after the edit: %v", err)
	}
	if rec := f.storedPlan(sid); rec.Plan.NextPhase != plan.PhaseNone || rec.Plan.TDD {
		t.Errorf("stored plan: %+v", rec.Plan)
	}
	if v := f.readView("cmd"); v["next_phase"] != nil || v["tdd"] != false {
		t.Errorf("state.json: %v", v)
	}
	if r := f.stop(sid, "stop-3"); r.Output.IsBlock() || strings.Contains(r.Output.SystemMessage, "by hand") || f.fakeFile("count") != "1" {
		t.Errorf("the stop after: %+v, %s reviewer runs", r, f.fakeFile("count"))
	}
}
