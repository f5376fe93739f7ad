package queue

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Fake absolute paths: goldens must not depend on the machine.
const dir = "/project/.drover/sessions/s1"

func task(name string) string { return dir + "/" + name }

var (
	t1      = task("20260203T145212.md")
	t2      = task("20260203T145230.md")
	d1      = task("20260203T140000.done.md")
	d2      = task("20260203T140100.done.md")
	s1      = task("20260203T145245.stuck.md")
	s2      = task("20260203T145300.stuck.md")
	dirtyFs = []string{"M  main.go", "?? notes.txt"}
)

// facts builds the Facts of session s1 with the default budget and the
// commit gate on; mods adjust it.
func facts(mods ...func(*Facts)) Facts {
	f := Facts{SessionID: "s1", SessionDir: dir, MaxIterations: 50, GitCommitCheck: true}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func pending(p ...string) func(*Facts) { return func(f *Facts) { f.Pending = p } }
func done(p ...string) func(*Facts)    { return func(f *Facts) { f.Done = p } }
func stuck(p ...string) func(*Facts)   { return func(f *Facts) { f.Stuck = p } }
func dirty(files ...string) func(*Facts) {
	return func(f *Facts) { f.Dirty, f.DirtyFiles = true, files }
}
func maxIter(n int) func(*Facts) { return func(f *Facts) { f.MaxIterations = n } }
func noGate(f *Facts)            { f.GitCommitCheck = false }

// golden compares got with testdata/<test name>.golden, rewriting it under
// -update.
func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
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

func formatSession(s Session) string {
	st := s.State
	if st == "" {
		st = "(none)"
	}
	return fmt.Sprintf("state=%s iteration=%d", st, s.Iteration)
}

func TestStop(t *testing.T) {
	tests := []struct {
		name      string
		in        Session
		facts     Facts
		want      Session
		wantKind  string // block, allow
		wantInOut string // a phrase the output must contain
	}{
		{
			name: "no state allows", in: Session{}, facts: facts(pending(t1)),
			want: Session{}, wantKind: "allow",
		},
		{
			name: "off allows and never increments", in: Session{State: Off, Iteration: 7}, facts: facts(pending(t1), maxIter(1)),
			want: Session{State: Off, Iteration: 7}, wantKind: "allow",
		},
		{
			name: "on with pending blocks with loop prompt", in: Session{State: On, Iteration: 3}, facts: facts(pending(t1, t2), done(d1)),
			want: Session{State: On, Iteration: 4}, wantKind: "block", wantInOut: "Next task: " + t1,
		},
		{
			name: "on with uncommitted changes blocks and counts", in: Session{State: On, Iteration: 3}, facts: facts(pending(t1), dirty(dirtyFs...)),
			want: Session{State: On, Iteration: 4}, wantKind: "block", wantInOut: "You have uncommitted changes. Please commit your work before continuing.",
		},
		{
			name: "uncommitted without file list", in: Session{State: On, Iteration: 0}, facts: facts(pending(t1), dirty()),
			want: Session{State: On, Iteration: 1}, wantKind: "block", wantInOut: "git status",
		},
		{
			name: "uncommitted gate off ignores dirty tree", in: Session{State: On, Iteration: 3}, facts: facts(pending(t1), dirty(dirtyFs...), noGate),
			want: Session{State: On, Iteration: 4}, wantKind: "block", wantInOut: "Next task: " + t1,
		},
		{
			name: "uncommitted blocks even with empty queue", in: Session{State: On, Iteration: 3}, facts: facts(done(d1), dirty(dirtyFs...)),
			want: Session{State: On, Iteration: 4}, wantKind: "block", wantInOut: "uncommitted changes",
		},
		{
			name: "on with no pending moves to review", in: Session{State: On, Iteration: 5}, facts: facts(done(d1, d2)),
			want: Session{State: Review, Iteration: 6}, wantKind: "block", wantInOut: "Pass the session ID (s1)",
		},
		{
			name: "on with only stuck moves to review", in: Session{State: On, Iteration: 5}, facts: facts(done(d1), stuck(s1)),
			want: Session{State: Review, Iteration: 6}, wantKind: "block", wantInOut: "All tasks complete.",
		},
		{
			name: "review with no new tasks allows and turns off", in: Session{State: Review, Iteration: 6}, facts: facts(done(d1, d2)),
			want: Session{State: Off, Iteration: 7}, wantKind: "allow",
		},
		{
			name: "review with new tasks goes back on", in: Session{State: Review, Iteration: 6}, facts: facts(pending(t2), done(d1, d2)),
			want: Session{State: On, Iteration: 7}, wantKind: "block", wantInOut: "Review found issues.",
		},
		{
			name: "review ignores the commit gate", in: Session{State: Review, Iteration: 6}, facts: facts(done(d1), dirty(dirtyFs...)),
			want: Session{State: Off, Iteration: 7}, wantKind: "allow",
		},
		{
			name: "iteration reaching max still works", in: Session{State: On, Iteration: 49}, facts: facts(pending(t1)),
			want: Session{State: On, Iteration: 50}, wantKind: "block", wantInOut: "Next task: " + t1,
		},
		{
			name: "iteration past max stops", in: Session{State: On, Iteration: 50}, facts: facts(pending(t1, t2)),
			want: Session{State: Off, Iteration: 51}, wantKind: "allow", wantInOut: "budget of 50",
		},
		{
			name: "iteration past max stops in review", in: Session{State: Review, Iteration: 50}, facts: facts(pending(t1)),
			want: Session{State: Off, Iteration: 51}, wantKind: "allow", wantInOut: "budget of 50",
		},
		{
			name: "max iterations beats the commit gate", in: Session{State: On, Iteration: 2}, facts: facts(pending(t1), dirty(dirtyFs...), maxIter(2)),
			want: Session{State: Off, Iteration: 3}, wantKind: "allow", wantInOut: "budget of 2",
		},
		{
			name: "zero budget stops at the first stop", in: Session{State: On, Iteration: 0}, facts: facts(pending(t1), maxIter(0)),
			want: Session{State: Off, Iteration: 1}, wantKind: "allow",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, err := Stop(tt.in, tt.facts, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("session = %s, want %s", formatSession(got), formatSession(tt.want))
			}
			if out.Kind() != tt.wantKind {
				t.Errorf("kind = %s, want %s", out.Kind(), tt.wantKind)
			}
			if tt.wantKind == "block" && out.Reason == "" {
				t.Error("block without a reason")
			}
			text := formatOutput(out)
			if !strings.Contains(text, tt.wantInOut) {
				t.Errorf("output does not contain %q:\n%s", tt.wantInOut, text)
			}
			if tt.wantKind == "allow" && out.Reason != "" {
				t.Errorf("allow with a reason: %q", out.Reason)
			}
			g := fmt.Sprintf("in:  %s\nout: %s\n%s", formatSession(tt.in), formatSession(got), text)
			if machinePath.MatchString(g) {
				t.Fatalf("golden would contain a machine path:\n%s", g)
			}
			golden(t, g)
		})
	}
}

