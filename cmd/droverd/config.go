package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/cmdline"
)

func (a *app) configCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Config()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := a.paths(g)
		if err != nil {
			return err
		}
		if from, _ := cmd.Flags().GetBool("from-supervisor"); from {
			c, _, err := a.ensure(cmd.Context(), p, a.startTimeout(p.Root))
			if err != nil {
				return err
			}
			y, err := c.Config(cmd.Context())
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			_, err = io.WriteString(a.stdout, y)
			return err
		}
		cfg, err := a.projectConfig(p.Root)
		if err != nil {
			return err
		}
		y, err := cfg.YAML()
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(y)
		return err
	}
	return cmd
}

// startTimeout is how long a command waits for a supervisor it starts:
// 10 seconds, or hook.start_timeout when that is longer.
func (a *app) startTimeout(root string) time.Duration {
	timeout := 10 * time.Second
	if cfg, err := a.projectConfig(root); err == nil && cfg.Hook.StartTimeout > timeout {
		timeout = cfg.Hook.StartTimeout
	}
	return timeout
}
