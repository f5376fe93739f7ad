package actors

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/project"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/queue"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// Store is what the session actor needs of the store.
type Store interface {
	Load(ctx context.Context, id string) (session.Record, store.Status, error)
	Save(ctx context.Context, rec session.Record) error
}

// Env is everything a session actor reads from the world. Every field is
// required except Now (time.Now) and Log (no logging).
type Env struct {
	Store Store
	// Root is the project root; task files live under
	// Root/.drover/sessions/<id>/.
	Root string
	// SessionsDir is Root/.drover/sessions.
	SessionsDir string
	// Config returns the current configuration (it changes on reload).
	Config func() config.Config
	// Templates loads the prompt templates (built-ins plus overrides).
	Templates func() (templates.Set, error)
	// Dirty reports uncommitted changes outside .drover/ in dir.
	Dirty func(ctx context.Context, dir string) (bool, []string, error)
	Now   func() time.Time
	Log   *zap.Logger
	// Reviewers caps reviewer processes across every session (nil: no cap).
	Reviewers *reviewer.Limiter
	// ChildTag is one more "KEY=VALUE" entry for the environment of every
	// process the sessions start (reviewers, check and metric commands),
	// for the supervisor's watchdog to end them when the supervisor dies
	// without doing so (empty: none).
	ChildTag string
	// Fault, when set, is called at the named points of a hook's handling
	// (FaultReceive, FaultCommitted, FaultEffect); the crash soak
	// (test/soak) sets it to kill the supervisor there. nil in production.
	Fault func(point string)
	// Events, when set, is handed the events of every commit once it
	// succeeded (internal/events); it must not block.
	Events func(ctx context.Context, evs ...events.Draft)
	// Killed, when set, is told of each process that the sessions' work
	// (a review, a check, metric commands, a checkpoint) killed for its
	// timeout, by that work's name; it must not block.
	Killed func(work string)
}

// The points at which Env.Fault is called.
const (
	// FaultReceive is a hook request received, before its decision.
	FaultReceive = "receive"
	// FaultCommitted is a decision taken and committed (not a replayed
	// one), before its answer.
	FaultCommitted = "commit"
	// FaultEffect is before each effect of a committed, answered decision.
	FaultEffect = "effect"
)

// fault calls e.Fault at point, if set.
func (e Env) fault(point string) {
	if e.Fault != nil {
		e.Fault(point)
	}
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// ioTimeout bounds the store and git calls made while handling one message.
const ioTimeout = 15 * time.Second

// sessionActor owns one session: its record is only ever changed here, one
// message at a time, and saved before the reply that depends on it.
type sessionActor struct {
	id  string
	env Env
	log *zap.Logger

	rec     session.Record
	found   bool
	loadErr error
	// notice is a warning for the user, shown once with the next hook
	// answer (a quarantined record).
	notice string
	// toldTemplates holds the template warnings (templates.Set.Warnings)
	// already shown with a hook answer, so each is said once per actor.
	toldTemplates map[string]bool
	// inflight is the sender of the message being handled, so a failure in
	// the middle of it can still be answered from Restarting.
	inflight *actor.PID
	idle     time.Duration
	lastMsg  any
	loop     loopRuntime
	plan     planRuntime
}

func newSessionActor(id string, env Env, idle time.Duration) actor.Actor {
	log := env.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &sessionActor{id: id, env: env, log: log.With(zap.String("session", id)), idle: idle}
}

// Receive implements actor.Actor.
func (a *sessionActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.load()
		if a.idle > 0 {
			ctx.SetReceiveTimeout(a.idle)
		}
		a.resume(ctx)
	case *actor.Restarting:
		if a.inflight != nil {
			ctx.Send(a.inflight, failedReply(ctx, a.lastMsg))
			a.inflight = nil
		}
		// The new instance knows nothing of a held Stop: it gets its
		// committed answer now.
		a.answerHeld(ctx)
	case *actor.ReceiveTimeout:
		if a.busy() {
			// Passivating would cut the background work short. A
			// timeout that fired is off: set it again, so that the
			// actor is passivated once the work is done.
			ctx.SetReceiveTimeout(a.idle)
			return
		}
		ctx.Send(ctx.Parent(), &passivate{sessionID: a.id})
	case *HandleHook:
		a.onHook(ctx, msg)
	case *AddTask:
		a.begin(ctx, msg)
		ctx.Respond(a.addTask(msg))
		a.inflight = nil
	case *Command:
		a.begin(ctx, msg)
		ctx.Respond(a.command(ctx, msg))
		a.inflight = nil
	case *WorkflowCommand:
		a.begin(ctx, msg)
		ctx.Respond(a.workflowCommand(ctx, msg))
		a.inflight = nil
	case *StatusQuery:
		ctx.Respond(a.status())
	case *ReleaseHold:
		if h := a.plan.held; h != nil && h.msg.RequestID == msg.RequestID {
			a.answerHeld(ctx)
		}
	case *holdExpired:
		a.holdEnded(ctx, msg.seq)
	default:
		a.receiveOther(ctx, msg)
	}
	// Whatever ended the review a Stop is held for (its answer, a
	// cancel, a command) answers that Stop.
	a.settleHeld(ctx)
}