// TestStopReviewRoundTrip runs a queue from start to the end of a review
// that found one issue, with the agent's and the reviewer's file renames in
// between.
func TestStopReviewRoundTrip(t *testing.T) {
	tm := templates.Defaults()
	s, err := Start(Session{}, facts(pending(t1)), tm)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what  string
		facts Facts
		want  Session
		kind  string
		has   string
	}{
		{"agent still working on t1", facts(pending(t1)), Session{On, 1}, "block", "Next task: " + t1},
		{"agent finished t1", facts(done(d1)), Session{Review, 2}, "block", "All tasks complete."},
		{"reviewer added t2", facts(pending(t2), done(d1)), Session{On, 3}, "block", "Review found issues."},
		{"agent finished t2", facts(done(d1, d2)), Session{Review, 4}, "block", "All tasks complete."},
		{"review passed", facts(done(d1, d2)), Session{Off, 5}, "allow", ""},
		{"later stops are free", facts(done(d1, d2)), Session{Off, 5}, "allow", ""},
	}
	for _, st := range steps {
		var out hook.Output
		s, out, err = Stop(s, st.facts, tm)
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if s != st.want || out.Kind() != st.kind || !strings.Contains(out.Reason, st.has) {
			t.Fatalf("%s: got %s %s %q, want %s %s containing %q", st.what, formatSession(s), out.Kind(), out.Reason, formatSession(st.want), st.kind, st.has)
		}
	}
}

