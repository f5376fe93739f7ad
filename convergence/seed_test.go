package convergence

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/test/seed004"
)

var update = flag.Bool("update", false, "rewrite golden files")

// seedCase is one unit case of seed 004's test-cases.json (reflection and
// convergence categories), kept verbatim in test/seed004/testdata.
type seedCase struct {
	ID          string `json:"id"`
	Layer       string `json:"layer"`
	Category    string `json:"category"`
	Description string `json:"description"`
	StateFile   *struct {
		Iteration     int `json:"iteration"`
		MaxIterations int `json:"max_iterations"`
	} `json:"state_file"`
	FillerCount    *int           `json:"filler_count"`
	Transcript     []seed004.Call `json:"transcript"`
	TranscriptText []string       `json:"transcript_text"`
	PreReflections []Reflection   `json:"pre_reflections"`
	MetricsHistory []Metrics      `json:"metrics_history"`
	Checks         map[string]any `json:"checks"`
}

func loadSeedCases(t *testing.T, category string) []seedCase {
	t.Helper()
	path, err := seed004.CasesFile()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TestCases []seedCase `json:"test_cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []seedCase
	for _, c := range doc.TestCases {
		if c.Layer == "unit" && c.Category == category {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s cases in the seed file", category)
	}
	return out
}

// seedTranscript returns the transcript seed 004's runner writes for the
// case, as it writes it: each Bash output in the call's input.output_hint,
// with no tool_result.
func seedTranscript(t *testing.T, c seedCase) string {
	t.Helper()
	dir, err := seed004.Dir(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hintFailures returns the first line of each output_hint of the case's
// transcript: the failure the seed put there for the reflection to report.
func hintFailures(c seedCase) []string {
	var out []string
	for _, call := range c.Transcript {
		if h, ok := call.Input["output_hint"].(string); ok {
			first, _, _ := strings.Cut(h, "\n")
			out = append(out, first)
		}
	}
	return out
}

// TestSeedReflectionCases runs seed 004's reflection-generator cases,
// from the transcripts its runner writes, unchanged, through Summarize,
// MetricsFrom and Reflect, and evaluates the seed's checks on the
// reflection JSON. A case whose transcript carries a command's output
// (input.output_hint) must report that failure. The JSON is also compared
// with a golden file.
func TestSeedReflectionCases(t *testing.T) {
	for _, c := range loadSeedCases(t, "reflection") {
		t.Run(c.ID, func(t *testing.T) {
			it, err := transcript.Summarize(context.Background(), strings.NewReader(seedTranscript(t, c)), transcript.SinceIteration)
			if err != nil {
				t.Fatal(err)
			}
			m := MetricsFrom(it)
			if c.StateFile != nil {
				m.Iteration = c.StateFile.Iteration
			}
			r, ok := Reflect(it, m, c.PreReflections, Thresholds{})
			var file []byte
			if ok {
				file, err = r.JSON()
				if err != nil {
					t.Fatal(err)
				}
			}
			var data map[string]any
			if ok {
				if err := json.Unmarshal(file, &data); err != nil {
					t.Fatalf("reflection is not valid JSON: %v", err)
				}
			}
			for check, want := range c.Checks {
				switch check {
				case "exit_code_is":
					// Reflect cannot fail; the seed's process exit code has no counterpart.
				default:
					if msg := seed004.CheckReflection(check, want, ok, data); msg != "" {
						t.Errorf("%s (%d tool calls)", msg, it.ToolCalls)
					}
				}
			}
			for _, f := range hintFailures(c) {
				if !slices.ContainsFunc(r.Failures, func(s string) bool { return strings.Contains(s, f) }) {
					t.Errorf("the reflection's failures %q do not report the transcript's %q", r.Failures, f)
				}
			}
			if ok {
				golden(t, filepath.Join("testdata", "reflections", c.ID+".json"), file)
			}
		})
	}
}

// TestSeedConvergenceCases runs seed 004's convergence-detector cases.
func TestSeedConvergenceCases(t *testing.T) {
	var reasons bytes.Buffer
	for _, c := range loadSeedCases(t, "convergence") {
		t.Run(c.ID, func(t *testing.T) {
			var b Budget
			if c.StateFile != nil {
				b = Budget{Iteration: c.StateFile.Iteration, MaxIterations: c.StateFile.MaxIterations}
			}
			status, why := Classify(c.MetricsHistory, b, DefaultThresholds())
			if want := c.Checks["convergence_status_is"]; string(status) != want {
				t.Errorf("status = %s (%s), want %s", status, why, want)
			}
			reasons.WriteString(c.ID + ": " + string(status) + ": " + why + "\n")
		})
	}
	golden(t, "testdata/seed004_convergence.golden", reasons.Bytes())
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got, *update)
}
