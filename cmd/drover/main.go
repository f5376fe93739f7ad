// Command drover keeps coding agents working until the work is really done.
// It is the CLI and the thin hook client: `drover hook <event>` is what
// Claude Code runs on every hook event, and the other subcommands are what
// the plugin's slash commands and people call. The supervisor is droverd,
// which drover starts on demand; drover links only the standard library,
// cobra, the wire types and the client (a test guards its dependencies),
// and hands the commands that need more (serve, config and the loop's
// components) to droverd.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/hookclient"
)

// version is stamped by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// app is the process's view of the world, passed to every command so tests
// can run commands in-process with their own streams and environment.
type app struct {
	// args is the command line, handed to droverd as it is by the
	// commands droverd runs.
	args    []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	environ []string
	// hookRun handles a hook event; nil means hookclient.Run. Tests set it
	// to reach the hook command's own failure handling.
	hookRun func(context.Context, hookclient.Options) hookclient.Result
}

func (a *app) getenv(k string) string { return cmdline.Getenv(a.environ, k) }

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	a := &app{args: args, stdin: stdin, stdout: stdout, stderr: stderr, environ: environ}
	return a.execute(ctx, args)
}

// fastHook recognizes the forms of `drover hook` the installed hooks run:
// `hook EVENT`, `hook EVENT --cli CLI` and `hook EVENT --cli=CLI`.
func fastHook(args []string) (event, cli string, ok bool) {
	if len(args) < 2 || args[0] != "hook" || strings.HasPrefix(args[1], "-") {
		return "", "", false
	}
	switch rest := args[2:]; {
	case len(rest) == 0:
		return args[1], "", true
	case len(rest) == 1 && strings.HasPrefix(rest[0], "--cli="):
		return args[1], strings.TrimPrefix(rest[0], "--cli="), true
	case len(rest) == 2 && rest[0] == "--cli" && !strings.HasPrefix(rest[1], "-"):
		return args[1], rest[1], true
	}
	return "", "", false
}

// execute runs one command line in a and returns the exit code.
func (a *app) execute(ctx context.Context, args []string) int {
	a.args = args
	// `drover hook EVENT`, as the plugin's hooks.json runs it on every
	// event, skips building the command tree: the hook's time is the
	// agent's. Any other form (flags, help) goes through cobra.
	if event, cli, ok := fastHook(args); ok {
		a.hook(ctx, &globalFlags{}, event, cli)
		return 0
	}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintf(a.stderr, "drover: %v\n", err)
		return 1
	}
	return 0
}