// workflowCommand dispatches a loop or plan command.
func (a *sessionActor) workflowCommand(actx actor.Context, m *WorkflowCommand) *WorkflowResult {
	if a.loadErr != nil {
		return &WorkflowResult{Err: a.loadErr}
	}
	switch m.Workflow {
	case string(session.Loop):
		return a.loopCommand(actx, m)
	case string(session.Plan):
		return a.planCommand(actx, m)
	case api.NotesWorkflow:
		return a.notesCommand(m)
	}
	return &WorkflowResult{Err: unknownf("unknown workflow %q (loop, plan, notes)", m.Workflow)}
}

// receiveOther handles the messages of workflows that work in the
// background (reviews, checks): their results come back as messages.
func (a *sessionActor) receiveOther(actx actor.Context, msg any) {
	if a.planMessage(actx, msg) {
		return
	}
	a.loopMessage(actx, msg)
}

func (a *sessionActor) begin(ctx actor.Context, msg any) {
	a.inflight = ctx.Sender()
	a.lastMsg = msg
}

func failedReply(_ actor.Context, msg any) any {
	switch msg.(type) {
	case *HandleHook:
		return &HookResult{Err: ErrSessionFailed}
	case *AddTask:
		return &AddResult{Err: ErrSessionFailed}
	case *Command:
		return &CommandResult{Err: ErrSessionFailed}
	case *WorkflowCommand:
		return &WorkflowResult{Err: ErrSessionFailed}
	case *StatusQuery:
		return &StatusResult{Err: ErrSessionFailed}
	}
	return &HookResult{Err: ErrSessionFailed}
}

func (a *sessionActor) load() {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	rec, status, err := a.env.Store.Load(ctx, a.id)
	if err != nil {
		a.loadErr = fmt.Errorf("loading session %s: %w", a.id, err)
		a.log.Error("loading session", zap.Error(err))
		return
	}
	a.loadErr = nil
	a.rec = rec
	a.rec.ID = a.id
	a.found = status == store.Found
	if status == store.Quarantined {
		a.notice = a.text(templates.Quarantined, map[string]string{"session_id": a.id})
		a.log.Warn("session record quarantined; starting clean")
	}
}

// text renders template name for a message to the user. A project's broken
// override must not keep drover stop or a quarantine notice from being
// said, so when the overrides do not load the built-in is used.
func (a *sessionActor) text(name string, vars map[string]string) string {
	set, err := a.env.Templates()
	if err != nil {
		a.log.Warn("loading templates; using the built-in", zap.String("template", name), zap.Error(err))
		set = templates.Defaults()
	}
	out, err := set.Render(name, vars)
	if err != nil {
		// Only an unknown name fails, and the names are constants of the
		// templates package; say something rather than nothing.
		a.log.Error("rendering template", zap.String("template", name), zap.Error(err))
		return fmt.Sprintf("[drover] %s (session %s)", name, a.id)
	}
	return out
}

// templateNotice returns the warnings about the project's template
// overrides (an empty one, replaced by the built-in) that this actor has not
// shown yet, one line each, and logs them. Once each, not on every hook:
// the answers go on as usual with the built-in.
func (a *sessionActor) templateNotice() string {
	set, err := a.env.Templates()
	if err != nil {
		// Said where a template is needed.
		return ""
	}
	var lines []string
	for _, w := range set.Warnings() {
		if a.toldTemplates[w] {
			continue
		}
		if a.toldTemplates == nil {
			a.toldTemplates = make(map[string]bool)
		}
		a.toldTemplates[w] = true
		a.log.Warn("template override refused", zap.String("warning", w))
		lines = append(lines, "[drover] "+w)
	}
	return strings.Join(lines, "\n")
}

