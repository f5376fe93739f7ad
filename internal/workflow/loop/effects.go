package loop

import (
	"time"

	"github.com/drover-dev/drover/convergence"
)

// Effect is one thing a decision asks the session actor to do once the
// decision's Session is committed. Effects are data and idempotent: doing
// one twice (after a restart re-derived it with Pending) leaves the world as
// doing it once does.
type Effect interface{ loopEffect() }

// StartChecks runs the project's check command for Iteration in the
// background; its result comes back to ChecksDone. A run already going for
// the same iteration is kept.
type StartChecks struct {
	Iteration int
	Command   string
	Timeout   time.Duration
}

// StartMetrics runs the metric commands after Iteration in the background,
// replacing a run for another iteration; their results come back to
// MetricsDone.
type StartMetrics struct {
	Iteration int
	Commands  []string
	Timeout   time.Duration
}

// StartCheckpoint starts the checkpoint review of the work after
// Iteration with Prompt; its consensus comes back to CheckpointDone. A
// review already going for the same iteration is kept.
type StartCheckpoint struct {
	Iteration int
	Prompt    string
}

// CancelChecks, CancelMetrics and CancelCheckpoint end the background work
// of that kind, if any runs.
type (
	CancelChecks     struct{}
	CancelMetrics    struct{}
	CancelCheckpoint struct{}
)

// WriteTracker writes the tracker file with State's front matter (see
// TrackerView). The body is the file's own when it has one, else Body; with
// Fresh, Body replaces it (a new loop). A tracker that does not parse is
// left for the next Stop to quarantine and report.
type WriteTracker struct {
	State State
	Body  string
	Fresh bool
}

// WriteReflection writes reflections/iteration-N.json for the reflection.
type WriteReflection struct {
	Reflection convergence.Reflection
}

// SetAsideReflections renames a non-empty reflections folder (an earlier
// loop's) to reflections.<At>, so that a new loop's files are not mixed
// with the old ones.
type SetAsideReflections struct {
	At time.Time
}

func (StartChecks) loopEffect()         {}
func (StartMetrics) loopEffect()        {}
func (StartCheckpoint) loopEffect()     {}
func (CancelChecks) loopEffect()        {}
func (CancelMetrics) loopEffect()       {}
func (CancelCheckpoint) loopEffect()    {}
func (WriteTracker) loopEffect()        {}
func (WriteReflection) loopEffect()     {}
func (SetAsideReflections) loopEffect() {}
