package run

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// AgentPlaceholders are what an agent command template may hold.
var AgentPlaceholders = []string{"prompt", "task", "iteration", "run", "worktree"}

// testPlaceholders are what a test command may hold: the task's targeted
// tests.
var testPlaceholders = []string{"packages"}

// Options fills in the defaults of a run's options from the run.*
// configuration and checks its command templates and budgets; t words the
// refusals.
func Options(o api.RunOptions, c config.Run, t templates.Set) (api.RunOptions, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = max(c.Concurrency, 1)
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = max(c.MaxIterations, 1)
	}
	if strings.TrimSpace(o.Agent) == "" {
		o.Agent = strings.TrimSpace(c.Agent)
	}
	if strings.TrimSpace(o.TestCommand) == "" {
		o.TestCommand = c.TestCommand
	}
	if strings.TrimSpace(o.SuiteCommand) == "" {
		o.SuiteCommand = c.SuiteCommand
	}
	if o.IterationTimeout <= 0 {
		o.IterationTimeout = c.IterationTimeout
	}
	if o.LimitRetries <= 0 {
		o.LimitRetries = c.LimitRetries
	}
	// A local run's options stay as they were before executors: only
	// another executor is written down.
	if o.Executor == "" && c.Executor != executor.Local {
		o.Executor = c.Executor
	}
	if o.Executor == executor.NATS && o.NATS == "" {
		o.NATS = c.NATS.URL
	}
	if err := checkExecutor(o); err != nil {
		return o, err
	}
	if o.TaskMaxUSD <= 0 && strings.TrimSpace(c.TaskMaxUSD) != "" {
		v, err := c.TaskMax()
		if err != nil {
			return o, fmt.Errorf("run.task_max_usd: %w", err)
		}
		o.TaskMaxUSD = v
	}
	if !c.Review && strings.TrimSpace(o.Reviewer) == "" {
		o.NoReview = true
	}
	if o.NoReview && strings.TrimSpace(o.Reviewer) != "" {
		return o, errors.New(say(t, templates.RunOptionsReviewerAndNoReview, nil))
	}
	for _, b := range []struct {
		name string
		v    float64
	}{{"task max minutes", o.TaskMaxMinutes}, {"task max usd", o.TaskMaxUSD}, {"max minutes", o.MaxMinutes}, {"max usd", o.MaxUSD}} {
		if b.v < 0 || math.IsNaN(b.v) || math.IsInf(b.v, 0) {
			return o, errors.New(say(t, templates.RunOptionsNotABudget, map[string]string{"option": b.name, "value": fmt.Sprint(b.v)}))
		}
	}
	if _, err := ReviewerCommand(o.Reviewer); err != nil {
		return o, err
	}
	if o.Agent != "" {
		if _, err := Expand(o.Agent, placeholderValues(AgentPlaceholders), nil); err != nil {
			return o, fmt.Errorf("agent %q: %w", o.Agent, err)
		}
		// A CLI's name with a colon is a named agent (agentrun.Named):
		// one it cannot read is a mistake, not a command to run.
		if cli, _, ok := strings.Cut(strings.TrimSpace(o.Agent), ":"); ok && !strings.ContainsAny(cli, " \t/") {
			_, _, known := agentrun.Named(cli)
			if _, _, named := agentrun.Named(o.Agent); !named && known {
				return o, fmt.Errorf("agent %q: a named agent is %s, %s or %s, optionally with :MODEL (one word)", o.Agent, agentrun.AgentClaude, agentrun.AgentCodex, agentrun.AgentGemini)
			}
		}
	}
	for _, c := range []struct {
		name, cmd string
		known     []string
	}{{"test command", o.TestCommand, testPlaceholders}, {"suite command", o.SuiteCommand, nil}} {
		if c.cmd == "" {
			continue
		}
		if err := checkPlaceholders(c.cmd, c.known); err != nil {
			return o, fmt.Errorf("%s %q: %w", c.name, c.cmd, err)
		}
	}
	return o, nil
}

