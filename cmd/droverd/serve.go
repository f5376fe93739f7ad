package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/faultinject"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/watchdog"
	"github.com/drover-dev/drover/supervisor"
)

func (a *app) serveCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Serve()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		detach, _ := cmd.Flags().GetBool("detach")
		noConsole, _ := cmd.Flags().GetBool("no-console")
		p, err := a.paths(g)
		if err != nil {
			return err
		}
		if detach {
			_, h, err := a.ensure(cmd.Context(), p, 15*time.Second)
			if err != nil {
				return err
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
		// In the foreground the log's console is stderr already.
		if noConsole {
			a.warnEnv()
		}
		for _, name := range config.UnknownEnv(a.environ) {
			lg.Zap().Warn(config.EnvWarning(name), zap.String("variable", name))
		}
		// Started on demand (by a hook or command, always with
		// --no-console), a supervisor may find its predecessor still
		// stopping: it waits that out rather than leave the hook
		// without a supervisor. In the foreground, "already running"
		// is said at once.
		fault, err := faultinject.Hook(a.getenv(faultinject.Env), func(point string) {
			// The soak counts these lines in the supervisor's output.
			fmt.Fprintf(a.stderr, "droverd: test fault: killed at %s\n", point)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		})
		if err != nil {
			return err
		}
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
			Fault:    fault,
		})
		if errors.Is(err, supervisor.ErrAlreadyRunning) {
			// Several hooks may race to start one; the losers are not
			// an error.
			fmt.Fprintf(a.stderr, "drover: %v\n", err)
			return nil
		}
		return err
	}
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
		return "", none, fmt.Errorf("finding the droverd binary for the watchdog: %w", err)
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

// watchdogCmd is the hidden `droverd __watchdog TAG` that startWatchdog
// runs: it waits for its supervisor to go, then ends what carries TAG.
func (a *app) watchdogCmd() *cobra.Command {
	return &cobra.Command{
		Use:    watchdog.Command + " TAG",
		Short:  "End what a supervisor started once it is gone (started by droverd serve)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			_, err := watchdog.Watch(a.stdin, args[0])
			return err
		},
	}
}
