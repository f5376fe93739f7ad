package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/hookclient"
	"github.com/drover-dev/drover/internal/hookconf"
	"github.com/drover-dev/drover/internal/project"
	"github.com/drover-dev/drover/templates"
)

// globalFlags are the flags every command takes.
type globalFlags = cmdline.Globals

func (a *app) rootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "drover",
		Short: "Keep coding agents working until the work is really done",
		Long: `drover supervises coding agents (Claude Code first). One supervisor runs per
project (droverd, started on demand; drover serve runs it); the Claude Code
plugin calls drover hook <event> on every hook event, and the slash commands
call the other subcommands.

Queue workflow: drover do "task" adds a task and starts the queue; each time
the agent tries to stop, drover hands it the next task, refuses to stop with
uncommitted changes, runs a review phase when the queue is empty, and lets it
stop when review adds nothing or the iteration budget is spent.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	cmdline.AddGlobals(root, g)
	root.AddCommand(
		a.serveCmd(),
		a.hookCmd(g),
		a.addCmd(g),
		a.startCmd(g),
		a.doCmd(g),
		a.stopCmd(g),
		a.unstickCmd(g),
		a.statusCmd(g),
		a.eventsCmd(g),
		a.uiCmd(g),
		a.cleanupCmd(g),
		a.templatesCmd(g),
		a.delegated(cmdline.Config()),
		a.initCmd(g),
		a.loopCmd(g),
		a.noteCmd(g),
		a.planCmd(g),
		a.runCmd(g),
		a.execDelegated(cmdline.Worker()),
		a.delegated(cmdline.Reflect()),
		a.delegated(cmdline.Converge()),
		a.delegated(cmdline.Route()),
	)
	return root
}

func (a *app) cwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}

func (a *app) paths(g *globalFlags) (project.Paths, error) { return cmdline.Paths(g, a.getenv) }

func (a *app) sessionID(g *globalFlags) (string, error) {
	id := g.Session
	// Each CLI tells the commands its tools run which session they are
	// in: Claude Code by CLAUDE_CODE_SESSION_ID, Codex by CODEX_THREAD_ID
	// (its hooks' session_id), Gemini CLI by GEMINI_SESSION_ID when it
	// was started with --session-id.
	for _, k := range sessionEnv {
		if id != "" {
			break
		}
		id = a.getenv(k)
	}
	if id == "" {
		return "", errors.New("no session: run this inside Claude Code (CLAUDE_CODE_SESSION_ID), Codex (CODEX_THREAD_ID) or Gemini CLI started with --session-id (GEMINI_SESSION_ID), or pass --session ID")
	}
	if err := hook.CheckSessionID(id); err != nil {
		return "", err
	}
	return id, nil
}

// sessionClient returns the session of this command line and a client of
// its project's supervisor, started if need be.
func (a *app) sessionClient(ctx context.Context, g *globalFlags) (string, *client.Client, error) {
	id, err := a.sessionID(g)
	if err != nil {
		return "", nil, err
	}
	p, err := a.paths(g)
	if err != nil {
		return "", nil, err
	}
	c, err := a.connect(ctx, p)
	if err != nil {
		return "", nil, err
	}
	return id, c, nil
}

// connect returns a client for the project's supervisor, starting one if
// none answers.
func (a *app) connect(ctx context.Context, p project.Paths) (*client.Client, error) {
	c := client.New(p.Socket)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := c.Health(hctx)
	cancel()
	if err == nil {
		return c, nil
	}
	// Only now, with a supervisor to start, is the configuration read, and
	// only its hook.start_timeout (see internal/hookconf).
	timeout := 10 * time.Second
	if d, err := hookconf.StartTimeout(hookconf.DefaultSources(p.Root, a.getenv)); err == nil && d > timeout {
		timeout = d
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := filepath.Join(p.LogsDir, "serve.out")
	if _, err = client.Ensure(sctx, c, client.Spawner{Getenv: a.getenv, Root: p.Root, OutFile: out}.Spawn); err != nil {
		return nil, fmt.Errorf("reaching the supervisor for %s: %w (see %s)", p.Root, err, out)
	}
	return c, nil
}

// sessionEnv are the variables, in order, that name the session of a
// command run inside an agent CLI.
var sessionEnv = []string{"CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "GEMINI_SESSION_ID"}

func (a *app) hookCmd(g *globalFlags) *cobra.Command {
	var cli string
	cmd := &cobra.Command{
		Use:   "hook EVENT",
		Short: "Handle one agent CLI hook event (reads the hook JSON on stdin)",
		Long: `hook is what the plugin's hooks.json (Claude Code) or the hooks drover init
