package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/router"
)

// checkRun is the project's check command running for one iteration.
type checkRun struct {
	iteration int
	done      bool
	passed    bool
	summary   string
	cancel    context.CancelFunc
}

// checksDone is sent to the session actor when its check command ends.
type checksDone struct {
	iteration int
	passed    bool
	summary   string
}

func (a *sessionActor) trackerPath() string { return tracker.Path(a.sessionDir()) }

func (a *sessionActor) loopStatus(msg string) api.LoopStatus {
	s := a.rec.Loop
	return api.LoopStatus{
		SessionID: a.id, Active: s.Active, Iteration: s.Iteration, MaxIterations: s.MaxIterations,
		MaxMinutes: s.MaxMinutes, MaxUSD: s.MaxUSD, CheckpointEvery: s.CheckpointEvery, RequireChecks: s.RequireChecks,
		CompletionPromise: s.CompletionPromise, Prompt: s.Prompt, StartedAt: s.StartedAt,
		Status: s.LastStatus, StatusReason: s.LastStatusReason, Role: s.LastRole, Outcome: string(s.Outcome),
		EndReason: loop.EndReason(s), StuckIterations: s.StuckIterations,
		CostUSD: s.CostUSD, Tracker: a.trackerPath(), Reflections: len(a.rec.LoopReflections), Message: msg,
	}
}

