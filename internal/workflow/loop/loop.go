package loop

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tracker"
	"github.com/drover-dev/drover/templates"
)

// DefaultPromise is the completion promise of a loop started without
// --completion-promise: every loop has a way for the agent to say it is done.
const DefaultPromise = "DONE"

// MaxPromptChars bounds the loop prompt. It is re-fed in every block reason,
// which Claude Code caps at 10,000 characters together with the rest of the
// continuation prompt; a longer task belongs in a file the prompt names.
const MaxPromptChars = 3000

// MaxPromiseChars bounds the completion promise phrase.
const MaxPromiseChars = 200

// Caps on the pieces of text other packages hand in, in characters. With
// the prompt at MaxPromptChars and every piece at its cap, the longest block
// reason (checks failed, every section present) stays under Claude Code's
// 10,000 characters (TestStopReasonFitsTheHookCap).
const (
	maxStatusReason = 300
	maxReflection   = 1000
	maxConsensus    = 1000
	maxChecks       = 1500
	maxTrackerError = 300
	maxRolePrompt   = 800
)

// Start is `/drover:loop`: it validates opts and returns an active loop at
// iteration 1, started at now. Every invalid flag is reported, each error
// naming its flag, in the words of t.
func Start(opts StartOptions, now time.Time, t templates.Set) (State, error) {
	var errs []error
	bad := func(name string, vars map[string]string) {
		errs = append(errs, errors.New(say(t, name, vars)))
	}
	prompt := strings.TrimSpace(opts.Prompt)
	switch n := utf8.RuneCountInString(prompt); {
	case n == 0:
		bad(templates.LoopBadPromptEmpty, nil)
	case n > MaxPromptChars:
		bad(templates.LoopBadPromptLong, map[string]string{"chars": strconv.Itoa(n), "max_chars": strconv.Itoa(MaxPromptChars)})
	}
	if opts.MaxIterations < 1 {
		bad(templates.LoopBadMaxIterations, map[string]string{"value": strconv.Itoa(opts.MaxIterations)})
	}
	if opts.MaxMinutes < 0 {
		bad(templates.LoopBadMaxMinutes, map[string]string{"value": strconv.Itoa(opts.MaxMinutes)})
	}
	if math.IsNaN(opts.MaxUSD) || math.IsInf(opts.MaxUSD, 0) || opts.MaxUSD < 0 {
		bad(templates.LoopBadMaxUSD, map[string]string{"value": fmt.Sprint(opts.MaxUSD)})
	}
	if opts.CheckpointEvery < 0 {
		bad(templates.LoopBadCheckpointEvery, map[string]string{"value": strconv.Itoa(opts.CheckpointEvery)})
	}
	promise := normalize(opts.CompletionPromise)
	switch {
	case promise == "":
		promise = DefaultPromise
	case strings.ContainsAny(promise, "<>"):
		bad(templates.LoopBadPromiseBrackets, map[string]string{"promise": strconv.Quote(promise)})
	case utf8.RuneCountInString(promise) > MaxPromiseChars:
		bad(templates.LoopBadPromiseLong, map[string]string{"max_chars": strconv.Itoa(MaxPromiseChars)})
	}
	if err := errors.Join(errs...); err != nil {
		return State{}, fmt.Errorf("starting loop: %w", err)
	}
	return State{
		Active:            true,
		Iteration:         1,
		MaxIterations:     opts.MaxIterations,
		CompletionPromise: promise,
		Prompt:            prompt,
		StartedAt:         now,
		MaxMinutes:        opts.MaxMinutes,
		MaxUSD:            opts.MaxUSD,
		CheckpointEvery:   opts.CheckpointEvery,
		RequireChecks:     opts.RequireChecks,
	}, nil
}

