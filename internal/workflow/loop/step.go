package loop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// OnStop is the loop's one decision for a Stop hook. In order:
//
//   - an inactive loop allows the stop, unchanged, with no effect.
//   - the checks gate: a completion claim (the promise in the payload's
//     final message, or the tracker's marker) of a loop that requires
//     checks, with a check command configured, starts the checks for this
//     iteration (StartChecks) and blocks until their result is in the
//     state (ChecksDone); a claim while they run blocks again; their
//     result goes to Stop.
//   - the iteration's metrics (from f.Iteration, else unknown), its
//     reflection (WriteReflection), the convergence status, and the
//     routed role with its prompt.
//   - Stop decides the output and the next State.
//   - then the background work: a checkpoint review that falls due
//     (StartCheckpoint, unless one runs), the metric commands of a loop
//     that goes on (StartMetrics), or, for a loop that ended, the end of
//     every run (Cancel*); and the tracker's front matter (WriteTracker).
//
// On error the Session is s, unchanged, and there are no effects.
func OnStop(s Session, f StopFacts, t templates.Set) (Session, hook.Output, []Effect, error) {
	st := s.State
	if !st.Active {
		return s, hook.Output{}, nil, nil
	}
	facts := f.Facts
	it := f.Iteration
	if it != nil {
		facts.TranscriptLastText = it.LastAssistantText
		// Caught up only when the turn ended on text: a transcript whose
		// last event is a tool call or result is still being written, and
		// its last text is not the final message.
		facts.TranscriptCaughtUp = it.EndsOnText
	}

	// The promise is necessary, not sufficient, when checks are asked for:
	// they run in the background, and their result answers a later stop.
	facts.ChecksConfigured = f.CheckCommand != ""
	claimed := (facts.TrackerErr == nil && facts.TrackerComplete) ||
		(facts.LastAssistantMessage != nil && PromiseKept(*facts.LastAssistantMessage, st.CompletionPromise))
	if st.RequireChecks && claimed && facts.ChecksConfigured {
		vars := map[string]string{"check_command": f.CheckCommand}
		switch c := st.Checks; {
		case c == nil || c.Iteration != st.Iteration:
			text, err := t.Render(templates.LoopChecksStarted, vars)
			if err != nil {
				return s, hook.Output{}, nil, fmt.Errorf("loop stop hook: %w", err)
			}
			next := s
			next.State.Checks = &Checks{Iteration: st.Iteration, Running: true}
			return next, hook.Block(text), []Effect{StartChecks{Iteration: st.Iteration, Command: f.CheckCommand, Timeout: f.CheckTimeout}}, nil
		case c.Running:
			text, err := t.Render(templates.LoopChecksRunning, vars)
			if err != nil {
				return s, hook.Output{}, nil, fmt.Errorf("loop stop hook: %w", err)
			}
			return s, hook.Block(text), nil, nil
		default:
			passed := c.Passed
			facts.ChecksPassed, facts.ChecksSummary = &passed, c.Summary
		}
	}

	// Metrics, reflection, convergence and routing of the iteration that
	// just ended.
	var effects []Effect
	metrics := convergence.UnknownMetrics(st.Iteration)
	if it != nil {
		metrics = convergence.MetricsFrom(*it)
		metrics.Iteration = st.Iteration
	}
	history := appendCapped(s.History, metrics, MaxHistory)
	reflections := s.Reflections
	if it != nil {
		if r, ok := convergence.Reflect(*it, metrics, reflections, f.Thresholds); ok {
			r.Iteration = st.Iteration
			effects = append(effects, WriteReflection{Reflection: r})
			reflections = appendCapped(reflections, r, MaxHistory)
		}
	}
	status, reason := convergence.Classify(history, convergence.Budget{
		MaxIterations: st.MaxIterations, MaxMinutes: float64(st.MaxMinutes), MaxUSD: st.MaxUSD,
		Iteration: st.Iteration, Elapsed: f.Now.Sub(st.StartedAt), CostUSD: max(st.CostUSD, f.CostUSD),
	}, f.Thresholds)
	facts.Status, facts.StatusReason = string(status), reason
	rules := f.Rules
	if rules == nil {
		rules = router.DefaultRules()
	}
	role, _ := router.Route(rules, router.Input{Phase: router.PhaseIterating, LastOutcome: string(routedOutcome(metrics, s.History)), Status: string(status)})
	if role == "" {
		role = router.Developer
	}
	facts.Role, facts.AgentName = string(role), "drover:"+string(role)
	if p, err := t.Render(RoleTemplate(string(role)), map[string]string{"agent_name": facts.AgentName}); err == nil {
		// A user-defined role without a template has the role name alone.
		facts.RolePrompt = p
	}
	if n := len(reflections); n > 0 {
		var err error
		if facts.Reflection, err = ReflectionLine(reflections[n-1], t); err != nil {
			return s, hook.Output{}, nil, fmt.Errorf("loop stop hook: %w", err)
		}
	}
	facts.CheckpointDue = st.CheckpointFor != 0
	facts.CheckpointConsensus = s.Consensus

	next, out, err := Stop(st, facts, t)
	if err != nil {
		return s, hook.Output{}, nil, err
	}
	ns := s
	ns.History, ns.Reflections = history, reflections
	if next.Active && next.Iteration > st.Iteration {
		// The consensus went into this block reason: deliver it once. A
		// check run of the iteration that ended is no longer wanted.
		ns.Consensus = ""
		if c := next.Checks; c != nil {
			if c.Running {
				effects = append(effects, CancelChecks{})
			}
			next.Checks = nil
		}
	}
	switch {
	case !next.Active:
		next.Checks, next.MetricsFor, next.CheckpointFor = nil, 0, 0
		effects = append(effects, CancelChecks{}, CancelCheckpoint{}, CancelMetrics{})
	default:
		if CheckpointDue(next) && next.CheckpointFor == 0 {
			if prompt, err := checkpointPrompt(next, next.Iteration-1, t); err == nil {
				next.CheckpointFor = next.Iteration - 1
				effects = append(effects, StartCheckpoint{Iteration: next.CheckpointFor, Prompt: prompt})
			}
		}
		if len(f.MetricCommands) > 0 {
			next.MetricsFor = st.Iteration
			effects = append(effects, StartMetrics{Iteration: st.Iteration, Commands: f.MetricCommands, Timeout: f.CheckTimeout})
		} else if next.MetricsFor != 0 {
			next.MetricsFor = 0
			effects = append(effects, CancelMetrics{})
		}
	}
	ns.State = next
	effects = append(effects, trackerEffect(next, f.Facts, t, false))
	return ns, out, effects, nil
}