func (a *sessionActor) loopCommand(_ actor.Context, m *WorkflowCommand) *WorkflowResult {
	reply := func(st api.LoopStatus) *WorkflowResult {
		b, err := json.Marshal(st)
		return &WorkflowResult{Response: b, Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	tmpl, err := a.env.Templates()
	if err != nil {
		return &WorkflowResult{Err: fmt.Errorf("loading templates: %w", err)}
	}
	switch m.Verb {
	case "status":
		return reply(a.loopStatus(""))
	case "cancel":
		if a.rec.Workflow != session.Loop || !a.rec.Loop.Active {
			return &WorkflowResult{Err: fmt.Errorf("%w: no loop is running in session %s", ErrBadRequest, a.id)}
		}
		rec := a.rec
		rec.Loop = loop.Cancel(rec.Loop)
		a.stopChecks()
		a.stopCheckpoint()
		a.stopMetrics()
		if err := a.commitEvent(ctx, rec); err != nil {
			return &WorkflowResult{Err: err}
		}
		a.writeTracker(rec.Loop)
		return reply(a.loopStatus(fmt.Sprintf("[drover] Cancelled the loop of session %s at iteration %d. You may stop now.", a.id, rec.Loop.Iteration)))
	case "start":
		var args api.LoopStartArgs
		if len(m.Args) > 0 {
			if err := json.Unmarshal(m.Args, &args); err != nil {
				return &WorkflowResult{Err: fmt.Errorf("%w: decoding loop start arguments: %w", ErrBadRequest, err)}
			}
		}
		if a.rec.Workflow == session.Queue && a.rec.Queue.Active() {
			return &WorkflowResult{Err: fmt.Errorf("%w: session %s has an active queue; run drover stop first", ErrBadRequest, a.id)}
		}
		if a.rec.Workflow == session.Plan && a.rec.Plan.Active() {
			return &WorkflowResult{Err: fmt.Errorf("%w: session %s is working on plan %s; a loop needs its own session", ErrBadRequest, a.id, a.rec.Plan.PlanID)}
		}
		if args.MaxIterations == 0 {
			args.MaxIterations = a.env.Config().Loop.MaxIterations
		}
		// Without a check command no completion could ever be accepted: the
		// loop would refuse every promise until a budget ran out.
		if args.RequireChecks && strings.TrimSpace(a.env.Config().Loop.CheckCommand) == "" {
			return &WorkflowResult{Err: fmt.Errorf("%w: --require-checks needs the project's check command, and loop.check_command is not set (set it in .drover/config.yaml)", ErrBadRequest)}
		}
		st, err := loop.Start(loop.StartOptions{
			Prompt: args.Prompt, MaxIterations: args.MaxIterations, CompletionPromise: args.CompletionPromise,
			MaxMinutes: args.MaxMinutes, MaxUSD: args.MaxUSD, CheckpointEvery: args.CheckpointEvery, RequireChecks: args.RequireChecks,
		}, a.env.now())
		if err != nil {
			return &WorkflowResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
		rec := a.rec
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = a.env.now()
		}
		rec.Workflow, rec.Loop = session.Loop, st
		rec.LoopHistory, rec.LoopReflections, rec.LoopCheckpoint, rec.LoopFindings = nil, nil, "", ""
		f := a.loopFacts()
		body, err := loop.TrackerBody(st, f, tmpl)
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		if err := os.MkdirAll(a.sessionDir(), 0o755); err != nil {
			return &WorkflowResult{Err: fmt.Errorf("creating session folder: %w", err)}
		}
		if err := tracker.Write(a.trackerPath(), loop.TrackerView(st, body)); err != nil {
			return &WorkflowResult{Err: err}
		}
		a.setAsideReflections()
		text, err := loop.StartText(st, f, tmpl)
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		// The new loop replaces any loop still running: what that one
		// started goes, or its results would land in this one.
		a.stopChecks()
		a.stopCheckpoint()
		a.stopMetrics()
		if err := a.commitEvent(ctx, rec); err != nil {
			return &WorkflowResult{Err: err}
		}
		return reply(a.loopStatus(text))
	}
	return &WorkflowResult{Err: fmt.Errorf("%w: unknown loop command %q (start, cancel, status)", ErrBadRequest, m.Verb)}
}

// loopFacts are the facts every loop decision starts from.
func (a *sessionActor) loopFacts() loop.Facts {
	cfg := a.env.Config()
	return loop.Facts{
		SessionID: a.id, TrackerPath: a.trackerPath(), Now: a.env.now(),
		EndOnConverged: cfg.Loop.EndOnConverged, StuckLimit: cfg.Loop.StuckLimit,
		ConvergedStreak: cfg.Loop.ConvergedStreak,
	}
}

// readTracker reads the loop's tracker; a malformed one is quarantined
// and reported, never a reason to block.
func (a *sessionActor) readTracker() (tracker.Tracker, error) {
	tr, err := tracker.Read(a.trackerPath())
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return tr, nil
	}
	if errors.Is(err, tracker.ErrMalformed) {
		moved, qerr := tracker.Quarantine(a.trackerPath(), a.env.now())
		a.log.Warn("loop tracker quarantined", zap.String("moved_to", moved), zap.Error(err))
		if qerr != nil {
			return tracker.Tracker{}, fmt.Errorf("%w (and setting it aside failed: %v)", err, qerr)
		}
		if a.rewriteWithNotes(moved) {
			return tracker.Tracker{}, fmt.Errorf("%w; it was set aside as %s and rewritten with the body's notes kept", err, filepath.Base(moved))
		}
		return tracker.Tracker{}, fmt.Errorf("%w; it was set aside as %s and rewritten", err, filepath.Base(moved))
	}
	return tracker.Tracker{}, err
}

// rewriteWithNotes writes a fresh tracker from the loop's state with the
// body of the quarantined file at moved, when its front matter was
// delimited: the agent's notes survive a typo in drover's fields. It
// reports whether it did.
func (a *sessionActor) rewriteWithNotes(moved string) bool {
	f, err := os.Open(moved)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, tracker.MaxBytes+1))
	if err != nil {
		return false
	}
	body, ok := tracker.Body(data)
	if !ok || strings.TrimSpace(body) == "" {
		return false
	}
	if err := tracker.Write(a.trackerPath(), loop.TrackerView(a.rec.Loop, body)); err != nil {
		a.log.Warn("rewriting the quarantined loop tracker", zap.Error(err))
		return false
	}
	return true
}

// writeTracker mirrors s into the tracker's front matter, keeping the body
// the agent wrote (or a fresh one).
func (a *sessionActor) writeTracker(s loop.State) {
	tr, err := tracker.Read(a.trackerPath())
	body := tr.Body
	if err != nil || body == "" {
		if tmpl, terr := a.env.Templates(); terr == nil {
			body, _ = loop.TrackerBody(s, a.loopFacts(), tmpl)
		}
	}
	if err := tracker.Write(a.trackerPath(), loop.TrackerView(s, body)); err != nil {
		a.log.Warn("writing loop tracker", zap.Error(err))
	}
}

// thresholds are the convergence thresholds of the configuration in force.
func (a *sessionActor) thresholds() convergence.Thresholds {
	return a.env.Config().Thresholds()
}

