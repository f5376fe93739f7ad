package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/cmdline"
)

// The commands below are droverd's: what they do needs the configuration
// loader or the engine, which drover does not link (a test guards its
// dependencies). drover keeps them in its command tree with their help and
// flags, checks the flags, then runs droverd with the same arguments,
// streams and environment and exits with its exit code.

func (a *app) serveCmd() *cobra.Command {
	cmd := cmdline.Serve()
	// Every config key is one of serve's flags, and only droverd knows
	// them: it parses the flags, and prints serve's help.
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = a.delegate
	// `drover help serve` too: droverd's help lists the config flags.
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		exe, err := client.Daemon(a.getenv)
		if err != nil {
			fmt.Fprintf(a.stderr, "drover: %s (without droverd, only this part of the help):\n\n%s\n", err, c.Long)
			return
		}
		// droverd has said what went wrong, if anything did.
		_ = runDaemon(c.Context(), exe, a, []string{"serve", "--help"})
	})
	return cmd
}

// delegated is cmd, whose help and flags the two binaries share, run by
// droverd.
func (a *app) delegated(cmd *cobra.Command) *cobra.Command {
	cmd.RunE = a.delegate
	return cmd
}

// execDelegated is cmd run by droverd in this process's place (exec): a
// long-lived command whose pid the user may signal or kill -9, as a worker
// on a machine of its own is, must leave no droverd child behind. Streams
// other than the process's own (an in-process test's) get a child instead.
func (a *app) execDelegated(cmd *cobra.Command) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if a.stdin != os.Stdin || a.stdout != os.Stdout || a.stderr != os.Stderr {
			return a.delegate(cmd, args)
		}
		exe, err := client.Daemon(a.getenv)
		if err != nil {
			return fmt.Errorf("%s runs in droverd: %w", cmd.CommandPath(), err)
		}
		// Only returns on failure.
		err = syscall.Exec(exe, append([]string{exe}, a.args...), a.environ)
		return fmt.Errorf("running %s in place of drover: %w", exe, err)
	}
	return cmd
}

// exitCode is the exit code of a droverd that ran a command for drover; it
// has already said what went wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("droverd exited %d", int(e)) }

// delegate runs this process's command line in droverd.
func (a *app) delegate(cmd *cobra.Command, _ []string) error {
	exe, err := client.Daemon(a.getenv)
	if err != nil {
		return fmt.Errorf("%s runs in droverd: %w", cmd.CommandPath(), err)
	}
	return runDaemon(cmd.Context(), exe, a, a.args)
}

// runDaemon runs exe with args and a's streams and environment. A signal
// that ends drover's context is passed on as SIGTERM, so droverd stops
// gracefully (serve in the foreground), and drover waits for it.
func runDaemon(ctx context.Context, exe string, a *app, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c := exec.CommandContext(ctx, exe, args...)
	c.Stdin, c.Stdout, c.Stderr = a.stdin, a.stdout, a.stderr
	c.Env = a.environ
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	// Past a graceful stop's own limits, the pipes are let go.
	c.WaitDelay = time.Minute
	err := c.Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// droverd stopped cleanly on drover's SIGTERM, as asked.
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code > 0 {
			return exitCode(code)
		}
		if ctx.Err() != nil {
			// Stopped by drover's own signal, as asked.
			return nil
		}
		return fmt.Errorf("%s: %w", exe, err)
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", exe, err)
	}
	return nil
}