--cli writes (Codex, Gemini CLI) run. EVENT is one of session-start,
user-prompt-submit, stop, subagent-stop, pre-compact, session-end; for Gemini
CLI, stop is its AfterAgent, user-prompt-submit its BeforeAgent, pre-compact
its PreCompress. --cli names the CLI (claude, codex, gemini); without it the
CLI is told from the payload.

It forwards the event to the project's supervisor (starting one if needed)
and prints the decision JSON. It always exits 0: on any trouble of its own
(bad input, no supervisor within the event's budget) it lets the agent go
on and says why in a systemMessage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.hook(cmd.Context(), g, args[0], cli)
			return nil
		},
	}
	cmd.Flags().StringVar(&cli, "cli", "", "the agent CLI that runs this hook: claude, codex or gemini (default: told from the payload)")
	return cmd
}

// hook handles one hook event named name and prints the decision. It
// never fails: on its own trouble it lets the agent go on.
func (a *app) hook(ctx context.Context, g *globalFlags, name, cliName string) {
	var e hook.Event
	// hookclient.Run recovers its own panics; this covers the rest of the
	// command, since a panic exits 2, which blocks on Stop.
	defer func() {
		if r := recover(); r != nil {
			res := hookclient.Recovered(e, r)
			fmt.Fprintln(a.stderr, res.Problem)
			fmt.Fprint(a.stdout, res.Stdout)
		}
	}()
	e, err := hook.ParseEvent(name)
	if err != nil {
		// Even a wrong event name must not block the agent.
		fmt.Fprintf(a.stdout, "{\"systemMessage\":%q}\n", "drover: "+err.Error())
		return
	}
	cli, err := hook.ParseCLI(cliName)
	if err != nil {
		// Told from the payload instead, and said.
		fmt.Fprintf(a.stderr, "drover: %v; telling the CLI from the payload\n", err)
	}
	runHook := a.hookRun
	if runHook == nil {
		runHook = hookclient.Run
	}
	res := runHook(ctx, hookclient.Options{
		Event:   e,
		CLI:     cli,
		Stdin:   a.stdin,
		Getenv:  a.getenv,
		Cwd:     a.cwd(),
		Project: g.Project,
	})
	if res.Problem != "" {
		fmt.Fprintln(a.stderr, res.Problem)
	}
	fmt.Fprint(a.stdout, res.Stdout)
}

func (a *app) addCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "add PROMPT... | add -",
		Long:  "add writes PROMPT as a new task file in .drover/sessions/<session>/ (named by the time, so tasks run in the order added). With - the prompt is read from stdin.",
		Short: "Add a task to this session's queue without starting it",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := a.prompt(args)
			if err != nil {
				return err
			}
			_, err = a.add(cmd.Context(), g, prompt)
			return err
		},
	}
}

// maxPromptBytes caps a task prompt read from stdin.
const maxPromptBytes = 1 << 20

