package actors

// The process and git runners of the runs, and the reviewer they build from
// the configuration: kept apart from the run actor, for one runner of each
// kind (internal/proc) to replace.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/reviewer"
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
}

// newRunSettings reads a run's settings from the configuration and its
// options. The reviewer is the configured one (review.cli, review.command,
// review.models, review.timeout, review.budget_usd) unless the options
// turn it off or name another command; limiter caps the reviewer
// processes of the whole supervisor, and childTag (when set) goes in the
// environment of every reviewer, for the supervisor's watchdog.
func newRunSettings(cfg config.Config, o api.RunOptions, limiter *reviewer.Limiter, childTag string) (runSettings, error) {
	var set runSettings
	ws, err := run.NewSettings(cfg, o)
	if err != nil {
		return set, err
	}
	set.Settings = ws
	if o.NoReview {
		return set, nil
	}
	spec := &reviewer.Spec{CLI: cfg.Review.CLI, Timeout: cfg.Review.Timeout, Limiter: limiter, OwnerTag: childTag}
	argv, err := run.ReviewerCommand(o.Reviewer)
	switch {
	case err != nil:
		return set, err
	case argv != nil:
		spec.CLI, spec.Command = reviewer.CLICustom, argv
	case strings.TrimSpace(o.Reviewer) == reviewer.CLIClaude:
		spec.CLI = reviewer.CLIClaude
	case cfg.Review.CLI == reviewer.CLICustom:
		if spec.Command, err = argsplit.Split(cfg.Review.Command); err != nil {
			return set, fmt.Errorf("review.command %q: %w", cfg.Review.Command, err)
		}
		if len(spec.Command) == 0 {
			return set, errors.New("review.command is empty while review.cli is custom")
		}
	}
	if b := strings.TrimSpace(cfg.Review.BudgetUSD); b != "" {
		if spec.BudgetUSD, err = strconv.ParseFloat(b, 64); err != nil || spec.BudgetUSD < 0 {
			return set, fmt.Errorf("review.budget_usd %q is not a number of dollars", b)
		}
	}
	set.review = spec
	return set, nil
}

// describeReviewer says who reviews the run's tasks, for its status.
func (s runSettings) describeReviewer() string {
	if s.review == nil {
		return ""
	}
	who := s.review.CLI
	switch who {
	case "":
		who = reviewer.CLIClaude
	case reviewer.CLICustom:
		who = strings.Join(s.review.Command, " ")
	}
	models := strings.Join(s.Models, ", ")
	if len(s.Models) > 1 {
		models += " in turn"
	}
	return who + " (" + models + ")"
}

// commandTimeout bounds one test or suite command.
const commandTimeout = 30 * time.Minute

// maxTestOutput is how much of a test command's output (its end) is kept
// in the run's state and fed back to the agent.
const maxTestOutput = 4000

// runCommand runs argv in dir, without a shell, in its own process group
// (killed whole on timeout or cancel), keeping the end of its output.
// childTag, when set, goes in its environment, for the supervisor's
// watchdog: nothing else ends the group when the supervisor dies.
func runCommand(ctx context.Context, dir string, argv []string, childTag string) api.TestResult {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmdline := strings.Join(argv, " ")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if childTag != "" {
		cmd.Env = append(cmd.Environ(), childTag)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &tailBuffer{max: maxTestOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	res := api.TestResult{Command: cmdline, Passed: err == nil, Output: out.String(), At: time.Now()}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Output = fmt.Sprintf("timed out after %s\n%s", commandTimeout, res.Output)
	case err != nil:
		res.Output = fmt.Sprintf("%v\n%s", err, res.Output)
	}
	return res
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return "..." + string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
