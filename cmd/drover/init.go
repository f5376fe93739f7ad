package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/agentsetup"
	"github.com/drover-dev/drover/internal/atomicfile"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tasks"
)

func (a *app) initCmd(g *globalFlags) *cobra.Command {
	var local bool
	var cliName string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Prepare this project for an agent CLI: .drover/, its hooks and slash commands",
		Long: `init creates .drover/ (with its .gitignore) and sets up the agent CLI named by
--cli (claude by default), keeping every setting and hook already there:

  claude  sets CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0 under "env" in
          .claude/settings.json (--local: .claude/settings.local.json); the
          hooks and slash commands come with the drover plugin. Why: Claude
          Code 2.1.143 and later end a turn after 8 consecutive Stop-hook
          blocks in which the model used no tool; a queue is bounded by
          drover's own queue.max_iterations.
  codex   adds drover's hooks to .codex/hooks.json and its skills
          ($drover-do, -add, -loop, -plan, -cancel) to .agents/skills/, and
          prints the trust step: Codex skips an untrusted hook without a
          word.
  gemini  adds drover's hooks to .gemini/settings.json and its commands
          (/drover:do, add, loop, plan, cancel) to .gemini/commands/drover/,
          and prints the trust step and how to give the session an id.

A hook or command file already there is never overwritten.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli, err := hook.ParseCLI(cliName)
			if err != nil {
				return err
			}
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			dir, err := tasks.EnsureDroverDir(p.Root)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "[drover] %s ready\n", dir)
			switch cli {
			case hook.Codex:
				return a.initCodex(p.Root)
			case hook.Gemini:
				return a.initGemini(p.Root)
			}
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
	cmd.Flags().BoolVar(&local, "local", false, "claude: write .claude/settings.local.json (not committed) instead of .claude/settings.json")
	cmd.Flags().StringVar(&cliName, "cli", "claude", "the agent CLI to set up: claude, codex or gemini")
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
	if err := writeAtomic(path, append(out, '\n')); err != nil {
		return false, err
	}
	return true, nil
}

// writeAtomic replaces the file at path with data, creating its folder,
// so that an agent CLI reading it never sees half a file.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %q: %w", filepath.Dir(path), err)
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	return nil
}

// initCodex writes drover's Codex hooks and skills and prints the trust
// step.
func (a *app) initCodex(root string) error {
	path := filepath.Join(root, ".codex", "hooks.json")
	hs, err := a.mergeHooks(hook.Codex, path)
	if err != nil {
		return err
	}
	if err := a.writeNew(root, agentsetup.Commands(hook.Codex)); err != nil {
		return err
	}
	config := "$CODEX_HOME/config.toml (~/.codex/config.toml)"
	if home := a.getenv("CODEX_HOME"); home != "" {
		config = filepath.Join(home, "config.toml")
	}
	fmt.Fprintf(a.stdout, `[drover] Trust step (Codex skips an untrusted hook without a word): Codex runs a project's
hooks only in a trusted project, and each hook only once trusted. Either start codex here,
accept the trust prompt, type /hooks and trust the %d drover hooks; or append these lines
to %s (a changed hook command, timeout or file path needs them again):

%s
[drover] Inside Codex, drover commands find their session by CODEX_THREAD_ID (no --session needed).
`, len(hs), config, agentsetup.CodexTrust(root, path, hs))
	return nil
}

// initGemini writes drover's Gemini CLI hooks and commands and prints the
// trust step.
func (a *app) initGemini(root string) error {
	if _, err := a.mergeHooks(hook.Gemini, filepath.Join(root, ".gemini", "settings.json")); err != nil {
		return err
	}
	if err := a.writeNew(root, agentsetup.Commands(hook.Gemini)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, `[drover] Trust step: Gemini CLI loads .gemini/settings.json, and so drover's hooks, only in a
trusted folder. Trust it when gemini asks on its first start here, or add
  %q: "TRUST_FOLDER"
to ~/.gemini/trustedFolders.json (or run with GEMINI_CLI_TRUST_WORKSPACE=true). The first run
warns that project hooks were detected and records them in ~/.gemini/trusted_hooks.json.
[drover] Gemini CLI gives the commands its tools run no session id: start it with one, so that
drover commands find their session without --session:
  export GEMINI_SESSION_ID=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen); gemini --session-id "$GEMINI_SESSION_ID"
`, root)
	return nil
}

// mergeHooks adds drover's hooks for cli to the settings file at path and
// says what it did.
func (a *app) mergeHooks(cli hook.CLI, path string) ([]agentsetup.Hook, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	out, hs, err := agentsetup.MergeHooks(cli, data)
	if err != nil {
		return nil, fmt.Errorf("in %q: %w (fix it, then run drover init again)", path, err)
	}
	added := 0
	for _, h := range hs {
		if !h.Kept {
			added++
		}
	}
	if added == 0 {
		fmt.Fprintf(a.stdout, "[drover] %s already runs drover's hooks\n", path)
		return hs, nil
	}
	if err := writeAtomic(path, out); err != nil {
		return nil, err
	}
	fmt.Fprintf(a.stdout, "[drover] added %d drover hooks to %s\n", added, path)
	return hs, nil
}

// writeNew writes each file under base unless a file is already there:
// one with other content is the user's, and is left as it is.
func (a *app) writeNew(base string, files []agentsetup.File) error {
	for _, f := range files {
		path := filepath.Join(base, filepath.FromSlash(f.Path))
		switch old, err := os.ReadFile(path); {
		case err == nil && string(old) == f.Content:
			continue
		case err == nil:
			fmt.Fprintf(a.stdout, "[drover] %s exists and differs from drover's: left as it is\n", path)
			continue
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("reading %q: %w", path, err)
		}
		if err := writeAtomic(path, []byte(f.Content)); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "[drover] wrote %s\n", path)
	}
	return nil
}
