package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
)

func (a *app) noteCmd(g *globalFlags) *cobra.Command {
	var args api.NoteArgs
	var question, doing string
	var asJSON bool
	var argsFrom string
	cmd := &cobra.Command{
		Use:   "note [--question TEXT] [--decision TEXT] [--doing TEXT] [--clear]",
		Short: "Record what a context compaction must not lose: the pending question, decisions, the item in progress",
		Long: `note keeps the agent's notes with this session's drover state, whatever
workflow runs (or none): the question it waits for the user to answer
(--question), a decision it took (--decision, added to the last ten), and
the item it works on (--doing). At every PreCompact drover writes them, with
where the workflow stands, to .drover/sessions/<session>/context-snapshot.json
and adds them to the compaction instructions; after the compaction they are
put back into the model's context with the workflow's own reminder.

--question "" and --doing "" clear that note (a question answered, an item
finished); --clear removes every note (given with other flags, it replaces
them all). Without flags, note prints the notes; --json prints
{"session_id","question","doing","decisions":[{"text","at"}],"updated_at",
"snapshot","message"}. With --args - the flags are read from stdin, split as
a shell would (nothing expanded): that is how the /drover:note slash command
passes what was typed.`,
		Example: `  drover note --question "Should the parser accept tabs?"
  drover note --decision "Keep the v1 wire format" --doing "task 3: the lexer"
  drover note --question ""
  drover note`,
		Args: func(_ *cobra.Command, rest []string) error {
			if len(rest) > 0 {
				return fmt.Errorf("note: unexpected %q: give the text with --question, --decision or --doing", strings.Join(rest, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if argsFrom == "-" {
				if _, err := a.argsFromStdin(cmd, nil); err != nil {
					return err
				}
			}
			if f.Changed("question") {
				args.Question = &question
			}
			if f.Changed("doing") {
				args.Doing = &doing
			}
			verb := "show"
			if args.Question != nil || args.Doing != nil || f.Changed("decision") || args.Clear {
				verb = "set"
				if f.Changed("decision") && strings.TrimSpace(args.Decision) == "" {
					return fmt.Errorf("--decision needs the decision's text")
				}
			}
			id, c, err := a.sessionClient(cmd.Context(), g)
			if err != nil {
				return err
			}
			var n api.Notes
			var in any
			if verb == "set" {
				in = args
			}
			if err := c.Workflow(cmd.Context(), id, api.NotesWorkflow, verb, in, &n); err != nil {
				return fmt.Errorf("note: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(n)
			}
			fmt.Fprintln(a.stdout, strings.TrimRight(n.Message, "\n"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&question, "question", "", `the question you wait for the user to answer ("" clears it)`)
	f.StringVar(&args.Decision, "decision", "", "a decision taken (added to the recent ones)")
	f.StringVar(&doing, "doing", "", `the item in progress ("" clears it)`)
	f.BoolVar(&args.Clear, "clear", false, "remove every note first")
	f.BoolVar(&asJSON, "json", false, "print the notes as JSON")
	f.StringVar(&argsFrom, "args", "", "read the flags from stdin (-)")
	return cmd
}
