package reviewer

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/templates"
)

// stripEnv lists variables removed from the environment of a reviewer run
// by name (claude, codex, gemini). CLAUDECODE marks a process as running
// inside a Claude Code session, and claude refuses to start a nested session
// when it sees it; the supervisor inherits it whenever the hook that
// auto-started it ran inside one. No reviewer runs inside the agent's
// session, so none should see it.
var stripEnv = []string{"CLAUDECODE"}

// customPlaceholder matches the placeholders of a custom command template.
var customPlaceholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// BuildCommand returns the executable, its arguments and its environment
// for s. No shell is involved: each argument reaches the CLI as it is.
//
// For CLIClaude it is
//
//	claude --print --model M --allowedTools Read,Grep,Glob,Bash
//	  --disallowedTools Edit,Write,NotebookEdit --output-format json
//	  --json-schema SCHEMA --settings {"disableAllHooks":true}
//	  [--max-budget-usd X] PROMPT
//
// where --settings turns every hook off for the reviewer (the first
// recursion guard; GuardEnv in env is the second). The reviewer may read
// and run commands (the tests, linters, git), which the default permission
// mode of --print refuses ("This command requires approval"), but has no
// tool to edit with: drover writes the review file from the answer. See
// ClaudeAllowedTools.
//
// For CLICodex it is
//
//	codex exec --json --sandbox read-only --skip-git-repo-check
//	  --output-schema FILE [--model M] PROMPT
//
// and for CLIGemini
//
//	gemini [--model M] --output-format json --approval-mode default
//	  --allowed-tools run_shell_command --prompt PROMPT+SCHEMA
//
// (see codexArgs and geminiArgs for where each flag is documented).
//
// env is s.Env (or the caller's environment when nil) with GuardEnv=1 set
// and, for the named CLIs, CLAUDECODE removed.
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
	if s.CLI != CLICustom && strings.HasPrefix(s.Model, "-") {
		return "", nil, nil, fmt.Errorf("reviewer spec: model %q looks like a flag", s.Model)
	}
	base := s.Env
	if base == nil {
		base = os.Environ()
	}
	switch s.CLI {
	case "", CLIClaude:
		sch := s.Schema
		if len(sch) == 0 {
			sch = Schema()
		}
		args = []string{"--print"}
		if s.Model != "" {
			args = append(args, "--model", s.Model)
		}
		// Each tool list is one argument, and a flag follows it: the
		// CLI's option parser takes every word after --allowedTools up
		// to the next flag as a tool, the prompt included.
		args = append(args,
			"--allowedTools", ClaudeAllowedTools,
			"--disallowedTools", ClaudeDisallowedTools,
			"--output-format", "json",
			"--json-schema", string(sch),
			"--settings", `{"disableAllHooks":true}`,
		)
		if s.BudgetUSD > 0 {
			args = append(args, "--max-budget-usd", strconv.FormatFloat(s.BudgetUSD, 'f', -1, 64))
		}
		args = append(args, positional(s.Prompt))
		return executable(s.Path, CLIClaude), args, withEnv(base, stripEnv), nil
	case CLICodex:
		if s.SchemaFile == "" {
			return "", nil, nil, errors.New("reviewer spec: codex needs a schema file (Run writes one)")
		}
		return executable(s.Path, CLICodex), codexArgs(s), withEnv(base, stripEnv), nil
	case CLIGemini:
		sch := s.Schema
		if len(sch) == 0 {
			sch = Schema()
		}
		return executable(s.Path, CLIGemini), geminiArgs(s, sch), withEnv(base, stripEnv), nil
	case CLICustom:
		sch := s.Schema
		if len(sch) == 0 {
			sch = Schema()
		}
		name, args, err = expandCustom(s, sch)
		if err != nil {
			return "", nil, nil, err
		}
		return name, args, withEnv(base, nil), nil
	}
	return "", nil, nil, fmt.Errorf("reviewer spec: unknown CLI %q (want %s)", s.CLI, strings.Join(CLIs(), ", "))
}

// The tools of a claude reviewer. Read, Grep and Glob need no permission
// in any mode; Bash is allowed so that the reviewer can run the tests, the
// linters and git, as the review prompts ask (the CLI still refuses some
// commands, such as one it cannot analyse, and lists them in the result's
// permission_denials: see Result.Denials). The edit tools are not offered
// to the model at all. A reviewer may still write through Bash: what keeps
// it from changing the work is its prompt, as it keeps the agent that a
// reviewer checks.
const (
	ClaudeAllowedTools    = "Read,Grep,Glob,Bash"
	ClaudeDisallowedTools = "Edit,Write,NotebookEdit"
)

// GeminiAllowedTools is the tool a gemini reviewer may run besides the
// read-only ones: its shell, for the tests, the linters and git. Edits
// (write_file, replace) still need an approval that a headless run cannot
// give, so they are refused.
const GeminiAllowedTools = "run_shell_command"

