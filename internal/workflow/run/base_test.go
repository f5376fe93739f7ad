package run

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// A task's base is saved with the step that starts its first iteration
// (the target's head then, Facts.Head), before any agent: later heads,
// crashes and resumes do not move it. An iteration worked again after a
// crash, or a task that starts over after a resume, starts from its
// branch's last commit (Fresh); the next iteration of a live run does not.
func TestStepSavesTheBaseAndStartsReRunsFresh(t *testing.T) {
	type start struct {
		base  string
		fresh bool
	}
	failing := func(task string, it int) IterationDone {
		m := passed(task, it, 0.1)
		m.Base = "" // as an iteration whose work tree said nothing
		m.Test = &api.TestResult{Command: "go test ./" + task, Output: "--- FAIL: Test\nFAIL\n"}
		return m
	}
	withHead := func(f Facts, head string, forks map[string]string) Facts {
		f.Head, f.Forks = head, forks
		return f
	}
	cases := []struct {
		name string
		// then steps the run after c's first start (its base h1) and
		// returns the state and the effects to judge c's next start by.
		then func(t *testing.T, s State, f Facts) (State, []Effect)
		want start
	}{
		{
			name: "the first iteration takes the target's head",
			then: func(t *testing.T, s State, f Facts) (State, []Effect) { return s, nil },
			want: start{base: "h1"},
		},
		{
			name: "the next iteration keeps the base, its work tree as left",
			then: func(t *testing.T, s State, f Facts) (State, []Effect) {
				s, _, eff := step(t, s, failing("c", 1), withHead(f, "h2", nil), t0.Add(time.Minute))
				return s, eff
			},
			want: start{base: "h1"},
		},
		{
			name: "a crash: the iteration is worked again fresh, on its base",
			then: func(t *testing.T, s State, f Facts) (State, []Effect) {
				rs := Restore(Resume(s.Run, t0.Add(time.Hour)), t0.Add(time.Hour))
				rs, _, eff := step(t, rs, Begin{}, withHead(f, "h3", nil), t0.Add(time.Hour))
				return rs, eff
			},
			want: start{base: "h1", fresh: true},
		},
		{
			name: "a failed task resumed starts over fresh, on its base",
			then: func(t *testing.T, s State, f Facts) (State, []Effect) {
				s.Run.Options.MaxIterations = 1
				s, _, _ = step(t, s, failing("c", 1), withHead(f, "h2", nil), t0.Add(time.Minute))
				s, _, _ = step(t, s, passed("a", 1, 0), withHead(f, "h2", nil), t0.Add(time.Minute))
				if s.Run.State != api.RunFailed {
					t.Fatalf("the run did not fail on c: %s", s.Run.State)
				}
				rs := Restore(Resume(s.Run, t0.Add(time.Hour)), t0.Add(time.Hour))
				rs, _, eff := step(t, rs, Begin{}, withHead(f, "h3", nil), t0.Add(time.Hour))
				return rs, eff
			},
			want: start{base: "h1", fresh: true},
		},
		{
			name: "a branch begun without a saved base takes its fork point",
			then: func(t *testing.T, s State, f Facts) (State, []Effect) {
				s.Run.Tasks = append([]api.RunTask(nil), s.Run.Tasks...)
				s.Task("c").Base = "" // stored by a drover that saved it late
				rs := Restore(Resume(s.Run, t0.Add(time.Hour)), t0.Add(time.Hour))
				rs, _, eff := step(t, rs, Begin{}, withHead(f, "h3", map[string]string{"c": "fork0"}), t0.Add(time.Hour))
				return rs, eff
			},
			want: start{base: "fork0", fresh: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(t, false)
			s, _, eff := step(t, fresh(t, api.RunOptions{Concurrency: 1}), Begin{}, withHead(f, "h1", nil), t0)
			if c := s.Task("c"); c.Base != "h1" || len(eff) != 1 || eff[0].(StartIteration).Base != "h1" {
				t.Fatalf("c's first start: base %q, effects %+v; want h1 saved before its agent starts", c.Base, eff)
			}
			s, next := tc.then(t, s, f)
			if next != nil {
				eff = next
			}
			var got *StartIteration
			for _, e := range eff {
				if e, ok := e.(StartIteration); ok && e.Task == "c" {
					got = &e
				}
			}
			if got == nil {
				t.Fatalf("c does not start: %+v", eff)
			}
			if (start{base: got.Base, fresh: got.Fresh}) != tc.want || s.Task("c").Base != tc.want.base {
				t.Errorf("c starts on %q fresh %v (stored base %q); want %+v", got.Base, got.Fresh, s.Task("c").Base, tc.want)
			}
		})
	}
}