// Stop decides a Stop hook for a loop session, in this order:
//
//   - inactive (or no loop): allow, unchanged.
//   - completion: the promise kept in the final message (the payload's
//     last_assistant_message; the transcript only when the payload has no
//     such field and the transcript has caught up, since a transcript behind
//     the turn is no signal at all), or the tracker's completion marker.
//     With require_checks, completion also needs the checks to have passed;
//     without that it blocks with the check results, as the promise is
//     necessary, not sufficient. Otherwise the loop ends (Done) and the
//     stop is allowed with a message for the user.
//   - convergence: a converged_success status that held for
//     f.ConvergedStreak measured iterations in a row ends the loop
//     (Converged) when f.EndOnConverged is set and the loop does not
//     require checks:
//     with --require-checks only the promise and passing checks end it, as
//     drover's metrics read from the transcript are not the user's checks.
//     This comes before the budgets, as a kept promise does: done on the
//     last iteration is done, not out of budget.
//   - budgets: the iteration that just ended was the last one
//     (max_iterations), the wall time since StartedAt (max_minutes), the
//     spend (max_usd), or the convergence status budget_exhausted. The first
//     spent one ends the loop; the stop is allowed with a message naming it.
//   - stuck: a stuck_plateau or thrashing status extends the run of stuck
//     iterations (State.StuckIterations; any other known status resets it).
//     The first stuck iteration is routed to a new strategy (the default
//     rules send it to the architect); once the run is longer than
//     f.StuckLimit (not 0) iterations after that one, the loop ends (Stuck).
//   - otherwise the iteration moves on and the stop is blocked with the
//     continuation prompt: the task, the routed role's instructions and
//     agent, the convergence status (with what it means for the loop's
//     end), the last reflection and the checkpoint review when there are
//     any.
//
// A tracker that could not be read (f.TrackerErr) never blocks or ends
// anything by itself: it adds a warning for the user to whatever the
// decision is. On error the returned State is s, unchanged, so that nothing
// half decided is persisted.
func Stop(s State, f Facts, t templates.Set) (State, hook.Output, error) {
	if !s.Active {
		return s, hook.Output{}, nil
	}
	next := s
	next.CostUSD = max(s.CostUSD, f.CostUSD)
	if f.Role != "" {
		next.LastRole = f.Role
	}
	if f.Status != "" {
		next.LastStatus, next.LastStatusReason = f.Status, f.StatusReason
		next.StuckIterations, next.SuccessIterations = 0, 0
		if isStuck(f.Status) {
			next.StuckIterations = s.StuckIterations + 1
		}
		if f.Status == StatusConvergedSuccess {
			next.SuccessIterations = s.SuccessIterations + 1
		}
	}
	fail := func(err error) (State, hook.Output, error) {
		return s, hook.Output{}, fmt.Errorf("loop stop hook: %w", err)
	}

	var warning string
	if f.TrackerErr != nil {
		var err error
		if warning, err = t.Render(templates.LoopTrackerError, Vars(next, f, t)); err != nil {
			return fail(err)
		}
	}

	signal := completion(s, f)
	if signal != "" && (!s.RequireChecks || checksPassed(f)) {
		next.Active, next.Outcome = false, Done
		vars := Vars(next, f, t)
		vars["completed_by"] = signal
		result := templates.LoopChecksNotRequired
		if s.RequireChecks {
			result = templates.LoopChecksResultPassed
		}
		var err error
		if vars["checks_result"], err = t.Render(result, nil); err != nil {
			return fail(err)
		}
		msg, err := t.Render(templates.LoopDone, vars)
		if err != nil {
			return fail(err)
		}
		return next, hook.Output{SystemMessage: joinLines(warning, msg)}, nil
	}

	if f.EndOnConverged && !s.RequireChecks && f.Status == StatusConvergedSuccess && next.SuccessIterations >= max(1, f.ConvergedStreak) {
		next.Active, next.Outcome = false, Converged
		msg, err := t.Render(templates.LoopConverged, Vars(next, f, t))
		if err != nil {
			return fail(err)
		}
		return next, hook.Output{SystemMessage: joinLines(warning, msg)}, nil
	}

	outcome, detail, err := spent(next, f, t)
	if err != nil {
		return fail(err)
	}
	if outcome != Running {
		next.Active, next.Outcome = false, outcome
		vars := Vars(next, f, t)
		vars["budget"] = string(outcome)
		vars["budget_detail"] = detail
		msg, err := t.Render(templates.LoopBudget, vars)
		if err != nil {
			return fail(err)
		}
		return next, hook.Output{SystemMessage: joinLines(warning, msg)}, nil
	}

	if f.StuckLimit > 0 && next.StuckIterations > f.StuckLimit {
		next.Active, next.Outcome = false, Stuck
		msg, err := t.Render(templates.LoopStuck, Vars(next, f, t))
		if err != nil {
			return fail(err)
		}
		return next, hook.Output{SystemMessage: joinLines(warning, msg)}, nil
	}

	next.Iteration++
	prompt, err := continuePrompt(next, f, t)
	if err != nil {
		return fail(err)
	}
	reason := prompt
	if signal != "" {
		// The agent said it was done; the checks say otherwise.
		vars := Vars(next, f, t)
		vars["completed_by"] = signal
		vars["loop_prompt"] = prompt
		if !f.ChecksConfigured || f.ChecksPassed == nil {
			if vars["checks_summary"], err = t.Render(templates.LoopChecksNone, vars); err != nil {
				return fail(err)
			}
		}
		if reason, err = t.Render(templates.LoopChecksFailed, vars); err != nil {
			return fail(err)
		}
		reason = tidy(reason)
	}
	out := hook.Block(reason)
	out.SystemMessage = warning
	return next, out, nil
}

