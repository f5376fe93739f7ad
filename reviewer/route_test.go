package reviewer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestModelCLI(t *testing.T) {
	for _, tc := range []struct {
		model, def       string
		cli, name, error string
	}{
		{"opus", CLIClaude, CLIClaude, "opus", ""},
		{"opus", CLICodex, CLIClaude, "opus", ""},
		{"Claude-Sonnet-4-5", CLIGemini, CLIClaude, "Claude-Sonnet-4-5", ""},
		{"gpt-5-codex", CLIClaude, CLICodex, "gpt-5-codex", ""},
		{"gpt-5", "", CLICodex, "gpt-5", ""},
		{"o3", CLIClaude, CLICodex, "o3", ""},
		{"gemini-2.5-pro", CLIClaude, CLIGemini, "gemini-2.5-pro", ""},
		{"codex:my-finetune", CLIClaude, CLICodex, "my-finetune", ""},
		{"gemini:my-model", CLICodex, CLIGemini, "my-model", ""},
		{"claude:opus", CLICodex, CLIClaude, "opus", ""},
		{"mystery-model", CLICodex, CLICodex, "mystery-model", ""},
		{"mystery-model", "", CLIClaude, "mystery-model", ""},
		{"gpt-5", CLICustom, CLICustom, "gpt-5", ""},
		{"llama3:8b", CLICustom, CLICustom, "llama3:8b", ""},
		{"codex:gpt-5", CLICustom, CLICodex, "gpt-5", ""},
		{"ollama:llama3", CLIClaude, "", "", `model "ollama:llama3" names the CLI "ollama"`},
		{"codex:", CLIClaude, "", "", `model "codex:" names no model`},
	} {
		cli, name, err := ModelCLI(tc.model, tc.def)
		if tc.error != "" {
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("ModelCLI(%q, %q) error %v, want %q", tc.model, tc.def, err, tc.error)
			}
			continue
		}
		if err != nil || cli != tc.cli || name != tc.name {
			t.Errorf("ModelCLI(%q, %q) = %q, %q, %v; want %q, %q", tc.model, tc.def, cli, name, err, tc.cli, tc.name)
		}
	}
}

// A cycle of review.models that alternates claude and codex runs each
// model on its own CLI, and reads each one's output in that CLI's format.
func TestRunMixedModels(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		model, cli, name string
	}{
		{"opus", CLIClaude, "opus"},
		{"gpt-5-codex", CLICodex, "gpt-5-codex"},
		{"gemini-2.5-pro", CLIGemini, "gemini-2.5-pro"},
		{"codex:my-model", CLICodex, "my-model"},
	} {
		args := filepath.Join(dir, tc.name+".json")
		s := fake("FAKE_CLI=auto", "FAKE_ARGS_FILE="+args, "FAKE_VERDICT=PASS")
		// The claude executable is not the one the other CLIs run.
		s.Path = "/nonexistent/claude"
		s.Paths = map[string]string{CLIClaude: os.Args[0], CLICodex: os.Args[0], CLIGemini: os.Args[0]}
		if tc.cli == CLIClaude {
			s.Path = os.Args[0]
		}
		s.Model = tc.model
		res := Run(context.Background(), s)
		if res.Outcome != Pass || res.Model != tc.model {
			t.Fatalf("model %s: %s (%v), model %q", tc.model, res.Outcome, res.Err, res.Model)
		}
		var rec struct {
			Args []string `json:"args"`
		}
		data, err := os.ReadFile(args)
		if err != nil || json.Unmarshal(data, &rec) != nil {
			t.Fatalf("model %s: no record of the fake's arguments: %v", tc.model, err)
		}
		if !slices.Contains(rec.Args, tc.name) || (tc.cli == CLICodex) != (rec.Args[0] == "exec") || (tc.cli == CLIGemini) != slices.Contains(rec.Args, "--approval-mode") {
			t.Errorf("model %s ran as %v; want the %s CLI with model %s", tc.model, rec.Args, tc.cli, tc.name)
		}
		if tc.cli != CLIClaude && res.InputTokens == 0 {
			t.Errorf("model %s: the %s output was not read: %+v", tc.model, tc.cli, res)
		}
	}
}
