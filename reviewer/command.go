package reviewer

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// stripEnv lists variables removed from a claude reviewer's environment.
// CLAUDECODE marks a process as running inside a Claude Code session, and
// the CLI refuses to start a nested session when it sees it; the supervisor
// inherits it whenever the hook that auto-started it ran inside one.
var stripEnv = []string{"CLAUDECODE"}

// customPlaceholder matches the placeholders of a custom command template.
var customPlaceholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// BuildCommand returns the executable, its arguments and its environment
// for s. No shell is involved: each argument reaches the CLI as it is.
//
// For CLIClaude it is
//
//	claude --print --model M --output-format json --json-schema SCHEMA
//	  --settings {"disableAllHooks":true} [--max-budget-usd X] PROMPT
//
// where --settings turns every hook off for the reviewer (the first
// recursion guard; GuardEnv in env is the second), and the reviewer gets no
// permission to write: drover writes the review file from the answer.
//
// env is s.Env (or the caller's environment when nil) with GuardEnv=1 set
// and, for claude, CLAUDECODE removed.
func BuildCommand(s Spec) (name string, args []string, env []string, err error) {
	if strings.TrimSpace(s.Prompt) == "" {
		return "", nil, nil, errors.New("reviewer spec: the prompt is empty")
	}
	if len(s.Prompt) > MaxPromptBytes {
		return "", nil, nil, fmt.Errorf("reviewer spec: the prompt is %d bytes, more than %d", len(s.Prompt), MaxPromptBytes)
	}
	if s.BudgetUSD < 0 {
		return "", nil, nil, fmt.Errorf("reviewer spec: negative budget %v", s.BudgetUSD)
	}
	sch := s.Schema
	if len(sch) == 0 {
		sch = Schema()
	}
	base := s.Env
	if base == nil {
		base = os.Environ()
	}
	switch s.CLI {
	case "", CLIClaude:
		name = s.Path
		if name == "" {
			name = CLIClaude
		}
		args = []string{"--print"}
		if s.Model != "" {
			if strings.HasPrefix(s.Model, "-") {
				return "", nil, nil, fmt.Errorf("reviewer spec: model %q looks like a flag", s.Model)
			}
			args = append(args, "--model", s.Model)
		}
		args = append(args,
			"--output-format", "json",
			"--json-schema", string(sch),
			"--settings", `{"disableAllHooks":true}`,
		)
		if s.BudgetUSD > 0 {
			args = append(args, "--max-budget-usd", strconv.FormatFloat(s.BudgetUSD, 'f', -1, 64))
		}
		args = append(args, positional(s.Prompt))
		return name, args, withEnv(base, stripEnv), nil
	case CLICustom:
		name, args, err = expandCustom(s, sch)
		if err != nil {
			return "", nil, nil, err
		}
		return name, args, withEnv(base, nil), nil
	}
	return "", nil, nil, fmt.Errorf("reviewer spec: unknown CLI %q (want %q or %q)", s.CLI, CLIClaude, CLICustom)
}

// positional keeps a prompt from being read as an option: the CLI's parser
// takes any argument that starts with '-' for a flag, and a prompt may start
// with a Markdown list item. A leading newline changes nothing for the model.
func positional(prompt string) string {
	if strings.HasPrefix(prompt, "-") {
		return "\n" + prompt
	}
	return prompt
}

// expandCustom fills in s.Command. Each placeholder is replaced in one pass,
// so a prompt that itself contains "{{schema}}" is passed as it is.
func expandCustom(s Spec, sch []byte) (string, []string, error) {
	if len(s.Command) == 0 || strings.TrimSpace(s.Command[0]) == "" {
		return "", nil, errors.New("reviewer spec: the custom command is empty")
	}
	if customPlaceholder.MatchString(s.Command[0]) {
		return "", nil, fmt.Errorf("reviewer spec: the custom command's executable %q must not hold a placeholder", s.Command[0])
	}
	vars := map[string]string{
		"model":      s.Model,
		"prompt":     s.Prompt,
		"schema":     string(sch),
		"budget_usd": strconv.FormatFloat(s.BudgetUSD, 'f', -1, 64),
	}
	var (
		unknown   []string
		hasPrompt bool
	)
	args := make([]string, 0, len(s.Command)-1)
	for _, a := range s.Command[1:] {
		args = append(args, customPlaceholder.ReplaceAllStringFunc(a, func(m string) string {
			key := customPlaceholder.FindStringSubmatch(m)[1]
			v, ok := vars[key]
			if !ok {
				unknown = append(unknown, m)
				return m
			}
			if key == "prompt" {
				hasPrompt = true
			}
			return v
		}))
	}
	if len(unknown) > 0 {
		return "", nil, fmt.Errorf("reviewer spec: unknown placeholder(s) %s in the custom command (known: {{model}}, {{prompt}}, {{schema}}, {{budget_usd}})", strings.Join(unknown, ", "))
	}
	if !hasPrompt {
		return "", nil, errors.New("reviewer spec: the custom command has no {{prompt}} (stdin is closed, so the prompt must be an argument)")
	}
	return s.Command[0], args, nil
}

// withEnv returns a copy of base without the variables in drop and without
// any earlier GuardEnv, with GuardEnv=1 appended.
func withEnv(base, drop []string) []string {
	env := make([]string, 0, len(base)+1)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == GuardEnv || slices.Contains(drop, k) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, GuardEnv+"=1")
}
