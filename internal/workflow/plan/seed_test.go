package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

var tm = templates.Defaults()

// seedCase is one case of seed 001's 80-case test table, read from
// testdata/seed001.yaml (whose header says what each field means).
type seedCase struct {
	ID   string    `yaml:"id"`
	Name string    `yaml:"name"`
	In   seedState `yaml:"in"`
	// Facts adjust the facts of plan p1 (see facts).
	Facts seedFacts `yaml:"facts"`
	// Answer is the reviewer's answer when the stop starts a review:
	// pass, fail or failed (with AnswerError).
	Answer      string `yaml:"answer"`
	AnswerError string `yaml:"answer_error"`

	Start     bool     `yaml:"start"` // a review must start
	Model     string   `yaml:"model"` // and with this model
	PromptHas []string `yaml:"prompt_has"`

	Kind string   `yaml:"kind"` // the final output: block or allow
	Has  []string `yaml:"has"`  // in the final reason or systemMessage
	Not  []string `yaml:"not"`

	Want *seedState `yaml:"want"` // the final state's seed fields
	Same bool       `yaml:"same"` // the final state is the input state
	// WriteView: +1 a WriteView is expected, -1 none is.
	WriteView int `yaml:"write_view"`
	// Checks name checks of seedChecks; the fields after them check the
	// effects.
	Checks        []string         `yaml:"checks"`
	ViewModel     string           `yaml:"view_model"`
	ReviewFile    string           `yaml:"review_file"`
	ReviewFileHas []string         `yaml:"review_file_has"`
	Started       *seedStartReview `yaml:"started"`
	Err           string           `yaml:"err"` // Stop must fail, with this in the error
}

// seedState is a State of plan p1 as the table writes it.
type seedState struct {
	None   bool          `yaml:"none"`
	Base   string        `yaml:"base"`
	Phase  *Phase        `yaml:"phase"`
	Next   *Phase        `yaml:"next"`
	Task   *string       `yaml:"task"`
	Iter   *int          `yaml:"iter"`
	Max    *int          `yaml:"max"`
	Model  *int          `yaml:"model"`
	Clean  *int          `yaml:"clean"`
	Review *seedInFlight `yaml:"review"`
}

type seedInFlight struct {
	Kind      Kind   `yaml:"kind"`
	Iteration int    `yaml:"iteration"`
	Model     string `yaml:"model"`
	Task      string `yaml:"task"`
}

// seedFacts adjust the Facts of plan p1.
type seedFacts struct {
	Files          *[]string `yaml:"files"`
	AddFiles       []string  `yaml:"add_files"`
	TasksMD        *string   `yaml:"tasks_md"`
	View           *string   `yaml:"view"`
	Models         []string  `yaml:"models"`
	HookActive     bool      `yaml:"hook_active"`
	NoDir          bool      `yaml:"no_dir"`
	PlanID         string    `yaml:"plan_id"`
	ReviewInFlight bool      `yaml:"review_in_flight"`
	Review         *struct {
		Kind      Kind             `yaml:"kind"`
		Iteration int              `yaml:"iteration"`
		Outcome   reviewer.Outcome `yaml:"outcome"`
		Verdict   string           `yaml:"verdict"`
	} `yaml:"review"`
}

type seedStartReview struct {
	Kind       Kind   `yaml:"kind"`
	Iteration  int    `yaml:"iteration"`
	Task       string `yaml:"task"`
	ReviewFile string `yaml:"review_file"`
}

// validationState is the state of the validation cases: a standalone task.
var validationState = st(phase(PhaseNextTask, PhaseNone), task("1"))