// trackerEffect writes s's tracker; its fallback body is the first one of
// a new loop (an unrenderable one leaves the body empty).
func trackerEffect(s State, f Facts, t templates.Set, fresh bool) WriteTracker {
	body, _ := TrackerBody(s, f, t)
	return WriteTracker{State: s, Body: body, Fresh: fresh}
}

// checkpointPrompt renders the reviewers' prompt of the checkpoint after
// iteration.
func checkpointPrompt(s State, iteration int, t templates.Set) (string, error) {
	return t.Render(templates.LoopCheckpointReview, map[string]string{
		"prompt": s.Prompt, "iteration": strconv.Itoa(iteration), "status": orUnknown(s.LastStatus), "status_reason": orUnknown(s.LastStatusReason),
	})
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Begin starts st (a State from Start) in a session whose loop was s: the
// new loop replaces any earlier one, whose background work ends, whose
// reflections are set aside and whose tracker is written afresh. It
// returns the text for the agent.
func Begin(s Session, st State, f Facts, t templates.Set) (Session, string, []Effect, error) {
	body, err := TrackerBody(st, f, t)
	if err != nil {
		return s, "", nil, err
	}
	text, err := StartText(st, f, t)
	if err != nil {
		return s, "", nil, err
	}
	return Session{State: st}, text, []Effect{
		CancelChecks{}, CancelCheckpoint{}, CancelMetrics{},
		SetAsideReflections{At: f.Now},
		WriteTracker{State: st, Body: body, Fresh: true},
	}, nil
}

// CancelLoop is the user ending the loop (drover loop cancel, drover
// stop): it ends with the Cancelled outcome, its background work ends,
// and it returns the text for the user. A loop that is not running is
// refused (a Refusal).
func CancelLoop(s Session, f Facts, t templates.Set) (Session, string, []Effect, error) {
	if !s.State.Active {
		return s, "", nil, refuse(t, templates.LoopNotRunning, map[string]string{"session_id": f.SessionID})
	}
	next := s
	next.State = Cancel(s.State)
	next.State.Checks, next.State.MetricsFor, next.State.CheckpointFor = nil, 0, 0
	text, err := t.Render(templates.LoopCancelled, Vars(next.State, f, t))
	if err != nil {
		return s, "", nil, fmt.Errorf("loop cancel: %w", err)
	}
	return next, text, []Effect{CancelChecks{}, CancelCheckpoint{}, CancelMetrics{}, trackerEffect(next.State, f, t, false)}, nil
}

// Pending returns the effects a committed s still waits for: what an actor
// that restarted between a commit and its effects must do again. For an
// active loop: set aside an earlier loop's reflections while this one has
// none, rewrite the last reflection and the tracker, and start the check
// run, metric commands and checkpoint review the state says run. Each is
// idempotent, so doing one that had already been done costs nothing. For
// an ended loop: rewrite the tracker, only while the file still says this
// loop is active (a crash between the end's commit and its tracker write);
// a tracker the user deleted or that an ended loop wrote stays as it is.
func Pending(s Session, f StopFacts, t templates.Set) []Effect {
	st := s.State
	if !st.Active {
		if f.TrackerErr == nil && f.TrackerActive && !st.StartedAt.IsZero() && f.TrackerStartedAt.Equal(st.StartedAt) {
			return []Effect{trackerEffect(st, f.Facts, t, false)}
		}
		return nil
	}
	var effects []Effect
	n := len(s.Reflections)
	if st.Iteration == 1 && n == 0 {
		effects = append(effects, SetAsideReflections{At: f.Now})
	}
	if n > 0 {
		effects = append(effects, WriteReflection{Reflection: s.Reflections[n-1]})
	}
	effects = append(effects, trackerEffect(st, f.Facts, t, false))
	if c := st.Checks; c != nil && c.Running && c.Iteration == st.Iteration && f.CheckCommand != "" {
		effects = append(effects, StartChecks{Iteration: c.Iteration, Command: f.CheckCommand, Timeout: f.CheckTimeout})
	}
	if st.MetricsFor != 0 && len(f.MetricCommands) > 0 {
		effects = append(effects, StartMetrics{Iteration: st.MetricsFor, Commands: f.MetricCommands, Timeout: f.CheckTimeout})
	}
	if st.CheckpointFor != 0 {
		if prompt, err := checkpointPrompt(st, st.CheckpointFor, t); err == nil {
			effects = append(effects, StartCheckpoint{Iteration: st.CheckpointFor, Prompt: prompt})
		}
	}
	return effects
}

// ChecksDone records the result of the check run for iteration. It
// reports false, with s unchanged, for a result the state does not wait
// for (another iteration, a loop that ended or was replaced).
func ChecksDone(s Session, iteration int, r CheckResult, t templates.Set) (Session, bool, error) {
	c := s.State.Checks
	if !s.State.Active || c == nil || !c.Running || c.Iteration != iteration {
		return s, false, nil
	}
	summary, err := r.Summary(t)
	if err != nil {
		return s, false, err
	}
	next := s
	next.State.Checks = &Checks{Iteration: iteration, Passed: r.Err == "" && !r.TimedOut, Summary: summary}
	return next, true, nil
}

// MetricsDone merges the metric commands' results after iteration into
// that iteration's history entry, for the next stop's routing. It reports
// false, with s unchanged, for results the state does not wait for.
func MetricsDone(s Session, iteration int, results []convergence.CommandResult) (Session, bool) {
	if !s.State.Active || s.State.MetricsFor != iteration {
		return s, false
	}
	next := s
	next.State.MetricsFor = 0
	next.History = append([]convergence.Metrics(nil), s.History...)
	for i := len(next.History) - 1; i >= 0; i-- {
		if next.History[i].Iteration == iteration {
			next.History[i] = convergence.MergeCommands(next.History[i], results)
			break
		}
	}
	return next, true
}

// CheckpointDone records the consensus of the checkpoint review after
// iteration, for the next block reason and the open findings; an empty
// consensus (the review could not start) only ends the wait. It reports
// false, with s unchanged, for a review the state does not wait for.
func CheckpointDone(s Session, iteration int, consensus string) (Session, bool) {
	if !s.State.Active || s.State.CheckpointFor != iteration {
		return s, false
	}
	next := s
	next.State.CheckpointFor = 0
	if consensus != "" {
		next.Consensus, next.Findings = consensus, consensus
	}
	return next, true
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

// ReflectionLine is the one-line summary of r that the continuation prompt
// and the context snapshot carry: its approach, its first failure, and
// whether that failure keeps coming back.
func ReflectionLine(r convergence.Reflection, t templates.Set) (string, error) {
	vars := map[string]string{"reflection_iteration": strconv.Itoa(r.Iteration), "approach": r.Approach}
	line, err := t.Render(templates.LoopReflectionLine, vars)
	if err != nil {
		return "", err
	}
	parts := []string{line}
	if len(r.Failures) > 0 {
		vars["failure"] = r.Failures[0]
		p, err := t.Render(templates.LoopReflectionFailures, vars)
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
	if r.Thrashing {
		p, err := t.Render(templates.LoopReflectionThrashing, vars)
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " "), nil
}

// Snapshot is ContextSnapshot for the loop s: the text that brings the
// agent back after a compaction, with the last reflection and the open
// findings of the last checkpoint.
func Snapshot(s Session, f Facts, t templates.Set) (string, error) {
	if n := len(s.Reflections); n > 0 {
		var err error
		if f.Reflection, err = ReflectionLine(s.Reflections[n-1], t); err != nil {
			return "", fmt.Errorf("loop context snapshot: %w", err)
		}
	}
	f.OpenFindings = s.Findings
	return ContextSnapshot(s.State, f, t)
}

func appendCapped[T any](s []T, v T, n int) []T {
	out := append(append([]T(nil), s...), v)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
