package actors

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/templates"
)

// The session actor's engine: every event is handled as gather facts, call
// the workflow's pure decision, commit the record it returns (the one save
// site below), answer, and only then execute the decision's effects, which
// are data (a loop.Effect or a plan.Effect). An effect never runs before
// its commit, so a crash can lose an effect but never do one for a state
// that was not saved; and because effects are idempotent, resume re-derives
// the lost ones from the stored record when the actor starts again.

// effect is one thing a decision asks for once its record is committed: a
// loop.Effect or a plan.Effect, or one of the session's own (writeSnapshot
// at a compaction, appendMetrics after a loop's iteration; see
// sessionEffect).
type effect any

// onHook is the engine's step for a hook event: decide and commit, answer,
// then execute the decision's effects.
func (a *sessionActor) onHook(actx actor.Context, m *HandleHook) {
	a.begin(actx, m)
	a.env.fault(FaultReceive)
	res, effects := a.handleHook(actx, m)
	if !res.Replayed && res.Err == nil {
		a.env.fault(FaultCommitted)
	}
	if d := a.holdFor(actx, m, res); d > 0 {
		// A Stop that waits for a plan review: its answer is kept for
		// the review's (plan_hold.go), which the effects may start.
		a.inflight = nil
		a.holdStop(actx, m, res, d)
		a.execute(actx, effects)
		return
	}
	actx.Respond(res)
	a.inflight = nil
	a.execute(actx, effects)
}

// handleHook decides one hook event and commits the decision; it returns
// the answer and the effects to execute once the answer is sent (none when
// the commit failed).
func (a *sessionActor) handleHook(actx actor.Context, m *HandleHook) (*HookResult, []effect) {
	if a.loadErr != nil {
		// The store could not be read (not a decode problem: that is
		// quarantined). Try again on this request.
		a.load()
		if a.loadErr != nil {
			return &HookResult{Err: a.loadErr}, nil
		}
		a.resume(actx)
	}
	if out, ok := a.rec.Lookup(m.RequestID, m.Event); ok {
		return &HookResult{Output: out, Replayed: true}, nil
	}
	return a.decideHook(actx, m, "")
}

