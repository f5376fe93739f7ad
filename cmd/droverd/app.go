package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/project"
)

// app is the process's view of the world, passed to every command so tests
// can run commands in-process with their own streams and environment.
type app struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	environ []string
	// envWarned is set once warnEnv has spoken, so that a command that
	// loads the config twice warns once.
	envWarned bool
}

func (a *app) getenv(k string) string { return cmdline.Getenv(a.environ, k) }

// execute runs one command line and returns the exit code.
func (a *app) execute(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(a.stderr, "droverd: %v\n", err)
		return 1
	}
	return 0
}

func (a *app) rootCmd() *cobra.Command {
	g := &cmdline.Globals{}
	root := &cobra.Command{
		Use:   "droverd",
		Short: "The drover supervisor daemon",
		Long: `droverd is drover's supervisor: one per project (droverd serve), holding the
project's store, actors and agent processes. drover, the CLI and hook
client, starts it on demand and talks to it over an owner-only unix socket;
people rarely run it themselves (make run does, in the foreground).

It also runs the commands that need the configuration loader: drover hands
config, reflect, converge and route to it with the same arguments.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	cmdline.AddGlobals(root, g)
	root.AddCommand(
		a.serveCmd(g),
		a.configCmd(g),
		a.reflectCmd(g),
		a.convergeCmd(g),
		a.routeCmd(g),
		a.workerCmd(g),
		a.watchdogCmd(),
	)
	return root
}

func (a *app) paths(g *cmdline.Globals) (project.Paths, error) { return cmdline.Paths(g, a.getenv) }

// ensure returns a client of the project's supervisor, starting this
// droverd as one when none answers, within timeout.
func (a *app) ensure(ctx context.Context, p project.Paths, timeout time.Duration) (*client.Client, api.HealthResponse, error) {
	c := client.New(p.Socket)
	exe, err := os.Executable()
	if err != nil {
		return nil, api.HealthResponse{}, fmt.Errorf("finding the droverd executable: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := filepath.Join(p.LogsDir, "serve.out")
	h, err := client.Ensure(ctx, c, client.Spawner{Exe: exe, Root: p.Root, OutFile: out}.Spawn)
	if err != nil {
		return nil, h, fmt.Errorf("reaching the supervisor for %s: %w (see %s)", p.Root, err, out)
	}
	return c, h, nil
}

// warnEnv says on stderr, once, which DROVER_* variables of the
// environment are no config key: the config ignores them rather than
// refuse to load over a variable that may be something else's, but one may
// be a misspelt key.
func (a *app) warnEnv() {
	if a.envWarned {
		return
	}
	a.envWarned = true
	for _, name := range config.UnknownEnv(a.environ) {
		fmt.Fprintf(a.stderr, "droverd: warning: %s\n", config.EnvWarning(name))
	}
}

// projectConfig loads and validates the configuration of the project at
// root, from its files and this process's environment.
func (a *app) projectConfig(root string) (config.Config, error) {
	a.warnEnv()
	cfg, err := config.Load(config.DefaultSources(root, a.environ))
	if err != nil {
		return config.Config{}, err
	}
	if err := errors.Join(cfg.Validate(), loopconf.Check(cfg.Loop)); err != nil {
		return config.Config{}, err
	}
	return cfg, nil
}