// prompt joins the arguments, or reads stdin when the only argument is "-".
func (a *app) prompt(args []string) (string, error) {
	if len(args) != 1 || args[0] != "-" {
		return strings.Join(args, " "), nil
	}
	data, err := io.ReadAll(io.LimitReader(a.stdin, maxPromptBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	if len(data) > maxPromptBytes {
		return "", fmt.Errorf("the prompt on stdin is larger than %d bytes", maxPromptBytes)
	}
	return strings.TrimRight(string(data), "\n"), nil
}

// stdinArgs reads the argument string a slash command passes on stdin
// (--args -), refusing one over maxPromptBytes rather than cutting it.
func (a *app) stdinArgs() (string, error) {
	data, err := io.ReadAll(io.LimitReader(a.stdin, maxPromptBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading arguments from stdin: %w", err)
	}
	if len(data) > maxPromptBytes {
		return "", fmt.Errorf("the arguments on stdin are larger than %d bytes", maxPromptBytes)
	}
	return string(data), nil
}

// argsFromStdin parses the words on stdin, split as a shell would (nothing
// expanded), as cmd's flags and arguments, and returns args, the command
// line's arguments, followed by those of stdin. With
// --args - a slash command hands drover what the user typed in a quoted
// heredoc, so that no shell reads it: typed text stays text.
func (a *app) argsFromStdin(cmd *cobra.Command, args []string) ([]string, error) {
	data, err := a.stdinArgs()
	if err != nil {
		return nil, err
	}
	words, err := argsplit.Split(data)
	if err != nil {
		return nil, fmt.Errorf("reading arguments from stdin: %w", err)
	}
	for _, w := range words {
		if w == "--args" || strings.HasPrefix(w, "--args=") {
			return nil, fmt.Errorf("%s: --args cannot be given on stdin", cmd.Name())
		}
	}
	f := cmd.Flags()
	if err := f.Parse(words); err != nil {
		return nil, err
	}
	all := append(slices.Clone(args), f.Args()...)
	// cobra checked the command line's arguments, not these.
	if err := cmd.ValidateArgs(all); err != nil {
		return nil, err
	}
	return all, nil
}

func (a *app) add(ctx context.Context, g *globalFlags, prompt string) (api.AddResponse, error) {
	id, c, err := a.sessionClient(ctx, g)
	if err != nil {
		return api.AddResponse{}, err
	}
	r, err := c.Add(ctx, id, prompt)
	if err != nil {
		return r, fmt.Errorf("adding a task: %w", err)
	}
	fmt.Fprintf(a.stdout, "[drover] Added task %s (%d pending in session %s).\n", r.Path, r.Pending, id)
	return r, nil
}

func (a *app) command(ctx context.Context, g *globalFlags, verb string) error {
	id, c, err := a.sessionClient(ctx, g)
	if err != nil {
		return err
	}
	r, err := c.Command(ctx, id, verb)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	for _, path := range r.Renamed {
		fmt.Fprintf(a.stdout, "[drover] Unstuck %s\n", path)
	}
	fmt.Fprintln(a.stdout, strings.TrimRight(r.Message, "\n"))
	return nil
}

func (a *app) startCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start working through this session's queue",
		Long: `start turns this session's queue on at iteration 0 and prints the loop
prompt for the first pending task. From then on every Stop hands the agent
the next task until the queue is done, reviewed, or the iteration budget
(queue.max_iterations) is spent. It fails when nothing is pending, and when
the session runs a loop or a plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.command(cmd.Context(), g, "start") },
	}
}

func (a *app) doCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "do PROMPT... | do -",
		Long:  "do adds PROMPT as a task (with -, read from stdin) and starts the queue; it prints the instructions for the agent.",
		Short: "Add a task and start the queue (add + start)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := a.prompt(args)
			if err != nil {
				return err
			}
			if _, err := a.add(cmd.Context(), g, prompt); err != nil {
				return err
			}
			return a.command(cmd.Context(), g, "start")
		},
	}
}

func (a *app) stopCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop this session's queue; the agent may stop",
		Long: `stop turns this session's queue off, keeping its task files and
iteration count, so the next Stop is allowed. In a session that runs a loop
it cancels the loop; in one that works on a plan it ends the plan's review
loop. drover start picks the queue up again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.command(cmd.Context(), g, "stop") },
	}
}

func (a *app) unstickCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "unstick",
		Short: "Rename this session's .stuck.md tasks back to pending and restart the queue",
		Long: `unstick renames every task the agent marked stuck (NAME.stuck.md) in this
session back to NAME.md and starts the queue again, as drover start does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.command(cmd.Context(), g, "unstick") },
	}
}

func (a *app) statusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every session of this project: workflow, state, iteration and tasks",
		Long: `status lists every session the project's supervisor knows: its workflow,
