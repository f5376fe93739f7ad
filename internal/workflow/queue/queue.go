package queue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/templates"
)

// Stop decides a Stop hook: whether the agent may stop, and the session's
// next state. It follows seed 000 step by step:
//
//   - off (or no state): allow, unchanged; an off session never counts an
//     iteration.
//   - otherwise the iteration is counted first, and past f.MaxIterations
//     the queue turns off and the stop is allowed, with a message for the
//     user. Iteration == MaxIterations still runs.
//   - on: uncommitted changes (when f.GitCommitCheck) block with the commit
//     message; a pending task blocks with the loop prompt; an empty queue
//     moves to review and blocks with the review instructions.
//   - review: tasks the review added move back to on and block with the
//     loop prompt; none means the work is done: off, allow.
//
// On error the returned Session is s, unchanged, so that nothing half
// decided is persisted.
func Stop(s Session, f Facts, t templates.Set) (Session, hook.Output, error) {
	if !s.Active() {
		return s, hook.Output{}, nil
	}
	next := s
	next.Iteration++
	vars, err := Vars(next, f, t)
	if err != nil {
		return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
	}

	if next.Iteration > f.MaxIterations {
		next.State = Off
		msg, err := t.Render(templates.MaxIterations, vars)
		if err != nil {
			return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
		}
		return next, hook.Output{SystemMessage: msg}, nil
	}

	var name string
	switch next.State {
	case On:
		switch {
		case f.GitCommitCheck && f.Dirty:
			name = templates.Uncommitted
		case len(f.Pending) > 0:
			reason, err := loopPrompt(t, vars)
			if err != nil {
				return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
			}
			return next, hook.Block(reason), nil
		default:
			next.State = Review
			vars["state"] = string(Review)
			if vars["review_prompt"], err = t.Render(templates.Review, vars); err != nil {
				return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
			}
			name = templates.ReviewStart
		}
	case Review:
		if len(f.Pending) == 0 {
			next.State = Off
			return next, hook.Output{}, nil
		}
		next.State = On
		vars["state"] = string(On)
		if vars["loop_prompt"], err = loopPrompt(t, vars); err != nil {
			return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
		}
		name = templates.ReviewFound
	}
	reason, err := t.Render(name, vars)
	if err != nil {
		return s, hook.Output{}, fmt.Errorf("stop hook: %w", err)
	}
	return next, hook.Block(reason), nil
}

// loopPrompt renders the loop prompt for vars. Seed 000's Stop hook always
// follows the loop prompt with "Next task: <path>"; the built-in template
// ends with that line, but a project's override need not name the task at
// all, and an agent told to "work on the next task" without its path cannot.
// So when the rendered prompt does not contain the next task's path, the
// seed's line is added.
func loopPrompt(t templates.Set, vars map[string]string) (string, error) {
	text, err := t.Render(templates.Loop, vars)
	if err != nil {
		return "", err
	}
	if next := vars["next_task"]; next != "" && !strings.Contains(text, next) {
		line, err := t.Render(templates.QueueNextTask, vars)
		if err != nil {
			return "", err
		}
		text = strings.TrimRight(text, "\n") + "\n\n" + line
	}
	return text, nil
}

// UserPromptSubmit decides a UserPromptSubmit hook: for an active queue it
// adds context naming the stuck tasks (the user's prompt may be the help they
// need) and where the queue stands. An inactive queue adds nothing.
func UserPromptSubmit(s Session, f Facts, t templates.Set) (hook.Output, error) {
	if !s.Active() {
		return hook.Output{}, nil
	}
	vars, err := Vars(s, f, t)
	if err != nil {
		return hook.Output{}, fmt.Errorf("user-prompt-submit hook: %w", err)
	}
	var names []string
	if len(f.Stuck) > 0 {
		names = append(names, templates.StuckReminder)
	}
	switch {
	case s.State == On && len(f.Pending) > 0:
		names = append(names, templates.Context)
	case s.State == Review:
		names = append(names, templates.ReviewContext)
	}
	if len(names) == 0 {
		return hook.Output{}, nil
	}
	parts := make([]string, 0, len(names))
	for _, name := range names {
		text, err := t.Render(name, vars)
		if err != nil {
			return hook.Output{}, fmt.Errorf("user-prompt-submit hook: %w", err)
		}
		parts = append(parts, text)
	}
	return hook.Context(hook.UserPromptSubmit, strings.Join(parts, "\n")), nil
}

// CompactContext returns the text that brings an agent back into the queue
// after its context was compacted: the session, its state and counts, and
// the loop prompt (on, with a task pending) or the review prompt (review).
// It is empty for an inactive queue. The caller hands it to the agent as
// SessionStart(compact) context, and as PreCompact output to steer what the
// summary keeps.
func CompactContext(s Session, f Facts, t templates.Set) (string, error) {
	if !s.Active() {
		return "", nil
	}
	vars, err := Vars(s, f, t)
	if err != nil {
		return "", fmt.Errorf("compact context: %w", err)
	}
	var instr string
	switch {
	case s.State == On && len(f.Pending) > 0:
		instr, err = loopPrompt(t, vars)
	case s.State == Review:
		instr, err = t.Render(templates.Review, vars)
	}
	if err != nil {
		return "", fmt.Errorf("compact context: %w", err)
	}
	vars["instructions"] = instr
	text, err := t.Render(templates.Compact, vars)
	if err != nil {
		return "", fmt.Errorf("compact context: %w", err)
	}
	return text, nil
}

