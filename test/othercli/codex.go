//go:build unix

package othercli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/drover-dev/drover/internal/agentsetup"
)

// CodexModel is the model the Codex configuration names: a slug Codex 0.169
// ships metadata for, so that it warns of nothing.
const CodexModel = "gpt-5.5"

// CodexHome is the CODEX_HOME of a scratch home: home/.codex.
func CodexHome(home string) string { return filepath.Join(home, ".codex") }

// SetupCodex writes $CODEX_HOME/config.toml for offline runs against the
// fake model at responsesURL (its ResponsesURL()): a provider "fake" that
// speaks the Responses API with no retries, no approvals, no sandbox, and
// nothing that reaches the network (no update check, analytics, feedback,
// history or plugin sync).
func SetupCodex(home, responsesURL string) error {
	dir := CodexHome(home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating CODEX_HOME: %w", err)
	}
	cfg := `model = ` + strconv.Quote(CodexModel) + `
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
model_reasoning_effort = "none"

[model_providers.fake]
name = "Fake local"
base_url = ` + strconv.Quote(responsesURL) + `
env_key = "FAKE_OPENAI_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
# Without it Codex resolves github.com at start (its plugin sync).
plugins = false
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("writing Codex config: %w", err)
	}
	return nil
}

// CodexExec is the command line of a non-interactive Codex run of prompt
// in a project (a git repository), with extra flags before the prompt.
func CodexExec(prompt string, extra ...string) []string {
	args := append([]string{"exec"}, extra...)
	return append(args, prompt)
}

// codexHooksFile is the part of a Codex hooks.json that trust depends on.
type codexHooksFile struct {
	Hooks map[string][]struct {
		Hooks []struct {
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// TrustCodexProject does what a user does in Codex's `/hooks` review for
// project: it marks the project trusted, and trusts every hook of its
// .codex/hooks.json as it now reads, by appending to $CODEX_HOME/config.toml
// the hash Codex keeps for each (an untrusted hook is skipped without a
// word), as `drover init --cli codex` prints them (agentsetup.CodexTrust).
// Each hook needs its timeout set and must be the only one of its group.
// Changing a hook's command afterwards untrusts it again.
func TrustCodexProject(home, project string) error {
	hooksPath := filepath.Join(project, ".codex", "hooks.json")
	data, err := os.ReadFile(hooksPath)
	if err != nil {
		return fmt.Errorf("reading Codex hooks %q: %w", hooksPath, err)
	}
	var hf codexHooksFile
	if err := json.Unmarshal(data, &hf); err != nil {
		return fmt.Errorf("parsing Codex hooks %q: %w", hooksPath, err)
	}
	var hs []agentsetup.Hook
	for event, groups := range hf.Hooks {
		for gi, g := range groups {
			if len(g.Hooks) != 1 || g.Hooks[0].Timeout == 0 {
				return fmt.Errorf("checking Codex hooks %q: group %d of %s: want one hook with a timeout", hooksPath, gi, event)
			}
			hs = append(hs, agentsetup.Hook{Name: event, Command: g.Hooks[0].Command, Timeout: g.Hooks[0].Timeout, Group: gi})
		}
	}
	f, err := os.OpenFile(filepath.Join(CodexHome(home), "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	if _, err := f.WriteString("\n" + agentsetup.CodexTrust(project, hooksPath, hs)); err != nil {
		f.Close()
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	return nil
}

// WriteCodexStopHook writes project/.codex/hooks.json with one Stop hook
// running command: a probe of the CLI's hook wiring itself (drover's own
// comes from `drover init --cli codex`). It overwrites the file.
func WriteCodexStopHook(project, command string) error {
	doc := map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": command, "timeout": 60},
	}}}}}
	return writeJSONFile(filepath.Join(project, ".codex", "hooks.json"), doc)
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	return nil
}
