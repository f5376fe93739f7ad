// Package seed004 replays the unit cases of seed 004 (dev:loop) for the
// tests that run them: the convergence package's pure functions and the
// drover reflect, converge, route and hook commands. Its testdata holds the
// seed's test-cases.json, verbatim, and for each unit case the files the
// seed's runner (run-unit.sh) writes before it runs the case's target,
// written by the runner's own lines (testdata/generate.sh): the
// transcript.jsonl, whose Bash output sits in a tool call's
// input.output_hint with no tool_result; the state file
// .claude/dev-loop.local.json; prior reflections/iteration-N.json;
// metrics-history.json; routing-input.json. Tests read them unchanged.
// CheckReflection evaluates the seed's reflection checks, so every layer
// judges a case the same way.
package seed004

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Call is one tool call of a case's transcript.
type Call struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
}

// testdata is this package's testdata folder.
func testdata() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("locating the seed 004 fixtures: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "testdata"), nil
}

// CasesFile returns the path of the seed's test-cases.json.
func CasesFile() (string, error) {
	dir, err := testdata()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "test-cases.json"), nil
}

// Dir returns the folder of the files the seed's runner writes for the
// unit case id, laid out as in the runner's test directory.
func Dir(id string) (string, error) {
	dir, err := testdata()
	if err != nil {
		return "", err
	}
	d := filepath.Join(dir, "cases", id)
	if _, err := os.Stat(filepath.Join(d, "transcript.jsonl")); err != nil {
		return "", fmt.Errorf("seed 004 case %q: %w", id, err)
	}
	return d, nil
}

// CheckReflection evaluates one of the seed's reflection checks with its
// wanted value: written says whether a reflection was written, refl is its
// JSON decoded (nil when none was written or it did not decode). It
// returns what failed, or "".
func CheckReflection(check string, want any, written bool, refl map[string]any) string {
	switch check {
	case "reflection_file_exists":
		if written != want.(bool) {
			return fmt.Sprintf("%s: reflection written = %v, want %v", check, written, want)
		}
	case "reflection_valid_json":
		if !written || refl == nil {
			return fmt.Sprintf("%s: no reflection that decodes (written %v)", check, written)
		}
	case "reflection_has_field", "reflection_has_field_2":
		if _, ok := refl[want.(string)]; !ok {
			return fmt.Sprintf("%s: no field %q in %v", check, want, refl)
		}
	case "reflection_thrashing_is":
		if refl["thrashing"] != want {
			return fmt.Sprintf("%s: thrashing = %v, want %v", check, refl["thrashing"], want)
		}
	case "reflection_references_prior":
		if s, _ := refl["prior_iterations_summary"].(string); len(s) <= 10 {
			return fmt.Sprintf("%s: prior_iterations_summary = %q", check, s)
		}
	case "reflection_schema_valid":
		for _, f := range []string{"approach", "successes", "failures"} {
			if _, ok := refl[f]; !ok {
				return fmt.Sprintf("%s: missing %q in %v", check, f, refl)
			}
		}
	default:
		return "unknown reflection check " + check
	}
	return ""
}
