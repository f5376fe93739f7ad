//go:build unix

package othercli

import (
	"fmt"
	"path/filepath"
)

// GeminiModel is the model the Gemini settings pin: with a model named, the
// CLI sends no router request first.
const GeminiModel = "gemini-2.5-flash"

// SetupGemini writes home/.gemini/settings.json for offline runs: API-key
// auth (the key and the fake model's URL come from Environ), no usage
// statistics, telemetry or update checks, and the model pinned.
func SetupGemini(home string) error {
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"model":     map[string]any{"name": GeminiModel},
	}
	if err := writeJSONFile(filepath.Join(home, ".gemini", "settings.json"), settings); err != nil {
		return fmt.Errorf("writing Gemini settings: %w", err)
	}
	return nil
}

// TrustGeminiFolder does what a user does when the Gemini CLI asks whether
// to trust project: it records the folder in ~/.gemini/trustedFolders.json,
// which makes the CLI load the project's .gemini/settings.json and its
// hooks (in an untrusted folder a headless run exits 55).
func TrustGeminiFolder(home, project string) error {
	path := filepath.Join(home, ".gemini", "trustedFolders.json")
	if err := writeJSONFile(path, map[string]string{project: "TRUST_FOLDER"}); err != nil {
		return fmt.Errorf("trusting %q for Gemini: %w", project, err)
	}
	return nil
}

// GeminiPrompt is the command line of a headless Gemini run of prompt with
// every tool allowed (yolo: without it headless runs offer only read-only
// tools), in session sessionID when it is not empty (the CLI then uses
// that id for its hooks' session_id), with extra flags before the prompt.
func GeminiPrompt(prompt, sessionID string, extra ...string) []string {
	args := []string{"--approval-mode", "yolo"}
	if sessionID != "" {
		args = append(args, "--session-id", sessionID)
	}
	args = append(args, extra...)
	return append(args, "-p", prompt)
}

// WriteGeminiStopHook writes project/.gemini/settings.json with one
// AfterAgent hook named drover-stop running command: a probe of the CLI's
// hook wiring itself (drover's own comes from `drover init --cli gemini`).
// It overwrites the file.
func WriteGeminiStopHook(project, command string) error {
	doc := map[string]any{"hooks": map[string]any{"AfterAgent": []any{map[string]any{"hooks": []any{
		map[string]any{"name": "drover-stop", "type": "command", "command": command, "timeout": 60000},
	}}}}}
	return writeJSONFile(filepath.Join(project, ".gemini", "settings.json"), doc)
}