func TestStopUsesOverrides(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "loop.md"), []byte("MY LOOP {{next_task}} #{{iteration}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := templates.Load(d)
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := Stop(Session{State: On, Iteration: 1}, facts(pending(t1)), tm)
	if err != nil {
		t.Fatal(err)
	}
	if want := "MY LOOP " + t1 + " #2"; out.Reason != want {
		t.Errorf("reason = %q, want %q", out.Reason, want)
	}
	_, out, err = Stop(Session{State: Review, Iteration: 1}, facts(pending(t1)), tm)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Review found issues. The review added tasks to the queue; work through them as before.\n\nMY LOOP " + t1 + " #2"; out.Reason != want {
		t.Errorf("review reason = %q, want %q", out.Reason, want)
	}
}

// TestOverrideWithoutTheTaskStillNamesIt: seed 000 follows the loop prompt
// with "Next task: <path>" whatever the template says, so an override that
// never names the task must not leave the agent guessing which file to work
// on.
func TestOverrideWithoutTheTaskStillNamesIt(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "loop.md"), []byte("Work on the next task, commit, then stop.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := templates.Load(d)
	if err != nil {
		t.Fatal(err)
	}
	stop := func(in Session) string {
		_, out, err := Stop(in, facts(pending(t1, t2)), tm)
		if err != nil {
			t.Fatal(err)
		}
		return out.Reason
	}
	tests := []struct {
		name string
		text func() (string, error)
	}{
		{"stop while on", func() (string, error) { return stop(Session{State: On, Iteration: 1}), nil }},
		{"stop back from review", func() (string, error) { return stop(Session{State: Review, Iteration: 1}), nil }},
		{"start", func() (string, error) { return StartText(Session{State: On}, facts(pending(t1, t2)), tm) }},
		{"compact", func() (string, error) {
			return CompactContext(Session{State: On, Iteration: 1}, facts(pending(t1, t2)), tm)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := tt.text()
			if err != nil {
				t.Fatal(err)
			}
			want := "Work on the next task, commit, then stop.\n\nNext task: " + t1
			if !strings.Contains(text, want) {
				t.Errorf("text does not contain %q:\n%s", want, text)
			}
			if strings.Contains(text, t2) {
				t.Errorf("text names the task after the next one:\n%s", text)
			}
		})
	}
}

func TestStopTemplateErrorChangesNothing(t *testing.T) {
	in := Session{State: On, Iteration: 3}
	for _, f := range []Facts{facts(pending(t1)), facts(done(d1)), facts(pending(t1), dirty()), facts(pending(t1), maxIter(1))} {
		got, out, err := Stop(in, f, templates.Set{})
		if err == nil {
			t.Fatalf("Stop with an empty template set: no error (out %+v)", out)
		}
		if got != in {
			t.Errorf("on error the session became %s, want it unchanged", formatSession(got))
		}
	}
}

