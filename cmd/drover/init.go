package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/tasks"
)

func (a *app) initCmd(g *globalFlags) *cobra.Command {
	var local bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Prepare this project: .drover/ and the Claude Code setting that lifts the 8-block Stop cap",
		Long: `init creates .drover/ (with its .gitignore) and sets
CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0 under "env" in .claude/settings.json
(--local: .claude/settings.local.json), keeping every other setting.

Why: Claude Code 2.1.143 and later end a turn after 8 consecutive Stop-hook
blocks in which the model used no tool. A queue is bounded by drover's own
queue.max_iterations, so the cap only cuts long queues short.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			dir, err := tasks.EnsureDroverDir(p.Root)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "[drover] %s ready\n", dir)
			name := "settings.json"
			if local {
				name = "settings.local.json"
			}
			path := filepath.Join(p.Root, ".claude", name)
			changed, err := setClaudeEnv(path, "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "0")
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintf(a.stdout, "[drover] set CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0 in %s\n", path)
			} else {
				fmt.Fprintf(a.stdout, "[drover] %s already sets CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0\n", path)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, "write .claude/settings.local.json (not committed) instead of .claude/settings.json")
	return cmd
}

// setClaudeEnv sets env[key]=value in a Claude Code settings file, keeping
// every other key, and reports whether the file changed.
func setClaudeEnv(path, key, value string) (bool, error) {
	settings := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("reading %q: %w", path, err)
	default:
		if err := json.Unmarshal(data, &settings); err != nil {
			return false, fmt.Errorf("parsing %q: %w (fix or remove it, then run drover init again)", path, err)
		}
	}
	env, _ := settings["env"].(map[string]any)
	if env == nil {
		if _, exists := settings["env"]; exists {
			return false, fmt.Errorf("in %q: \"env\" is not an object", path)
		}
		env = map[string]any{}
	}
	if v, ok := env[key].(string); ok && v == value {
		return false, nil
	}
	env[key] = value
	settings["env"] = env
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return false, fmt.Errorf("encoding %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("creating %q: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return false, fmt.Errorf("writing %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("replacing %q: %w", path, err)
	}
	return true, nil
}