// Start is `drover start`: it turns the queue on at iteration 0. It is an
// error when no task is pending, since the first Stop would go straight to
// review with nothing done.
func Start(s Session, f Facts, t templates.Set) (Session, error) {
	if len(f.Pending) == 0 {
		return s, noPending(f, t)
	}
	s.State = On
	s.Iteration = 0
	return s, nil
}

// StartText returns what `drover start` (and `drover do`) tells the agent
// once s was started: begin the next task, following the loop prompt.
func StartText(s Session, f Facts, t templates.Set) (string, error) {
	if len(f.Pending) == 0 {
		return "", noPending(f, t)
	}
	vars, err := Vars(s, f, t)
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	if vars["loop_prompt"], err = loopPrompt(t, vars); err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	text, err := t.Render(templates.Start, vars)
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	return text, nil
}

// noPending is the refusal of a start with no task pending.
func noPending(f Facts, t templates.Set) error {
	text, err := t.Render(templates.QueueNoPending, map[string]string{"session_dir": f.SessionDir})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return errors.New(text)
}

// StopCommand is `drover stop`: the queue turns off, keeping its iteration
// count for status.
func StopCommand(s Session) Session {
	s.State = Off
	return s
}

// MaxListed bounds how many files a list placeholder names. Hook output is
// capped (10,000 characters for a block reason); past this the list ends
// with a count and the session directory holds the rest.
const MaxListed = 30

// Vars returns the template placeholders for s and f:
//
//	session_id, session_dir, state, iteration, max_iterations,
//	pending_count, done_count, stuck_count,
//	next_task (the first pending task, or empty),
//	next_task_done, next_task_stuck (what next_task is renamed to),
//	pending_files, done_files, dirty_files (one "- path" line each),
//	stuck_files (comma-separated, as the stuck reminder lists them).
//
// The composed prompts (loop_prompt, review_prompt, instructions) are added
// by the decision that needs them. Only a template that does not render
// (an unknown name) is an error.
func Vars(s Session, f Facts, t templates.Set) (map[string]string, error) {
	state := s.State
	if state == "" {
		state = Off
	}
	v := map[string]string{
		"session_id":      f.SessionID,
		"session_dir":     f.SessionDir,
		"state":           string(state),
		"iteration":       strconv.Itoa(s.Iteration),
		"max_iterations":  strconv.Itoa(f.MaxIterations),
		"pending_count":   strconv.Itoa(len(f.Pending)),
		"done_count":      strconv.Itoa(len(f.Done)),
		"stuck_count":     strconv.Itoa(len(f.Stuck)),
		"next_task":       "",
		"next_task_done":  "",
		"next_task_stuck": "",
	}
	dirs := map[string]string{"session_dir": f.SessionDir}
	lists := []struct {
		key        string
		paths      []string
		none, more string
	}{
		{"pending_files", f.Pending, templates.QueueListNone, templates.QueueMoreFiles},
		{"done_files", f.Done, templates.QueueListNone, templates.QueueMoreFiles},
		{"dirty_files", f.DirtyFiles, templates.QueueDirtyNone, templates.QueueMoreDirty},
	}
	for _, l := range lists {
		var err error
		if v[l.key], err = bullets(l.paths, t, l.none, l.more, dirs); err != nil {
			return nil, err
		}
	}
	var err error
	if v["stuck_files"], err = commaList(f.Stuck, t); err != nil {
		return nil, err
	}
	if len(f.Pending) > 0 {
		next := f.Pending[0]
		base := strings.TrimSuffix(next, ".md")
		v["next_task"] = next
		v["next_task_done"] = base + ".done.md"
		v["next_task_stuck"] = base + ".stuck.md"
	}
	return v, nil
}

// bullets lists paths one per line, at most MaxListed, then the line of
// template more for the rest; template none is the line of an empty list.
func bullets(paths []string, t templates.Set, none, more string, vars map[string]string) (string, error) {
	if len(paths) == 0 {
		text, err := t.Render(none, vars)
		return "- " + text, err
	}
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i == MaxListed {
			text, err := t.Render(more, withCount(vars, len(paths)-MaxListed))
			if err != nil {
				return "", err
			}
			b.WriteString("- " + text)
			break
		}
		b.WriteString("- ")
		b.WriteString(p)
	}
	return b.String(), nil
}

func commaList(paths []string, t templates.Set) (string, error) {
	if len(paths) <= MaxListed {
		return strings.Join(paths, ", "), nil
	}
	more, err := t.Render(templates.QueueMoreInline, withCount(nil, len(paths)-MaxListed))
	if err != nil {
		return "", err
	}
	return strings.Join(append(paths[:MaxListed:MaxListed], more), ", "), nil
}

// withCount is vars and count, in a new map.
func withCount(vars map[string]string, n int) map[string]string {
	out := map[string]string{"count": strconv.Itoa(n)}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// NeedsGit reports whether a Stop of s decides on the work tree's
// uncommitted changes (Facts.Dirty), so whether the caller must ask git:
// only the on state has the gate, and only when the project keeps it
// (queue.git_commit_check).
func NeedsGit(s Session, gitCommitCheck bool) bool { return gitCommitCheck && s.State == On }