// completion returns what signalled completion ("promise" or "tracker"), or
// "" for none.
func completion(s State, f Facts) string {
	switch {
	case f.LastAssistantMessage != nil:
		if PromiseKept(*f.LastAssistantMessage, s.CompletionPromise) {
			return "promise"
		}
	case f.TranscriptCaughtUp:
		if PromiseKept(f.TranscriptLastText, s.CompletionPromise) {
			return "promise"
		}
	}
	if f.TrackerErr == nil && f.TrackerComplete {
		return "tracker"
	}
	return ""
}

// isStuck reports whether status is one of the stuck ones: the loop is
// not getting anywhere with its current approach.
func isStuck(status string) bool {
	return status == StatusStuckPlateau || status == StatusThrashing
}

// statusEffect says what the convergence status means for the end of the
// loop s is about to run an iteration of: the paragraph under the status
// in the continuation prompt ("" when it means nothing for the end).
func statusEffect(s State, f Facts, t templates.Set) (string, error) {
	vars := map[string]string{}
	var name string
	switch {
	case f.Status == StatusConvergedSuccess && s.RequireChecks:
		name = templates.LoopEffectConvergedChecks
	case f.Status == StatusConvergedSuccess && f.EndOnConverged:
		// s is the state after the stop that measured the success, so the
		// streak already counts it.
		left := max(1, f.ConvergedStreak) - s.SuccessIterations
		name, vars["iterations_left"] = templates.LoopEffectConvergedStreak, iterations(t, max(1, left))
	case f.Status == StatusConvergedSuccess:
		name = templates.LoopEffectConverged
	case isStuck(f.Status) && f.StuckLimit > 0:
		// The run of stuck iterations passes the limit, which ends the
		// loop, at the stop that ends this iteration plus the limit less
		// the run so far.
		n := max(1, s.StuckIterations)
		name = templates.LoopEffectStuckLimit
		vars["stuck_run"], vars["end_iteration"] = iterations(t, n), strconv.Itoa(s.Iteration+f.StuckLimit-n)
	case isStuck(f.Status):
		name = templates.LoopEffectStuck
	default:
		return "", nil
	}
	return t.Render(name, vars)
}

// checksPassed reports whether the checks gate is open: checks are
// configured, ran, and passed. No result is not a pass.
func checksPassed(f Facts) bool {
	return f.ChecksConfigured && f.ChecksPassed != nil && *f.ChecksPassed
}

// continuePrompt renders the continuation prompt for the iteration s is on.
func continuePrompt(s State, f Facts, t templates.Set) (string, error) {
	vars := Vars(s, f, t)
	var err error
	if f.RolePrompt != "" {
		vars["role_prompt"] = clip(f.RolePrompt, maxRolePrompt)
	} else if name := RoleTemplate(vars["role"]); t.Source(name) != "" {
		if vars["role_prompt"], err = t.Render(name, vars); err != nil {
			return "", err
		}
	}
	if vars["status_effect"], err = statusEffect(s, f, t); err != nil {
		return "", err
	}
	sections := []struct {
		key, name string
		when      bool
	}{
		{"status_section", templates.LoopStatus, f.Status != ""},
		{"reflection_section", templates.LoopReflection, strings.TrimSpace(f.Reflection) != ""},
		{"checkpoint_section", templates.LoopCheckpoint, strings.TrimSpace(f.CheckpointConsensus) != ""},
		{"checkpoint_section", templates.LoopCheckpointPending, f.CheckpointDue && strings.TrimSpace(f.CheckpointConsensus) == ""},
	}
	for _, sec := range sections {
		if !sec.when {
			continue
		}
		if vars[sec.key], err = t.Render(sec.name, vars); err != nil {
			return "", err
		}
	}
	text, err := t.Render(templates.LoopContinue, vars)
	if err != nil {
		return "", err
	}
	return tidy(text), nil
}

