package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/seed004"
)

// seedComponentCase is one unit case of seed 004's test-cases.json.
type seedComponentCase struct {
	ID        string          `json:"id"`
	Layer     string          `json:"layer"`
	Target    string          `json:"target"`
	StateFile json.RawMessage `json:"state_file"`
	Checks    map[string]any  `json:"checks"`
}

func loadSeedComponentCases(t *testing.T) []seedComponentCase {
	t.Helper()
	path, err := seed004.CasesFile()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TestCases []seedComponentCase `json:"test_cases"`
	}
	if err := readJSONFile(path, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.TestCases
}

// copySeedCase copies the files seed 004's runner writes for case id into
// a new test directory, as the runner's mktemp directory holds them, with
// the reflections folder it always makes.
func copySeedCase(t *testing.T, id string) string {
	t.Helper()
	src, err := seed004.Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, "reflections"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSeedComponentCases replays seed 004's reflection, convergence and
// routing cases through drover reflect, drover converge and drover route
// on the very files the seed's runner writes (its transcript.jsonl with
// each command's output in input.output_hint, its state file only when the
// case has one, prior reflections as iteration-N.json), with the runner's
// arguments, and evaluates the seed's checks on what the commands write.
func TestSeedComponentCases(t *testing.T) {
	p := newProj(t)
	ran := map[string]int{}
	for _, c := range loadSeedComponentCases(t) {
		if c.Layer != "unit" || c.Target != "reflection-generator" && c.Target != "convergence-detector" && c.Target != "agent-router" {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			dir := copySeedCase(t, c.ID)
			state := filepath.Join(dir, ".claude", "dev-loop.local.json")
			reflections := filepath.Join(dir, "reflections")

			var r result
			var out map[string]any
			switch c.Target {
			case "reflection-generator":
				r = p.drover("", "reflect", "--transcript", filepath.Join(dir, "transcript.jsonl"), "--state", state, "--reflections-dir", reflections)
			case "convergence-detector":
				outPath := filepath.Join(dir, "convergence-output.json")
				r = p.drover("", "converge", "--metrics", filepath.Join(dir, "metrics-history.json"), "--state", state, "--output", outPath)
				if r.code == 0 {
					if err := readJSONFile(outPath, &out); err != nil {
						t.Fatal(err)
					}
				}
			case "agent-router":
				outPath := filepath.Join(dir, "router-output.json")
				r = p.drover("", "route", "--input", filepath.Join(dir, "routing-input.json"), "--output", outPath)
				if r.code == 0 {
					if err := readJSONFile(outPath, &out); err != nil {
						t.Fatal(err)
					}
				}
			}
			ran[c.Target]++

			// The reflection of the case's iteration, if one was written.
			var refl map[string]any
			var iteration struct {
				Iteration int `json:"iteration"`
			}
			if len(c.StateFile) > 0 {
				_ = json.Unmarshal(c.StateFile, &iteration)
			}
			reflPath := filepath.Join(reflections, fmt.Sprintf("iteration-%d.json", iteration.Iteration))
			_, statErr := os.Stat(reflPath)
			if c.Target == "reflection-generator" && statErr == nil {
				if err := readJSONFile(reflPath, &refl); err != nil {
					refl = nil // reflection_valid_json fails on it
				}
			}

			for check, want := range c.Checks {
				switch check {
				case "exit_code_is":
					if float64(r.code) != want.(float64) {
						t.Errorf("%s: exit %d, want %v\nstderr: %s", check, r.code, want, r.stderr)
					}
				case "convergence_status_is":
					if out["status"] != want || out["reason"] == "" {
						t.Errorf("%s: %v, want status %v with a reason", check, out, want)
					}
				case "routed_agent_is":
					if out["agent"] != want || out["role"] != strings.TrimPrefix(want.(string), "dev:") {
						t.Errorf("%s: %v, want agent %v", check, out, want)
					}
				default:
					if msg := seed004.CheckReflection(check, want, statErr == nil, refl); msg != "" {
						t.Errorf("%s (%s; stdout %q)", msg, reflPath, r.stdout)
					}
				}
			}
			// What the seed's descriptions ask beyond its checks: the
			// test failure is captured, the repeated error is thrashing.
			switch c.ID {
			case "reflect-test-failure-02":
				if f, _ := refl["failures"].([]any); len(f) == 0 || !strings.Contains(fmt.Sprint(f), "FAIL src/auth.test.ts > login > should validate email") {
					t.Errorf("failures %v do not capture the failing test", refl["failures"])
				}
			case "reflect-thrash-detect-04":
				if f, _ := refl["failures"].([]any); !strings.Contains(fmt.Sprint(f), "Cannot find module 'foo'") {
					t.Errorf("failures %v do not name the repeated error", refl["failures"])
				}
			}
		})
	}
	for target, want := range map[string]int{"reflection-generator": 6, "convergence-detector": 5, "agent-router": 3} {
		if ran[target] != want {
			t.Errorf("%d %s cases ran, want the seed's %d", ran[target], target, want)
		}
	}
}

