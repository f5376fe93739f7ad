package fakemodel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseScenario(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		yaml    string
		want    *Scenario
		wantErr string // substring; empty means success
	}{
		{
			name: "full rule",
			yaml: `
rules:
  - name: work
    when:
      last_user_matches: 'work on: (?P<path>\S+)'
      last_is_tool_result: true
      has_tool: Bash
      model_contains: opus
    times: 2
    answer:
      text: "on {{path}}"
      tool_calls:
        - name: Bash
          input: {command: "cat {{path}}", description: "read {{1}}"}
`,
			want: &Scenario{Rules: []Rule{{
				Name:  "work",
				When:  Match{LastUserMatches: `work on: (?P<path>\S+)`, LastIsToolResult: &yes, HasTool: "Bash", ModelContains: "opus"},
				Times: 2,
				Answer: Answer{Text: "on {{path}}", ToolCalls: []ToolCall{{
					Name:  "Bash",
					Input: map[string]any{"command": "cat {{path}}", "description": "read {{1}}"},
				}}},
			}}},
		},
		{
			name: "catch-all and error answer",
			yaml: "rules:\n  - answer: {text: hi}\n  - answer: {error: {status: 529, type: overloaded_error}}\n",
			want: &Scenario{Rules: []Rule{
				{Answer: Answer{Text: "hi"}},
				{Answer: Answer{Error: &APIError{Status: 529, Type: "overloaded_error"}}},
			}},
		},
		{
			name: "scripted usage",
			yaml: "rules:\n  - answer: {text: hi, usage: {input_tokens: 100000, cache_read_input_tokens: 5}}\n",
			want: &Scenario{Rules: []Rule{{Answer: Answer{Text: "hi", Usage: &Usage{InputTokens: 100000, CacheReadInputTokens: 5}}}}},
		},
		{name: "empty document", yaml: "", wantErr: "empty document"},
		{name: "not yaml", yaml: "rules: [", wantErr: "parsing scenario"},
		{name: "misspelt condition", yaml: "rules:\n  - when: {last_user_contain: x}\n    answer: {text: hi}\n", wantErr: "field last_user_contain not found"},
		{name: "bad regexp", yaml: "rules:\n  - answer: {text: a}\n  - name: bad\n    when: {last_user_matches: '('}\n    answer: {text: hi}\n", wantErr: "rule 1 (bad): when.last_user_matches: error parsing regexp"},
		{name: "no answer", yaml: "rules:\n  - when: {last_user_contains: x}\n", wantErr: "rule 0: answer: needs text, tool_calls or error"},
		{name: "negative times", yaml: "rules:\n  - times: -1\n    answer: {text: hi}\n", wantErr: "rule 0: times: -1 is negative"},
		{name: "capture without regexp", yaml: "rules:\n  - answer: {text: '{{1}}'}\n", wantErr: "rule 0: answer.text: {{1}} needs when.last_user_matches"},
		{name: "group number too high", yaml: "rules:\n  - when: {last_user_matches: '(a)'}\n    answer: {text: '{{2}}'}\n", wantErr: "rule 0: answer.text: {{2}}: the regexp has only 1 groups"},
		{name: "unknown group name", yaml: "rules:\n  - when: {last_user_matches: '(?P<a>x)'}\n    answer: {tool_calls: [{name: Bash, input: {command: '{{b}}'}}]}\n", wantErr: "rule 0: answer.tool_calls[0].input: {{b}} names no group"},
		{name: "capture deep in input", yaml: "rules:\n  - answer: {tool_calls: [{name: Edit, input: {edits: [{old: '{{x}}'}]}}]}\n", wantErr: "answer.tool_calls[0].input: {{x}} needs"},
		{name: "tool without name", yaml: "rules:\n  - answer: {tool_calls: [{input: {a: b}}]}\n", wantErr: "rule 0: answer.tool_calls[0].name: is empty"},
		{name: "input not json", yaml: "rules:\n  - answer: {tool_calls: [{name: X, input: {a: {1: b}}}]}\n", wantErr: "rule 0: answer.tool_calls[0].input: json"},
		{name: "error with text", yaml: "rules:\n  - answer: {text: hi, error: {status: 500, type: api_error}}\n", wantErr: "answer.error: cannot be combined"},
		{name: "error status", yaml: "rules:\n  - answer: {error: {status: 200, type: x}}\n", wantErr: "answer.error.status: 200 is not an HTTP error status"},
		{name: "error type", yaml: "rules:\n  - answer: {error: {status: 500}}\n", wantErr: "answer.error.type: is empty"},
		{name: "usage with error", yaml: "rules:\n  - answer: {error: {status: 500, type: api_error}, usage: {input_tokens: 1}}\n", wantErr: "answer.usage: cannot be combined with error"},
		{name: "negative usage", yaml: "rules:\n  - answer: {text: hi, usage: {output_tokens: -1}}\n", wantErr: "answer.usage: {InputTokens:0 OutputTokens:-1"},
		{name: "misspelt usage", yaml: "rules:\n  - answer: {text: hi, usage: {input: 1}}\n", wantErr: "field input not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScenario([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseScenario error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseScenario: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseScenario =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestLoadScenario(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("rules:\n  - answer: {text: hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := LoadScenario(good); err != nil || len(sc.Rules) != 1 {
		t.Errorf("LoadScenario(good) = %+v, %v; want one rule", sc, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScenario(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "rule 0: answer") {
		t.Errorf("LoadScenario(bad) error = %v, want one naming the file and rule 0", err)
	}
	if _, err := LoadScenario(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "reading scenario") {
		t.Errorf("LoadScenario(missing) error = %v", err)
	}
}

func TestValidateNil(t *testing.T) {
	var sc *Scenario
	if err := sc.Validate(); err == nil {
		t.Error("Validate on a nil scenario succeeded")
	}
}

func TestExpand(t *testing.T) {
	sc := &Scenario{Rules: []Rule{{
		When:   Match{LastUserMatches: `path: (?P<path>\S+) n=(\d+)`},
		Answer: Answer{Text: "x"},
	}}}
	rules, err := sc.compile()
	if err != nil {
		t.Fatal(err)
	}
	re := rules[0].re
	groups := re.FindStringSubmatch("see path: a/b.go n=7 now")
	tests := []struct{ in, want string }{
		{"{{path}}", "a/b.go"},
		{"{{ path }} and {{2}}", "a/b.go and 7"},
		{"{{0}}", "path: a/b.go n=7"},
		{"no placeholders", "no placeholders"},
		{"{{9}} stays", "{{9}} stays"},
		{"{single}", "{single}"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, re, groups); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := expand("{{1}}", nil, nil); got != "{{1}}" {
		t.Errorf("expand without a regexp = %q, want it unchanged", got)
	}
}

// FuzzParseScenario checks that the parser never panics, and that a
// scenario it accepts survives a round trip through YAML unchanged.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("rules:\n  - answer: {text: hi}\n"))
	f.Add([]byte("rules:\n  - when: {last_user_matches: '(?P<a>x)'}\n    answer: {tool_calls: [{name: B, input: {c: '{{a}}'}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			return
		}
		out, err := yaml.Marshal(sc)
		if err != nil {
			t.Fatalf("marshalling an accepted scenario: %v", err)
		}
		again, err := ParseScenario(out)
		if err != nil {
			t.Fatalf("re-parsing %q: %v", out, err)
		}
		if !reflect.DeepEqual(normalize(t, sc), normalize(t, again)) {
			t.Errorf("round trip changed the scenario:\n%#v\n%#v", sc, again)
		}
	})
}

// normalize renders sc as JSON-like data, so that numbers decoded as int
// or float compare by value.
func normalize(t *testing.T, sc *Scenario) any {
	t.Helper()
	out, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
