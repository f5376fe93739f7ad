// Package seed004 replays the unit cases of seed 004 (dev:loop) for the
// tests that run them: the convergence package's pure functions and the
// drover reflect, converge and route commands. It writes the transcript
// the seed's runner generates and evaluates the seed's reflection checks,
// so both layers judge a case the same way.
package seed004

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Call is one tool call of a case's transcript.
type Call struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
}

// Transcript returns the JSONL that seed 004's run-unit.sh generates:
// filler (10 when nil) Write calls, then calls, then texts, each an
// assistant entry with one block and no ids. The seed smuggles a Bash
// call's output in input.output_hint; here it becomes the call's
// tool_result, flagged is_error, as Claude Code writes a failing command.
func Transcript(filler *int, calls []Call, texts []string) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	line := func(v any) {
		b, merr := json.Marshal(v)
		if merr != nil && err == nil {
			err = fmt.Errorf("writing a seed 004 transcript line: %w", merr)
		}
		buf.Write(append(b, '\n'))
	}
	block := func(role string, b map[string]any) {
		line(map[string]any{"type": role, "message": map[string]any{"content": []any{b}}})
	}
	n := 10
	if filler != nil {
		n = *filler
	}
	for i := range n {
		block("assistant", map[string]any{"type": "tool_use", "name": "Write", "input": map[string]any{"file_path": fmt.Sprintf("/project/filler%d.ts", i), "content": "// filler"}})
	}
	for _, c := range calls {
		block("assistant", map[string]any{"type": "tool_use", "name": c.Tool, "input": c.Input})
		if hint, ok := c.Input["output_hint"].(string); ok {
			block("user", map[string]any{"type": "tool_result", "content": "Exit code 1\n" + hint, "is_error": true})
		}
	}
	for _, text := range texts {
		block("assistant", map[string]any{"type": "text", "text": text})
	}
	return buf.Bytes(), err
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