// iterationFromTranscript summarizes the iteration that just ended. A
// missing or unreadable transcript is no signal, not an error.
func (a *sessionActor) iterationFromTranscript(ctx context.Context, path string) (transcript.Iteration, bool) {
	if path == "" {
		return transcript.Iteration{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return transcript.Iteration{}, false
	}
	defer f.Close()
	it, err := transcript.Summarize(ctx, f, transcript.SinceIteration)
	if err != nil {
		a.log.Warn("reading transcript", zap.String("path", path), zap.Error(err))
		return transcript.Iteration{}, false
	}
	return it, true
}

// transcriptWait bounds how long a Stop waits for the CLI to finish
// writing the transcript: it writes asynchronously, and at Stop time the
// iteration's last tool results can still be missing, or, at the first
// Stop of a new session, the whole file.
const transcriptWait = 1500 * time.Millisecond

// caughtUpIteration summarizes the iteration that just ended, re-reading
// the transcript (for at most transcriptWait) until its last assistant
// text is the payload's final message. Judged from a transcript that is
// still being written, a failing test run can be missed and the iteration
// routed to the wrong role; judged from none at all, the iteration is
// unmeasured and its spend not counted. A transcript that exists but
// cannot be read is not waited for: waiting does not mend it.
func (a *sessionActor) caughtUpIteration(ctx context.Context, path string, last *string) (transcript.Iteration, bool) {
	it, ok := a.iterationFromTranscript(ctx, path)
	if path == "" || last == nil || strings.TrimSpace(*last) == "" {
		return it, ok
	}
	// Compare a normalized prefix: the summary clips long texts.
	norm := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > 2000 {
			s = s[:2000]
		}
		return s
	}
	want := norm(*last)
	deadline := time.Now().Add(transcriptWait)
	for time.Now().Before(deadline) {
		if ok && norm(it.LastAssistantText) == want {
			break
		}
		if !ok && !notCreated(path) {
			break
		}
		select {
		case <-ctx.Done():
			return it, ok
		case <-time.After(25 * time.Millisecond):
		}
		if next, nok := a.iterationFromTranscript(ctx, path); nok {
			it, ok = next, true
		}
	}
	return it, ok
}

