package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/internal/workflow/loop"
	"github.com/drover-dev/drover/templates"
)

// The loop workflow's shell: it gathers the facts of an event, calls the
// decision in internal/workflow/loop, and hands the record and effects it
// returns to the engine. The effects themselves are in loopwork.go.

func (a *sessionActor) trackerPath() string { return tracker.Path(a.sessionDir()) }

func (a *sessionActor) loopStatus(tmpl templates.Set, msg string) (api.LoopStatus, error) {
	s := a.rec.Loop
	end, err := loop.EndReason(s, tmpl)
	if err != nil {
		return api.LoopStatus{}, err
	}
	return api.LoopStatus{
		SessionID: a.id, Active: s.Active, Iteration: s.Iteration, MaxIterations: s.MaxIterations,
		MaxMinutes: s.MaxMinutes, MaxUSD: s.MaxUSD, CheckpointEvery: s.CheckpointEvery, RequireChecks: s.RequireChecks,
		CompletionPromise: s.CompletionPromise, Prompt: s.Prompt, StartedAt: s.StartedAt,
		Status: s.LastStatus, StatusReason: s.LastStatusReason, Role: s.LastRole, Outcome: string(s.Outcome),
		EndReason: end, StuckIterations: s.StuckIterations,
		CostUSD: s.CostUSD, Tracker: a.trackerPath(), Reflections: len(a.rec.LoopReflections), Message: msg,
	}, nil
}

// loopSession is the loop's part of the record (session.Record.LoopSession).
func (a *sessionActor) loopSession() loop.Session { return a.rec.LoopSession() }

// withLoop returns rec with s as its loop.
func withLoop(rec session.Record, s loop.Session) session.Record { return rec.WithLoop(s) }

