package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scenario is a script for the fake model: an ordered list of rules. For each
// model request the first rule whose conditions all hold (and whose Times is
// not used up) answers it.
//
// A scenario file looks like this:
//
//	rules:
//	  - name: write-file
//	    when:
//	      last_user_matches: 'work on: (?P<path>\S+)'
//	    times: 1
//	    answer:
//	      text: "Writing it."
//	      tool_calls:
//	        - name: Write
//	          input: {file_path: "{{path}}", content: "hello\n"}
//	  - name: done
//	    when: {last_is_tool_result: true}
//	    answer: {text: "Done."}
type Scenario struct {
	// Rules are tried in order.
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Rule is one scripted answer and the conditions under which it is given.
type Rule struct {
	// Name labels the rule in recorded requests and errors; optional.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// When holds the conditions; all the ones given must hold. A rule with
	// no conditions matches every request.
	When Match `yaml:"when,omitempty" json:"when,omitempty"`
	// Times caps how often the rule may answer; zero means no cap. Capped
	// rules let a script answer the same kind of request differently the
	// second time.
	Times int `yaml:"times,omitempty" json:"times,omitempty"`
	// Answer is what the model says.
	Answer Answer `yaml:"answer" json:"answer"`
}

// Match is the set of conditions of a Rule. Empty fields are not checked.
// "The last user message" is the last message with role "user"; its text is
// its text blocks and the contents of its tool_result blocks, joined by
// newlines (see Request.LastUserText).
type Match struct {
	// LastUserContains must be a substring of the last user message.
	LastUserContains string `yaml:"last_user_contains,omitempty" json:"last_user_contains,omitempty"`
	// LastUserMatches is a regexp (RE2 syntax) that must match the last user
	// message. Its groups, numbered or named, can be used in the answer as
	// {{1}} or {{name}}; {{0}} is the whole match.
	LastUserMatches string `yaml:"last_user_matches,omitempty" json:"last_user_matches,omitempty"`
	// AnyUserContains must be a substring of some user message.
	AnyUserContains string `yaml:"any_user_contains,omitempty" json:"any_user_contains,omitempty"`
	// NotContains must not be a substring of the last user message.
	NotContains string `yaml:"not_contains,omitempty" json:"not_contains,omitempty"`
	// LastIsToolResult, when set, says whether the last user message must
	// (true) or must not (false) carry a tool_result block: it tells the
	// CLI's call after running a tool from a fresh prompt.
	LastIsToolResult *bool `yaml:"last_is_tool_result,omitempty" json:"last_is_tool_result,omitempty"`
	// HasTool names a tool that must be in the request's tools list, such
	// as StructuredOutput (present when the CLI runs with --json-schema).
	HasTool string `yaml:"has_tool,omitempty" json:"has_tool,omitempty"`
	// ModelContains must be a substring of the request's model, such as
	// "opus" or "sonnet".
	ModelContains string `yaml:"model_contains,omitempty" json:"model_contains,omitempty"`
	// SystemContains must be a substring of the system prompt.
	SystemContains string `yaml:"system_contains,omitempty" json:"system_contains,omitempty"`
	// JSONMode, when set, says whether a Gemini request must (true) or
	// must not (false) ask for a JSON answer: the Gemini CLI's helper calls
	// do. Requests of the other protocols never do.
	JSONMode *bool `yaml:"json_mode,omitempty" json:"json_mode,omitempty"`
}

// Answer is a scripted model reply: text, tool calls, both, or an API
// error. With tool calls the stop reason is "tool_use", else "end_turn".
type Answer struct {
	// Text is the assistant's text block, sent before any tool call.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	// ToolCalls become tool_use blocks, in order.
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// Error, when set, makes the server answer with an API error instead.
	Error *APIError `yaml:"error,omitempty" json:"error,omitempty"`
	// Usage, when set, is the token usage the answer reports instead of
	// the server's estimate from the sizes of the request and the answer:
	// a test that checks what the usage costs (a spending budget) needs
	// numbers that do not move with the CLI's prompt sizes.
	Usage *Usage `yaml:"usage,omitempty" json:"usage,omitempty"`
}

// Usage is a scripted usage object, as the Messages API reports it. Fields
// left out are zero.
type Usage struct {
	InputTokens              int `yaml:"input_tokens,omitempty" json:"input_tokens,omitempty"`
	OutputTokens             int `yaml:"output_tokens,omitempty" json:"output_tokens,omitempty"`
	CacheCreationInputTokens int `yaml:"cache_creation_input_tokens,omitempty" json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `yaml:"cache_read_input_tokens,omitempty" json:"cache_read_input_tokens,omitempty"`
}

// ToolCall is one tool_use block: a tool name (Bash, Write, Edit, Read,
// StructuredOutput, ...) and its input object. Strings anywhere in Input may
// use the rule's captures.
type ToolCall struct {
	Name  string         `yaml:"name" json:"name"`
	Input map[string]any `yaml:"input,omitempty" json:"input,omitempty"`
}

// APIError is a scripted API failure, e.g. status 529 and type
// "overloaded_error". Mind that the CLI retries 5xx and 429 answers
// (CLAUDE_CODE_MAX_RETRIES=0 in its environment makes it give up at once).
type APIError struct {
	Status  int    `yaml:"status" json:"status"`
	Type    string `yaml:"type" json:"type"`
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	// Headers are sent with the error, such as retry-after or the
	// anthropic-ratelimit-* headers of a rate limit.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// LoadScenario reads and validates the scenario file at path.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario %q: %w", path, err)
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("scenario %q: %w", path, err)
	}
	return sc, nil
}

// ParseScenario parses and validates a YAML scenario. Unknown fields are
// errors, so that a misspelt condition cannot silently match everything.
func ParseScenario(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parsing scenario: empty document")
		}
		return nil, fmt.Errorf("parsing scenario: %w", err)
	}
	if _, err := sc.compile(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Validate reports the first problem with the scenario: a bad regexp, a
// capture the regexp does not define, a rule without an answer, a tool
// input that is not JSON. Start calls it too.
func (sc *Scenario) Validate() error {
	_, err := sc.compile()
	return err
}

// compiledRule is a Rule with its regexp compiled, kept apart from Rule so
// that a Scenario stays plain data.
type compiledRule struct {
	Rule
	index int
	re    *regexp.Regexp
}

// label names rule i for errors and records: "rule 2 (write-file)".
func (r Rule) label(i int) string {
	if r.Name == "" {
		return "rule " + strconv.Itoa(i)
	}
	return fmt.Sprintf("rule %d (%s)", i, r.Name)
}

func (sc *Scenario) compile() ([]compiledRule, error) {
	if sc == nil {
		return nil, errors.New("nil scenario")
	}
	out := make([]compiledRule, 0, len(sc.Rules))
	for i, r := range sc.Rules {
		cr := compiledRule{Rule: r, index: i}
		fail := func(field string, err error) error {
			return fmt.Errorf("%s: %s: %w", r.label(i), field, err)
		}
		if r.When.LastUserMatches != "" {
			re, err := regexp.Compile(r.When.LastUserMatches)
			if err != nil {
				return nil, fail("when.last_user_matches", err)
			}
			cr.re = re
		}
		if r.Times < 0 {
			return nil, fail("times", fmt.Errorf("%d is negative", r.Times))
		}
		a := r.Answer
		if a.Text == "" && len(a.ToolCalls) == 0 && a.Error == nil {
			return nil, fail("answer", errors.New("needs text, tool_calls or error"))
		}
		if a.Error != nil {
			if a.Text != "" || len(a.ToolCalls) > 0 {
				return nil, fail("answer.error", errors.New("cannot be combined with text or tool_calls"))
			}
			if a.Error.Status < 400 || a.Error.Status > 599 {
				return nil, fail("answer.error.status", fmt.Errorf("%d is not an HTTP error status", a.Error.Status))
			}
			if a.Error.Type == "" {
				return nil, fail("answer.error.type", errors.New("is empty"))
			}
		}
		if u := a.Usage; u != nil {
			if a.Error != nil {
				return nil, fail("answer.usage", errors.New("cannot be combined with error"))
			}
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheCreationInputTokens < 0 || u.CacheReadInputTokens < 0 {
				return nil, fail("answer.usage", fmt.Errorf("%+v has a negative count", *u))
			}
		}
		if err := checkCaptures(cr.re, a.Text); err != nil {
			return nil, fail("answer.text", err)
		}
		for j, tc := range a.ToolCalls {
			field := fmt.Sprintf("answer.tool_calls[%d]", j)
			if tc.Name == "" {
				return nil, fail(field+".name", errors.New("is empty"))
			}
			if _, err := json.Marshal(tc.Input); err != nil {
				return nil, fail(field+".input", err)
			}
			var err error
			walkStrings(tc.Input, func(s string) string {
				if err == nil {
					err = checkCaptures(cr.re, s)
				}
				return s
			})
			if err != nil {
				return nil, fail(field+".input", err)
			}
		}
		out = append(out, cr)
	}
	return out, nil
}

// placeholder is a capture reference in an answer string: {{1}} or {{name}}.
var placeholder = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// checkCaptures reports a placeholder in s that re does not define.
func checkCaptures(re *regexp.Regexp, s string) error {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		name := m[1]
		if re == nil {
			return fmt.Errorf("%s needs when.last_user_matches to capture it", m[0])
		}
		if n, err := strconv.Atoi(name); err == nil {
			if n > re.NumSubexp() {
				return fmt.Errorf("%s: the regexp has only %d groups", m[0], re.NumSubexp())
			}
			continue
		}
		if re.SubexpIndex(name) < 0 {
			return fmt.Errorf("%s names no group of the regexp", m[0])
		}
	}
	return nil
}

// expand replaces the placeholders in s by the captured groups.
func expand(s string, re *regexp.Regexp, groups []string) string {
	if re == nil || !strings.Contains(s, "{{") {
		return s
	}
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		i, err := strconv.Atoi(name)
		if err != nil {
			i = re.SubexpIndex(name)
		}
		if i < 0 || i >= len(groups) {
			return m
		}
		return groups[i]
	})
}

// walkStrings returns a deep copy of v in which every string value (not map
// keys) went through f.
func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = walkStrings(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = walkStrings(e, f)
		}
		return out
	default:
		return v
	}
}