// checkExecutor checks the executor options of a run: a known executor,
// and for nats a URL without credentials, which are the configuration's
// (run.nats.*): a run's options are stored with it.
func checkExecutor(o api.RunOptions) error {
	switch o.Executor {
	case "", executor.Local:
		return nil
	case executor.NATS:
	default:
		return fmt.Errorf("executor %q: not one of local, nats", o.Executor)
	}
	if strings.TrimSpace(o.NATS) == "" {
		return errors.New("executor nats: no NATS URL (drover run --nats URL, or run.nats.url)")
	}
	return config.CheckNATSURL(o.NATS)
}

// NewSettings reads a run's settings from the configuration and its
// options: the loop's routing rules and convergence thresholds, built as a
// loop builds them, and the reviewer's models.
func NewSettings(cfg config.Config, o api.RunOptions) (Settings, error) {
	rules, err := loopconf.Routes(cfg.Loop)
	if err != nil {
		return Settings{}, fmt.Errorf("loop.routes: %w", err)
	}
	set := Settings{Rules: rules, Thresholds: loopconf.Thresholds(cfg.Loop), Review: !o.NoReview}
	if set.Review {
		set.Models = cfg.ReviewModels()
		if len(set.Models) == 0 {
			set.Models = reviewer.DefaultModels
		}
	}
	return set, nil
}