// TestConvergeRefusesImpossibleMetrics: a pass rate outside 0..1 (95 for
// 95%) or a negative count is an input error naming the entry, not a
// status; an absent pass rate is unknown and fine.
func TestConvergeRefusesImpossibleMetrics(t *testing.T) {
	p := newProj(t)
	for _, tc := range []struct {
		name    string
		metrics string
		wantErr string
	}{
		{"a percentage", `[{"iteration":1,"test_pass_rate":0.5},{"iteration":2,"test_pass_rate":95}]`, "entry 2 (iteration 2): test_pass_rate 95"},
		{"negative", `[{"iteration":1,"test_pass_rate":-0.5}]`, "test_pass_rate -0.5"},
		{"negative count", `[{"iteration":1,"tests_passed":-3,"tests_failed":1}]`, "negative test counts"},
		{"fractions", `[{"iteration":1,"test_pass_rate":0},{"iteration":2,"test_pass_rate":1}]`, ""},
		{"absent pass rate", `[{"iteration":1,"error_hash":"abc"}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			metrics := filepath.Join(dir, "metrics.json")
			if err := os.WriteFile(metrics, []byte(tc.metrics), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out.json")
			r := p.drover("", "converge", "--metrics", metrics, "--state", filepath.Join(dir, "none.json"), "--output", out)
			if tc.wantErr == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				return
			}
			if r.code == 0 || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, tc.wantErr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an output was written for a refused history")
			}
		})
	}
}

// TestReflectNeedsAnIteration: the state's iteration names the reflection
// file, so a state without one, or with a negative one, is an error and
// writes nothing.
func TestReflectNeedsAnIteration(t *testing.T) {
	p := newProj(t)
	transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
	var lines strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&lines, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"go test ./..."}}]}}`+"\n", i)
	}
	if err := os.WriteFile(transcript, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, state, wantFile string
	}{
		{"no iteration", `{"max_iterations":5}`, ""},
		{"negative", `{"iteration":-3}`, ""},
		{"zero", `{"iteration":0}`, ""},
		{"first", `{"iteration":1}`, "iteration-1.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state.json")
			if err := os.WriteFile(state, []byte(tc.state), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "reflections")
			r := p.drover("", "reflect", "--transcript", transcript, "--state", state, "--reflections-dir", out)
			entries, _ := os.ReadDir(out)
			if tc.wantFile == "" {
				if r.code == 0 || !strings.Contains(r.stderr, "iteration") || len(entries) != 0 {
					t.Errorf("exit %d, stderr %q, %d file(s) written; want an error and none", r.code, r.stderr, len(entries))
				}
				return
			}
			if r.code != 0 || len(entries) != 1 || entries[0].Name() != tc.wantFile {
				t.Errorf("exit %d, stderr %q, files %v; want %s", r.code, r.stderr, entries, tc.wantFile)
			}
		})
	}
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parsing %q: %w", path, err)
	}
	return nil
}
