package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/watchdog"
	"github.com/drover-dev/drover/supervisor"
)

func (a *app) serveCmd(g *globalFlags) *cobra.Command {
	var detach, noConsole bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the supervisor for this project (started on demand by hooks and commands)",
		Long: `serve runs the supervisor for one project: the project's store
(.drover/state/), its actor tree and the local API on an owner-only unix
socket outside the work tree. Only one runs per project; worktrees of one
repository share it. SIGTERM or SIGINT stops it gracefully.

In the foreground it logs to stderr as well as to .drover/logs/drover.log.
Every configuration key is also a flag (--queue.max_iterations=20 ...), which
overrides the files and the environment.
With --detach it starts in the background and returns once it answers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			if detach {
				c := client.New(p.Socket)
				ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
				defer cancel()
				h, err := client.Ensure(ctx, c, client.Spawner{Exe: a.getenv("DROVER_BIN"), Root: p.Root, OutFile: filepath.Join(p.LogsDir, "serve.out")}.Spawn)
				if err != nil {
					return fmt.Errorf("starting the supervisor for %s: %w (see %s)", p.Root, err, filepath.Join(p.LogsDir, "serve.out"))
				}
				fmt.Fprintf(a.stdout, "[drover] supervisor for %s running (pid %d, socket %s)\n", h.Project, h.PID, p.Socket)
				return nil
			}
			src := config.DefaultSources(p.Root, a.environ)
			src.Flags = cmd.Flags()
			cfg, err := config.Load(src)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if _, err := tasks.EnsureDroverDir(p.Root); err != nil {
				return err
			}
			opts := logging.Options{File: p.LogFile, Level: cfg.Log.Level, MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups}
			if !noConsole {
				opts.Console = a.stderr
			}
			lg, err := logging.New(opts)
			if err != nil {
				return err
			}
			defer lg.Close()
			// Started on demand (by a hook or command, always with
			// --no-console), a supervisor may find its predecessor still
			// stopping: it waits that out rather than leave the hook
			// without a supervisor. In the foreground, "already running"
			// is said at once.
			var lockWait time.Duration
			if noConsole {
				lockWait = cfg.Supervisor.ShutdownTimeout
			}
			err = supervisor.Run(cmd.Context(), supervisor.Options{
				Paths:    p,
				Config:   cfg,
				Sources:  &src,
				Log:      lg,
				Version:  version,
				Watchdog: func() (string, func(), error) { return a.startWatchdog(lg) },
				LockWait: lockWait,
			})
			if errors.Is(err, supervisor.ErrAlreadyRunning) {
				// Several hooks may race to start one; the losers are not
				// an error.
				fmt.Fprintf(a.stderr, "drover: %v\n", err)
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "start in the background and return once the supervisor answers")
	cmd.Flags().BoolVar(&noConsole, "no-console", false, "log only to .drover/logs/drover.log, not to stderr (used when started on demand)")
	// Every config key is also a flag, the last layer: --queue.max_iterations=20.
	config.AddFlags(cmd.Flags())
	return cmd
}

// startWatchdog starts this supervisor's watchdog (internal/watchdog) and
// returns the tag for what the supervisor starts, and the function that
// ends the watchdog when serve returns (a no-op when it did not start).
func (a *app) startWatchdog(lg *logging.Logger) (string, func(), error) {
	none := func() {}
	tag, err := watchdog.NewTag()
	if err != nil {
		return "", none, err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", none, fmt.Errorf("finding the drover binary for the watchdog: %w", err)
	}
	wd, err := watchdog.Start(exe, tag, a.environ)
	if err != nil {
		return "", none, err
	}
	return tag, func() {
		if err := wd.Close(); err != nil {
			lg.Zap().Warn("closing the watchdog", zap.Error(err))
		}
	}, nil
}

// watchdogCmd is the hidden `drover __watchdog TAG` that startWatchdog
// runs: it waits for its supervisor to go, then ends what carries TAG.
func (a *app) watchdogCmd() *cobra.Command {
	return &cobra.Command{
		Use:    watchdog.Command + " TAG",
		Short:  "End what a supervisor started once it is gone (started by drover serve)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			_, err := watchdog.Watch(a.stdin, args[0])
			return err
		},
	}
}

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
