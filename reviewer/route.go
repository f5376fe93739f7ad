package reviewer

import (
	"fmt"
	"strings"

	"github.com/drover-dev/drover/convergence"
)

// ModelCLI decides which CLI runs a reviewer model, so that one cycle of
// review.models may alternate CLIs ("opus,gpt-5-codex"). An explicit
// "cli:model" ("codex:gpt-5", "claude:opus") names its CLI; else the name
// says it: Claude Code's aliases (opus, sonnet, haiku, opusplan) and
// claude-* go to claude, gpt*, o<digit>* and *codex* to codex, *gemini* to
// gemini (convergence.ModelCLI, which prices them alike). Any other name
// goes to def, the configured CLI (review.cli), as does every model of a
// custom CLI that is not explicit: a custom command takes its own model
// names. model is the name the CLI gets. An explicit
// prefix that is no CLI, or an empty name after it, is an error.
func ModelCLI(m, def string) (cli, model string, err error) {
	if prefix, rest, ok := strings.Cut(m, ":"); ok && isWord(prefix) {
		switch prefix {
		case CLIClaude, CLICodex, CLIGemini:
		default:
			if def == CLICustom {
				// "llama3:8b" is a custom CLI's model, not a prefix.
				return def, m, nil
			}
			return "", "", fmt.Errorf("model %q names the CLI %q: want %s:MODEL, %s:MODEL or %s:MODEL", m, prefix, CLIClaude, CLICodex, CLIGemini)
		}
		if strings.TrimSpace(rest) == "" {
			return "", "", fmt.Errorf("model %q names no model after its CLI %q", m, prefix)
		}
		return prefix, rest, nil
	}
	if def == CLICustom {
		return def, m, nil
	}
	if c := convergence.ModelCLI(m); c != "" {
		return c, m, nil
	}
	if def == "" {
		def = CLIClaude
	}
	return def, m, nil
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Route returns s with the CLI that runs its model (ModelCLI, with s.CLI
// as the default) and the model as that CLI takes it. A model routed to
// another CLI than s.CLI runs that CLI's executable from s.Paths (else its
// name on PATH), not s.Path.
func Route(s Spec) (Spec, error) {
	if s.Model == "" {
		return s, nil
	}
	cli, model, err := ModelCLI(s.Model, s.CLI)
	if err != nil {
		return s, fmt.Errorf("reviewer spec: %w", err)
	}
	if cli != s.CLI && !(s.CLI == "" && cli == CLIClaude) {
		s.Path = s.Paths[cli]
	}
	s.CLI, s.Model = cli, model
	return s, nil
}
