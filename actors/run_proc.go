package actors

// What the runs start besides their agents: the test and suite commands
// and git (through internal/proc), and the reviewer of their tasks (built
// by internal/reviewconf from the configuration, or from --reviewer).

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// runSettings is what a run reads of the configuration when it starts or
// resumes; a change to the configuration applies to the next run.
type runSettings struct {
	// Settings are what the run's workflow reads: the routing rules, the
	// convergence thresholds, the reviewer's models.
	run.Settings
	// review is the reviewer of every task, without its prompt and model;
	// nil when tasks are not reviewed.
	review *reviewer.Spec
	// exec is the run's executor; nil for the local one (runActor.executor).
	exec executor.Executor
	// connect makes exec as the run's actor begins (runActor.connect);
	// nil for the local executor.
	connect func() (executor.Executor, error)
}

// newRunSettings reads a run's settings from the configuration and its
// options (run.NewSettings, run.Reviewer). limiter caps the reviewer
// processes of the whole supervisor, and childTag (when set) goes in the
// environment of every reviewer, for the supervisor's watchdog.
func newRunSettings(cfg config.Config, o api.RunOptions, limiter *reviewer.Limiter, childTag string) (runSettings, error) {
	var set runSettings
	ws, err := run.NewSettings(cfg, o)
	if err != nil {
		return set, err
	}
	set.Settings = ws
	spec, err := run.Reviewer(cfg, o)
	if err != nil || spec == nil {
		return set, err
	}
	spec.Limiter, spec.OwnerTag = limiter, childTag
	set.review = spec
	return set, nil
}

// describeReviewer says who reviews the run's tasks, for its status.
func (s runSettings) describeReviewer() string { return run.DescribeReviewer(s.review, s.Models) }

// commandTimeout bounds one test or suite command.
const commandTimeout = 30 * time.Minute

// maxTestOutput is how much of a test command's output (its end) is kept
// in the run's state and fed back to the agent.
const maxTestOutput = 4000

// runUserCommand runs a command the user wrote (a test or suite command) as
// written, through `sh -c` in dir, as the loop's check command runs, and
// keeps the end of its output, which is what the agent needs (see
// run.CommandOutput; tmpl gives its texts). Its result
// names the command as the user wrote it. childTag, when set, goes in its
// environment, for the supervisor's watchdog: nothing else ends its
// process group when the supervisor dies.
func runUserCommand(ctx context.Context, tmpl templates.Set, dir, command, childTag string) api.TestResult {
	// Twice maxTestOutput, so that proc's tail (three quarters of its
	// cap) holds the whole end that is kept.
	res, err := proc.Shell(ctx, command, proc.Cmd{Dir: dir, OwnerTag: childTag, Combined: true, OutputCap: 2 * maxTestOutput, Timeout: commandTimeout})
	tail := lastBytes(res.Stdout.Bytes(), maxTestOutput)
	return api.TestResult{Command: command, Passed: err == nil, Output: run.CommandOutput(tmpl, res.TimedOut, err, commandTimeout, tail), At: time.Now()}
}

// lastBytes returns the last n bytes of b, from the start of a
// character, after "..." when that cut anything.
func lastBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := len(b) - n
	for cut < len(b) && !utf8.RuneStart(b[cut]) {
		cut++
	}
	return "..." + string(b[cut:])
}

// gitOut runs git in dir (proc.Git), bounded by ioTimeout, and returns its
// output without the surrounding white space (a ref, a count, a status),
// or nothing when it failed: a failed rev-parse still prints its argument.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	out, err := proc.Git(ctx, dir, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}