// decideHook decides hook event m and commits the decision, as
// handleHook does past the replay of a recorded answer; warn, when set,
// goes first in the answer's systemMessage. A decision taken again for
// the same request is recorded over the first.
func (a *sessionActor) decideHook(actx actor.Context, m *HandleHook, warn string) (*HookResult, []effect) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()

	if m.Event == hook.Stop && m.Input.ReentryUntrusted {
		// The CLI's stop_hook_active cannot be trusted: the session's own
		// count of continuations says whether this Stop is one.
		in := *m
		in.Input.StopHookActive = a.rec.Continuations > 0
		m = &in
	}
	if m.Event == hook.Stop && m.Input.LastAssistantMessage == nil && m.Input.TranscriptFormat == transcript.FormatCodex && m.Input.TranscriptPath != "" {
		// Codex's Stop may give last_assistant_message null: the
		// workflows read the message from its rollout instead, here
		// rather than in the hook client, which must stay fast.
		if msg, ok := a.codexLastMessage(ctx, m.Input.TranscriptPath); ok {
			in := *m
			in.Input.LastAssistantMessage = &msg
			m = &in
		}
	}
	var full *string
	if m.Event == hook.Stop && m.Input.CumulativeMessage && m.Input.LastAssistantMessage != nil {
		// The message repeats what the agent said before the last block:
		// the workflows read only its new part, the agent's last answer.
		full = m.Input.LastAssistantMessage
		in := *m
		part := a.rec.NewPart(*full)
		in.Input.LastAssistantMessage = &part
		m = &in
	}
	res, changed, err := a.decide(actx, ctx, m)
	if err != nil {
		return &HookResult{Err: err}, nil
	}
	if full != nil {
		// What the next Stop's message repeats: this one, if blocked.
		var answered session.MessagePrefix
		if res.Output.IsBlock() {
			answered = session.PrefixOf(*full)
		}
		if answered != res.rec.Answered {
			res.rec.Answered = answered
			changed = true
		}
	}
	// Counted only for a CLI whose flag cannot be trusted (at every
	// event: a prompt of the user's ends the count), and at the Stops of
	// a CLI with a block cap, whose trusted flag says when a run of
	// blocks starts (so its prompts cost no save): every event of such a
	// CLI says so.
	if m.Input.ReentryUntrusted || (!m.Input.Uncapped && m.Event == hook.Stop) {
		prev := res.rec
		if m.Event == hook.Stop && !m.Input.StopHookActive {
			prev.Continuations = 0
		}
		if n := prev.Continued(m.Event, m.Input, res.Output); n != res.rec.Continuations {
			res.rec.Continuations = n
			changed = true
			if m.Event == hook.Stop && !m.Input.Uncapped && n == hook.BlockCap+1 {
				// A capped CLI may not honour this block: drover counted
				// it, so the user must hear that the agent may stop here
				// while the session goes on. Said once per run of blocks.
				res.Output.SystemMessage = joinLines(res.Output.SystemMessage, a.text(templates.BlockCap, map[string]string{
					"blocks": strconv.Itoa(n), "cap": strconv.Itoa(hook.BlockCap), "session_id": a.id,
				}))
			}
		}
	}
	// The warnings are said once, with this answer whatever it is: a
	// failed commit must not swallow them.
	notes := joinLines(warn, a.notice)
	a.notice = ""
	// SessionEnd's answer reaches no one.
	if m.Event != hook.SessionEnd {
		notes = joinLines(a.templateNotice(), notes)
	}
	res.Output.SystemMessage = joinLines(notes, res.Output.SystemMessage)
	now := a.env.now()
	if changed {
		next := heard(res.rec, m.Event, now)
		next.Events++
		next.UpdatedAt = now
		next = next.Remember(m.RequestID, m.Event, res.Output)
		if err := a.commit(ctx, next); err != nil {
			// Nothing was committed, so nothing may be decided: let the
			// agent go on and say why.
			a.log.Error("saving session", zap.Error(err))
			failed := a.text(templates.SaveFailed, map[string]string{"session_id": a.id, "error": err.Error()})
			return &HookResult{Output: hook.Output{SystemMessage: joinLines(notes, failed)}}, nil
		}
	} else if a.found && (a.rec.Active() || m.Event == hook.SessionEnd || !a.rec.EndedAt.IsZero()) && !a.heardRecently(m.Event, now) {
		// A decision that changed nothing still tells that the session
		// is alive (or, at SessionEnd, that it ended): what status's
		// health reads. It is this hook's one save, of the record as it
		// was; the answer did not depend on it, so a failed one changes
		// nothing but the health.
		if err := a.commit(ctx, heard(a.rec, m.Event, now)); err != nil {
			a.log.Warn("saving the session's last hook time", zap.Error(err))
		}
	}
	return &HookResult{Output: res.Output, Text: res.Text}, res.effects
}

// codexLastMessage reads the last assistant message of the Codex rollout
// at path; false when it has none or cannot be read (logged), which
// leaves the message unknown, as the payload did.
func (a *sessionActor) codexLastMessage(ctx context.Context, path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("opening the rollout for the last message", zap.String("path", path), zap.Error(err))
		}
		return "", false
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		a.log.Warn("reading the rollout for the last message", zap.String("path", path), zap.Error(err))
		return "", false
	}
	msg, ok, err := transcript.CodexLastMessageAt(ctx, f, fi.Size())
	if err != nil {
		a.log.Warn("reading the rollout for the last message", zap.String("path", path), zap.Error(err))
		return "", false
	}
	return msg, ok
}