func TestUserPromptSubmit(t *testing.T) {
	tests := []struct {
		name  string
		in    Session
		facts Facts
		kind  string
		has   []string
	}{
		{name: "no state no output", in: Session{}, facts: facts(pending(t1), stuck(s1)), kind: "allow"},
		{name: "off no output", in: Session{State: Off, Iteration: 4}, facts: facts(pending(t1), stuck(s1)), kind: "allow"},
		{
			name: "on with stuck tasks outputs reminder", in: Session{State: On, Iteration: 2}, facts: facts(stuck(s1, s2)), kind: "context",
			has: []string{"[drover] There are 2 stuck task(s): " + s1 + ", " + s2, "rename them from .stuck.md to .md"},
		},
		{
			name: "on outputs context", in: Session{State: On, Iteration: 2}, facts: facts(pending(t1, t2)), kind: "context",
			has: []string{"[drover] State: on | Iteration: 2 | Next task: " + t1},
		},
		{
			name: "on with stuck and pending outputs both", in: Session{State: On, Iteration: 2}, facts: facts(pending(t1), stuck(s1)), kind: "context",
			has: []string{"There are 1 stuck task(s)", "Next task: " + t1},
		},
		{name: "on with empty queue no output", in: Session{State: On, Iteration: 2}, facts: facts(done(d1)), kind: "allow"},
		{
			name: "review outputs review context", in: Session{State: Review, Iteration: 5}, facts: facts(done(d1)), kind: "context",
			has: []string{"[drover] State: review | Verifying completed work"},
		},
		{
			name: "review with stuck outputs both", in: Session{State: Review, Iteration: 5}, facts: facts(done(d1), stuck(s1)), kind: "context",
			has: []string{"stuck task(s): " + s1, "State: review"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := UserPromptSubmit(tt.in, tt.facts, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if out.Kind() != tt.kind {
				t.Fatalf("kind = %s, want %s", out.Kind(), tt.kind)
			}
			if out.IsBlock() {
				t.Fatal("UserPromptSubmit must never block: it would erase the user's prompt")
			}
			if tt.kind == "context" && out.HookSpecificOutput.HookEventName != "UserPromptSubmit" {
				t.Errorf("hookEventName = %q", out.HookSpecificOutput.HookEventName)
			}
			text := formatOutput(out)
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("output does not contain %q:\n%s", h, text)
				}
			}
			golden(t, text)
		})
	}
}

func TestCompactContext(t *testing.T) {
	tests := []struct {
		name  string
		in    Session
		facts Facts
		has   []string
		not   []string
	}{
		{name: "no state no output", in: Session{}, facts: facts(pending(t1))},
		{name: "off no output", in: Session{State: Off, Iteration: 3}, facts: facts(pending(t1))},
		{
			name: "on outputs full context with loop prompt", in: Session{State: On, Iteration: 3}, facts: facts(pending(t1, t2), done(d1), stuck(s1)),
			has: []string{"[drover] Active session: s1", "State: on | Iteration: 3", "Tasks: 2 pending, 1 done, 1 stuck", "# drover Work Loop", "Next task: " + t1},
			not: []string{"# drover Review"},
		},
		{
			name: "review outputs full context with review prompt", in: Session{State: Review, Iteration: 8}, facts: facts(done(d1, d2)),
			has: []string{"[drover] Active session: s1", "State: review | Iteration: 8", "Tasks: 0 pending, 2 done, 0 stuck", "# drover Review", "- " + d1 + "\n- " + d2},
			not: []string{"# drover Work Loop"},
		},
		{
			name: "on with empty queue outputs the summary only", in: Session{State: On, Iteration: 3}, facts: facts(done(d1)),
			has: []string{"State: on | Iteration: 3", "Tasks: 0 pending, 1 done, 0 stuck"},
			not: []string{"# drover Work Loop", "# drover Review"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := CompactContext(tt.in, tt.facts, templates.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			if (text == "") != (len(tt.has) == 0) {
				t.Fatalf("text = %q; want it empty only for an inactive queue", text)
			}
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("context does not contain %q", h)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("context contains %q", n)
				}
			}
			golden(t, text+"\n")
		})
	}
}