// tidy collapses runs of blank lines to one: what the sections that have
// nothing to say leave behind in the continuation prompt. (No regexp: this
// package is linked into the hook client, which must start fast.)
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if blank {
				continue
			}
			blank, l = true, ""
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// Cancel is the user stopping the loop (`drover stop`): it turns inactive
// with the Cancelled outcome, keeping its counts for status. An inactive
// loop is returned as it is.
func Cancel(s State) State {
	if !s.Active {
		return s
	}
	s.Active, s.Outcome = false, Cancelled
	return s
}

// StartText returns what `/drover:loop` tells the agent once s was started:
// begin now, following the continuation prompt for the first iteration.
func StartText(s State, f Facts, t templates.Set) (string, error) {
	prompt, err := continuePrompt(s, f, t)
	if err != nil {
		return "", fmt.Errorf("loop start: %w", err)
	}
	vars := Vars(s, f, t)
	vars["loop_prompt"] = prompt
	text, err := t.Render(templates.LoopStart, vars)
	if err != nil {
		return "", fmt.Errorf("loop start: %w", err)
	}
	return text, nil
}

// ContextSnapshot returns the text that brings the agent back into an
// active loop after its context was compacted: the session, the iteration,
// where the notes are, the open findings of the last checkpoint review
// (f.OpenFindings), and the continuation prompt (task, role, last status,
// last reflection). Facts may be partial here: a missing role or
// status is taken from what the last Stop saw. It is empty for an inactive
// loop. The caller hands it to the agent as SessionStart(compact) context,
// and may print it from PreCompact to steer what the summary keeps.
func ContextSnapshot(s State, f Facts, t templates.Set) (string, error) {
	if !s.Active {
		return "", nil
	}
	if f.Role == "" {
		f.Role = s.LastRole
	}
	if f.Status == "" {
		f.Status, f.StatusReason = s.LastStatus, s.LastStatusReason
	}
	prompt, err := continuePrompt(s, f, t)
	if err != nil {
		return "", fmt.Errorf("loop context snapshot: %w", err)
	}
	vars := Vars(s, f, t)
	vars["loop_prompt"] = prompt
	if strings.TrimSpace(f.OpenFindings) != "" {
		if vars["findings_section"], err = t.Render(templates.LoopOpenFindings, vars); err != nil {
			return "", fmt.Errorf("loop context snapshot: %w", err)
		}
	}
	text, err := t.Render(templates.LoopCompact, vars)
	if err != nil {
		return "", fmt.Errorf("loop context snapshot: %w", err)
	}
	return tidy(text), nil
}

// CheckpointDue reports whether a checkpoint review falls due now that s,
// as Stop returned it, is about to run its iteration: once every
// CheckpointEvery finished iterations. The actor starts the reviewers on
// it; their consensus comes back in Facts.CheckpointConsensus.
func CheckpointDue(s State) bool {
	done := s.Iteration - 1
	return s.Active && s.CheckpointEvery > 0 && done > 0 && done%s.CheckpointEvery == 0
}

// RoleTemplate is the name of the template holding role's instructions.
func RoleTemplate(role string) string { return templates.RolePrefix + role }

// TrackerView returns the tracker file for s with body as its body: the
// front matter mirrors s, so the agent (and the user) can read where the
// loop stands. The actor writes it after every decision, keeping the body
// the agent wrote; TrackerBody gives the first one.
func TrackerView(s State, body string) tracker.Tracker {
	return tracker.Tracker{
		Iteration:         s.Iteration,
		MaxIterations:     s.MaxIterations,
		CompletionMarker:  tracker.DefaultCompletionMarker,
		Active:            s.Active,
		StartedAt:         s.StartedAt,
		Prompt:            s.Prompt,
		CompletionPromise: s.CompletionPromise,
		MaxMinutes:        s.MaxMinutes,
		MaxUSD:            s.MaxUSD,
		CheckpointEvery:   s.CheckpointEvery,
		RequireChecks:     s.RequireChecks,
		Role:              s.LastRole,
		Status:            s.LastStatus,
		StatusReason:      s.LastStatusReason,
		Body:              body,
	}
}

