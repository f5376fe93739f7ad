package natsexec

import (
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/internal/worktree"
)

// TestExecutorRunsTheIterationOnAWorker: the nats executor hands an
// iteration to a worker whose runner is the local executor of its own
// repository; the agent's commit comes back on the project's task branch,
// with the worker's name, the agent's cost and its progress.
func TestExecutorRunsTheIterationOnAWorker(t *testing.T) {
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(k, "t")
	}
	for _, k := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(k, "t@t")
	}
	s := startServer(t)
	repo, base, id := project(t)
	nc, st := connect(t, s, 0)
	wnc, wst := connect(t, s, 0)
	w := &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w1", Dir: t.TempDir()}
	w.Runner = ExecutorRunner(actors.NewLocalExecutor(w.Repo(), &sync.Mutex{}, nil, nil, ""),
		`sh -c 'echo work > work.txt; git add work.txt; git commit -qm work; echo "{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":0.1}"'`)
	runWorker(t, w)

	x := Executor{D: Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id}}
	branch := worktree.BranchName("r1", "a")
	var mu sync.Mutex
	var progress []executor.Progress
	res := x.Run(testCtx(t), executor.Iteration{
		RunID: "r1", Task: rungraph.Task{ID: "a"}, Iteration: 1, Branch: branch, Prompt: "do a",
		Options: api.RunOptions{Agent: "false", TestCommand: "true", SuiteCommand: "true", IterationTimeout: time.Minute},
	}, func(p executor.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	if res.Err != "" || res.AgentErr != "" || !res.Committed || res.Worker != "w1" || res.Base != base || res.Progress.CostUSD != 0.1 {
		t.Fatalf("result %+v", res)
	}
	if files := mustGit(t, repo, "ls-tree", "--name-only", branch); files != "README\nwork.txt" {
		t.Fatalf("branch files = %q", files)
	}
	eventually.True(t, 10*time.Second, "progress from w1", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) > 0 && progress[0].Worker == "w1"
	})
}