func TestStart(t *testing.T) {
	tests := []struct {
		name    string
		in      Session
		facts   Facts
		want    Session
		wantErr string
	}{
		{"fails with no pending tasks", Session{}, facts(done(d1), stuck(s1)), Session{}, "no pending tasks in " + dir + ": add one with drover add"},
		{"from no state", Session{}, facts(pending(t1)), Session{On, 0}, ""},
		{"from off resets the iteration", Session{Off, 51}, facts(pending(t1)), Session{On, 0}, ""},
		{"restart while on", Session{On, 9}, facts(pending(t1)), Session{On, 0}, ""},
		{"from review", Session{Review, 9}, facts(pending(t1)), Session{On, 0}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Start(tt.in, tt.facts, templates.Defaults())
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if got != tt.in {
					t.Errorf("failed start changed the session to %s", formatSession(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("session = %s, want %s", formatSession(got), formatSession(tt.want))
			}
		})
	}
}

func TestStartText(t *testing.T) {
	f := facts(pending(t1, t2), done(d1))
	text, err := StartText(Session{On, 0}, f, templates.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Started session s1", "2 pending task(s)", "Begin working on the next task", "# drover Work Loop", "Read and work on: " + t1} {
		if !strings.Contains(text, h) {
			t.Errorf("start text does not contain %q", h)
		}
	}
	golden(t, text+"\n")

	if _, err := StartText(Session{On, 0}, facts(), templates.Defaults()); err == nil {
		t.Error("StartText with no pending task: no error")
	}
}

func TestStopCommand(t *testing.T) {
	for _, in := range []Session{{}, {Off, 2}, {On, 3}, {Review, 4}} {
		got := StopCommand(in)
		if got.State != Off || got.Iteration != in.Iteration {
			t.Errorf("StopCommand(%s) = %s, want off at the same iteration", formatSession(in), formatSession(got))
		}
		if got.Active() {
			t.Errorf("StopCommand(%s) is still active", formatSession(in))
		}
		// And a stopped queue never blocks again.
		_, out, err := Stop(got, facts(pending(t1)), templates.Defaults())
		if err != nil || out.IsBlock() {
			t.Errorf("Stop after StopCommand: %v %v", out.Kind(), err)
		}
	}
}

func TestVars(t *testing.T) {
	many := make([]string, MaxListed+5)
	for i := range many {
		many[i] = task(fmt.Sprintf("20260203T1400%02d.done.md", i))
	}
	tm := templates.Defaults()
	v, err := Vars(Session{State: On, Iteration: 4}, facts(pending(t1, t2), func(f *Facts) { f.Done = many }, stuck(s1, s2)), tm)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"session_id":      "s1",
		"session_dir":     dir,
		"state":           "on",
		"iteration":       "4",
		"max_iterations":  "50",
		"pending_count":   "2",
		"done_count":      fmt.Sprint(MaxListed + 5),
		"stuck_count":     "2",
		"next_task":       t1,
		"next_task_done":  task("20260203T145212.done.md"),
		"next_task_stuck": task("20260203T145212.stuck.md"),
		"pending_files":   "- " + t1 + "\n- " + t2,
		"stuck_files":     s1 + ", " + s2,
		"dirty_files":     "- (see `git status`)",
	}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %q, want %q", k, v[k], w)
		}
	}
	lines := strings.Split(v["done_files"], "\n")
	if len(lines) != MaxListed+1 || lines[MaxListed] != "- ... and 5 more (see "+dir+")" {
		t.Errorf("done_files is not capped at %d lines plus a count: %d lines, last %q", MaxListed, len(lines), lines[len(lines)-1])
	}

	clipped, err := Vars(Session{State: On}, facts(func(f *Facts) { f.Stuck, f.DirtyFiles = many, many }), tm)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(many[:MaxListed], ", ") + ", ... and 5 more"; clipped["stuck_files"] != want {
		t.Errorf("stuck_files = %q, want %q", clipped["stuck_files"], want)
	}
	if lines := strings.Split(clipped["dirty_files"], "\n"); len(lines) != MaxListed+1 || lines[MaxListed] != "- ... and 5 more (see `git status`)" {
		t.Errorf("dirty_files is not capped at %d lines plus a count: %d lines, last %q", MaxListed, len(lines), lines[len(lines)-1])
	}

	empty, err := Vars(Session{}, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	if empty["state"] != "off" || empty["next_task"] != "" || empty["done_files"] != "- (none)" || empty["stuck_files"] != "" {
		t.Errorf("vars of an empty session: %v", empty)
	}
}

func TestNeedsGit(t *testing.T) {
	for _, c := range []struct {
		state State
		check bool
		want  bool
	}{
		{On, true, true},
		{On, false, false},
		{Review, true, false},
		{Off, true, false},
	} {
		if got := NeedsGit(Session{State: c.state}, c.check); got != c.want {
			t.Errorf("NeedsGit(%s, %v) = %v, want %v", c.state, c.check, got, c.want)
		}
	}
}
