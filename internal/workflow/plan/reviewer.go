package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/mdfence"
	"github.com/drover-dev/drover/templates"
)

// What the plan workflow says about its reviewer itself: a reviewer CLI
// that cannot start, the reviewer's own review, and the tool calls its CLI
// refused it.

// MissingReviewer is a reviewer CLI that cannot be started (Facts).
type MissingReviewer struct {
	// Command is the executable as configured ("claude", or the first
	// word of review.command), Key the config key that names it
	// (review.cli or review.command), and Reason why it cannot start.
	Command, Key, Reason string
}

// reviewerMissing decides a stop whose review of kind cannot start because
// its reviewer CLI is missing: no review starts and none stays in flight,
// the plan does not move, and the stop falls through to the folder rules
// with a message for the user that names the CLI and its config key. The
// seed allows the stop when its reviewer CLI fails.
func reviewerMissing(s State, f Facts, t templates.Set, kind Kind) (decision, error) {
	d := decision{state: s}
	d.state.Review = nil
	var err error
	if d.out, err = validation(f, t); err != nil {
		return d, err
	}
	v := vars(s, f, t, kind)
	m := f.ReviewerMissing
	v["command"], v["key"], v["reason"] = strconv.Quote(m.Command), m.Key, m.Reason
	msg, err := t.Render(templates.PlanReviewerMissing, v)
	if err != nil {
		return d, err
	}
	d.warn(msg)
	return d, nil
}

// addReviewVars adds to v what the review file says of the reviewer beside
// its verdict: review (its own write-up under a heading, then a blank line;
// empty when it wrote none) and denials (the tool calls its CLI refused,
// one a line, then a blank line; empty when there were none).
func addReviewVars(v map[string]string, t templates.Set, o ReviewOutcome) {
	v["review"], v["denials"] = "", ""
	if text := strings.TrimSpace(o.Review); text != "" {
		text = closeFences(text)
		v["review"] = strings.TrimRight(say(t, templates.PlanReviewText, map[string]string{"review": text}), "\n") + "\n\n"
	}
	if len(o.Denials) > 0 {
		var b strings.Builder
		for _, dn := range o.Denials {
			fmt.Fprintf(&b, "- %s\n", dn.Markdown())
		}
		dv := map[string]string{"denials": strings.TrimRight(b.String(), "\n"), "denial_count": strconv.Itoa(len(o.Denials))}
		v["denials"] = strings.TrimRight(say(t, templates.PlanReviewDenials, dv), "\n") + "\n"
	}
}

// closeFences closes a code fence the reviewer left open (a write-up cut
// at reviewer.MaxReviewBytes, say), which would otherwise swallow the
// findings that follow it in the review file.
func closeFences(text string) string {
	if f, open := mdfence.Unclosed(text); open {
		return text + "\n" + f.String()
	}
	return text
}

// reportDenials tells, of the answer o to the review in flight in s, the
// tool calls the reviewer's CLI refused it: to the agent after the block
// reason when d blocks (it acts on the review), else to the user after the
// message (who looks over the work now). Nothing when there were none.
func (d *decision) reportDenials(s State, f Facts, t templates.Set, o ReviewOutcome) error {
	if len(o.Denials) == 0 || s.Review == nil {
		return nil
	}
	v := answerVars(s, f, t, *s.Review, o)
	list := make([]string, 0, len(o.Denials))
	for _, dn := range o.Denials {
		list = append(list, dn.Markdown())
	}
	v["denials"], v["denial_count"] = strings.Join(list, "; "), strconv.Itoa(len(o.Denials))
	note, err := t.Render(templates.PlanReviewerDenied, v)
	if err != nil {
		return err
	}
	if d.out.IsBlock() {
		d.out.Reason += "\n\n" + note
		return nil
	}
	d.warn(note)
	return nil
}