// CLIs returns the names BuildCommand knows, for messages and validation.
func CLIs() []string { return []string{CLIClaude, CLICodex, CLIGemini, CLICustom} }

func executable(path, cli string) string {
	if path != "" {
		return path
	}
	return cli
}

// codexArgs builds `codex exec` for a read-only review. What each flag does,
// from openai/codex codex-rs/exec/src/cli.rs and docs/exec.md:
//
//   - exec runs one non-interactive turn. It never asks for approvals; the
//     prompt is one positional argument. stdin must not stay open: with a
//     prompt and a piped stdin it reads stdin to the end and appends it
//     ("Reading additional input from stdin..."), which is why Run gives
//     every reviewer the null device.
//   - --json prints the run as JSON Lines events on stdout (thread.started,
//     turn.started, item.*, turn.completed with token usage, turn.failed,
//     error); the final answer is the text of the last agent_message item.
//     Progress otherwise goes to stderr. ParseCodexOutput reads these.
//   - --output-schema FILE makes the final message a JSON string matching
//     the schema in FILE (strict structured outputs: see StrictSchema).
//     The schema must be a file, unlike claude's inline --json-schema.
//   - --sandbox read-only (also exec's default, stated so that a user's
//     config.toml cannot widen it): the model's commands can read the
//     project but not write to it or reach the network. A test command
//     that must write (a build cache, say) fails in it; codex reports no
//     refusal drover could read, so Result.Denials stays empty. -a/--ask-for-approval
//     is not passed: exec has no prompts to approve, and 0.139 removed the
//     flag from exec, failing every run that still passed it.
//   - --skip-git-repo-check: exec refuses to run outside a Git repository
//     to protect against destructive edits; a read-only reviewer makes no
//     edits, and a plan may live in a project that is not a repository.
//   - --model M (-m) names an OpenAI model, such as gpt-5-codex.
//
// --ephemeral (no session files on disk) is left out: only recent versions
// know it, and an unknown flag fails the run.
func codexArgs(s Spec) []string {
	args := []string{"exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--output-schema", s.SchemaFile}
	if s.Model != "" {
		args = append(args, "--model", s.Model)
	}
	return append(args, positional(s.Prompt))
}

// geminiArgs builds a headless gemini run. From google-gemini/gemini-cli
// docs/cli/headless.md and packages/cli/src/config/config.ts:
//
//   - --prompt (-p) runs one prompt without the interactive UI. Some
//     versions mark it deprecated in favour of a positional prompt and
//     print a warning on stderr; both are one-shot when stdout is not a
//     terminal, and -p is what the current headless docs use.
//   - --output-format json prints one JSON object on stdout when done:
//     "response" (the model's final text), "stats" (per-model token
//     counts under stats.models.<name>.tokens) and, on failure, "error"
//     {type, message, code}. A fatal error is printed to stderr instead,
//     with a non-zero exit (1 general, 42 bad input, 53 turn limit).
//     ParseGeminiOutput reads these.
//   - --approval-mode default: in a non-interactive run the tools that
//     need approval (shell, edit, write_file) are refused, so the reviewer
//     can read but not change the project. Stated so that a user's
//     settings cannot make the reviewer yolo.
//   - --allowed-tools run_shell_command lets the shell run without an
//     approval, so that the reviewer can run the tests and git. 0.61 marks
//     the flag deprecated in favour of its policy engine (a warning on
//     stderr) but still maps it to an allow rule, and older versions keep
//     an allowed tool out of the headless exclusions. Observed on 0.61.0
//     against a scripted server: with it the model is offered
//     run_shell_command and its call runs; without it the model is offered
//     no shell ("Tool "run_shell_command" not found"); write_file and
//     replace are offered in neither case.
//   - --model (-m) names a Gemini model, such as gemini-2.5-pro.
//
// Gemini CLI has no flag for a response schema (issues #5021, #13388; PR
// #18032 that added --schema-file was closed), so the schema travels in
// the prompt and the verdict is read from the JSON in "response".
func geminiArgs(s Spec, sch []byte) []string {
	var args []string
	if s.Model != "" {
		args = append(args, "--model", s.Model)
	}
	return append(args, "--output-format", "json", "--approval-mode", "default", "--allowed-tools", GeminiAllowedTools, "--prompt", positional(geminiPrompt(s.Templates, s.Prompt, sch)))
}

// geminiPrompt appends to prompt the instruction to answer in the schema,
// worded by t (the built-in when t does not have it), and the schema.
func geminiPrompt(t templates.Set, prompt string, sch []byte) string {
	text, err := t.Render(templates.ReviewerAnswerSchema, nil)
	if err != nil {
		// The zero Set of a Spec built without one holds no templates.
		text, _ = templates.Defaults().Render(templates.ReviewerAnswerSchema, nil)
	}
	return prompt + "\n\n" + text + "\n" + string(sch) + "\n"
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
