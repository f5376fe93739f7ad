package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every droverd command documents itself, as drover's do.
func TestHelpOnEveryCommand(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n++
			if strings.TrimSpace(sub.Short) == "" || strings.TrimSpace(sub.Long) == "" {
				t.Errorf("%q has no Short or no Long", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk((&app{}).rootCmd())
	if n != 6 {
		t.Errorf("walked %d commands, want serve, config, reflect, converge, route and worker", n)
	}
}

// serve's help lists a flag for every config key (drover serve --help and
// drover help serve print it).
func TestServeHelpListsConfigFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := a.execute(context.Background(), []string{"serve", "--help"}); code != 0 {
		t.Fatalf("serve --help exited %d: %s", code, stderr.String())
	}
	for _, f := range []string{"--detach", "--no-console", "--queue.max_iterations", "--hook.budget.stop"} {
		if !strings.Contains(stdout.String(), f) {
			t.Errorf("droverd serve --help does not list %s", f)
		}
	}
}