// notCreated reports whether the file at path does not exist (yet).
func notCreated(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

func (a *sessionActor) decideLoop(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	d := decision{rec: a.rec}
	s := a.rec.Loop
	if !s.Active {
		return d, false, nil
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		return d, false, fmt.Errorf("loading templates: %w", err)
	}
	switch m.Event {
	case hook.SessionStart, hook.PreCompact:
		if m.Event == hook.SessionStart && m.Input.Source != "compact" && m.Input.Source != "resume" {
			return d, false, nil
		}
		f := a.loopFacts()
		if n := len(a.rec.LoopReflections); n > 0 {
			f.Reflection = reflectionLine(a.rec.LoopReflections[n-1])
		}
		f.OpenFindings = a.rec.LoopFindings
		text, err := loop.ContextSnapshot(s, f, tmpl)
		if err != nil || text == "" {
			return d, false, err
		}
		if m.Event == hook.PreCompact {
			d.Text = text
		} else {
			d.Output = hook.Context(hook.SessionStart, text)
		}
		return d, false, nil
	case hook.Stop:
	default:
		return d, false, nil
	}

	f := a.loopFacts()
	f.LastAssistantMessage = m.Input.LastAssistantMessage
	it, haveTranscript := a.caughtUpIteration(ctx, m.Input.TranscriptPath, m.Input.LastAssistantMessage)
	if haveTranscript {
		f.TranscriptLastText = it.LastAssistantText
		// Caught up only when the turn ended on text: a transcript whose
		// last event is a tool call or result is still being written, and
		// its last text is not the final message.
		f.TranscriptCaughtUp = it.EndsOnText
		f.CostUSD = a.loopCost(ctx, m.Input.TranscriptPath, s.StartedAt)
	}
	tr, terr := a.readTracker()
	f.TrackerErr = terr
	f.TrackerComplete = terr == nil && tr.Complete()

	// The promise is necessary, not sufficient, when checks are asked for:
	// run them (in the background, never in this mailbox) and answer with
	// their result at the next stop.
	cfg := a.env.Config()
	f.ChecksConfigured = cfg.Loop.CheckCommand != ""
	claimed := f.TrackerComplete || (f.LastAssistantMessage != nil && loop.PromiseKept(*f.LastAssistantMessage, s.CompletionPromise))
	if s.RequireChecks && claimed && f.ChecksConfigured {
		cr := a.loop.checks
		switch {
		case cr == nil || cr.iteration != s.Iteration:
			a.startChecks(actx, s.Iteration, cfg.Loop.CheckCommand, cfg.Loop.CheckTimeout)
			d.Output = hook.Block(fmt.Sprintf("[drover] Completion claimed; running the project's checks (%s) before accepting it. End your turn again (stop) to get their result.", cfg.Loop.CheckCommand))
			return d, false, nil
		case !cr.done:
			d.Output = hook.Block(fmt.Sprintf("[drover] The checks (%s) are still running. End your turn again (stop) in a moment to get their result.", cfg.Loop.CheckCommand))
			return d, false, nil
		default:
			passed := cr.passed
			f.ChecksPassed, f.ChecksSummary = &passed, cr.summary
		}
	}

	// Metrics, reflection, convergence and routing of the iteration that
	// just ended.
	metrics := convergence.UnknownMetrics(s.Iteration)
	if haveTranscript {
		metrics = convergence.MetricsFrom(it)
		metrics.Iteration = s.Iteration
	}
	history := appendCapped(a.rec.LoopHistory, metrics, session.MaxHistory)
	th := a.thresholds()
	reflections := a.rec.LoopReflections
	if haveTranscript {
		if r, ok := convergence.Reflect(it, metrics, reflections, th); ok {
			r.Iteration = s.Iteration
			a.writeReflection(r)
			reflections = appendCapped(reflections, r, session.MaxHistory)
		}
	}
	status, reason := convergence.Classify(history, convergence.Budget{
		MaxIterations: s.MaxIterations, MaxMinutes: float64(s.MaxMinutes), MaxUSD: s.MaxUSD,
		Iteration: s.Iteration, Elapsed: a.env.now().Sub(s.StartedAt), CostUSD: max(s.CostUSD, f.CostUSD),
	}, th)
	f.Status, f.StatusReason = string(status), reason
	rules, err := cfg.LoopRules()
	if err != nil {
		// Validate refused it at load; keep the loop going on the defaults.
		rules = router.DefaultRules()
	}
	role, _ := router.Route(rules, router.Input{Phase: router.PhaseIterating, LastOutcome: string(routedOutcome(metrics, a.rec.LoopHistory)), Status: string(status)})
	if role == "" {
		role = router.Developer
	}
	f.Role, f.AgentName = string(role), "drover:"+string(role)
	if f.RolePrompt, err = tmpl.Render(loop.RoleTemplate(string(role)), map[string]string{"agent_name": f.AgentName}); err != nil {
		// A user-defined role without a template: the role name alone.
		f.RolePrompt = ""
	}
	if n := len(reflections); n > 0 {
		f.Reflection = reflectionLine(reflections[n-1])
	}

	f.CheckpointDue = a.loop.checkpoint != nil
	f.CheckpointConsensus = a.rec.LoopCheckpoint
	next, out, err := loop.Stop(s, f, tmpl)
	if err != nil {
		return d, false, err
	}
	if next.Active && next.Iteration > s.Iteration {
		// The consensus went into this block reason: deliver it once.
		d.rec.LoopCheckpoint = ""
	}
	if next.Active && loop.CheckpointDue(next) && a.loop.checkpoint == nil {
		if err := a.startCheckpoint(actx, next, string(status), reason); err != nil {
			a.log.Warn("loop checkpoint not started", zap.Error(err))
		}
	}
	d.rec.Loop = next
	d.rec.LoopHistory = history
	d.rec.LoopReflections = reflections
	d.Output = out
	if !next.Active {
		a.stopChecks()
		a.stopCheckpoint()
		a.stopMetrics()
	} else if cmds := cfg.MetricCommandList(); len(cmds) > 0 {
		a.startMetrics(actx, s.Iteration, cmds, cfg.Loop.CheckTimeout)
	}
	a.writeTracker(next)
	a.log.Info("loop decision", zap.Int("iteration", next.Iteration), zap.String("status", string(status)), zap.String("role", string(role)), zap.Bool("active", next.Active))
	return d, true, nil
}

// routedOutcome is the outcome the router sees for the iteration that just
// ended: its own, or, when its transcript shows no test or build run, what
// the project's metric commands measured after the previous iteration
// (the state of the code this iteration started from; those results come
// back one stop late, since they run in the background).
func routedOutcome(m convergence.Metrics, history []convergence.Metrics) convergence.Outcome {
	if m.LastOutcome != convergence.OutcomeNone && m.LastOutcome != "" {
		return m.LastOutcome
	}
	if n := len(history); n > 0 {
		if prev := history[n-1].CommandOutcome; prev != "" && prev != convergence.OutcomeNone {
			return prev
		}
	}
	return m.LastOutcome
}

// loopCost estimates what the loop has spent since it started, from the
// usage the transcript reports for each assistant message. An unreadable
// transcript counts as nothing spent: it is no reason to end a loop.
func (a *sessionActor) loopCost(ctx context.Context, path string, since time.Time) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	prices := convergence.DefaultPrices()
	var total float64
	err = transcript.ScanUsage(ctx, f, func(u transcript.Usage) error {
		if !u.Timestamp.Before(since) {
			total += prices.Cost(u)
		}
		return nil
	})
	if err != nil {
		a.log.Warn("reading transcript usage", zap.String("path", path), zap.Error(err))
	}
	return total
}

