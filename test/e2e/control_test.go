//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestQueueCommitGateStuckUnstick: a task finished without a commit blocks
// the stop with drover's commit message until the model commits; a task
// the model renames to .stuck.md is left alone (the queue goes on to the
// review without it); `/drover:unstick` puts it back and restarts the
// queue, which then finishes.
func TestQueueCommitGateStuckUnstick(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "gate.yaml"))
	sid := newSessionID(t)
	tasks := p.addTasks(sid, "one: write change.txt", "two: rename the module (ask the user which name)")

	res := p.claude("--session-id", sid, "/drover:start")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review clean: nothing to add." {
		t.Fatalf("run 1: exit %d, stdout %q; want 0 and the clean review", res.ExitCode, res.Stdout)
	}
	reasons := blockReasons(p.model.Messages(), sid)
	want := []string{"uncommitted", "loop " + filepath.Base(tasks[1]), "review"}
	if got := kinds(reasons); !slices.Equal(got, want) {
		t.Fatalf("run 1 block reasons %q, want %q", got, want)
	}
	if r := reasons[0]; !strings.Contains(r, "You have uncommitted changes. Please commit your work before continuing.") || !strings.Contains(r, "change.txt") {
		t.Errorf("the commit gate's reason does not ask for a commit naming change.txt:\n%s", r)
	}
	if got := p.subjects(); !slices.Equal(got, []string{"initial commit", "commit the forgotten change"}) {
		t.Errorf("git log after run 1: %q", got)
	}
	stuck := stuckName(tasks[1])
	if got := readFile(t, stuck); !strings.Contains(got, "needs a decision from the user") {
		t.Errorf("stuck task %s = %q, want the model's note", stuck, got)
	}
	mustNotExist(t, tasks[1])
	// Stops: commit gate, task 2, review, clean review.
	p.wantSession(sid, "off", 4, 0, 1, 1)

	before := len(p.model.Messages())
	res = p.claude("--resume", sid, "/drover:unstick")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review clean: nothing to add." {
		t.Fatalf("run 2: exit %d, stdout %q; want 0 and the clean review", res.ExitCode, res.Stdout)
	}
	reqs := since(p.model.Messages(), before)
	first := reqs[0].LastUserText
	for _, w := range []string{"[drover] Unstuck " + tasks[1], "[drover] Started session " + sid, "Next task: " + tasks[1]} {
		if !strings.Contains(first, w) {
			t.Errorf("the /drover:unstick prompt lacks %q:\n%s", w, first)
		}
	}
	if got := kinds(blockReasons(reqs, sid)); !slices.Equal(got, []string{"review"}) {
		t.Errorf("run 2 block reasons %q, want only the review", got)
	}
	mustNotExist(t, stuck)
	if got := readFile(t, doneName(tasks[1])); !strings.HasPrefix(got, "two: rename the module (ask the user which name)\n") ||
		!strings.Contains(got, "needs a decision from the user") || !strings.Contains(got, "recorded the decision") {
		t.Errorf("task 2 = %q, want its text, the stuck note and the work summary", got)
	}
	if got := p.subjects(); !slices.Equal(got, []string{"initial commit", "commit the forgotten change", "record the decision"}) {
		t.Errorf("git log after run 2: %q", got)
	}
	// unstick restarts at iteration 0: task 2's stop, then the review's.
	p.wantSession(sid, "off", 2, 0, 2, 0)
}

// TestQueueStopCommand: a session interrupted mid-queue (an API error
// ends the CLI's run with the queue on) is ended with `/drover:stop`: the
// queue turns off, keeping its iteration, and the next stop is allowed.
func TestQueueStopCommand(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "stop.yaml"))
	sid := newSessionID(t)
	tasks := p.addTasks(sid, "first", "second", "third")

	res := p.claude("--session-id", sid, "/drover:start")
	if res.ExitCode != 1 || !strings.Contains(res.Stdout, "API Error: 400") {
		t.Fatalf("run 1: exit %d, stdout %q; want 1 and the scripted API error", res.ExitCode, res.Stdout)
	}
	if got := kinds(blockReasons(p.model.Messages(), sid)); !slices.Equal(got, []string{"loop " + filepath.Base(tasks[1])}) {
		t.Fatalf("run 1 block reasons %q, want the loop prompt for task 2", got)
	}
	p.wantSession(sid, "on", 1, 2, 1, 0)

	before := len(p.model.Messages())
	res = p.claude("--resume", sid, "/drover:stop")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "The queue is stopped." {
		t.Fatalf("/drover:stop: exit %d, stdout %q", res.ExitCode, res.Stdout)
	}
	reqs := since(p.model.Messages(), before)
	if len(reqs) != 1 {
		t.Errorf("the /drover:stop run sent %d model requests, want 1 (its stop allowed at once)", len(reqs))
	}
	if got := blockReasons(reqs, sid); len(got) != 0 {
		t.Errorf("the stop after /drover:stop was blocked: %q", kinds(got))
	}
	if w := "[drover] Stopped session " + sid + " at iteration 1."; len(reqs) > 0 && !strings.Contains(reqs[0].LastUserText, w) {
		t.Errorf("the /drover:stop prompt lacks %q:\n%s", w, reqs[0].LastUserText)
	}
	// Off, and the stop after /drover:stop did not count.
	p.wantSession(sid, "off", 1, 2, 1, 0)
	for _, task := range tasks[1:] {
		if _, err := os.Stat(task); err != nil {
			t.Errorf("pending task %s: %v", task, err)
		}
	}
}

// TestQueueMaxIterations: with a budget of 3 Stops, the fourth turns the
// queue off and lets the run end although tasks are pending. The budget
// comes from .drover/config.yaml, or from DROVER_QUEUE_MAX_ITERATIONS in
// the environment of the supervisor (the CLI's and drover add's).
func TestQueueMaxIterations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		config string
		env    []string
	}{
		{name: "config file", config: "queue:\n  max_iterations: 3\n"},
		{name: "environment", env: []string{"DROVER_QUEUE_MAX_ITERATIONS=3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newQueueProject(t, loadScenario(t, "worker.yaml"))
			p.env = append(p.env, c.env...)
			if c.config != "" {
				if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sid := newSessionID(t)
			tasks := p.addTasks(sid, "t1", "t2", "t3", "t4", "t5")

			res := p.claude("--session-id", sid, "/drover:start")
			if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Task done." {
				t.Fatalf("exit %d, stdout %q; want 0 and the last task's answer", res.ExitCode, res.Stdout)
			}
			reasons := blockReasons(p.model.Messages(), sid)
			var want []string
			for _, task := range tasks[1:4] {
				want = append(want, "loop "+filepath.Base(task))
			}
			if got := kinds(reasons); !slices.Equal(got, want) {
				t.Fatalf("block reasons %q, want %q (three stops within the budget)", got, want)
			}
			if !strings.Contains(reasons[2], "Iteration: 3") {
				t.Errorf("the last block is not iteration 3:\n%s", reasons[2])
			}
			// The user hears why the queue stopped: the hook's systemMessage,
			// which --print does not show but the transcript keeps.
			if w := "iteration 4 is past the budget of 3 (queue.max_iterations). 1 task(s) still pending"; !strings.Contains(p.transcript(sid), w) {
				t.Errorf("the transcript lacks drover's budget message %q", w)
			}
			// The fourth stop is past the budget: off, task 5 still pending.
			p.wantSession(sid, "off", 4, 1, 4, 0)
			if _, err := os.Stat(tasks[4]); err != nil {
				t.Errorf("task 5: %v", err)
			}
		})
	}
}