state, health, iteration and its pending, done and stuck task counts, plus
the number of quarantined store records. Health is idle (no workflow
runs), working, stale (a workflow runs but the session has sent no hook
for longer than status.stale_after: its agent may have died without a
Stop) or ended (its SessionEnd came; a resumed session works again). With
--json it prints {"project","pid","sessions":[{"id","workflow","state",
"health","iteration","pending","done","stuck","next_task","cost_usd",
"updated_at","last_hook_at"}],"quarantined"}
(quarantined only when some records were set aside). In a project
without .drover/state it says so without starting a supervisor, unless one
still runs there (.drover/ was removed under it): that one is asked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			var c *client.Client
			if _, err := os.Stat(p.DB); errors.Is(err, os.ErrNotExist) {
				// A supervisor can outlive a removed .drover/ (it goes on
				// from memory): ask it, so its pid and sessions show, but
				// never start one for a project with no state.
				c = client.New(p.Socket)
				hctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
				_, herr := c.Health(hctx)
				cancel()
				if herr != nil {
					if asJSON {
						return json.NewEncoder(a.stdout).Encode(api.StatusResponse{Project: p.Root, Sessions: []api.SessionStatus{}})
					}
					fmt.Fprintf(a.stdout, "No drover state in %s yet (%s is missing): nothing has been queued here. `drover do \"task\"` starts a queue.\n", p.Root, p.StateDir)
					return nil
				}
				fmt.Fprintf(a.stderr, "drover: %s is missing (was .drover/ removed?): the running supervisor still has its sessions in memory, but they will not survive its restart\n", p.DB)
			} else {
				c, err = a.connect(cmd.Context(), p)
				if err != nil {
					return err
				}
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(a.stdout, "project %s (supervisor pid %d)\n", st.Project, st.PID)
			if len(st.Sessions) == 0 {
				fmt.Fprintln(a.stdout, "no sessions")
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SESSION\tWORKFLOW\tSTATE\tHEALTH\tITERATION\tPENDING\tDONE\tSTUCK\tCOST\tUPDATED")
				for _, s := range st.Sessions {
					upd := "-"
					if !s.UpdatedAt.IsZero() {
						upd = s.UpdatedAt.Local().Format(time.DateTime)
					}
					wf := s.Workflow
					if wf == "" {
						wf = "-" // known only by the agent's notes
					}
					health := s.Health
					if health == "" {
						health = "-" // an unavailable session
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t$%.2f\t%s\n", s.ID, wf, s.State, health, s.Iteration, s.Pending, s.Done, s.Stuck, s.CostUSD, upd)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if st.Quarantined > 0 {
				fmt.Fprintf(a.stdout, "%d unreadable session record(s) were set aside (quarantined); see %s\n", st.Quarantined, p.LogFile)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {\"sessions\":[{\"id\",\"workflow\",\"state\",\"iteration\",\"pending\",\"done\",\"stuck\",\"cost_usd\",...}]}")
	return cmd
}

func (a *app) cleanupCmd(g *globalFlags) *cobra.Command {
	var force bool
	var argsFrom string
	cmd := &cobra.Command{
		Use:   "cleanup [DAYS]",
		Short: "Remove session folders older than DAYS (default 7) that are finished; -f removes any old session",
		Long: `cleanup removes .drover/sessions/<id>/ folders older than DAYS days (default 7).
Without -f only finished sessions go: no workflow running (no queue on or in
review, no loop, no plan short of complete) and every task .done.md (no
pending, no stuck). With -f every session older than DAYS goes, whatever its
state. With --args - DAYS and -f are read from stdin, split as a shell would
(nothing expanded): that is how the /drover:cleanup slash command passes
what was typed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if argsFrom == "-" {
				var err error
				if args, err = a.argsFromStdin(cmd, args); err != nil {
					return err
				}
			}
			days := 7
			if len(args) == 1 {
				n, err := strconv.Atoi(args[0])
				if err != nil || n < 0 {
					return fmt.Errorf("DAYS must be a whole number of days, 0 or more, got %q", args[0])
				}
				days = n
			}
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			if _, err := os.Stat(p.SessionsDir); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(a.stdout, "[drover] No sessions in %s; nothing to clean up.\n", p.Root)
				return nil
			}
			c, err := a.connect(cmd.Context(), p)
			if err != nil {
				return err
			}
			r, err := c.Cleanup(cmd.Context(), api.CleanupRequest{Days: days, Force: force})
			if err != nil {
				return fmt.Errorf("cleanup: %w", err)
			}
			for _, d := range r.Deleted {
				fmt.Fprintf(a.stdout, "[drover] Deleted %s\n", d)
			}
			fmt.Fprintf(a.stdout, "[drover] Deleted %d session(s) older than %d day(s); kept %d.\n", len(r.Deleted), days, len(r.Kept))
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "also delete active and unfinished sessions older than DAYS")
	cmd.Flags().StringVar(&argsFrom, "args", "", "read DAYS and -f from stdin (-)")
	return cmd
}

func (a *app) templatesCmd(g *globalFlags) *cobra.Command {
	var all, list bool
	var argsFrom string
	cmd := &cobra.Command{
		Use:   "templates [NAME...] [--all] [--list]",
		Short: "Copy built-in prompt templates to .drover/templates/ for editing",
		Long: `templates copies built-in prompts to .drover/templates/NAME.md for you to
edit, keeping any file already there. With no NAME it copies the two a
project usually rewords, loop (the queue's prompt for each task) and review
(its review prompt); name others to copy them (drover templates loop
start), or pass --all for every one. --list lists every template's name,
marking the ones the project overrides.

drover uses a file in that directory instead of the built-in one from the
next hook on; placeholders such as {{next_task}} and {{iteration}} are
filled in. Copy only what you mean to change: a copied prompt stays as it
is when drover's own prompt is improved. An empty file is ignored (with a
warning) in favour of the built-in. With --args - the names and flags are
read from stdin, split as a shell would (nothing expanded): that is how the
/drover:templates slash command passes what was typed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if argsFrom == "-" {
				var err error
				if args, err = a.argsFromStdin(cmd, args); err != nil {
					return err
				}
			}
			p, err := a.paths(g)
			if err != nil {
				return err
			}
			if list {
				if all || len(args) > 0 {
					return errors.New("templates: --list takes no NAME and no --all")
				}
				return a.listTemplates(p.TemplatesDir)
			}
			names := make([]string, len(args))
			for i, arg := range args {
				names[i] = strings.TrimSuffix(arg, ".md")
			}
			switch {
			case all && len(names) > 0:
				return errors.New("templates: give NAMEs or --all, not both")
			case all:
				names = templates.Names()
			case len(names) == 0:
				names = templates.SeedNames()
			}
			if err := templates.CheckNames(names); err != nil {
				return fmt.Errorf("templates: %w\n(drover templates --list lists the %d templates)", err, len(templates.Names()))
			}
			written, skipped, err := templates.WriteDefaults(p.TemplatesDir, names)
			if err != nil {
				return err
			}
			// One line each, not one line a file: with --all there are
			// hundreds, and a slash command's output that long is cut
			// before its last line.
			if len(written) > 0 {
				fmt.Fprintf(a.stdout, "[drover] Wrote %d template(s) into %s: %s\n", len(written), p.TemplatesDir, baseNames(written))
			}
			if len(skipped) > 0 {
				fmt.Fprintf(a.stdout, "[drover] Kept your %d file(s) in %s: %s\n", len(skipped), p.TemplatesDir, baseNames(skipped))
			}
			fmt.Fprintf(a.stdout, "[drover] Edit the files in %s; drover uses them from the next hook on. Placeholders such as {{next_task}} and {{iteration}} are filled in.\n", p.TemplatesDir)
			if !all && len(args) == 0 {
				fmt.Fprintf(a.stdout, "[drover] Only these are copied: a copied prompt misses drover's later fixes. drover templates NAME... copies others (drover templates --list lists the %d), --all every one.\n", len(templates.Names()))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "copy every built-in template")
	cmd.Flags().BoolVar(&list, "list", false, "list the templates' names, marking the ones the project overrides")
	cmd.Flags().StringVar(&argsFrom, "args", "", "read the names and flags from stdin (-)")
	return cmd
}

// listTemplates prints every template name, one a line, with the path of
// the project's override where it has one.
func (a *app) listTemplates(dir string) error {
	for _, name := range templates.Names() {
		file := filepath.Join(dir, name+".md")
		if _, err := os.Stat(file); err == nil {
			fmt.Fprintf(a.stdout, "%s\t(yours: %s)\n", name, file)
			continue
		}
		fmt.Fprintln(a.stdout, name)
	}
	return nil
}

// baseNames lists the file names of paths, comma-separated.
func baseNames(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return strings.Join(names, ", ")
}