func (a *sessionActor) sessionDir() string { return filepath.Join(a.env.SessionsDir, a.id) }

// facts gathers what the queue workflow decides on. The git check runs
// only when withGit and the decision needs it (queue.NeedsGit), in the
// work tree of cwd (see workTree).
func (a *sessionActor) facts(ctx context.Context, withGit bool, cwd string) (queue.Facts, error) {
	cfg := a.env.Config()
	dir := a.sessionDir()
	list, err := tasks.Scan(dir)
	if err != nil {
		return queue.Facts{}, fmt.Errorf("scanning tasks of session %s: %w", a.id, err)
	}
	f := queue.Facts{
		SessionID:      a.id,
		SessionDir:     dir,
		Pending:        list.Pending,
		Done:           list.Done,
		Stuck:          list.Stuck,
		MaxIterations:  cfg.Queue.MaxIterations,
		GitCommitCheck: cfg.Queue.GitCommitCheck,
	}
	if withGit && queue.NeedsGit(a.rec.Queue, cfg.Queue.GitCommitCheck) {
		dirty, files, err := a.env.Dirty(ctx, a.workTree(cwd))
		if err != nil {
			// Not a git repository, or git failing: the gate cannot be
			// checked, and a gate that cannot be checked must not wedge
			// the agent.
			a.log.Warn("git status failed; commit gate skipped", zap.Error(err))
		}
		f.Dirty, f.DirtyFiles = dirty, files
	}
	return f, nil
}

// workTree is the work tree the commit gate checks for a hook whose input
// names cwd: the top of cwd's work tree when it belongs to this project (a
// linked worktree shares the main tree's supervisor, but its changes are
// its own), else the project root. A cwd of another repository, or one that
// no longer exists, must not move the gate out of the project.
func (a *sessionActor) workTree(cwd string) string {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return a.env.Root
	}
	top, root, err := project.WorkTree(cwd)
	if err != nil || root != filepath.Clean(a.env.Root) {
		return a.env.Root
	}
	return top
}

// decide applies the session's workflow to one hook event, and then what
// every workflow shares (the notes and the context snapshot of a
// compaction). changed reports whether the record must be saved before
// answering.
func (a *sessionActor) decide(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	d, changed, err := a.decideWorkflow(actx, ctx, m)
	if err != nil {
		return d, changed, err
	}
	d, err = a.withNotes(d, m)
	return d, changed, err
}

// decideWorkflow applies the session's workflow to one hook event.
func (a *sessionActor) decideWorkflow(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	d := decision{rec: a.rec}
	switch a.rec.Workflow {
	case session.Loop:
		return a.decideLoop(ctx, m)
	case session.Plan:
		return a.decidePlan(actx, ctx, m)
	}
	if !a.rec.Active() {
		// Unknown, never-started or finished sessions are never blocked.
		return d, false, nil
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		return d, false, fmt.Errorf("loading templates: %w", err)
	}
	switch m.Event {
	case hook.Stop:
		f, err := a.facts(ctx, true, m.Input.Cwd)
		if err != nil {
			return d, false, err
		}
		next, out, err := queue.Stop(a.rec.Queue, f, tmpl)
		if err != nil {
			return d, false, err
		}
		d.rec.Queue = next
		d.Output = out
		return d, true, nil
	case hook.UserPromptSubmit:
		f, err := a.facts(ctx, false, "")
		if err != nil {
			return d, false, err
		}
		out, err := queue.UserPromptSubmit(a.rec.Queue, f, tmpl)
		d.Output = out
		return d, false, err
	case hook.PreCompact:
		f, err := a.facts(ctx, false, "")
		if err != nil {
			return d, false, err
		}
		d.Text, err = queue.CompactContext(a.rec.Queue, f, tmpl)
		return d, false, err
	case hook.SessionStart:
		if !m.Input.Resumed() {
			return d, false, nil
		}
		f, err := a.facts(ctx, false, "")
		if err != nil {
			return d, false, err
		}
		text, err := queue.CompactContext(a.rec.Queue, f, tmpl)
		if err != nil || text == "" {
			return d, false, err
		}
		d.Output = hook.Context(hook.SessionStart, text)
		return d, false, nil
	}
	// SubagentStop and SessionEnd never block: the review subagent must be
	// able to finish, and the session may be resumed later.
	return d, false, nil
}

