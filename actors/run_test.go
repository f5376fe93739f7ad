package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/workflow/run"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

func TestAgentSpec(t *testing.T) {
	const tag = "DROVER_SUPERVISOR_RUN=abc"
	claude, err := agentSpec(api.RunOptions{}, "r1", "t1", 2, "/wt", "the prompt", tag)
	if err != nil || claude.Bin != "claude" || claude.Prompt != "the prompt" || !slices.Contains(claude.Args, "--dangerously-skip-permissions") || !slices.Contains(claude.Env, "DROVER_ITERATION=2") || !slices.Contains(claude.Env, tag) {
		t.Errorf("default agent: %+v, %v", claude, err)
	}
	custom, err := agentSpec(api.RunOptions{Agent: "my-agent --task {{task}} -p {{prompt}}"}, "r1", "t1", 1, "/wt", "hi", tag)
	if err != nil || custom.Bin != "my-agent" || custom.Prompt != "" || !slices.Equal(custom.Args, []string{"--task", "t1", "-p", "hi"}) || !slices.Contains(custom.Env, tag) {
		t.Errorf("custom agent with {{prompt}}: %+v, %v", custom, err)
	}
	last, err := agentSpec(api.RunOptions{Agent: "my-agent"}, "r1", "t1", 1, "/wt", "hi", "")
	if err != nil || last.Prompt != "hi" || len(last.Args) != 0 || len(last.Env) != 3 {
		t.Errorf("custom agent without {{prompt}} nor tag: %+v, %v", last, err)
	}
	for _, tc := range []struct {
		agent, bin string
		format     agentrun.Format
		args       []string
	}{
		{"codex", "codex", agentrun.FormatCodex, []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"}},
		{"codex:gpt-5-codex", "codex", agentrun.FormatCodex, []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", "--model", "gpt-5-codex"}},
		{" gemini ", "gemini", agentrun.FormatGemini, []string{"--output-format", "stream-json", "--approval-mode", "yolo", "--prompt"}},
		{"claude:opus", "claude", agentrun.FormatClaude, agentrun.ClaudeArgs("--dangerously-skip-permissions", "--model", "opus")},
	} {
		got, err := agentSpec(api.RunOptions{Agent: tc.agent}, "r1", "t1", 1, "/wt", "hi", tag)
		if err != nil || got.Bin != tc.bin || got.Format != tc.format || !slices.Equal(got.Args, tc.args) || got.Prompt != "hi" || got.Dir != "/wt" || !slices.Contains(got.Env, tag) || !slices.Contains(got.Env, "DROVER_TASK_ID=t1") {
			t.Errorf("agent %q: %+v, %v", tc.agent, got, err)
		}
		if tc.format != agentrun.FormatClaude && (got.Price == nil || got.Price("gpt-5-codex", 1e6, 0, 0) != 1.25) {
			t.Errorf("agent %q: its tokens are not priced", tc.agent)
		}
	}
}

// The test and suite commands carry the supervisor's tag, for its
// watchdog, and only when there is one.
func TestRunCommandCarriesTheTag(t *testing.T) {
	const tag = "DROVER_SUPERVISOR_RUN=abc"
	for _, want := range []string{tag, ""} {
		command := `printf '%s' "${DROVER_SUPERVISOR_RUN+DROVER_SUPERVISOR_RUN=$DROVER_SUPERVISOR_RUN}"`
		if got := runUserCommand(context.Background(), templates.Defaults(), t.TempDir(), command, want); !got.Passed || got.Output != want {
			t.Errorf("runUserCommand with tag %q: %+v", want, got)
		}
	}
}

func TestRunSettings(t *testing.T) {
	limiter := reviewer.NewLimiter(1)
	withConfig := func(f func(*config.Config)) config.Config {
		c := config.Defaults()
		f(&c)
		return c
	}
	cases := []struct {
		name    string
		cfg     config.Config
		opts    api.RunOptions
		cli     string
		command []string
		models  []string
		budget  float64
		plateau int
		thrash  int
		desc    string
		wantErr string
	}{
		{name: "the configured reviewer", cfg: config.Defaults(), cli: reviewer.CLIClaude, models: []string{"opus", "sonnet"}, plateau: 3, thrash: 3, desc: "claude (opus, sonnet in turn)"},
		{name: "no review", cfg: config.Defaults(), opts: api.RunOptions{NoReview: true}, plateau: 3, thrash: 3},
		{
			name: "review and loop config",
			cfg: withConfig(func(c *config.Config) {
				c.Review.Models, c.Review.BudgetUSD, c.Loop.PlateauWindow, c.Loop.ThrashRepeats = "sonnet", "0.5", 5, 4
			}),
			cli: reviewer.CLIClaude, models: []string{"sonnet"}, budget: 0.5, plateau: 5, thrash: 4, desc: "claude (sonnet)",
		},
		{
			name: "custom review.cli",
			cfg: withConfig(func(c *config.Config) {
				c.Review.CLI, c.Review.Command = reviewer.CLICustom, "my-rev --model {{model}} {{prompt}}"
			}),
			cli: reviewer.CLICustom, command: []string{"my-rev", "--model", "{{model}}", "{{prompt}}"}, models: []string{"opus", "sonnet"}, plateau: 3, thrash: 3,
			desc: "my-rev --model {{model}} {{prompt}} (opus, sonnet in turn)",
		},
		{
			name: "--reviewer claude over a custom review.cli",
			cfg: withConfig(func(c *config.Config) {
				c.Review.CLI, c.Review.Command = reviewer.CLICustom, "my-rev {{prompt}}"
			}),
			opts: api.RunOptions{Reviewer: "claude"}, cli: reviewer.CLIClaude, models: []string{"opus", "sonnet"}, plateau: 3, thrash: 3, desc: "claude (opus, sonnet in turn)",
		},
		{name: "--reviewer command", cfg: config.Defaults(), opts: api.RunOptions{Reviewer: "rev --json {{prompt}}"}, cli: reviewer.CLICustom, command: []string{"rev", "--json", "{{prompt}}"}, models: []string{"opus", "sonnet"}, plateau: 3, thrash: 3, desc: "rev --json {{prompt}} (opus, sonnet in turn)"},
		{name: "broken --reviewer", cfg: config.Defaults(), opts: api.RunOptions{Reviewer: "rev 'x"}, wantErr: "quote"},
		{name: "broken budget", cfg: withConfig(func(c *config.Config) { c.Review.BudgetUSD = "lots" }), wantErr: "review.budget_usd"},
		{name: "broken routes", cfg: withConfig(func(c *config.Config) { c.Loop.Routes = "status=x ->" }), wantErr: "loop.routes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := newRunSettings(c.cfg, c.opts, limiter, "DROVER_SUPERVISOR_RUN=abc")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.Thresholds.PlateauWindow != c.plateau || set.Thresholds.ThrashRepeats != c.thrash || set.Thresholds.SuccessPassRate == 0 {
				t.Errorf("thresholds %+v, want plateau %d thrash %d and the other defaults", set.Thresholds, c.plateau, c.thrash)
			}
			if got := set.describeReviewer(); got != c.desc {
				t.Errorf("describeReviewer() = %q, want %q", got, c.desc)
			}
			if c.cli == "" {
				if set.review != nil {
					t.Errorf("review %+v, want none", set.review)
				}
				return
			}
			r := set.review
			if r == nil || r.CLI != c.cli || !slices.Equal(r.Command, c.command) || r.BudgetUSD != c.budget || r.Timeout != c.cfg.Review.Timeout || r.Limiter != limiter || r.OwnerTag != "DROVER_SUPERVISOR_RUN=abc" {
				t.Errorf("review %+v; want CLI %s, command %q, budget %v, timeout %s, the shared limiter and the supervisor's tag", r, c.cli, c.command, c.budget, c.cfg.Review.Timeout)
			}
			if !slices.Equal(set.Models, c.models) {
				t.Errorf("models %q, want %q", set.Models, c.models)
			}
		})
	}
}

