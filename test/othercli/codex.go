//go:build unix

package othercli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		Matcher string           `json:"matcher,omitempty"`
		Hooks   []map[string]any `json:"hooks"`
	} `json:"hooks"`
}

// TrustCodexProject does what a user does in Codex's `/hooks` review for
// project: it marks the project trusted, and trusts every hook of its
// .codex/hooks.json as it now reads, by appending to $CODEX_HOME/config.toml
// the hash Codex keeps for each (an untrusted hook is skipped without a
// word). Changing a hook's command afterwards untrusts it again.
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
	var b strings.Builder
	fmt.Fprintf(&b, "\n[projects.%s]\ntrust_level = \"trusted\"\n", strconv.Quote(project))
	for event, groups := range hf.Hooks {
		snake := snakeCase(event)
		for gi, g := range groups {
			for hi, h := range g.Hooks {
				hash, err := codexHookHash(snake, g.Matcher, h)
				if err != nil {
					return fmt.Errorf("hashing Codex hook %s:%d:%d of %q: %w", event, gi, hi, hooksPath, err)
				}
				key := fmt.Sprintf("%s:%s:%d:%d", hooksPath, snake, gi, hi)
				fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %s\n", strconv.Quote(key), strconv.Quote(hash))
			}
		}
	}
	f, err := os.OpenFile(filepath.Join(CodexHome(home), "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("trusting Codex hooks: %w", err)
	}
	return nil
}

// codexHookHash is the hash Codex 0.169 trusts a hook handler by: sha256 of
// the canonical JSON (sorted keys, compact) of {"event_name", "matcher"
// (left out for Stop and UserPromptSubmit), "hooks": [the handler with
// type, command, timeout (default 600), async (default false), and
// statusMessage if set]}, as "sha256:HEX".
func codexHookHash(event, matcher string, h map[string]any) (string, error) {
	handler := map[string]any{
		"type":    h["type"],
		"command": h["command"],
		"timeout": 600,
		"async":   false,
	}
	if t, ok := h["timeout"]; ok {
		handler["timeout"] = t
	}
	if a, ok := h["async"]; ok {
		handler["async"] = a
	}
	if m, ok := h["statusMessage"]; ok {
		handler["statusMessage"] = m
	}
	doc := map[string]any{"event_name": event, "hooks": []any{handler}}
	if matcher != "" && event != "stop" && event != "user_prompt_submit" {
		doc["matcher"] = matcher
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// snakeCase turns a hook event name into Codex's key form: "Stop" -> "stop",
// "UserPromptSubmit" -> "user_prompt_submit".
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// WriteCodexStopHook writes project/.codex/hooks.json with one Stop hook
// running command, the wiring the reference notes measured with
// `drover hook stop`, for tests that run before `drover init --cli codex`
// exists. It overwrites the file.
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
