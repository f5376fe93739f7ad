package main

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"
)

func (a *app) uiCmd(g *globalFlags) *cobra.Command {
	var open, printOnly bool
	cmd := &cobra.Command{
		Use:   "ui [--open=false] [--print]",
		Short: "Open the web dashboard: every session, loop chart, plan review timeline and run",
		Long: `ui starts the project's supervisor if needed, asks it to start the web
dashboard if it is not on (it starts with the supervisor when ui.enabled is
set), prints the dashboard's URL and opens it in a browser.

The dashboard listens on 127.0.0.1 only, on ui.port (0: a free port), and
every request must carry the project's token, kept owner-only in
.drover/state/ui-token: the printed URL holds it (?token=...), a browser
keeps it in a cookie after the first page, and scripts may send it as
"Authorization: Bearer TOKEN". Pages: / (every session, updated live),
/loop/SESSION (a loop's iterations as a chart), /plan/SESSION (a plan's
review cycles as a timeline, with each review file), /run/ID (a run's waves
over time) and /runs; /metrics when metrics.enabled is set.

--print prints only the URL (for scripts) and opens nothing; --open=false
prints the URL without opening a browser.`,
		Example: `  drover ui
  drover ui --open=false
  curl -s "$(drover ui --print)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			c, err := a.connect(cmd.Context(), p)
			if err != nil {
				return err
			}
			ui, err := c.UI(cmd.Context())
			if err != nil {
				return fmt.Errorf("ui: %w", err)
			}
			if printOnly {
				fmt.Fprintln(a.stdout, ui.URL)
				return nil
			}
			fmt.Fprintf(a.stdout, "drover dashboard: %s\n", ui.URL)
			if open {
				if err := openBrowser(ui.URL); err != nil {
					fmt.Fprintf(a.stderr, "drover: could not open a browser (%v); open the URL above\n", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&open, "open", true, "open the URL in a browser (xdg-open, or open on macOS)")
	cmd.Flags().BoolVar(&printOnly, "print", false, "print only the URL, and open nothing")
	return cmd
}

// openBrowser starts the desktop's opener on url and does not wait for it:
// the browser outlives drover ui.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	c := exec.Command(name, url)
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = c.Wait() }()
	return nil
}
