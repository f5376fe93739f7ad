package proc

import (
	"context"
	"errors"
	"strings"
)

// Shell runs command, a command line that a user wrote as one string in
// config or a flag (a check, a test or suite command, a metric command),
// with `sh -c`, so that it means what it would in a terminal: `make lint
// && make test` runs both, `echo boom; exit 1` fails. c says everything
// else (Dir, Env, OwnerTag, Combined, OutputCap, Timeout...); its Path and
// Args must be empty. A blank command is an error, never a silent pass.
//
// Programs that drover calls with arguments it builds itself (git, an
// agent, a reviewer) go through Run without a shell: a prompt or a branch
// name must never be parsed by one.
func Shell(ctx context.Context, command string, c Cmd) (Result, error) {
	if c.Path != "" || len(c.Args) > 0 {
		return Result{ExitCode: -1}, errors.New("proc.Shell: the Cmd must not name a program")
	}
	if strings.TrimSpace(command) == "" {
		return Result{ExitCode: -1}, errors.New("the command is empty")
	}
	c.Path, c.Args = "sh", []string{"-c", command}
	return Run(ctx, c)
}

// Quote returns s quoted for sh, as one word whatever it holds: for
// values drover puts into a command line that Shell runs (the packages a
// test command's {{packages}} stands for).
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
