package plan

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Fake absolute paths: goldens must not depend on the machine.
const (
	planID  = "p1"
	planDir = "/project/.drover/plans/p1"
)

const tasksTable = `| Id | Status | Description |
|----|--------|-------------|
| 1 | pending | parse the config |
| 2 | pending | add the command |
| 3 | pending | write the docs |
`

const planText = `# Config loading

## Overview

Read the config from one file and report what is wrong with it.
`

// facts builds the Facts of plan p1 with plan.md, a three-task tasks.md and
// the three task files; mods adjust it.
func facts(mods ...func(*Facts)) Facts {
	f := Facts{
		PlanID: planID, PlanDir: planDir, DirExists: true,
		Files:   []string{"plan.md", "tasks.md", "task-1.md", "task-2.md", "task-3.md"},
		TasksMD: tasksTable,
		PlanMD:  planText,
		Head:    "abc123",
	}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func files(names ...string) func(*Facts) { return func(f *Facts) { f.Files = names } }
func addFiles(names ...string) func(*Facts) {
	return func(f *Facts) { f.Files = append(slices.Clone(f.Files), names...) }
}
func tasksMD(s string) func(*Facts)   { return func(f *Facts) { f.TasksMD = s } }
func planMD(s string) func(*Facts)    { return func(f *Facts) { f.PlanMD = s } }
func taskMD(s string) func(*Facts)    { return func(f *Facts) { f.TaskMD = s } }
func viewOf(v string) func(*Facts)    { return func(f *Facts) { f.View = []byte(v) } }
func models(m ...string) func(*Facts) { return func(f *Facts) { f.Models = m } }
func hookActive(f *Facts)             { f.StopHookActive = true }
func noDir(f *Facts)                  { f.DirExists = false; f.Files = nil }

// st builds a State of plan p1 with max_reviews 8; mods adjust it.
func st(mods ...func(*State)) State {
	s := State{PlanID: planID, MaxReviews: 8, Ledger: reviewer.Ledger{Cycle: 1}}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func phase(p, next Phase) func(*State) { return func(s *State) { s.Phase, s.NextPhase = p, next } }
func task(id string) func(*State)      { return func(s *State) { s.CurrentTask = id } }
func iter(n int) func(*State)          { return func(s *State) { s.Iteration = n } }
func maxRev(n int) func(*State)        { return func(s *State) { s.MaxReviews = n } }
func model(i int) func(*State)         { return func(s *State) { s.ModelIndex = i } }
func clean(n int) func(*State)         { return func(s *State) { s.ConsecutiveClean = n } }
func tdd(s *State)                     { s.TDD = true }

// The reviewer's answers the seed's mock could give, and failures.
var (
	pass = &ReviewOutcome{Outcome: reviewer.Pass, Verdict: "PASS"}
	fail = &ReviewOutcome{Outcome: reviewer.Fail, Verdict: "FAIL", Findings: []reviewer.Finding{
		{Severity: "blocking", File: "config.go", Line: 42, Summary: "the error from Open is ignored"},
		{Severity: "minor", File: "config.go", Summary: "name the constant"},
	}}
)

func failedRun(err string) *ReviewOutcome {
	return &ReviewOutcome{Outcome: reviewer.Failed, Err: err, LogPath: planDir + "/.review.log"}
}

// run is the result of one or two Stop calls: the first, and the one that
// applied the reviewer's answer when the first started a review.
type run struct {
	state   State
	out     hook.Output
	effects []Effect
	started *StartReview // the review the first stop started, if any
	first   hook.Output  // the first stop's output when a review ran
}

// stop runs Stop, and when it starts a review and answer is not nil, runs
// it again with answer as the finished review (Kind, Iteration and Model
// from the StartReview effect), as the session actor would.
func stop(t *testing.T, s State, f Facts, answer *ReviewOutcome) run {
	t.Helper()
	next, out, effects, err := Stop(s, f, tm)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	checkEffects(t, next, f, effects)
	r := run{state: next, out: out, effects: effects}
	for _, e := range effects {
		if sr, ok := e.(StartReview); ok {
			r.started = &sr
		}
	}
	if r.started == nil || answer == nil {
		return r
	}
	if next.Review == nil || !out.IsBlock() {
		t.Fatalf("a review started without being recorded and waited for: review %v, output %s", next.Review, out.Kind())
	}
	a := *answer
	a.Kind, a.Iteration, a.Model = r.started.Kind, r.started.Iteration, r.started.Model
	f.Review = &a
	f.View = View(next, f.Models) // the actor wrote the view
	final, out2, effects2, err := Stop(next, f, tm)
	if err != nil {
		t.Fatalf("Stop with the answer: %v", err)
	}
	checkEffects(t, final, f, effects2)
	if final.Review != nil {
		t.Fatalf("the answer left the review in flight: %+v", final.Review)
	}
	return run{state: final, out: out2, effects: effects2, started: r.started, first: out}
}

// checkEffects holds every decision to the effects contract: at most one
// WriteView, for state.json in the plan folder, holding the view of the
// new state with every field rule 8 requires (seeds 3.16 and 6.12).
func checkEffects(t *testing.T, s State, f Facts, effects []Effect) {
	t.Helper()
	views := 0
	for _, e := range effects {
		switch e := e.(type) {
		case WriteView:
			views++
			if e.Path != planDir+"/state.json" {
				t.Errorf("WriteView to %q", e.Path)
			}
			if problem, err := CheckView(e.Data, tm); problem != "" || err != nil {
				t.Errorf("WriteView data is not a valid view: %q %v\n%s", problem, err, e.Data)
			}
			if string(e.Data) != string(View(s, f.Models)) {
				t.Errorf("WriteView data is not the new state's view")
			}
		case WriteReview:
			if !strings.HasPrefix(e.Path, planDir+"/") || !strings.HasSuffix(e.Path, ".md") {
				t.Errorf("WriteReview to %q", e.Path)
			}
		case StartReview:
			if e.Prompt == "" || e.Model == "" || e.Iteration < 1 {
				t.Errorf("incomplete StartReview %+v", e)
			}
		}
	}
	if views > 1 {
		t.Errorf("%d WriteView effects", views)
	}
}

func find[E Effect](effects []Effect) (E, bool) {
	for _, e := range effects {
		if x, ok := e.(E); ok {
			return x, true
		}
	}
	var zero E
	return zero, false
}

// golden compares got with testdata/<test name>.golden, rewriting it under
// -update.
func golden(t *testing.T, got string) {
	t.Helper()
	if machinePath.MatchString(got) {
		t.Fatalf("golden would contain a machine path:\n%s", got)
	}
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
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
	return b.String()
}

func formatState(s State) string {
	data, _ := json.Marshal(struct {
		Phase, Next, Task       string
		Iter, Max, Model, Clean int
		TDD, Running            bool
		Standalone              bool `json:",omitempty"`
	}{string(s.Phase), string(s.NextPhase), s.CurrentTask, s.Iteration, s.MaxReviews, s.ModelIndex, s.ConsecutiveClean, s.TDD, s.Review != nil, s.Standalone})
	return string(data)
}

func ptr[T any](v T) *T { return &v }