func (a *sessionActor) addTask(m *AddTask) *AddResult {
	if a.loadErr != nil {
		return &AddResult{Err: a.loadErr}
	}
	if _, err := tasks.EnsureDroverDir(a.env.Root); err != nil {
		return &AddResult{Err: err}
	}
	path, err := tasks.Add(a.sessionDir(), m.Prompt, a.env.now())
	if err != nil {
		return &AddResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	list, err := tasks.Scan(a.sessionDir())
	if err != nil {
		return &AddResult{Err: err}
	}
	if rec, changed := a.rec.TaskAdded(a.found, a.env.now()); changed {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		if err := a.commit(ctx, rec); err != nil {
			return &AddResult{Err: err}
		}
	}
	return &AddResult{Response: api.AddResponse{Path: path, Pending: len(list.Pending)}}
}

func (a *sessionActor) command(actx actor.Context, m *Command) *CommandResult {
	if a.loadErr != nil {
		return &CommandResult{Err: a.loadErr}
	}
	// drover stop ends whatever the session runs; the queue's start and
	// unstick must not silently take over a running loop or plan.
	if m.Verb == "stop" {
		switch a.rec.StopTarget() {
		case session.Plan:
			return a.planStopCommand(actx)
		case session.Loop:
			return a.loopStopCommand(actx)
		}
	} else if err := a.checkStart(session.Queue); err != nil {
		return &CommandResult{Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	rec := a.rec.Runs(session.Queue, a.env.now())
	var resp api.CommandResponse
	switch m.Verb {
	case "stop":
		rec.Queue = queue.StopCommand(rec.Queue)
		resp.Message = a.text(templates.Stopped, map[string]string{"session_id": a.id, "iteration": strconv.Itoa(rec.Queue.Iteration)})
	case "start", "unstick":
		if m.Verb == "unstick" {
			renamed, err := tasks.Unstick(a.sessionDir())
			if errors.Is(err, tasks.ErrNameTaken) || errors.Is(err, tasks.ErrNotPendingName) {
				// Two task files the user must sort out, not drover's
				// failure.
				return &CommandResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
			}
			if err != nil {
				return &CommandResult{Err: err}
			}
			resp.Renamed = renamed
		}
		f, err := a.facts(ctx, false, "")
		if err != nil {
			return &CommandResult{Err: err}
		}
		tmpl, err := a.env.Templates()
		if err != nil {
			return &CommandResult{Err: fmt.Errorf("loading templates: %w", err)}
		}
		next, err := queue.Start(rec.Queue, f, tmpl)
		if err != nil {
			return &CommandResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
		rec.Queue = next
		msg, err := queue.StartText(next, f, tmpl)
		if err != nil {
			return &CommandResult{Err: err}
		}
		resp.Message = msg
		resp.NextTask = f.Pending[0]
	default:
		return &CommandResult{Err: unknownf("unknown command %q", m.Verb)}
	}
	if err := a.commitEvent(ctx, rec); err != nil {
		return &CommandResult{Err: err}
	}
	resp.State, resp.Iteration = string(rec.Queue.State), rec.Queue.Iteration
	return &CommandResult{Response: resp}
}

// loopStopCommand is drover stop in a loop session: the loop's cancel,
// or, when the loop has already ended, a word that there is none.
func (a *sessionActor) loopStopCommand(actx actor.Context) *CommandResult {
	res := a.loopCommand(actx, &WorkflowCommand{Workflow: string(session.Loop), Verb: "cancel"})
	if res.Err != nil {
		if errors.Is(res.Err, loop.ErrRefused) {
			return &CommandResult{Response: api.CommandResponse{State: "off", Iteration: a.rec.Loop.Iteration, Message: a.text(templates.LoopNone, map[string]string{"session_id": a.id})}}
		}
		return &CommandResult{Err: res.Err}
	}
	return &CommandResult{Response: api.CommandResponse{State: "off", Iteration: a.rec.Loop.Iteration, Message: a.text(templates.LoopStopped, map[string]string{"session_id": a.id, "iteration": strconv.Itoa(a.rec.Loop.Iteration)})}}
}

// checkStart refuses, as a bad request, to start workflow w in a session
// that another workflow holds (session.Record.CheckStart).
func (a *sessionActor) checkStart(w session.Workflow) error {
	tmpl, err := a.env.Templates()
	if err != nil {
		return fmt.Errorf("loading templates: %w", err)
	}
	rec := a.rec
	rec.ID = a.id
	if err := rec.CheckStart(tmpl, w); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}

func joinLines(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