// heardRecently reports whether the time-only save of hook event e at now
// may be skipped: the stored last hook time is recent enough for
// status.stale_after (within a tenth of it, and a minute at most), so that
// a burst of prompts in a working session costs no fsync each. SessionEnd
// and the first hook after one are always saved.
func (a *sessionActor) heardRecently(e hook.Event, now time.Time) bool {
	if e == hook.SessionEnd || !a.rec.EndedAt.IsZero() {
		return false
	}
	grain := min(time.Minute, a.env.Config().Status.StaleAfter/10)
	return grain > 0 && now.Sub(a.rec.LastHookAt) < grain
}

// heard returns rec as it is once hook event e came at now: the last hook
// time, and the session ended at a SessionEnd or not ended (resumed) at
// any other event.
func heard(rec session.Record, e hook.Event, now time.Time) session.Record {
	rec.LastHookAt = now
	rec.EndedAt = time.Time{}
	if e == hook.SessionEnd {
		rec.EndedAt = now
	}
	return rec
}

// decision is a workflow's answer to one hook event: the next record, the
// output, and the effects to execute once the record is committed.
type decision struct {
	rec     session.Record
	Output  hook.Output
	Text    string
	effects []effect
}

// commit saves rec as the session's state and adopts it. It is the session
// actor's one save site: every change of the record goes through it, before
// the answer that depends on it and before any effect it asks for, so a
// crash can lose an answer but never commit to one it did not save.
func (a *sessionActor) commit(ctx context.Context, rec session.Record) error {
	// The store names what failed; callers that say which session do so
	// (the save-failed text already names it).
	if err := a.env.Store.Save(ctx, rec); err != nil {
		return err
	}
	old, found := a.rec, a.found
	a.rec, a.found = rec, true
	publish(a.env.Events, ctx, sessionEvents(old, found, rec))
	return nil
}

// commitEvent counts one applied event on rec and commits it.
func (a *sessionActor) commitEvent(ctx context.Context, rec session.Record) error {
	rec.UpdatedAt = a.env.now()
	rec.Events++
	if err := a.commit(ctx, rec); err != nil {
		return fmt.Errorf("saving session %s: %w", a.id, err)
	}
	return nil
}

// commitThen commits rec as one event and then executes effects: the step
// every handler that changes the record ends with (a hook's answer goes
// between the two, in Receive). Nothing is executed when the commit fails.
func (a *sessionActor) commitThen(actx actor.Context, ctx context.Context, rec session.Record, effects []effect) error {
	if err := a.commitEvent(ctx, rec); err != nil {
		return err
	}
	a.execute(actx, effects)
	return nil
}

// execute performs the effects of a committed decision, in order. Each is
// idempotent; one that fails is logged and does not stop the others.
func (a *sessionActor) execute(actx actor.Context, effects []effect) {
	for _, e := range effects {
		a.env.fault(FaultEffect)
		switch e := e.(type) {
		case loop.Effect:
			a.loopEffect(actx, e)
		case plan.Effect:
			a.planEffect(actx, e)
		default:
			if a.sessionEffect(actx, e) {
				continue
			}
			a.log.Error("unknown effect", zap.String("type", fmt.Sprintf("%T", e)))
		}
	}
}