func TestRunHeartbeatSavesQuietAgent(t *testing.T) {
	root := benchRepo(t)
	db := openRunStore(t, root)
	st := &endedStore{RunStore: db, ended: make(chan api.Run, 1)}
	cfg := config.Defaults()
	env := RunsEnv{Store: st, Root: root, Config: func() config.Config { return cfg }, Heartbeat: 5 * time.Millisecond}
	system, pid := startRunsActor(t, env)
	// The agent prints nothing until it is told to stop: only the
	// heartbeat saves the run meanwhile.
	stop := filepath.Join(t.TempDir(), "stop")
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o644) }) // should the test fail early
	req := api.StartRunRequest{
		File:  "quiet.yaml",
		Graph: "tasks:\n  - {id: quiet, description: Say nothing., tests: [x]}\n",
		Options: api.RunOptions{
			Concurrency: 1, MaxIterations: 1, NoReview: true,
			Agent:       `sh -c 'while [ ! -f "$0" ]; do sleep 0.01; done' '` + stop + `'`,
			TestCommand: "true {{packages}}", SuiteCommand: "true",
		},
	}
	res, err := system.Root.RequestFuture(pid, &StartRun{Request: req}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	rr := res.(*RunReply)
	if rr.Err != nil {
		t.Fatal(rr.Err)
	}
	var saves int64
	var updated time.Time
	var state api.RunState
	saved := eventually.Holds(30*time.Second, func() bool {
		run, _, err := db.LoadRun(context.Background(), rr.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		state = run.State
		if run.Tasks[0].State == api.TaskRunning {
			if saves == 0 {
				saves, updated = st.saves.Load(), run.UpdatedAt
			} else if st.saves.Load() >= saves+3 && run.UpdatedAt.After(updated) {
				return true
			}
		}
		// A run that ended will not save again: no use waiting.
		if run.State != api.RunRunning {
			t.Fatalf("no save while the agent worked quietly: %d saves since it started; run %s", st.saves.Load()-saves, run.State)
		}
		return false
	})
	if !saved {
		t.Fatalf("no save while the agent worked quietly: %d saves since it started; run %s", st.saves.Load()-saves, state)
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if run := <-st.ended; run.State != api.RunFailed {
		t.Errorf("run %s, want failed (its agent committed nothing): %s", run.State, run.Report)
	}
	runsIdle(t, system, pid)
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Error(err)
	}
}

// TestIterationKeepsUntrackedWork runs one iteration whose agent commits
// a test but leaves the file the test needs untracked: its tests pass in
// the work tree, but the branch lacks the file, so the task is not done
// and its work tree, with the file, is kept. Work committed on another
// branch than the task's is not on what gets merged either.
func TestIterationKeepsUntrackedWork(t *testing.T) {
	cases := []struct {
		name     string
		agent    string
		done     bool
		feedback string
	}{
		{"new file not added", `echo work > work.txt; echo test > test.txt; git add test.txt; git commit -qm test`, false, "?? work.txt"},
		{"all committed", `echo work > work.txt; echo test > test.txt; git add work.txt test.txt; git commit -qm work`, true, ""},
		{"ignored file left", `echo work > work.txt; echo log > run.log; git add work.txt; git commit -qm work`, true, ""},
		{"committed on another branch", `git checkout -q -b mine; echo work > work.txt; git add work.txt; git commit -qm work`, false, "drover/run-1/t"},
		{"detached head", `echo work > work.txt; git add work.txt; git commit -qm work; git checkout -q --detach`, false, "drover/run-1/t"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := benchRepo(t)
			if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.log\n.drover/\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := gitOut(context.Background(), root, "add", ".gitignore"); err != nil {
				t.Fatalf("git add: %v %s", err, out)
			}
			if out, err := gitOut(context.Background(), root, "commit", "-qm", "ignore"); err != nil {
				t.Fatalf("git commit: %v %s", err, out)
			}
			j := executor.Iteration{
				RunID: "run-1", Task: rungraph.Task{ID: "t", Description: "Work.", Tests: []string{"x"}},
				Iteration: 1, Prompt: "work",
				Options: api.RunOptions{
					Agent:       `sh -c '` + c.agent + `; echo "{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":0.1}"'`,
					TestCommand: "true {{packages}}", SuiteCommand: "true", IterationTimeout: time.Minute,
				},
			}
			x := NewLocalExecutor(root, &sync.Mutex{}, nil, nil, "")
			res := x.Run(context.Background(), j, nil)
			if res.Worker != executor.LocalWorker {
				t.Errorf("worker %q, want %q", res.Worker, executor.LocalWorker)
			}
			out := iterationDone(j, res)
			done, feedback := run.Judge(templates.Defaults(), out)
			if done != c.done {
				t.Fatalf("done %v, want %v (feedback %q, err %v)", done, c.done, feedback, out.Err)
			}
			if done {
				return
			}
			if !strings.Contains(feedback, c.feedback) {
				t.Errorf("feedback %q does not say %q", feedback, c.feedback)
			}
			if _, err := os.Stat(filepath.Join(root, ".drover", "worktrees", "run-1", "t", "work.txt")); err != nil && out.OffBranch == "" {
				t.Errorf("the work is gone: %v", err)
			}
			if out.OffBranch == "" {
				return
			}
			// The next iteration works in the same work tree, back on
			// the task's branch, and can merge what it was told of.
			j.Iteration, j.Options.Agent = 2, `sh -c 'git merge -q `+out.OffBranch+`; echo "{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":0.1}"'`
			j.Base = out.Base
			if out2 := iterationDone(j, x.Run(context.Background(), j, nil)); out2.Err != nil || !out2.Committed || out2.OffBranch != "" {
				t.Errorf("iteration 2: err %v, committed %v, off the branch on %q; want its commits merged onto the task's branch", out2.Err, out2.Committed, out2.OffBranch)
			}
		})
	}
}

