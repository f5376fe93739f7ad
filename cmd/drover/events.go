package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
)

// eventsRetry is how long drover events waits before it resumes a stream
// the supervisor ended (it stopped, or the terminal fell behind).
const eventsRetry = time.Second

func (a *app) eventsCmd(g *globalFlags) *cobra.Command {
	var asJSON, noFollow bool
	var since uint64
	cmd := &cobra.Command{
		Use:   "events [--json] [--since ID] [--no-follow]",
		Short: "Follow what the supervisor commits, one line per event",
		Long: `events follows the project's event stream: every state change the
supervisor commits (a session started or ended, a hook's decision, a loop's
iteration with its metrics, convergence status and role, a review started
or finished with its verdict, findings and cost, a run's waves and tasks, a
budget reached, a task done or stuck, the supervisor started or stopped),
one line each, until interrupted. --json prints each event as one JSON
object per line: {"id","kind","session","run","time","data"}.

Events have ids that only grow; the supervisor keeps the last
events.history of them in its store. --since ID starts after event ID
(0, the default, prints all it keeps); when the stream is cut (the
supervisor restarted, or the terminal fell behind) events resumes after the
last event it printed, so none is missed or printed twice. --no-follow
prints the events kept and exits. The stream itself is GET /v1/events on
the supervisor's socket, as Server-Sent Events with Last-Event-ID resume.`,
		Example: `  drover events
  drover events --json --since 120 | jq .
  drover events --no-follow`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, err := a.connect(ctx, p)
			if err != nil {
				return err
			}
			last := since
			print := func(e api.Event) error {
				last = e.ID
				return writeEvent(a.stdout, e, asJSON)
			}
			for {
				err := c.Events(ctx, last, !noFollow, print)
				switch {
				case err == nil:
					return nil
				case errors.Is(err, client.ErrStreamEnded), client.IsUnavailable(err):
					// Resumed after the last event printed, once the
					// supervisor answers again.
					if !sleepCtx(ctx, eventsRetry) {
						return nil
					}
				default:
					return fmt.Errorf("events: %w", err)
				}
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print each event as one JSON line: {"id","kind","session","run","time","data"}`)
	cmd.Flags().Uint64Var(&since, "since", 0, "start after the event with this id")
	cmd.Flags().BoolVar(&noFollow, "no-follow", false, "print the events the supervisor keeps, then exit")
	return cmd
}

// writeEvent prints e as one JSON line, or as one readable line: time,
// id, kind, whose it is, and its payload.
func writeEvent(w io.Writer, e api.Event, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(e)
	}
	who := ""
	switch {
	case e.Session != "":
		who = " session " + e.Session
	case e.Run != "":
		who = " run " + e.Run
	}
	data := ""
	if len(e.Data) > 0 {
		data = " " + string(e.Data)
	}
	_, err := fmt.Fprintf(w, "%s #%d %s%s%s\n", e.Time.Local().Format(time.DateTime), e.ID, e.Kind, who, data)
	return err
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
