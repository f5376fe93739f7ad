// Package agentsetup is what `drover init --cli` writes for an agent CLI:
// its hook configuration, merged into what the project already has, the
// trust entries the CLI needs before it runs a project's hooks, and the
// slash commands that call drover. Everything here is pure: the caller
// reads and writes the files.
package agentsetup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
)

// Hook is one hook drover installs: the event as drover names it and as
// the CLI names it, the command, and its timeout in the CLI's unit.
type Hook struct {
	Event   hook.Event
	Name    string // the CLI's event name
	Command string
	Timeout int
	// Group is the index of the hook's group in the CLI's list for the
	// event once merged, and Handler the hook's index in the group's
	// hooks (Codex's trust key names both).
	Group, Handler int
	// Kept is true when the file already ran this command for the event,
	// so nothing was added; Timeout is then the file's.
	Kept bool
}

// defaultTimeouts are the CLIs' timeouts of a hook that sets none (Codex
// hashes it in).
var defaultTimeouts = map[hook.CLI]int{hook.Codex: 600, hook.Gemini: 60000}

// timeouts are Claude Code plugin's (plugin/hooks/hooks.json), in
// seconds: above drover's own budgets, Stop's also above review.hold.
var timeouts = map[hook.Event]int{
	hook.SessionStart:     10,
	hook.UserPromptSubmit: 15,
	hook.Stop:             600,
	hook.PreCompact:       15,
	hook.SessionEnd:       2,
}

// Hooks returns the hooks drover installs for cli, in its order. Not
// SubagentStop: drover never blocks it, so it would only cost a process
// per subagent.
func Hooks(cli hook.CLI) []Hook {
	var hs []Hook
	for _, e := range hook.Events {
		name := e.EventName(cli)
		if name == "" || e == hook.SubagentStop {
			continue
		}
		t := timeouts[e]
		if cli == hook.Gemini {
			t *= 1000 // milliseconds
		}
		hs = append(hs, Hook{Event: e, Name: name, Command: fmt.Sprintf("drover hook %s --cli %s", e, cli), Timeout: t})
	}
	return hs
}

// HookName is the name a Gemini CLI hook is given: Gemini fingerprints a
// project hook by name and command, and names it in its warnings.
func HookName(e hook.Event) string { return "drover-" + string(e) }

// MergeHooks adds drover's hooks for cli to the JSON settings file data
// (Codex's .codex/hooks.json or Gemini CLI's .gemini/settings.json; empty
// data is an empty file), keeping every other key and every hook already
// there: a group that already runs drover's command for an event is left
// as it is, and drover's group goes after the user's. It returns the new
// file and the hooks, with their group index.
func MergeHooks(cli hook.CLI, data []byte) ([]byte, []Hook, error) {
	settings := map[string]any{}
	if strings.TrimSpace(string(data)) != "" {
		if err := json.Unmarshal(data, &settings); err != nil {
			return nil, nil, fmt.Errorf("parsing the settings JSON: %w", err)
		}
		if settings == nil {
			settings = map[string]any{}
		}
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		if v, exists := settings["hooks"]; exists && v != nil {
			return nil, nil, fmt.Errorf("\"hooks\" is not an object")
		}
		hooks = map[string]any{}
	}
	hs := Hooks(cli)
	for i := range hs {
		h := &hs[i]
		groups, ok := hooks[h.Name].([]any)
		if !ok && hooks[h.Name] != nil {
			return nil, nil, fmt.Errorf("hooks.%s is not a list", h.Name)
		}
		if at, hi, handler := find(groups, h.Command); at >= 0 {
			h.Group, h.Handler, h.Kept = at, hi, true
			h.Timeout = defaultTimeouts[cli]
			if t, ok := handler["timeout"].(float64); ok {
				h.Timeout = int(t)
			}
			continue
		}
		handler := map[string]any{"type": "command", "command": h.Command, "timeout": h.Timeout}
		if cli == hook.Gemini {
			handler["name"] = HookName(h.Event)
		}
		h.Group = len(groups)
		hooks[h.Name] = append(groups, map[string]any{"hooks": []any{handler}})
	}
	settings["hooks"] = hooks
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the settings JSON: %w", err)
	}
	return append(out, '\n'), hs, nil
}

// find returns the index of the group among groups with a handler that
// runs command, the handler's index in it and the handler, or -1.
func find(groups []any, command string) (int, int, map[string]any) {
	for i, g := range groups {
		gm, _ := g.(map[string]any)
		handlers, _ := gm["hooks"].([]any)
		for j, h := range handlers {
			hm, _ := h.(map[string]any)
			if c, _ := hm["command"].(string); strings.TrimSpace(c) == command {
				return i, j, hm
			}
		}
	}
	return -1, -1, nil
}

// CodexTrust returns the lines to add to the user's Codex config.toml
// ($CODEX_HOME/config.toml) so that Codex runs the hooks in hooksFile (an
// absolute path) of project root without the /hooks review: the project's
// trust, and each hook's trusted hash. Codex skips an untrusted hook
// without a word.
func CodexTrust(root, hooksFile string, hs []Hook) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[projects.%s]\ntrust_level = \"trusted\"\n", strconv.Quote(root))
	for _, h := range hs {
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %q\n", strconv.Quote(fmt.Sprintf("%s:%s:%d:%d", hooksFile, snake(h.Name), h.Group, h.Handler)), CodexHash(h))
	}
	return b.String()
}

// CodexHash is the hash Codex trusts a command hook by: sha256 of the
// canonical JSON (keys sorted, compact) of the event's snake_case name and
// the handler as Codex normalizes it.
func CodexHash(h Hook) string {
	// encoding/json sorts map keys and writes compact JSON.
	v := map[string]any{
		"event_name": snake(h.Name),
		"hooks":      []any{map[string]any{"type": "command", "command": h.Command, "timeout": h.Timeout, "async": false}},
	}
	b, _ := json.Marshal(v) // strings and numbers only: it cannot fail
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// snake is a CamelCase event name in snake_case (Stop → stop,
// UserPromptSubmit → user_prompt_submit).
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
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
