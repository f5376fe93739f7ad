package convergence

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite golden files")

// seedCase is one unit case of seed 004's test-cases.json (reflection and
// convergence categories), kept verbatim in testdata.
type seedCase struct {
	ID          string `json:"id"`
	Category    string `json:"category"`
	Description string `json:"description"`
	StateFile   *struct {
		Iteration     int `json:"iteration"`
		MaxIterations int `json:"max_iterations"`
	} `json:"state_file"`
	FillerCount    *int           `json:"filler_count"`
	Transcript     []seedCall     `json:"transcript"`
	TranscriptText []string       `json:"transcript_text"`
	PreReflections []Reflection   `json:"pre_reflections"`
	MetricsHistory []Metrics      `json:"metrics_history"`
	Checks         map[string]any `json:"checks"`
}

type seedCall struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
}

func loadSeedCases(t *testing.T, category string) []seedCase {
	t.Helper()
	b, err := os.ReadFile("testdata/seed004_cases.json")
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
		if c.Category == category {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s cases in the seed file", category)
	}
	return out
}

// seedTranscript writes the JSONL that seed 004's run-unit.sh generates:
// filler_count (default 10) Write calls, then the case's tool calls, then
// its text lines, each an assistant entry with one block and no ids. The
// seed smuggles a Bash call's output in input.output_hint; here it becomes
// the call's tool_result, flagged is_error, as Claude Code would write a
// failing command.
func seedTranscript(t *testing.T, c seedCase) string {
	t.Helper()
	var buf bytes.Buffer
	line := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	toolLine := func(name string, input map[string]any) {
		line(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			map[string]any{"type": "tool_use", "name": name, "input": input},
		}}})
	}
	filler := 10
	if c.FillerCount != nil {
		filler = *c.FillerCount
	}
	for i := range filler {
		toolLine("Write", map[string]any{"file_path": fmt.Sprintf("/project/filler%d.ts", i), "content": "// filler"})
	}
	for _, call := range c.Transcript {
		toolLine(call.Tool, call.Input)
		if hint, ok := call.Input["output_hint"].(string); ok {
			line(map[string]any{"type": "user", "message": map[string]any{"content": []any{
				map[string]any{"type": "tool_result", "content": "Exit code 1\n" + hint, "is_error": true},
			}}})
		}
	}
	for _, text := range c.TranscriptText {
		line(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": text},
		}}})
	}
	return buf.String()
}

// TestSeedReflectionCases runs seed 004's reflection-generator cases
// through Summarize, MetricsFrom and Reflect, and evaluates the seed's
// checks on the reflection JSON. The JSON is also compared with a golden
// file.
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
				case "reflection_file_exists":
					if ok != want.(bool) {
						t.Errorf("%s: reflection written = %v, want %v (%d tool calls)", check, ok, want, it.ToolCalls)
					}
				case "reflection_valid_json":
					if !ok {
						t.Errorf("%s: no reflection", check)
					}
				case "reflection_has_field", "reflection_has_field_2":
					if _, has := data[want.(string)]; !has {
						t.Errorf("%s: no field %q in %s", check, want, file)
					}
				case "reflection_thrashing_is":
					if data["thrashing"] != want {
						t.Errorf("%s: thrashing = %v, want %v", check, data["thrashing"], want)
					}
				case "reflection_references_prior":
					if s, _ := data["prior_iterations_summary"].(string); len(s) <= 10 {
						t.Errorf("%s: prior_iterations_summary = %q", check, s)
					}
				case "reflection_schema_valid":
					for _, f := range []string{"approach", "successes", "failures"} {
						if _, has := data[f]; !has {
							t.Errorf("%s: missing %q", check, f)
						}
					}
				default:
					t.Errorf("unknown check %s", check)
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
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
