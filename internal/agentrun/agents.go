package agentrun

import "strings"

// The agent CLIs drover runs by name (drover run --agent, run.agent).
const (
	AgentClaude = "claude"
	AgentCodex  = "codex"
	AgentGemini = "gemini"
)

// Named reads an agent setting that names a CLI rather than a command
// template: "claude", "codex" or "gemini", optionally with a model after a
// colon ("codex:gpt-5-codex"). ok is false for anything else, which is a
// command template.
func Named(agent string) (cli, model string, ok bool) {
	cli, model, _ = strings.Cut(strings.TrimSpace(agent), ":")
	switch cli {
	case AgentClaude, AgentCodex, AgentGemini:
	default:
		return "", "", false
	}
	if strings.ContainsAny(model, " \t") || strings.HasPrefix(model, "-") {
		return "", "", false
	}
	return cli, model, true
}

// NamedSpec is the headless run of the named agent CLI (see Named) with
// model (empty: the CLI's default), without its prompt, directory,
// environment or timeout, which the caller adds. Each runs without asking
// for approvals and may write outside its work tree (a work tree's commits
// go to the main repository's .git):
//
//	claude --print --output-format stream-json --verbose
//	  --dangerously-skip-permissions [--model M] PROMPT
//	codex exec --json --skip-git-repo-check --sandbox danger-full-access
//	  [--model M] PROMPT
//	gemini --output-format stream-json --approval-mode yolo [--model M]
//	  --prompt PROMPT
//
// Codex's exec never asks for approvals; --sandbox danger-full-access is
// the sandbox mode of its offline recipe, and --skip-git-repo-check lets it
// run where git does not see a repository. Gemini's yolo approval mode
// offers its shell and edit tools (the default headless mode offers only
// read-only ones); GEMINI_CLI_TRUST_WORKSPACE trusts the work tree for
// this run only (a headless run in an untrusted folder exits 55), and
// GEMINI_CLI_NO_RELAUNCH keeps it one process that a signal ends (its
// relaunching parent ignores SIGTERM).
func NamedSpec(cli, model string) Spec {
	withModel := func(args []string) []string {
		if model != "" {
			args = append(args, "--model", model)
		}
		return args
	}
	switch cli {
	case AgentCodex:
		return Spec{
			Bin: AgentCodex, Format: FormatCodex, Model: model,
			Args: withModel([]string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"}),
		}
	case AgentGemini:
		return Spec{
			Bin: AgentGemini, Format: FormatGemini, Model: model,
			Args: append(withModel([]string{"--output-format", "stream-json", "--approval-mode", "yolo"}), "--prompt"),
			Env:  []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"},
		}
	}
	return Spec{Bin: AgentClaude, Model: model, Args: ClaudeArgs(withModel([]string{"--dangerously-skip-permissions"})...)}
}
