package loop

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drover-dev/drover/templates"
)

// StartConfig is the project's configuration a loop's start decides on.
type StartConfig struct {
	// MaxIterations is loop.max_iterations: the budget of a loop started
	// without --max-iterations.
	MaxIterations int
	// CheckCommand is loop.check_command.
	CheckCommand string
}

// StartWith is `drover loop start` in a project configured as c: opts
// without --max-iterations get the project's default, and --require-checks
// is refused without a check command, since then no completion could ever
// be accepted and the loop would refuse every promise until a budget ran
// out. The rest is Start.
func StartWith(opts StartOptions, c StartConfig, now time.Time, t templates.Set) (State, error) {
	if opts.MaxIterations == 0 {
		opts.MaxIterations = c.MaxIterations
	}
	if opts.RequireChecks && strings.TrimSpace(c.CheckCommand) == "" {
		return State{}, refuse(t, templates.LoopNeedsCheckCommand, nil)
	}
	return Start(opts, now, t)
}

// ErrRefused is wrapped by the error of a command that the loop's rules
// refuse: the request is wrong, not the supervisor.
var ErrRefused = errors.New("loop command refused")

// Refusal is such an error; its text comes from templates.
type Refusal struct{ Text string }

func (e *Refusal) Error() string { return e.Text }

// Is makes a Refusal match ErrRefused.
func (e *Refusal) Is(target error) bool { return target == ErrRefused }

// refuse renders template name as a Refusal; a template that does not
// render is the supervisor's error, not the request's.
func refuse(t templates.Set, name string, vars map[string]string) error {
	text, err := t.Render(name, vars)
	if err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	return &Refusal{Text: text}
}