func (a *sessionActor) loopCommand(actx actor.Context, m *WorkflowCommand) *WorkflowResult {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	tmpl, err := a.env.Templates()
	if err != nil {
		return &WorkflowResult{Err: fmt.Errorf("loading templates: %w", err)}
	}
	reply := func(text string) *WorkflowResult {
		st, err := a.loopStatus(tmpl, text)
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		b, err := json.Marshal(st)
		return &WorkflowResult{Response: b, Err: err}
	}
	switch m.Verb {
	case "status":
		return reply("")
	case "cancel":
		next, text, effects, err := loop.CancelLoop(a.loopSession(), a.loopFacts(), tmpl)
		if errors.Is(err, loop.ErrRefused) {
			return &WorkflowResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		if err := a.commitThen(actx, ctx, withLoop(a.rec, next), asEffects(effects)); err != nil {
			return &WorkflowResult{Err: err}
		}
		return reply(text)
	case "start":
		var args api.LoopStartArgs
		if len(m.Args) > 0 {
			if err := json.Unmarshal(m.Args, &args); err != nil {
				return &WorkflowResult{Err: fmt.Errorf("%w: decoding loop start arguments: %w", ErrBadRequest, err)}
			}
		}
		if err := a.checkStart(session.Loop); err != nil {
			return &WorkflowResult{Err: err}
		}
		cfg := a.env.Config()
		st, err := loop.StartWith(loop.StartOptions{
			Prompt: args.Prompt, MaxIterations: args.MaxIterations, CompletionPromise: args.CompletionPromise,
			MaxMinutes: args.MaxMinutes, MaxUSD: args.MaxUSD, CheckpointEvery: args.CheckpointEvery, RequireChecks: args.RequireChecks,
		}, loop.StartConfig{MaxIterations: cfg.Loop.MaxIterations, CheckCommand: cfg.Loop.CheckCommand}, a.env.now(), tmpl)
		if err != nil {
			return &WorkflowResult{Err: fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
		next, text, effects, err := loop.Begin(a.loopSession(), st, a.loopFacts(), tmpl)
		if err != nil {
			return &WorkflowResult{Err: err}
		}
		rec := withLoop(a.rec, next).Runs(session.Loop, a.env.now())
		// A new loop reads its transcript from the start: the spend and
		// the iteration are its own.
		rec.LoopTranscript = nil
		if err := a.commitThen(actx, ctx, rec, asEffects(effects)); err != nil {
			return &WorkflowResult{Err: err}
		}
		return reply(text)
	}
	return &WorkflowResult{Err: unknownf("unknown loop command %q (start, cancel, status)", m.Verb)}
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

// loopStopFacts are loopFacts with the configuration a Stop decides on.
func (a *sessionActor) loopStopFacts() loop.StopFacts {
	cfg := a.env.Config()
	return loop.StopFacts{
		Facts: a.loopFacts(), Thresholds: loopconf.Thresholds(cfg.Loop), Rules: loopconf.RoutesOrDefault(cfg.Loop),
		CheckCommand: cfg.Loop.CheckCommand, CheckTimeout: cfg.Loop.CheckTimeout, MetricCommands: cfg.MetricCommandList(),
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
		vars := map[string]string{"error": err.Error(), "moved_to": filepath.Base(moved)}
		name := templates.LoopTrackerSetAside
		switch {
		case qerr != nil:
			name, vars["set_aside_error"] = templates.LoopTrackerSetAsideFailed, qerr.Error()
		case a.rewriteWithNotes(moved):
			name = templates.LoopTrackerSetAsideNotes
		}
		return tracker.Tracker{}, &notedError{err: err, text: a.text(name, vars)}
	}
	return tracker.Tracker{}, err
}

// notedError is err with what drover did about it, in words for the user;
// it is still err for errors.Is.
type notedError struct {
	err  error
	text string
}

func (e *notedError) Error() string { return e.text }

func (e *notedError) Unwrap() error { return e.err }

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

// loopRead is what a Stop read in the loop's transcript.
type loopRead struct {
	// it is the iteration that just ended; cost what the loop spent.
	it   transcript.Iteration
	cost float64
	// next is where the reading stopped, for the next Stop; resumed says
	// whether it went on from the last one rather than from the start.
	next    *session.TranscriptRead
	resumed bool
}

// readLoopTranscript reads the transcript at path for loop s: only what
// was appended since prev stopped, or the whole file when prev read
// another file (another path, a new file at the path), another loop, or
// a file it cannot resume (truncated, rewritten). A missing or unreadable
// transcript is an error, for the caller to take as no signal.
func readLoopTranscript(ctx context.Context, path string, prev *session.TranscriptRead, s loop.State) (loopRead, error) {
	f, err := os.Open(path)
	if err != nil {
		return loopRead{}, fmt.Errorf("opening transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return loopRead{}, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	dev, ino := fileID(fi)
	from := session.TranscriptRead{Path: path, Dev: dev, Ino: ino, Cursor: transcript.NewCursor(transcript.SinceIteration), CostSince: s.StartedAt}
	if readsOn(prev, false, path, dev, ino, s) && prev.Cursor.Since() == transcript.SinceIteration && prev.Cursor.Resumable(f, fi.Size()) {
		from = *prev
	}
	resumed := from.Cursor.Offset() > 0
	if _, err := f.Seek(from.Cursor.Offset(), io.SeekStart); err != nil {
		return loopRead{}, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	next := from
	p, err := from.Cursor.Read(ctx, f, func(u transcript.Usage) { next.CostUSD += loop.UsageCost(s, u) })
	if err != nil {
		return loopRead{}, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	next.Cursor = p.Cursor
	cost := next.CostUSD
	for _, u := range p.Pending {
		cost += loop.UsageCost(s, u)
	}
	return loopRead{it: p.Iteration, cost: cost, next: &next, resumed: resumed}, nil
}

// otherTranscriptCost is what loop s has spent by the transcript at path
// in format (a Codex rollout, a Gemini chat: transcript.ScanUsage): each
// model call's tokens since the loop started, priced. A Codex rollout is
// append-only, so its reading goes on from prev, where the last Stop's
// stopped (as a Claude transcript's does), and next is where this one
// stopped. A Gemini chat file is rewritten as a message grows (its record
// line is written again, or the whole list with a $set), so no offset
// could be kept: it is read whole at each Stop, and next is nil.
func otherTranscriptCost(ctx context.Context, format, path string, prev *session.TranscriptRead, s loop.State) (cost float64, next *session.TranscriptRead, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("opening transcript: %w", err)
	}
	defer f.Close()
	if format != transcript.FormatCodex {
		err = transcript.ScanUsage(ctx, format, f, func(u transcript.Usage) error {
			cost += loop.UsageCost(s, u)
			return nil
		})
		if err != nil {
			return 0, nil, fmt.Errorf("reading transcript %q: %w", path, err)
		}
		return cost, nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	dev, ino := fileID(fi)
	from := session.TranscriptRead{Path: path, Dev: dev, Ino: ino, Codex: &transcript.CodexCursor{}, CostSince: s.StartedAt}
	if readsOn(prev, true, path, dev, ino, s) && prev.Codex.Resumable(f, fi.Size()) {
		from = *prev
	}
	if _, err := f.Seek(from.Codex.Offset, io.SeekStart); err != nil {
		return 0, nil, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	read := from
	c, pending, err := transcript.ReadCodex(ctx, *from.Codex, f, func(u transcript.Usage) error {
		read.CostUSD += loop.UsageCost(s, u)
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("reading transcript %q: %w", path, err)
	}
	read.Codex = &c
	cost = read.CostUSD
	for _, u := range pending {
		cost += loop.UsageCost(s, u)
	}
	return cost, &read, nil
}

// readsOn reports whether prev is a reading of the same file (path, dev,
// ino), in the same format (a Codex rollout or a Claude transcript), for
// the same loop s: only such a reading may go on where it stopped, if the
// file still allows it.
func readsOn(prev *session.TranscriptRead, codex bool, path string, dev, ino uint64, s loop.State) bool {
	return prev != nil && (prev.Codex != nil) == codex && prev.Path == path && prev.Dev == dev && prev.Ino == ino && prev.CostSince.Equal(s.StartedAt)
}

// fileID is the device and inode of the file fi describes, or zeros
// where the platform does not say.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		// The field types differ by platform.
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// iterationFromTranscript reads the transcript at path on from prev (see
// readLoopTranscript). A missing or unreadable transcript is no signal,
// not an error.
func (a *sessionActor) iterationFromTranscript(ctx context.Context, path string, prev *session.TranscriptRead) (loopRead, bool) {
	if path == "" {
		return loopRead{}, false
	}
	r, err := readLoopTranscript(ctx, path, prev, a.rec.Loop)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("reading transcript", zap.String("path", path), zap.Error(err))
		}
		return loopRead{}, false
	}
	return r, true
}

// transcriptWait bounds how long a Stop waits for the CLI to finish
// writing the transcript: it writes asynchronously, and at Stop time the
// iteration's last tool results can still be missing, or, at the first
// Stop of a new session, the whole file.
const transcriptWait = 1500 * time.Millisecond

// caughtUpIteration reads the iteration that just ended, reading on in
// the transcript (for at most transcriptWait) until its last assistant
// text is the payload's final message. Judged from a transcript that is
// still being written, a failing test run can be missed and the iteration
// routed to the wrong role; judged from none at all, the iteration is
// unmeasured and its spend not counted. A transcript that exists but
// cannot be read is not waited for: waiting does not mend it. Each read
// goes on from the last (the record's at first), so that a long
// session's Stop costs what its last iteration's lines cost.
func (a *sessionActor) caughtUpIteration(ctx context.Context, path string, last *string) (loopRead, bool) {
	r, ok := a.iterationFromTranscript(ctx, path, a.rec.LoopTranscript)
	if path == "" || last == nil || strings.TrimSpace(*last) == "" {
		return r, ok
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
		if ok && norm(r.it.LastAssistantText) == want {
			break
		}
		if !ok && !notCreated(path) {
			break
		}
		select {
		case <-ctx.Done():
			return r, ok
		case <-time.After(25 * time.Millisecond):
		}
		prev := a.rec.LoopTranscript
		if ok {
			prev = r.next
		}
		if next, nok := a.iterationFromTranscript(ctx, path, prev); nok {
			r, ok = next, true
		}
	}
	return r, ok
}

// notCreated reports whether the file at path does not exist (yet).
func notCreated(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// decideLoop gathers the facts of a loop session's hook event and calls
// the loop's decision; the engine commits and executes what it returns.
func (a *sessionActor) decideLoop(ctx context.Context, m *HandleHook) (decision, bool, error) {
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
		if m.Event == hook.SessionStart && !m.Input.Resumed() {
			return d, false, nil
		}
		text, err := loop.Snapshot(a.loopSession(), a.loopFacts(), tmpl)
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

	f := a.loopStopFacts()
	f.LastAssistantMessage = m.Input.LastAssistantMessage
	read, ok := a.caughtUpIteration(ctx, m.Input.ClaudeTranscript(), m.Input.LastAssistantMessage)
	var otherRead *session.TranscriptRead
	if ok {
		f.Iteration = &read.it
		f.CostUSD = read.cost
	} else if path := m.Input.TranscriptPath; path != "" && m.Input.ClaudeTranscript() == "" {
		// Another CLI's transcript gives the loop's spend (its budget),
		// not its iteration.
		cost, next, err := otherTranscriptCost(ctx, m.Input.TranscriptFormat, path, a.rec.LoopTranscript, a.rec.Loop)
		if err == nil {
			f.CostUSD, otherRead = cost, next
		} else if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("reading transcript", zap.String("path", path), zap.String("format", m.Input.TranscriptFormat), zap.Error(err))
		}
	}
	tr, terr := a.readTracker()
	f.TrackerErr = terr
	f.TrackerComplete = terr == nil && tr.Complete()

	next, out, effects, err := loop.OnStop(a.loopSession(), f, tmpl)
	if err != nil {
		return d, false, err
	}
	d.rec = withLoop(a.rec, next)
	switch {
	case !next.State.Active:
		// Nothing reads on from an ended loop's reading.
		d.rec.LoopTranscript = nil
	case ok:
		d.rec.LoopTranscript = read.next
	case otherRead != nil:
		d.rec.LoopTranscript = otherRead
	}
	d.Output = out
	d.effects = asEffects(effects)
	if measured(a.rec.LoopHistory, next.History) {
		d.effects = append(d.effects, metricsEffect(d.rec, a.env.now())...)
	}
	n := next.State
	a.log.Info("loop decision", zap.Int("iteration", n.Iteration), zap.String("status", n.LastStatus), zap.String("role", n.LastRole), zap.Bool("active", n.Active))
	return d, true, nil
}

// measured reports whether a Stop's decision measured an iteration: its
// history gained an entry (a Stop held by the checks gate measures none).
func measured(before, after []convergence.Metrics) bool {
	n := len(after)
	if n == 0 {
		return false
	}
	return len(before) == 0 || before[len(before)-1].Iteration != after[n-1].Iteration
}