// Test and suite commands are shell commands, run as written: a list
// means what it says, and the status is the last command's.
func TestUserCommandsRunThroughTheShell(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	cases := []struct {
		command string
		passed  bool
		output  string
		log     string
	}{
		{"echo boom; exit 1", false, "boom", ""},
		{"printf lint >> " + log + " && printf test >> " + log, true, "", "linttest"},
		{"false && printf test >> " + log, false, "", ""},
		{"test -f 'a b.txt' || echo missing", true, "missing", ""},
	}
	for _, c := range cases {
		_ = os.Remove(log)
		got := runUserCommand(context.Background(), templates.Defaults(), dir, c.command, "")
		if got.Passed != c.passed || !strings.Contains(got.Output, c.output) || got.Command != c.command {
			t.Errorf("%q: %+v; want passed %v with %q", c.command, got, c.passed, c.output)
		}
		if data, _ := os.ReadFile(log); string(data) != c.log {
			t.Errorf("%q wrote %q, want %q", c.command, data, c.log)
		}
	}
}

// A test command's result keeps the end of its output, which says what
// failed, and says that it cut the start.
func TestUserCommandKeepsTheTail(t *testing.T) {
	got := runUserCommand(context.Background(), templates.Defaults(), t.TempDir(), `echo first; head -c 20000 /dev/zero | tr '\0' x; echo; echo the end; exit 3`, "")
	if got.Passed || !strings.HasPrefix(got.Output, "exit status 3\n...x") || !strings.HasSuffix(got.Output, "x\nthe end\n") || strings.Contains(got.Output, "first") {
		t.Errorf("output %q; want the exit status, then ... and the tail", got.Output)
	}
	if n := len(strings.TrimPrefix(got.Output, "exit status 3\n...")); n != maxTestOutput {
		t.Errorf("kept %d bytes of the output, want %d", n, maxTestOutput)
	}
}