// ReviewerCommand parses the --reviewer option: nil for the configured
// reviewer or for "claude", else the argv of a custom command template
// (the reviewer runs without a shell).
func ReviewerCommand(opt string) ([]string, error) {
	switch opt = strings.TrimSpace(opt); opt {
	case "", reviewer.CLIClaude:
		return nil, nil
	}
	argv, err := argsplit.Split(opt)
	if err != nil {
		return nil, fmt.Errorf("reviewer command %q: %w", opt, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("reviewer command %q is empty", opt)
	}
	return argv, nil
}

func placeholderValues(keys []string) map[string][]string {
	m := make(map[string][]string, len(keys))
	for _, k := range keys {
		m[k] = []string{"x"}
	}
	return m
}

var placeholder = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// checkPlaceholders reports the placeholders of cmd that are not known.
func checkPlaceholders(cmd string, known []string) error {
	var unknown []string
	for _, m := range placeholder.FindAllStringSubmatch(cmd, -1) {
		if !containsString(known, m[1]) {
			unknown = append(unknown, m[0])
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown placeholder(s) %s", strings.Join(unknown, ", "))
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Expand splits an agent command template as a shell would (nothing
// expanded: the agent runs without a shell) and fills in its placeholders.
// A word that is exactly one placeholder becomes as many words as the
// placeholder has values; inside a longer word the values are joined with
// spaces. used, when not nil, records the placeholders met.
func Expand(tmpl string, vars map[string][]string, used map[string]bool) ([]string, error) {
	words, err := argsplit.Split(tmpl)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("the command is empty")
	}
	if placeholder.MatchString(words[0]) {
		return nil, fmt.Errorf("the executable %q must not hold a placeholder", words[0])
	}
	var unknown []string
	out := []string{words[0]}
	for _, w := range words[1:] {
		if m := placeholder.FindStringSubmatch(w); m != nil && m[0] == w {
			v, ok := vars[m[1]]
			if !ok {
				unknown = append(unknown, w)
				continue
			}
			if used != nil {
				used[m[1]] = true
			}
			out = append(out, v...)
			continue
		}
		out = append(out, placeholder.ReplaceAllStringFunc(w, func(s string) string {
			key := s[2 : len(s)-2]
			v, ok := vars[key]
			if !ok {
				unknown = append(unknown, s)
				return s
			}
			if used != nil {
				used[key] = true
			}
			return strings.Join(v, " ")
		}))
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown placeholder(s) %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

// AgentArgv is the command of a custom agent (--agent, run.agent) for one
// iteration; stdin says whether the prompt goes to its standard input,
// because the template does not place {{prompt}}.
func AgentArgv(tmpl, runID, taskID string, iteration int, dir, prompt string) (argv []string, stdin bool, err error) {
	vars := map[string][]string{
		"prompt": {prompt}, "task": {taskID}, "iteration": {strconv.Itoa(iteration)}, "run": {runID}, "worktree": {dir},
	}
	used := map[string]bool{}
	argv, err = Expand(tmpl, vars, used)
	if err != nil {
		return nil, false, fmt.Errorf("agent command %q: %w", tmpl, err)
	}
	return argv, !used["prompt"], nil
}

// SuiteCommand is the shell command of the run's suite: as the user wrote
// it, for `sh -c`.
func SuiteCommand(o api.RunOptions) (string, error) {
	if strings.TrimSpace(o.SuiteCommand) == "" {
		return "", errors.New("the suite command is empty")
	}
	if err := checkPlaceholders(o.SuiteCommand, nil); err != nil {
		return "", fmt.Errorf("suite command %q: %w", o.SuiteCommand, err)
	}
	return o.SuiteCommand, nil
}

// TestCommand is the shell command of a task's targeted tests, for
// `sh -c`: the test command as the user wrote it, its {{packages}} the
// tests, each quoted for the shell. A task with no targeted tests runs
// the suite instead.
func TestCommand(o api.RunOptions, tests []string) (string, error) {
	if len(tests) == 0 {
		return SuiteCommand(o)
	}
	if strings.TrimSpace(o.TestCommand) == "" {
		return "", errors.New("the test command is empty")
	}
	if err := checkPlaceholders(o.TestCommand, testPlaceholders); err != nil {
		return "", fmt.Errorf("test command %q: %w", o.TestCommand, err)
	}
	quoted := make([]string, len(tests))
	for i, t := range tests {
		quoted[i] = Quote(t)
	}
	return strings.ReplaceAll(o.TestCommand, "{{packages}}", strings.Join(quoted, " ")), nil
}

// GoTest says whether the run's test command is `go test` (the default),
// whose targeted tests are checked against the tree they run in; another
// runner reads them as written.
func GoTest(o api.RunOptions) bool {
	words := strings.Fields(o.TestCommand)
	return len(words) >= 2 && path.Base(words[0]) == "go" && words[1] == "test"
}

// Tests are the targeted tests of task t as the test command gets them;
// tree is the work tree they run in, read only when the test command is
// `go test`. Empty means none: the suite runs instead, unless the task
// says it has none (rungraph.Task.NoTests).
func Tests(o api.RunOptions, t rungraph.Task, tree fs.FS) []string {
	if !GoTest(o) {
		tree = nil
	}
	return rungraph.TargetedTests(t, tree)
}

// TaskTests is how a task's work is checked after each of its iterations,
// and what its agent is told to run.
type TaskTests struct {
	// Tests are the targeted tests as the test command gets them; empty
	// when the task has none.
	Tests []string
	// Command is the shell command run after each iteration, for `sh -c`:
	// the test command with Tests, or the suite for a task with nothing
	// narrower to test (Suite). It is empty for a task whose graph says
	// it has no tests (`tests: []`): nothing runs, and the wave's suite
	// checks its work.
	Command string
	// Suite says that Command is the run's suite.
	Suite bool
}

// TestsOf decides how task t is checked after each iteration; tree is as
// for Tests.
func TestsOf(o api.RunOptions, t rungraph.Task, tree fs.FS) (TaskTests, error) {
	if t.NoTests {
		return TaskTests{}, nil
	}
	tests := Tests(o, t, tree)
	cmd, err := TestCommand(o, tests)
	if err != nil {
		return TaskTests{}, err
	}
	return TaskTests{Tests: tests, Command: cmd, Suite: len(tests) == 0}, nil
}

// safeWord matches what the shell reads as one word as it is.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// Quote quotes s as one word for `sh -c`: as it is when nothing in it is
// special to the shell, else in single quotes.
func Quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CommandOutput is what the agent and the run's report read of a test or
// suite command that ran: the tail of its output, headed by why it failed
// (it ran out of time, or err, its exit status) when it did.
func CommandOutput(t templates.Set, timedOut bool, err error, timeout time.Duration, tail string) string {
	switch {
	case timedOut:
		return say(t, templates.RunCommandTimedOut, map[string]string{"timeout": timeout.String()}) + "\n" + tail
	case err != nil:
		return err.Error() + "\n" + tail
	}
	return tail
}