// state builds the State the table describes.
func (c seedState) state(t *testing.T) State {
	t.Helper()
	if c.None {
		return State{}
	}
	var s State
	switch c.Base {
	case "":
		s = st()
	case "validation":
		s = validationState
	case "code":
		s = st(phase(PhasePostCodeReview, PhaseCodeReview), task("1"), iter(1), model(1))
	default:
		t.Fatalf("unknown base state %q", c.Base)
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if c.Phase != nil {
		s.Phase = *c.Phase
	}
	if c.Next != nil {
		s.NextPhase = *c.Next
	}
	if c.Task != nil {
		s.CurrentTask = *c.Task
	}
	set(&s.Iteration, c.Iter)
	set(&s.MaxReviews, c.Max)
	set(&s.ModelIndex, c.Model)
	set(&s.ConsecutiveClean, c.Clean)
	if r := c.Review; r != nil {
		s.Review = &InFlight{Kind: r.Kind, Iteration: r.Iteration, Model: r.Model, Task: r.Task}
	}
	return s
}

// facts builds the Facts the table describes for the input state in.
func (c seedFacts) facts(in State) Facts {
	f := facts()
	if c.Files != nil {
		f.Files = *c.Files
	}
	f.Files = append(slices.Clone(f.Files), c.AddFiles...)
	if c.TasksMD != nil {
		f.TasksMD = *c.TasksMD
	}
	if c.View != nil {
		switch v := *c.View; v {
		case "@view":
			f.View = View(in, nil)
		case "@view+custom_field":
			f.View = []byte(strings.Replace(string(View(in, nil)), `"tdd"`, `"custom_field": 42, "tdd"`, 1))
		default:
			f.View = []byte(v)
		}
	}
	if c.Models != nil {
		f.Models = c.Models
	}
	f.StopHookActive = c.HookActive
	if c.NoDir {
		noDir(&f)
	}
	if c.PlanID != "" {
		f.PlanID = c.PlanID
	}
	f.ReviewInFlight = c.ReviewInFlight
	if r := c.Review; r != nil {
		f.Review = &ReviewOutcome{Kind: r.Kind, Iteration: r.Iteration, Outcome: r.Outcome, Verdict: r.Verdict}
	}
	return f
}

// answer is the reviewer's answer the case gives, if any.
func (c seedCase) answer(t *testing.T) *ReviewOutcome {
	t.Helper()
	switch c.Answer {
	case "":
		return nil
	case "pass":
		return pass
	case "fail":
		return fail
	case "failed":
		return failedRun(c.AnswerError)
	}
	t.Fatalf("unknown answer %q", c.Answer)
	return nil
}

// seedChecks are the checks a case names, on the result of its stops.
var seedChecks = map[string]func(t *testing.T, r run){
	"no_message": func(t *testing.T, r run) {
		if r.out.SystemMessage != "" {
			t.Errorf("message %q", r.out.SystemMessage)
		}
	},
	"no_output": func(t *testing.T, r run) {
		if r.out != (hook.Output{}) {
			t.Errorf("output %+v, want none", r.out)
		}
	},
	// The first stop saw no view at all.
	"view_written": func(t *testing.T, r run) {
		if _, ok := find[WriteView](r.effects); !ok {
			t.Error("no WriteView after the answer")
		}
	},
	"view_fields": func(t *testing.T, r run) {
		w, _ := find[WriteView](r.effects)
		var m map[string]any
		if err := json.Unmarshal(w.Data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range viewFields {
			if _, ok := m[k]; !ok {
				t.Errorf("view lacks %s", k)
			}
		}
	},
	"hook_json": func(t *testing.T, r run) {
		data, err := json.Marshal(r.out)
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ Decision, Reason string }
		if err := json.Unmarshal(data, &back); err != nil || back.Decision != "block" || back.Reason == "" {
			t.Errorf("hook JSON %s: %v", data, err)
		}
	},
}

// seedCases reads the table; {dir} in its strings is the plan folder.
func seedCases(t *testing.T) []seedCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "seed001.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("{dir}"), []byte(planDir))
	var table struct {
		Cases []seedCase `yaml:"cases"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&table); err != nil {
		t.Fatalf("reading seed001.yaml: %v", err)
	}
	for _, c := range table.Cases {
		for _, name := range c.Checks {
			if seedChecks[name] == nil {
				t.Fatalf("case %s: unknown check %q", c.ID, name)
			}
		}
	}
	return table.Cases
}

func wantViewModel(t *testing.T, r run, want string) {
	t.Helper()
	w, ok := find[WriteView](r.effects)
	if !ok {
		t.Fatal("no WriteView")
	}
	var v struct {
		ReviewModel string `json:"review_model"`
	}
	if err := json.Unmarshal(w.Data, &v); err != nil || v.ReviewModel != want {
		t.Errorf("view review_model %q (%v), want %q", v.ReviewModel, err, want)
	}
}

func TestSeed(t *testing.T) {
	for _, c := range seedCases(t) {
		t.Run(c.ID+" "+c.Name, func(t *testing.T) {
			in := c.In.state(t)
			f := c.Facts.facts(in)
			if c.Err != "" {
				got, _, effects, err := Stop(in, f, tm)
				if err == nil || !strings.Contains(err.Error(), c.Err) {
					t.Fatalf("error %v, want one containing %q", err, c.Err)
				}
				if !reflect.DeepEqual(got, in) || effects != nil {
					t.Errorf("a failed Stop changed the state or asked for effects")
				}
				return
			}
			answer := c.answer(t)
			r := stop(t, in, f, answer)
			if c.Start || c.Model != "" || len(c.PromptHas) > 0 {
				if r.started == nil {
					t.Fatalf("no review started; output %s", formatOutput(r.out))
				}
				if c.Model != "" && r.started.Model != c.Model {
					t.Errorf("model %q, want %q", r.started.Model, c.Model)
				}
				for _, p := range c.PromptHas {
					if !strings.Contains(r.started.Prompt, p) {
						t.Errorf("prompt lacks %q:\n%s", p, r.started.Prompt)
					}
				}
			}
			if answer == nil && !c.Start && r.started != nil {
				t.Fatalf("a review started: %+v", r.started)
			}
			if c.Kind != "" && r.out.Kind() != c.Kind {
				t.Errorf("kind %s, want %s\n%s", r.out.Kind(), c.Kind, formatOutput(r.out))
			}
			text := r.out.Reason + "\n" + r.out.SystemMessage
			for _, h := range c.Has {
				if !strings.Contains(text, h) {
					t.Errorf("output lacks %q:\n%s", h, formatOutput(r.out))
				}
			}
			for _, n := range c.Not {
				if strings.Contains(text, n) {
					t.Errorf("output has %q:\n%s", n, formatOutput(r.out))
				}
			}
			if c.Same && !reflect.DeepEqual(r.state, in) {
				t.Errorf("state changed: %s, want %s", formatState(r.state), formatState(in))
			}
			if c.Want != nil {
				if want := c.Want.state(t); formatState(r.state) != formatState(want) {
					t.Errorf("state\n %s\nwant\n %s", formatState(r.state), formatState(want))
				}
			}
			_, wrote := find[WriteView](r.effects)
			if (c.WriteView > 0 && !wrote) || (c.WriteView < 0 && wrote) {
				t.Errorf("WriteView present %v, want %v", wrote, c.WriteView > 0)
			}
			checkSeedEffects(t, c, r)
			if r.out.Kind() != "allow" || r.out.SystemMessage != "" {
				g := "in:  " + formatState(in) + "\nout: " + formatState(r.state) + "\n"
				if r.started != nil {
					g += "review: " + r.started.Model + " " + r.started.ReviewFile + "\n"
				}
				if r.first.Reason != "" {
					g += "--- while the review ran ---\n" + formatOutput(r.first) + "--- after the answer ---\n"
				}
				golden(t, g+formatOutput(r.out))
			}
		})
	}
}

// checkSeedEffects runs the checks case c names and those of its effect
// fields.
func checkSeedEffects(t *testing.T, c seedCase, r run) {
	t.Helper()
	for _, name := range c.Checks {
		seedChecks[name](t, r)
	}
	if c.ViewModel != "" {
		wantViewModel(t, r, c.ViewModel)
	}
	if c.ReviewFile != "" || len(c.ReviewFileHas) > 0 {
		w, ok := find[WriteReview](r.effects)
		if !ok || w.Path != c.ReviewFile {
			t.Fatalf("WriteReview %+v, want one to %s", w, c.ReviewFile)
		}
		for _, want := range c.ReviewFileHas {
			if !strings.Contains(string(w.Data), want) {
				t.Errorf("review file lacks %q:\n%s", want, w.Data)
			}
		}
	}
	if want := c.Started; want != nil {
		if r.started == nil {
			t.Fatal("no review started")
		}
		sr := *r.started
		if sr.Kind != want.Kind || sr.Iteration != want.Iteration || sr.Task != want.Task || sr.ReviewFile != want.ReviewFile {
			t.Errorf("StartReview %+v, want %+v", sr, want)
		}
	}
}

// TestSeedAlternation is seed case 6.10: four reviews with a post-review
// between each use opus, sonnet, opus, sonnet, and the view shows the next
// model after each.
func TestSeedAlternation(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	var got, views []string
	for i := range 4 {
		r := stop(t, s, facts(), fail)
		if r.started == nil || !r.out.IsBlock() {
			t.Fatalf("review %d did not run and block", i+1)
		}
		got = append(got, r.started.Model)
		w, _ := find[WriteView](r.effects)
		var v struct {
			ReviewModel string `json:"review_model"`
		}
		_ = json.Unmarshal(w.Data, &v)
		views = append(views, v.ReviewModel)
		var err error
		if s, _, err = PostReviewDone(r.state, facts(), tm); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"opus", "sonnet", "opus", "sonnet"}) || !slices.Equal(views, []string{"sonnet", "opus", "sonnet", "opus"}) {
		t.Errorf("models %v, views %v", got, views)
	}
}

// TestSeedTwoCleanIntegration is seed case 6.11: two clean reviews in a row,
// with a post-review between: the first blocks, the second allows and sets
// the advance target.
func TestSeedTwoCleanIntegration(t *testing.T) {
	s := st(phase(PhaseCompleteTask, PhaseCodeReview), task("1"))
	r := stop(t, s, facts(), pass)
	if !r.out.IsBlock() || r.state.ConsecutiveClean != 1 {
		t.Fatalf("first clean review: %s %s", r.out.Kind(), formatState(r.state))
	}
	s, _, err := PostReviewDone(r.state, facts(), tm)
	if err != nil {
		t.Fatal(err)
	}
	r = stop(t, s, facts(), pass)
	if r.out.IsBlock() || r.state.ConsecutiveClean != 2 || r.state.NextPhase != PhaseCompleteTask {
		t.Fatalf("second clean review: %s %s", r.out.Kind(), formatState(r.state))
	}
}

// TestSeedCasesAllCovered keeps the table honest: every one of the seed's 80
// cases has a test.
func TestSeedCasesAllCovered(t *testing.T) {
	ids := map[string]bool{"6.10": true, "6.11": true} // the sequence tests above
	for _, c := range seedCases(t) {
		if ids[c.ID] {
			t.Errorf("case %s appears twice", c.ID)
		}
		ids[c.ID] = true
	}
	sizes := []int{17, 15, 16, 14, 6, 12}
	total := 0
	for suite, n := range sizes {
		for i := 1; i <= n; i++ {
			id := strconv.Itoa(suite+1) + "." + strconv.Itoa(i)
			if !ids[id] {
				t.Errorf("seed case %s has no test", id)
			}
			total++
		}
	}
	if total != 80 || len(ids) != 80 {
		t.Errorf("%d seed cases, %d tested; want 80", total, len(ids))
	}
}
