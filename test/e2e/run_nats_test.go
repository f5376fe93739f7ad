//go:build unix

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/natstest"
)

// TestRunOnNATSWorkerWithCLI runs `drover run --executor nats` on a graph
// of two tasks in two waves, with one `drover worker` on an embedded NATS
// server and the real CLI as its agent and reviewer: each job's bundle is
// unpacked in the worker's own repository, the CLI writes and commits the
// task's test file there, the worker's targeted tests and review pass, the
// branch comes back as a bundle, and the supervisor merges each wave and
// runs the suite.
func TestRunOnNATSWorkerWithCLI(t *testing.T) {
	p := newRunProject(t, "run-agent.yaml")
	url := natstest.URL(t)
	startE2EWorker(t, p, url, "w1")

	file, err := filepath.Abs(filepath.Join("testdata", "run-nats-graph.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := p.exec(runTimeout, "run", file, "--executor", "nats", "--nats", url)
	first, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "run" || !strings.HasSuffix(f[1], ":") {
		t.Fatalf("drover run printed no run id first:\n%s", out)
	}
	id := strings.TrimSuffix(f[1], ":")
	if code != 0 || !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("drover run exited %d; want 0 and %q in:\n%s", code, "run "+id+" done", out)
	}

	r := p.runStatus(id)
	if r.State != api.RunDone || r.Waves != 2 || r.Merged != 2 || r.Target != "main" {
		t.Errorf("run: state %s, %d of %d waves merged into %s; want done, 2 of 2 into main", r.State, r.Merged, r.Waves, r.Target)
	}
	if r.Suite == nil || !r.Suite.Passed || !strings.Contains(r.Suite.Output, "example.com/runproj/pkg/d") {
		t.Errorf("last checkpoint: %+v; want the suite passed over pkg/d", r.Suite)
	}
	branch := map[string]string{}
	for _, task := range r.Tasks {
		branch[task.ID] = task.Branch
		wantTest := "go test ./pkg/" + task.ID + "/..."
		if task.State != api.TaskDone || task.Iteration != 1 || task.Worker != "w1" {
			t.Errorf("task %s: state %s, iteration %d on worker %q; want done in 1 iteration on w1", task.ID, task.State, task.Iteration, task.Worker)
		}
		if task.LastTest == nil || !task.LastTest.Passed || task.LastTest.Command != wantTest {
			t.Errorf("task %s: last test %+v; want %q passed on the worker", task.ID, task.LastTest, wantTest)
		}
		// The agent's stream-json was read on the worker as it came: its
		// three scripted tool calls and its cost came back with the result.
		if task.ToolCalls != 3 || task.CostUSD <= 0 {
			t.Errorf("task %s: %d tool calls, $%v; want the agent's 3 and its cost", task.ID, task.ToolCalls, task.CostUSD)
		}
		if lr := task.LastReview; task.Reviews != 1 || lr == nil || lr.Outcome != api.ReviewPass {
			t.Errorf("task %s: %d reviews, last %+v; want one pass", task.ID, task.Reviews, lr)
		}
	}
	// One agent and one reviewer CLI session per task, on the worker.
	sessions := map[string]bool{}
	for _, m := range p.model.Messages() {
		sessions[m.SessionID] = true
	}
	if len(sessions) != 4 {
		t.Errorf("the model saw %d CLI sessions, want 4 (an agent and a reviewer per task)", len(sessions))
	}
	// The worker's commits are in the project's repository, merged, and
	// d's work starts from a's.
	for _, task := range []string{"a", "d"} {
		b := branch[task]
		if got := p.git("log", "-1", "--format=%s", b); got != "task "+task {
			t.Errorf("tip of %s is %q, want the agent's commit %q", b, got, "task "+task)
		}
		if _, err := claudecli.Git(t.Context(), p.root, "merge-base", "--is-ancestor", b, "main"); err != nil {
			t.Errorf("%s is not merged into main: %v", b, err)
		}
		p.git("cat-file", "-e", "main:pkg/"+task+"/"+task+"_test.go")
	}
	if _, err := claudecli.Git(t.Context(), p.root, "merge-base", "--is-ancestor", branch["a"], branch["d"]); err != nil {
		t.Errorf("task d's branch does not start from task a's work")
	}
}

// startE2EWorker runs `drover worker` named name for p's repository, with
// the supervisor's environment (the CLI on PATH, the scripted model), until
// the test ends; SIGTERM must stop it cleanly.
func startE2EWorker(t *testing.T, p *runProject, url, name string) {
	t.Helper()
	cmd := exec.Command(droverBin, "worker", "--nats", url, "--name", name, "--concurrency", "2", "--dir", t.TempDir())
	// The worker's repository is one of its own, without the project
	// clone's git config: the agents' commits take the identity a worker
	// machine has in its global git config, here in the environment.
	cmd.Dir, cmd.Env = p.root, append(append([]string{}, p.environ...), "CLAUDE_PROJECT_DIR="+p.root,
		"GIT_AUTHOR_NAME=worker", "GIT_AUTHOR_EMAIL=worker@example.com",
		"GIT_COMMITTER_NAME=worker", "GIT_COMMITTER_EMAIL=worker@example.com")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	// A child of the worker that lives on holds its output: the cleanup
	// must not wait for it for ever.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		t.Logf("drover worker %s:\n%s", name, stderr.String())
		if err != nil {
			t.Errorf("drover worker %s: %v", name, err)
		}
	})
}
