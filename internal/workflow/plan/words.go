package plan

import (
	"errors"

	"github.com/drover-dev/drover/templates"
)

// words renders the plan's short texts (a violation, a problem, a name),
// keeping the first error so that code composing several of them checks
// once, at the end. Only an unknown template name fails to render.
type words struct {
	t   templates.Set
	err error
}

// say renders template name with vars, or returns "" once a render failed.
func (w *words) say(name string, vars map[string]string) string {
	if w.err != nil {
		return ""
	}
	text, err := w.t.Render(name, vars)
	if err != nil {
		w.err = err
		return ""
	}
	return text
}

// wordedError is an error worded by a template that still is err for
// errors.Is (a sentinel such as ErrNoTask).
type wordedError struct {
	text string
	err  error
}

func (e *wordedError) Error() string { return e.text }

func (e *wordedError) Unwrap() error { return e.err }

// sayErr is template name as an error; err, when not nil, is what it
// wraps.
func sayErr(t templates.Set, err error, name string, vars map[string]string) error {
	text := say(t, name, vars)
	if err == nil {
		return errors.New(text)
	}
	return &wordedError{text: text, err: err}
}

// reviewRunning is ErrReviewRunning in the words of t.
func reviewRunning(t templates.Set) error {
	return sayErr(t, ErrReviewRunning, templates.PlanRefuseReviewRunning, nil)
}

// say renders template name with vars for a piece of a larger text. Every
// name passed here is a built-in one, so when t lacks it (the zero Set of
// a test, say) the built-in stands in; the larger text's own render
// reports a set that cannot render.
func say(t templates.Set, name string, vars map[string]string) string {
	text, err := t.Render(name, vars)
	if err != nil {
		text, _ = templates.Defaults().Render(name, vars)
	}
	return text
}