// A run whose suite fails after a wave is reported failed, the suite's
// command and output in its report; a suite written as a list runs each
// of its commands.
func TestRunSuiteIsAShellCommand(t *testing.T) {
	out := t.TempDir()
	cases := []struct {
		name, suite string
		state       api.RunState
		report      []string
	}{
		{"failing list", "echo boom; exit 1", api.RunFailed, []string{"wave 1 checkpoint failed: `echo boom; exit 1` does not pass on main", "boom"}},
		{"and list", "echo lint > " + out + "/lint && echo test > " + out + "/test", api.RunDone, []string{"all 1 tasks done in 1 waves and merged into main"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := benchRepo(t)
			db := openRunStore(t, root)
			st := &endedStore{RunStore: db, ended: make(chan api.Run, 1)}
			cfg := config.Defaults()
			env := RunsEnv{Store: st, Root: root, Config: func() config.Config { return cfg }}
			system, pid := startRunsActor(t, env)
			req := api.StartRunRequest{
				File:  "one.yaml",
				Graph: "tasks:\n  - {id: one, description: Commit., tests: [x]}\n",
				Options: api.RunOptions{
					Concurrency: 1, MaxIterations: 1, NoReview: true,
					Agent:       `sh -c 'echo work > work.txt; git add work.txt; git commit -qm work; echo "{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":0.1}"'`,
					TestCommand: "true {{packages}}", SuiteCommand: c.suite,
				},
			}
			res, err := system.Root.RequestFuture(pid, &StartRun{Request: req}, time.Minute).Result()
			if err != nil {
				t.Fatal(err)
			}
			if rr := res.(*RunReply); rr.Err != nil || !rr.Run.Active || rr.Run.ID == "" {
				t.Fatalf("start: %+v", rr)
			}
			var ended api.Run
			select {
			case ended = <-st.ended:
			case <-time.After(time.Minute):
				t.Fatal("the run did not end")
			}
			if ended.State != c.state {
				t.Fatalf("run %s, want %s: %s", ended.State, c.state, ended.Report)
			}
			for _, want := range c.report {
				if !strings.Contains(ended.Report, want) {
					t.Errorf("report %q does not say %q", ended.Report, want)
				}
			}
			if c.state == api.RunDone {
				for _, f := range []string{"lint", "test"} {
					if _, err := os.Stat(filepath.Join(out, f)); err != nil {
						t.Errorf("the suite's %s did not run: %v", f, err)
					}
				}
			}
			runsIdle(t, system, pid)
		})
	}
}