func reflectionLine(r convergence.Reflection) string {
	line := fmt.Sprintf("Iteration %d: %s", r.Iteration, r.Approach)
	if len(r.Failures) > 0 {
		line += " Failures: " + r.Failures[0]
	}
	if r.Thrashing {
		line += " (the same failure keeps coming back)"
	}
	return line
}

func appendCapped[T any](s []T, v T, n int) []T {
	out := append(append([]T(nil), s...), v)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// writeReflection writes reflections/iteration-N.json in the session's
// folder.
// reflectionsDir is where the session's loop writes its reflections.
func (a *sessionActor) reflectionsDir() string { return filepath.Join(a.sessionDir(), "reflections") }

// setAsideReflections renames the reflections of the session's earlier
// loop to reflections.<time>, so that a new loop's iteration-N.json files
// are not mixed with the old loop's higher-numbered ones. Best effort: a
// rename that fails is logged, and the new loop goes on.
func (a *sessionActor) setAsideReflections() {
	dir := a.reflectionsDir()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return
	}
	to := dir + "." + a.env.now().UTC().Format(tracker.QuarantineLayout)
	if _, err := os.Lstat(to); err == nil {
		to += "-" + strconv.FormatInt(a.env.now().UnixNano(), 10)
	}
	if err := os.Rename(dir, to); err != nil {
		a.log.Warn("setting aside the earlier loop's reflections", zap.Error(err))
	}
}

func (a *sessionActor) writeReflection(r convergence.Reflection) {
	data, err := r.JSON()
	if err != nil {
		a.log.Warn("encoding reflection", zap.Error(err))
		return
	}
	dir := a.reflectionsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.log.Warn("creating reflections folder", zap.Error(err))
		return
	}
	path := filepath.Join(dir, "iteration-"+strconv.Itoa(r.Iteration)+".json")
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, data, 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		a.log.Warn("writing reflection", zap.String("path", path), zap.Error(err))
	}
}

// loopRuntime is the loop workflow's in-memory state of one session actor.
type loopRuntime struct {
	checks     *checkRun
	checkpoint *checkpointRun
	metrics    *metricsRun
}

// metricsRun is the project's metric commands running after one iteration.
type metricsRun struct {
	iteration int
	cancel    context.CancelFunc
}

// metricsDone is sent to the session actor when all its metric commands
// have ended.
type metricsDone struct {
	iteration int
	results   []convergence.CommandResult
}

// startMetrics runs the metric commands in parallel, each in its own
// process group with its own timeout, outside the mailbox; their results
// come back together as metricsDone.
func (a *sessionActor) startMetrics(actx actor.Context, iteration int, commands []string, timeout time.Duration) {
	a.stopMetrics()
	parent, cancel := context.WithCancel(context.Background())
	a.loop.metrics = &metricsRun{iteration: iteration, cancel: cancel}
	root, tag, self, system := a.env.Root, a.env.ChildTag, actx.Self(), actx.ActorSystem()
	go func() {
		defer cancel()
		results := make([]convergence.CommandResult, len(commands))
		var wg sync.WaitGroup
		for i, command := range commands {
			wg.Go(func() {
				results[i] = runMetricCommand(parent, root, command, tag, timeout)
			})
		}
		wg.Wait()
		if parent.Err() != nil {
			return // stopped: a newer run or the end of the loop
		}
		system.Root.Send(self, &metricsDone{iteration: iteration, results: results})
	}()
}

