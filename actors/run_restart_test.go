package actors

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/store"
)

// crashingRunStore fails the run actor as a crash would, once, at the
// save of the first run that crashAt picks: after the save (the commit
// held, none of its effects ran), or, with before, in its place (the
// effects of the last commit ran, the step that took their outcome in
// was lost).
type crashingRunStore struct {
	RunStore
	before  bool
	mu      sync.Mutex
	crashAt func(api.Run) bool
	crashed chan api.Run
}

func (s *crashingRunStore) SaveRun(ctx context.Context, run api.Run) error {
	s.mu.Lock()
	crash := s.crashAt != nil && s.crashAt(run)
	if crash {
		s.crashAt = nil
	}
	s.mu.Unlock()
	if crash && s.before {
		s.crashed <- run
		panic("injected crash before a commit")
	}
	if err := s.RunStore.SaveRun(ctx, run); err != nil {
		return err
	}
	if crash {
		s.crashed <- run
		panic("injected crash between the commit and its effects")
	}
	return nil
}

// restartAgent is the --agent of the restart tests. It logs "<task>
// <iteration>" to agent-log in its folder when it starts, then commits
// <task>.txt and says it cost $0.10; except that with nocommit-<task>-<n>
// in its folder iteration n commits nothing, and with usage-<task> it
// first reports an assistant message worth $0.30 of tokens and then waits
// for a release that never comes. With hold-<task>, its first start does
// the same after it left work half done (a file changed and not added,
// one staged); every start logs "<task> <iteration>" to leftovers when it
// finds that work in its work tree. With limit-<task>, its first start
// fails as Claude Code does on a usage limit that resets in an hour.
const restartAgent = `#!/bin/sh
d=$(dirname "$0")
t=$DROVER_TASK_ID
i=$DROVER_ITERATION
echo "$t $i" >> "$d/agent-log"
if [ -f "$d/limit-$t" ] && [ ! -f "$d/limited-$t" ]; then
  touch "$d/limited-$t"
  printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"num_turns":1,"total_cost_usd":0,"result":"API Error: Request rejected (429) · Claude AI usage limit reached|%s"}\n' $(( $(date +%s) + 3600 ))
  exit 1
fi
if [ -f "$d/hold-$t" ] && [ ! -f "$d/held-$t" ]; then
  touch "$d/held-$t"
  echo half > "$t-half.txt"
  echo staged > "staged-$t.txt" && git add "staged-$t.txt"
  printf '{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100000,"output_tokens":0}}}\n'
  while [ ! -f "$d/release" ]; do sleep 0.05; done
fi
if [ -e "$t-half.txt" ] || [ -e "staged-$t.txt" ]; then echo "$t $i" >> "$d/leftovers"; fi
if [ -f "$d/usage-$t" ]; then
  printf '{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100000,"output_tokens":0}}}\n'
  while [ ! -f "$d/release" ]; do sleep 0.05; done
fi
if [ ! -f "$d/nocommit-$t-$i" ]; then
  echo "$t" > "$t.txt"
  git add "$t.txt" && git commit -qm "task $t" || exit 4
fi
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.1,"num_turns":1,"result":"ok"}\n'
`

// restartGraph has three tasks in two waves: a and b; c.
const restartGraph = "tasks:\n" +
	"  - {id: a, description: Write a.txt., tests: [a.txt]}\n" +
	"  - {id: b, description: Write b.txt., tests: [b.txt]}\n" +
	"  - {id: c, description: Write c.txt., tests: [c.txt], depends-on: [a, b]}\n"

// restartFixture is a project and the folder of its fake agent, worked by
// one supervisor (an actor system over the store file) after another.
type restartFixture struct {
	t    *testing.T
	root string
	dir  string
	db   string
	// childTag is the supervisor's tag (RunsEnv.ChildTag).
	childTag string
	// now is the supervisors' clock (RunsEnv.Now); nil: the real one.
	now func() time.Time
}