// Runs build their convergence thresholds as loops do: the loop.* keys
// reach them.
func TestRunSettingsUseTheLoopThresholds(t *testing.T) {
	cfg := config.Defaults()
	cfg.Loop.SuccessPassRate, cfg.Loop.MinImprovement = 0.8, 0.1
	set, err := newRunSettings(cfg, api.RunOptions{NoReview: true}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if set.Thresholds != loopconf.Thresholds(cfg.Loop) || set.Thresholds.SuccessPassRate != 0.8 || set.Thresholds.MinImprovement != 0.1 {
		t.Errorf("thresholds %+v, want the loop's %+v", set.Thresholds, loopconf.Thresholds(cfg.Loop))
	}
}

// failingRunStore is a RunStore whose saves fail.
type failingRunStore struct{ RunStore }

func (failingRunStore) SaveRun(context.Context, api.Run) error { return errors.New("disk full") }

// No effect runs before its commit: a run whose first state cannot be
// saved is refused, and no agent, work tree or test starts for it.
func TestRunStartsNothingItCouldNotSave(t *testing.T) {
	root := benchRepo(t)
	db := openRunStore(t, root)
	marker := filepath.Join(t.TempDir(), "agent-ran")
	cfg := config.Defaults()
	env := RunsEnv{Store: failingRunStore{db}, Root: root, Config: func() config.Config { return cfg }}
	system, pid := startRunsActor(t, env)
	req := api.StartRunRequest{
		File:  "one.yaml",
		Graph: "tasks:\n  - {id: one, description: Work., tests: [x]}\n",
		Options: api.RunOptions{
			Concurrency: 1, MaxIterations: 1, NoReview: true,
			Agent: "touch " + marker, TestCommand: "true {{packages}}", SuiteCommand: "true",
		},
	}
	res, err := system.Root.RequestFuture(pid, &StartRun{Request: req}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	if rr := res.(*RunReply); rr.Err == nil || !strings.Contains(rr.Err.Error(), "disk full") {
		t.Fatalf("start with a failing store: %+v", rr)
	}
	runsIdle(t, system, pid)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran for a run that was never saved")
	}
	if _, err := os.Stat(filepath.Join(root, ".drover", "worktrees")); err == nil {
		t.Error("a work tree was made for a run that was never saved")
	}
}