// asEffects widens a workflow's effects to the engine's.
func asEffects[E any](es []E) []effect {
	out := make([]effect, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// resume executes the effects the stored record still waits for, when the
// actor starts (first use, recovery after passivation, a restart after a
// failure, a new supervisor): what was committed but whose effects may not
// have run.
func (a *sessionActor) resume(actx actor.Context) {
	if a.loadErr != nil || !a.found {
		return
	}
	switch a.rec.Workflow {
	case session.Loop:
		tmpl, err := a.env.Templates()
		if err != nil {
			a.log.Warn("loading templates; pending loop effects wait for the next event", zap.Error(err))
			return
		}
		f := a.loopStopFacts()
		// Read, not readTracker: a resume quarantines and reports
		// nothing; the next Stop does.
		if tr, err := tracker.Read(a.trackerPath()); err == nil {
			f.TrackerActive, f.TrackerStartedAt = tr.Active, tr.StartedAt
		}
		effects := asEffects(loop.Pending(a.loopSession(), f, tmpl))
		// The last iteration's metrics line, if the crash came before
		// it was written (the writer skips it otherwise).
		effects = append(effects, metricsEffect(a.rec, a.rec.UpdatedAt)...)
		a.execute(actx, effects)
	case session.Plan:
		a.resumePlan(actx)
	}
}

// busy reports whether background work runs (a loop's checks, metric
// commands or checkpoint, a plan's review): the actor is not passivated
// meanwhile, or the work would be cut short (nor while a Stop is held
// for a review).
func (a *sessionActor) busy() bool {
	return a.loop.busy() || a.plan.run != nil || a.plan.held != nil
}

// Background work runs in work children, the one mechanism of the session
// and run actors alike: a workActor runs one job (a session's checks,
// metric commands, checkpoint review or plan review; a run's iteration or
// wave checkpoint) outside its parent's mailbox, and its result comes back
// to the parent as a workDone message, which the parent turns into its
// workflow's event. Stopping a child (the parent does so once it took the
// result in, and every child stops with its parent) cancels the job and
// waits until it returned, and so until its process groups are gone; its
// result, if any, is dropped. endWork ends a job early without dropping
// its result: a run's agent whose budget is spent still ends its
// iteration as usual.

// workDone is what a work child sends its parent when its job returned.
type workDone struct {
	child  *actor.PID
	result any
}

// endWork asks a work child to cancel its job's context; unlike stopping
// the child, the job's result still comes back as workDone.
type endWork struct{}

// workActor runs one job; stopping it cancels the job's context and waits
// until the job returned (and so its process groups are gone).
type workActor struct {
	job func(ctx context.Context) any
	// failed is the job's result when the job panicked.
	failed func(err error) any
	log    *zap.Logger
	// ctx ends when the child stops: the job's result is dropped then.
	ctx    context.Context
	cancel context.CancelFunc
	// jobCtx is the job's context, within ctx; end cancels it alone.
	jobCtx context.Context
	end    context.CancelFunc
	done   chan struct{}
}

// spawnWork starts job in a child actor named prefix-<n> and returns it.
// failed builds the result the parent gets if job panics: the result of an
// ordinary failure of that job, carrying err. killed, when set, is told
// (with prefix) of each process the job kills for its timeout.
func spawnWork(actx actor.Context, log *zap.Logger, killed func(work string), prefix string, job func(ctx context.Context) any, failed func(err error) any) *actor.PID {
	ctx, cancel := context.WithCancel(context.Background())
	jobCtx, end := context.WithCancel(ctx)
	if killed != nil {
		jobCtx = proc.OnTimeoutKill(jobCtx, func() { killed(prefix) })
	}
	if log == nil {
		log = zap.NewNop()
	}
	return actx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &workActor{job: job, failed: failed, log: log, ctx: ctx, cancel: cancel, jobCtx: jobCtx, end: end}
	}), prefix)
}

// runJob runs the job, turning a panic into its failed result.
func (w *workActor) runJob(name string) (result any) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("background job panicked", zap.String("job", name), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			result = w.failed(fmt.Errorf("the job panicked: %v", p))
		}
	}()
	return w.job(w.jobCtx)
}

// Receive implements actor.Actor.
func (w *workActor) Receive(actx actor.Context) {
	switch actx.Message().(type) {
	case *actor.Started:
		if w.done != nil {
			return
		}
		w.done = make(chan struct{})
		system, self, parent := actx.ActorSystem(), actx.Self(), actx.Parent()
		go func() {
			defer close(w.done)
			defer w.end()
			result := w.runJob(self.Id)
			if w.ctx.Err() != nil {
				return // stopped: nobody waits for it
			}
			system.Root.Send(parent, &workDone{child: self, result: result})
		}()
	case *endWork:
		w.end()
	case *actor.Stopping:
		w.cancel()
		if w.done != nil {
			<-w.done
		}
	}
}