// runMetricCommand runs one metric command with sh -c in root, killing its
// process group past timeout.
func runMetricCommand(parent context.Context, root, command, childTag string, timeout time.Duration) convergence.CommandResult {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	out, err := runShell(ctx, root, command, childTag)
	output := string(out)
	if len(output) > maxMetricOutput {
		output = output[len(output)-maxMetricOutput:]
	}
	return convergence.CommandResult{Command: command, Output: output, Failed: err != nil}
}

// runShell runs command with sh -c in root, in a process group of its own
// that is killed whole when ctx ends, and returns its combined output.
// childTag, when set, goes in its environment, for the supervisor's
// watchdog: nothing else ends the group when the supervisor dies.
func runShell(ctx context.Context, root, command, childTag string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = root
	if childTag != "" {
		cmd.Env = append(cmd.Environ(), childTag)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// maxMetricOutput caps what a metric command's result keeps of its output:
// the summaries that matter come at the end.
const maxMetricOutput = 256 << 10

func (a *sessionActor) stopMetrics() {
	if a.loop.metrics != nil && a.loop.metrics.cancel != nil {
		a.loop.metrics.cancel()
	}
	a.loop.metrics = nil
}

// metricsFinished merges the metric commands' results into the history
// entry of their iteration and saves it, for the next stop to use.
func (a *sessionActor) metricsFinished(m *metricsDone) {
	if mr := a.loop.metrics; mr == nil || mr.iteration != m.iteration {
		return
	}
	a.loop.metrics = nil
	if a.rec.Workflow != session.Loop || !a.rec.Loop.Active {
		return
	}
	rec := a.rec
	rec.LoopHistory = append([]convergence.Metrics(nil), rec.LoopHistory...)
	for i := len(rec.LoopHistory) - 1; i >= 0; i-- {
		if rec.LoopHistory[i].Iteration == m.iteration {
			rec.LoopHistory[i] = convergence.MergeCommands(rec.LoopHistory[i], m.results)
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
			defer cancel()
			if err := a.commitEvent(ctx, rec); err != nil {
				a.log.Warn("saving metric command results", zap.Error(err))
			}
			return
		}
	}
}

// maxCheckOutput caps what a check run's summary keeps of its output.
const maxCheckOutput = 4000

// startChecks runs the check command in its own process group, outside the
// mailbox; its result comes back as checksDone.
func (a *sessionActor) startChecks(actx actor.Context, iteration int, command string, timeout time.Duration) {
	a.stopChecks()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	a.loop.checks = &checkRun{iteration: iteration, cancel: cancel}
	root, tag, self, system := a.env.Root, a.env.ChildTag, actx.Self(), actx.ActorSystem()
	go func() {
		defer cancel()
		out, err := runShell(ctx, root, command, tag)
		summary := string(out)
		if len(summary) > maxCheckOutput {
			summary = "..." + summary[len(summary)-maxCheckOutput:]
		}
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			summary = fmt.Sprintf("%s timed out after %v\n%s", command, timeout, summary)
		case err != nil:
			summary = fmt.Sprintf("%s failed: %v\n%s", command, err, summary)
		default:
			summary = fmt.Sprintf("%s passed\n%s", command, summary)
		}
		system.Root.Send(self, &checksDone{iteration: iteration, passed: err == nil, summary: summary})
	}()
}

func (a *sessionActor) stopChecks() {
	if a.loop.checks != nil && a.loop.checks.cancel != nil {
		a.loop.checks.cancel()
	}
	a.loop.checks = nil
}

// loopMessage handles the loop's background results; it reports whether
// msg was one.
func (a *sessionActor) loopMessage(actx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case *checksDone:
		if cr := a.loop.checks; cr != nil && cr.iteration == m.iteration {
			cr.done, cr.passed, cr.summary = true, m.passed, m.summary
		}
		return true
	case *checkpointDone:
		a.checkpointFinished(actx, m)
		return true
	case *metricsDone:
		a.metricsFinished(m)
		return true
	case *actor.Stopping:
		a.stopChecks()
		a.stopCheckpoint()
		a.stopMetrics()
		return true
	}
	return false
}
