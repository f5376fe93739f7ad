// Command droverd is drover's supervisor daemon: one per project, it holds
// the store, the actors and the engine, and answers drover's hook client
// and commands over an owner-only unix socket. drover starts it on demand
// (droverd serve); it also runs the commands that need the configuration
// loader (config and the loop's components reflect, converge and route),
// which drover hands to it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()}
	code := a.execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