func newRestartFixture(t *testing.T, files ...string) *restartFixture {
	f := &restartFixture{t: t, root: benchRepo(t), dir: t.TempDir()}
	f.db = filepath.Join(f.root, ".drover", "state", "drover.db")
	if err := os.WriteFile(filepath.Join(f.root, ".gitignore"), []byte(".drover/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := gitOut(context.Background(), f.root, "add", ".gitignore"); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	if out, err := gitOut(context.Background(), f.root, "commit", "-qm", "ignore"); err != nil {
		t.Fatalf("git commit: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "agent.sh"), []byte(restartAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if err := os.WriteFile(filepath.Join(f.dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// supervisor is one supervisor's life: the store file open, and the runs
// actor over it.
type supervisor struct {
	db     *store.Store
	system *actor.ActorSystem
	pid    *actor.PID
}

// start opens the store and starts the runs actor over wrap(store).
func (f *restartFixture) start(wrap func(RunStore) RunStore) *supervisor {
	f.t.Helper()
	db, err := store.Open(context.Background(), f.db, store.Options{MaxBatchDelay: time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	cfg := config.Defaults()
	env := RunsEnv{Store: wrap(db), Root: f.root, Config: func() config.Config { return cfg }, ChildTag: f.childTag, Now: f.now}
	// The crashed actor's agents report to no one: the dead letters'
	// throttle, a goroutine, must not outlive the test.
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
		actor.WithDeadLetterThrottleInterval(time.Millisecond))
	pid, err := system.Root.SpawnNamed(NewRunsProps(env), RunsActorName)
	if err != nil {
		f.t.Fatal(err)
	}
	s := &supervisor{db: db, system: system, pid: pid}
	f.t.Cleanup(s.stop)
	return s
}

// stop ends the supervisor once its runs are no longer worked, and closes
// the store file for the next one.
func (s *supervisor) stop() {
	if s.system == nil {
		return
	}
	s.system.Shutdown()
	_ = s.db.Close()
	s.system = nil
}

// options are the run options of the restart tests.
func (f *restartFixture) options(concurrency int) api.RunOptions {
	return api.RunOptions{
		Concurrency: concurrency, MaxIterations: 3, NoReview: true,
		Agent:       "'" + filepath.Join(f.dir, "agent.sh") + "'",
		TestCommand: "test -f {{packages}}", SuiteCommand: "echo x >> '" + filepath.Join(f.dir, "suite-log") + "'",
	}
}

// agentRuns counts the agent's starts by "<task> <iteration>".
func (f *restartFixture) agentRuns() map[string]int {
	data, _ := os.ReadFile(filepath.Join(f.dir, "agent-log"))
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			runs[line]++
		}
	}
	return runs
}

// lines counts the lines of the file name in the agent's folder.
func (f *restartFixture) lines(name string) int {
	data, _ := os.ReadFile(filepath.Join(f.dir, name))
	return strings.Count(string(data), "\n")
}

// merges counts the merges into main by task, and the commits of each
// task's agent on main.
func (f *restartFixture) merges(id string, tasks ...string) (merges, commits map[string]int) {
	f.t.Helper()
	log, err := gitOut(context.Background(), f.root, "log", "--format=%s", "main")
	if err != nil {
		f.t.Fatalf("git log: %v", err)
	}
	merges, commits = map[string]int{}, map[string]int{}
	for _, s := range strings.Split(log, "\n") {
		for _, task := range tasks {
			if s == "Merge branch 'refs/heads/drover/"+id+"/"+task+"'" {
				merges[task]++
			}
			if s == "task "+task {
				commits[task]++
			}
		}
	}
	return merges, commits
}

// TestRunEffectsSurviveACrashAfterTheCommit fails the run actor right
// after the commit of a step, before any of its effects ran (an iteration
// start, a wave's merge and suite, the end of an agent whose budget is
// spent), then has a new supervisor over the same store file resume the
// run, as `drover run resume` does after a supervisor crash. The resumed
// run derives the effects again from the stored state: each iteration's
// agent runs once per iteration number, each task is merged once, and
// neither the spend nor the time worked before the crash is counted twice.
// A crash in place of a commit (the effects of the last one ran, their
// outcome is lost) has the effects run again: the merge of a wave merged
// already merges nothing.
func TestRunEffectsSurviveACrashAfterTheCommit(t *testing.T) {
	taskIs := func(r api.Run, id string, state api.TaskState, iteration int) bool {
		for _, task := range r.Tasks {
			if task.ID == id {
				return task.State == state && task.Iteration == iteration
			}
		}
		return false
	}
	for _, tc := range []struct {
		name        string
		graph       string
		concurrency int
		// files are put in the agent's folder to steer it.
		files []string
		// opts changes the run's options.
		opts func(*api.RunOptions)
		// crashAt picks the commit after which the actor fails; with
		// before, in whose place it fails.
		crashAt func(api.Run) bool
		before  bool
		// state is how the resumed run ends, and report what its
		// report says.
		state  api.RunState
		report string
		// tasks are the tasks' ends, when not all done.
		tasks map[string]api.TaskState
		// runs are the agent's starts by "<task> <iteration>".
		runs map[string]int
		// merged are the tasks merged into main.
		merged []string
		// suites counts the suite's runs.
		suites int
		// cost is what the run spent in all.
		cost float64
		// between runs between the supervisors, as a person would.
		between func(t *testing.T, f *restartFixture)
		// check checks the crashed run's record and the final one.
		check func(t *testing.T, f *restartFixture, crashed, final api.Run)
	}{
		{
			// Begin's commit: two iterations are due to start.
			name: "first iterations start", graph: restartGraph, concurrency: 2,
			crashAt: func(r api.Run) bool { return taskIs(r, "a", api.TaskRunning, 1) && taskIs(r, "b", api.TaskRunning, 1) },
			state:   api.RunDone, runs: map[string]int{"a 1": 1, "b 1": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 2, cost: 0.3,
		},
		{
			// The commit of b's first iteration, which committed
			// nothing: its second is due to start.
			name: "next iteration starts", graph: restartGraph, concurrency: 1, files: []string{"nocommit-b-1"},
			crashAt: func(r api.Run) bool { return taskIs(r, "b", api.TaskRunning, 2) },
			state:   api.RunDone, runs: map[string]int{"a 1": 1, "b 1": 1, "b 2": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 2, cost: 0.4,
		},
		{
			// The commit of wave 1's last iteration: its merge and
			// suite are due.
			name: "wave check", graph: restartGraph, concurrency: 2,
			crashAt: func(r api.Run) bool {
				return r.Merged == 0 && taskIs(r, "a", api.TaskDone, 1) && taskIs(r, "b", api.TaskDone, 1)
			},
			state: api.RunDone, runs: map[string]int{"a 1": 1, "b 1": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 2, cost: 0.3,
		},
		{
			// The commit of wave 1's checkpoint: wave 2 is due to start.
			name: "next wave starts", graph: restartGraph, concurrency: 2,
			crashAt: func(r api.Run) bool { return r.Merged == 1 },
			state:   api.RunDone, runs: map[string]int{"a 1": 1, "b 1": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 2, cost: 0.3,
		},
		{
			// The commit of wave 1's checkpoint is lost: its merge and
			// suite ran, and are due again.
			name: "wave check done, its commit lost", graph: restartGraph, concurrency: 2,
			crashAt: func(r api.Run) bool { return r.Merged == 1 }, before: true,
			state: api.RunDone, runs: map[string]int{"a 1": 1, "b 1": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 3, cost: 0.3,
		},
		{
			// The commit of the progress that spent a's budget: its
			// agent is due to end, and the task to fail.
			name: "task budget ends the agent", graph: restartGraph, concurrency: 1, files: []string{"usage-a"},
			opts:    func(o *api.RunOptions) { o.TaskMaxUSD = 0.25 },
			crashAt: func(r api.Run) bool { return r.CostUSD >= 0.25 },
			state:   api.RunFailed, report: "task a is failed: the task budget of $0.25 (--task-max-usd) is spent: its agents cost $0.30",
			tasks: map[string]api.TaskState{"a": api.TaskFailed, "b": api.TaskPending, "c": api.TaskPending},
			runs:  map[string]int{"a 1": 1}, cost: 0.3,
		},
		{
			// The commit of the progress that spent the run's budget:
			// its agents are due to end, and the run to stop.
			name: "run budget ends the agents", graph: restartGraph, concurrency: 1, files: []string{"usage-a"},
			opts:    func(o *api.RunOptions) { o.MaxUSD = 0.25 },
			crashAt: func(r api.Run) bool { return r.CostUSD >= 0.25 },
			state:   api.RunFailed, report: "run stopped: the run budget of $0.25 (--max-usd) is spent: the agents cost $0.30",
			tasks: map[string]api.TaskState{"a": api.TaskPending, "b": api.TaskPending, "c": api.TaskPending},
			runs:  map[string]int{"a 1": 1}, cost: 0.3,
		},
		{
			// The commit of the progress of a's first agent, which left
			// work half done: the resumed run works the iteration again
			// from a's last commit, on the base saved before its first
			// agent started, though main has moved on meanwhile.
			name: "a crash mid-iteration", graph: restartGraph, concurrency: 1, files: []string{"hold-a"},
			crashAt: func(r api.Run) bool { return r.CostUSD >= 0.25 },
			between: func(t *testing.T, f *restartFixture) {
				if err := os.WriteFile(filepath.Join(f.root, "person.txt"), []byte("mine\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if out, err := gitOut(context.Background(), f.root, "add", "person.txt"); err != nil {
					t.Fatalf("git add: %v %s", err, out)
				}
				if out, err := gitOut(context.Background(), f.root, "commit", "-qm", "a person's commit"); err != nil {
					t.Fatalf("git commit: %v %s", err, out)
				}
			},
			check: func(t *testing.T, f *restartFixture, crashed, final api.Run) {
				if n := f.lines("leftovers"); n != 0 {
					t.Errorf("%d re-run agents found the killed agent's half-done work", n)
				}
				first, err := gitOut(context.Background(), f.root, "rev-parse", "main~4") // before the person's commit and the 3 merges
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []api.Run{crashed, final} {
					if a := r.Tasks[0]; a.ID != "a" || a.Base != first {
						t.Errorf("task a's base is %q, want main's head when it started, %s", a.Base, first)
					}
				}
			},
			state: api.RunDone, runs: map[string]int{"a 1": 2, "b 1": 1, "c 1": 1}, merged: []string{"a", "b", "c"}, suites: 2, cost: 0.6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRestartFixture(t, tc.files...)
			opts := f.options(tc.concurrency)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			crash := &crashingRunStore{crashAt: tc.crashAt, before: tc.before, crashed: make(chan api.Run, 1)}
			first := f.start(func(s RunStore) RunStore { crash.RunStore = s; return crash })
			// The asker of a start the crash cuts short gets no answer.
			first.system.Root.Request(first.pid, &StartRun{Request: api.StartRunRequest{File: "g.yaml", Graph: tc.graph, Options: opts}})
			var crashed api.Run
			select {
			case crashed = <-crash.crashed:
			case <-time.After(testTimeout):
				t.Fatal("the run never reached the commit to crash after")
			}
			// The failed actor is stopped, its agents with it.
			runsIdle(t, first.system, first.pid)
			first.stop()
			// A while without a supervisor, which no budget counts.
			time.Sleep(100 * time.Millisecond)
			if tc.between != nil {
				tc.between(t, f)
			}

			second := f.start(func(s RunStore) RunStore { return s })
			stored, found, err := second.db.LoadRun(context.Background(), crashed.ID)
			if err != nil || !found {
				t.Fatalf("the crashed run is not stored: %v", err)
			}
			if stored.UpdatedAt.Equal(crashed.UpdatedAt) == tc.before || stored.State != api.RunRunning {
				t.Fatalf("the stored run is not the one committed before the crash: %+v", stored)
			}
			res, err := second.system.Root.RequestFuture(second.pid, &ResumeRun{ID: crashed.ID}, testTimeout).Result()
			if err != nil {
				t.Fatal(err)
			}
			resumed := res.(*RunReply)
			if resumed.Err != nil {
				t.Fatalf("resume: %v", resumed.Err)
			}
			// The time worked before the crash counts once, and the
			// time without a supervisor not at all.
			if worked := stored.UpdatedAt.Sub(stored.ResumedAt); resumed.Run.WorkedBefore != worked {
				t.Errorf("the resumed run worked %s before, want %s", resumed.Run.WorkedBefore, worked)
			}
			if resumed.Run.CostUSD != stored.CostUSD {
				t.Errorf("the resumed run cost $%v, the crashed one $%v", resumed.Run.CostUSD, crashed.CostUSD)
			}

			var final api.Run
			eventually.True(t, testTimeout, "the resumed run to end", func() bool {
				final, _, _ = second.db.LoadRun(context.Background(), crashed.ID)
				return final.State != api.RunRunning
			})
			runsIdle(t, second.system, second.pid)
			final, _, _ = second.db.LoadRun(context.Background(), crashed.ID)
			if final.State != tc.state || !strings.Contains(final.Report, tc.report) {
				t.Fatalf("the resumed run ended %s: %s\nwant %s with %q", final.State, final.Report, tc.state, tc.report)
			}
			for _, task := range final.Tasks {
				want := api.TaskDone
				if tc.tasks != nil {
					want = tc.tasks[task.ID]
				}
				if task.State != want {
					t.Errorf("task %s is %s, want %s: %s", task.ID, task.State, want, task.Error)
				}
			}
			if n := f.lines("suite-log"); n != tc.suites {
				t.Errorf("the suite ran %d times, want %d", n, tc.suites)
			}
			if got := f.agentRuns(); fmt.Sprint(got) != fmt.Sprint(tc.runs) {
				t.Errorf("the agent ran %v, want %v (task and iteration)", got, tc.runs)
			}
			merges, commits := f.merges(crashed.ID, "a", "b", "c")
			for _, task := range []string{"a", "b", "c"} {
				want := 0
				for _, m := range tc.merged {
					if m == task {
						want = 1
					}
				}
				if merges[task] != want || commits[task] != want {
					t.Errorf("main has %d merges of task %s and %d of its commits, want %d", merges[task], task, commits[task], want)
				}
			}
			var tasks float64
			for _, task := range final.Tasks {
				tasks += task.CostUSD
			}
			if math.Abs(final.CostUSD-tc.cost) > 1e-9 || math.Abs(tasks-tc.cost) > 1e-9 {
				t.Errorf("the run cost $%v, its tasks $%v; want $%v", final.CostUSD, tasks, tc.cost)
			}
			if final.WorkedBefore != resumed.Run.WorkedBefore {
				t.Errorf("worked before %s at the end, %s at the resume", final.WorkedBefore, resumed.Run.WorkedBefore)
			}
			if tc.check != nil {
				tc.check(t, f, crashed, final)
			}
		})
	}
}

// TestRunGitCommandsCarryTheTags: the git commands of a run (adding its
// work trees, merging its waves) carry the supervisor's tag, by which its
// watchdog ends them should it die, and the run's id, by which a resume
// ends what a dead supervisor left running. Git hooks see what git does.
func TestRunGitCommandsCarryTheTags(t *testing.T) {
	f := newRestartFixture(t)
	f.childTag = "DROVER_SUPERVISOR_RUN=tag1"
	hook := "#!/bin/sh\necho \"$(basename \"$0\") $DROVER_RUN_ID $DROVER_SUPERVISOR_RUN\" >> '" + filepath.Join(f.dir, "hook-log") + "'\n"
	for _, name := range []string{"post-checkout", "post-merge"} {
		if err := os.WriteFile(filepath.Join(f.root, ".git", "hooks", name), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := f.start(func(s RunStore) RunStore { return s })
	res, err := s.system.Root.RequestFuture(s.pid, &StartRun{Request: api.StartRunRequest{File: "g.yaml", Graph: restartGraph, Options: f.options(2)}}, testTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*RunReply).Run.ID
	var final api.Run
	eventually.True(t, testTimeout, "the run to end", func() bool {
		final, _, _ = s.db.LoadRun(context.Background(), id)
		return final.State != api.RunRunning
	})
	runsIdle(t, s.system, s.pid)
	if final.State != api.RunDone {
		t.Fatalf("the run ended %s: %s", final.State, final.Report)
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, "hook-log"))
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, tags, _ := strings.Cut(line, " ")
		if tags != id+" tag1" {
			t.Errorf("git's %s hook saw the tags %q, want %q", name, tags, id+" tag1")
		}
		seen[name]++
	}
	// Three work trees added, three branches merged.
	if seen["post-checkout"] != 3 || seen["post-merge"] != 3 {
		t.Errorf("the hooks ran %v; want 3 checkouts and 3 merges", seen)
	}
}