// TrackerBody returns the first body of a new loop's tracker.
func TrackerBody(s State, f Facts, t templates.Set) (string, error) {
	text, err := t.Render(templates.LoopTracker, Vars(s, f, t))
	if err != nil {
		return "", fmt.Errorf("loop tracker body: %w", err)
	}
	return text + "\n", nil
}

// Vars returns the template placeholders for s and f:
//
//	session_id, tracker_path, prompt, iteration, max_iterations,
//	completion_promise, completion_marker, started_at (RFC 3339, UTC),
//	elapsed_minutes, max_minutes, cost_usd, max_usd (dollars, 2 places),
//	spent_usd ("$1.25", or "unknown" while nothing was reported),
//	budgets (a one-line summary of the budgets in force),
//	require_checks (yes or no), checks_summary,
//	role (the routed role, else the last, else developer),
//	agent_name (Facts.AgentName, else drover:<role> for a shipped role),
//	status, status_reason, stuck_iterations (the run of stuck
//	iterations), stuck_limit, reflection, checkpoint_consensus,
//	open_findings, tracker_error.
//
// Free text from other packages is clipped to keep the prompt within the
// hook output cap. The composed pieces (role_prompt, the *_section ones,
// status_effect (what the status means for the loop's end), loop_prompt,
// completed_by, checks_result, budget, budget_detail) are set
// by the decision that needs them (findings_section by ContextSnapshot),
// and are empty here.
//
// t words the small pieces (budgets, spent_usd, require_checks); a set
// that lacks one of them gets the built-in, so that Vars cannot fail.
func Vars(s State, f Facts, t templates.Set) map[string]string {
	role := f.Role
	if role == "" {
		role = s.LastRole
	}
	if role == "" {
		role = RoleDeveloper
	}
	agent := f.AgentName
	if agent == "" && (role == RoleDeveloper || role == RoleDebugger || role == RoleArchitect) {
		agent = "drover:" + role
	}
	started := ""
	if !s.StartedAt.IsZero() {
		started = s.StartedAt.UTC().Format(time.RFC3339)
	}
	requireChecks := say(t, templates.LoopNo, nil)
	if s.RequireChecks {
		requireChecks = say(t, templates.LoopYes, nil)
	}
	trackerErr := ""
	if f.TrackerErr != nil {
		trackerErr = clip(f.TrackerErr.Error(), maxTrackerError)
	}
	return map[string]string{
		"session_id":           f.SessionID,
		"tracker_path":         f.TrackerPath,
		"prompt":               s.Prompt,
		"iteration":            strconv.Itoa(s.Iteration),
		"max_iterations":       strconv.Itoa(s.MaxIterations),
		"completion_promise":   s.CompletionPromise,
		"completion_marker":    tracker.DefaultCompletionMarker,
		"started_at":           started,
		"elapsed_minutes":      strconv.Itoa(elapsedMinutes(s, f.Now)),
		"max_minutes":          strconv.Itoa(s.MaxMinutes),
		"cost_usd":             dollars(max(s.CostUSD, f.CostUSD)),
		"spent_usd":            formatSpend(t, max(s.CostUSD, f.CostUSD)),
		"max_usd":              dollars(s.MaxUSD),
		"budgets":              budgets(s, f, t),
		"require_checks":       requireChecks,
		"checks_summary":       clip(f.ChecksSummary, maxChecks),
		"role":                 role,
		"agent_name":           agent,
		"status":               f.Status,
		"status_reason":        clip(f.StatusReason, maxStatusReason),
		"reflection":           clip(f.Reflection, maxReflection),
		"checkpoint_consensus": clip(f.CheckpointConsensus, maxConsensus),
		"open_findings":        clip(f.OpenFindings, maxConsensus),
		"status_effect":        "",
		"stuck_iterations":     strconv.Itoa(s.StuckIterations),
		"stuck_limit":          strconv.Itoa(f.StuckLimit),
		"tracker_error":        trackerErr,
		"role_prompt":          "",
		"status_section":       "",
		"reflection_section":   "",
		"checkpoint_section":   "",
		"findings_section":     "",
	}
}

// elapsedMinutes is the whole minutes since s started, 0 when either time
// is unknown.
func elapsedMinutes(s State, now time.Time) int {
	if s.StartedAt.IsZero() || now.IsZero() || now.Before(s.StartedAt) {
		return 0
	}
	return int(now.Sub(s.StartedAt) / time.Minute)
}

func dollars(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// clip trims s and cuts it to at most n characters, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + " […]"
}

func joinLines(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
