package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/reviewer"
)

func TestAdmit(t *testing.T) {
	stored := api.Run{ID: "run-1", State: api.RunFailed}
	done := api.Run{ID: "run-1", State: api.RunDone}
	cases := []struct {
		name string
		err  error
		want string // empty: admitted
	}{
		{"start: nothing worked, on a branch", AdmitStart(tmpl, nil, "/repo", "main"), ""},
		{"start: another run is worked", AdmitStart(tmpl, []string{"run-9"}, "/repo", "main"), "run run-9 is being worked; one run at a time"},
		{"start: detached main work tree", AdmitStart(tmpl, nil, "/repo", ""), "the main work tree /repo is not on a branch to merge into"},
		{"resume: a stored failed run", AdmitResume(tmpl, nil, "run-1", true, stored), ""},
		{"resume: the run is worked", AdmitResume(tmpl, []string{"run-1"}, "run-1", true, stored), "run run-1 is already being worked"},
		{"resume: another run is worked", AdmitResume(tmpl, []string{"run-2"}, "run-1", true, stored), "run run-2 is being worked"},
		{"resume: no such run", AdmitResume(tmpl, nil, "run-1", false, api.Run{}), "no run run-1"},
		{"resume: a done run", AdmitResume(tmpl, nil, "run-1", true, done), "run run-1 is done"},
		{"cancel: a worked run", AdmitCancel(tmpl, []string{"run-1"}, "run-1"), ""},
		{"cancel: a run not worked", AdmitCancel(tmpl, []string{"run-2"}, "run-1"), "run run-1 is not being worked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				if c.err != nil {
					t.Fatalf("refused: %v", c.err)
				}
				return
			}
			if !errors.Is(c.err, ErrRefused) || !strings.Contains(c.err.Error(), c.want) {
				t.Errorf("got %v, want a refusal saying %q", c.err, c.want)
			}
		})
	}
}

func TestIterationSteps(t *testing.T) {
	pass := &api.TestResult{Passed: true}
	doneIt := IterationDone{Test: pass, Committed: true}
	reviewed := IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Pass}}
	failedReview := IterationDone{Test: pass, Committed: true, Review: &reviewer.Result{Outcome: reviewer.Fail}}
	testsFail := IterationDone{Test: &api.TestResult{}, Committed: true}
	offBranch := IterationDone{Test: pass, Committed: true, OffBranch: "other", Branch: "drover/run/t"}
	cases := []struct {
		name        string
		m           IterationDone
		hasReviewer bool
		reviews     bool
		removes     bool
	}{
		{"done, with a reviewer", doneIt, true, true, true},
		{"done, without a reviewer", doneIt, false, false, true},
		{"reviewed and passed", reviewed, true, false, true},
		{"review failed", failedReview, true, false, false},
		{"tests failed", testsFail, true, false, false},
		{"off its branch", offBranch, true, false, false},
		{"not committed", IterationDone{Test: pass}, true, false, false},
		{"drover failed", IterationDone{Err: errors.New("no work tree")}, true, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reviews(c.m, c.hasReviewer); got != c.reviews {
				t.Errorf("Reviews() = %v, want %v", got, c.reviews)
			}
			if got := RemovesWorkTree(c.m); got != c.removes {
				t.Errorf("RemovesWorkTree() = %v, want %v", got, c.removes)
			}
		})
	}
}

func TestOffBranch(t *testing.T) {
	cases := []struct {
		head, branch string
		want         bool
	}{
		{"drover/run/t", "drover/run/t", false},
		{"main", "drover/run/t", true},
		{"", "drover/run/t", true}, // detached
	}
	for _, c := range cases {
		if got := OffBranch(c.head, c.branch); got != c.want {
			t.Errorf("OffBranch(%q, %q) = %v, want %v", c.head, c.branch, got, c.want)
		}
	}
}

func TestWaveMerged(t *testing.T) {
	opts := api.RunOptions{SuiteCommand: "make test"}
	merged := MergedBranch{Branch: "a", OnTarget: true}
	conflict := MergedBranch{Branch: "b", Conflict: true, Files: []string{"x.go"}, Diff: "<<<<<<<"}
	cases := []struct {
		name      string
		opts      api.RunOptions
		err       error
		branches  []MergedBranch
		suite     string
		conflicts int
		mergeErr  string
	}{
		{"every branch merged", opts, nil, []MergedBranch{merged, {Branch: "c", OnTarget: true}}, "make test", 0, ""},
		{"a conflict", opts, nil, []MergedBranch{merged, conflict}, "", 1, ""},
		{"a branch skipped", opts, nil, []MergedBranch{merged, {Branch: "c"}}, "", 0, ""},
		{"the merge failed", opts, errors.New("not on main"), []MergedBranch{merged}, "", 0, "not on main"},
		{"no suite command", api.RunOptions{}, nil, []MergedBranch{merged}, "", 0, "the suite command is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, suite := WaveMerged(3, c.opts, c.err, c.branches)
			if suite != c.suite || len(out.Conflicts) != c.conflicts || out.Wave != 3 {
				t.Errorf("WaveMerged() = %+v, %q; want suite %q and %d conflicts", out, suite, c.suite, c.conflicts)
			}
			if (out.MergeErr == nil) != (c.mergeErr == "") || (out.MergeErr != nil && !strings.Contains(out.MergeErr.Error(), c.mergeErr)) {
				t.Errorf("MergeErr = %v, want %q", out.MergeErr, c.mergeErr)
			}
			if c.conflicts == 1 && (out.Conflicts[0].Branch != "b" || out.Conflicts[0].Files[0] != "x.go" || out.Conflicts[0].Diff != "<<<<<<<") {
				t.Errorf("conflict = %+v", out.Conflicts[0])
			}
		})
	}
}

func TestHeartbeat(t *testing.T) {
	running := State{Run: api.Run{State: api.RunRunning, Tasks: []api.RunTask{{ID: "a", State: api.TaskRunning}}}}
	idle := State{Run: api.Run{State: api.RunRunning, Tasks: []api.RunTask{{ID: "a", State: api.TaskDone}}}}
	merging := idle
	merging.Merging = true
	waiting := State{Run: api.Run{State: api.RunRunning, Tasks: []api.RunTask{{ID: "a", State: api.TaskPending, LimitUntil: time.Unix(1, 0)}}}}
	failed := State{Run: api.Run{State: api.RunFailed, Tasks: []api.RunTask{{ID: "a", State: api.TaskRunning}}}}
	const beat = 10 * time.Second
	cases := []struct {
		name        string
		s           State
		since       time.Duration
		save, again bool
	}{
		{"agents work, no save for a beat", running, beat, true, true},
		{"agents work, saved half a beat ago", running, beat / 2, true, true},
		{"agents work, saved just now", running, time.Second, false, true},
		{"a wave checkpoint works", merging, beat, true, true},
		{"nothing works", idle, time.Hour, false, true},
		{"a task waits for a limit", waiting, beat, true, true},
		{"a failed run's last agent", failed, beat, true, false},
	}
	for _, c := range cases {
		save, again := c.s.Heartbeat(c.since, beat)
		if save != c.save || again != c.again {
			t.Errorf("%s: save %v again %v, want %v %v", c.name, save, again, c.save, c.again)
		}
	}
}
