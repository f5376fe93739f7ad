//go:build unix

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// TestTwoSessionsConcurrently runs two CLI processes at the same time in
// one project, each on its own session with its own two tasks. No
// supervisor runs when they start, so their first hooks race to start one.
// Each model is only ever told about its own session: no request of one
// session carries the other's id, and every block names its own session
// directory.
func TestTwoSessionsConcurrently(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "worker.yaml"))
	sids := []string{newSessionID(t), newSessionID(t)}
	tasks := [][]string{
		p.addTasks(sids[0], "first session, task 1", "first session, task 2"),
		p.addTasks(sids[1], "second session, task 1", "second session, task 2"),
	}
	p.stopSupervisor()
	if s := p.socket(); s != "" {
		t.Fatalf("socket %s left after the supervisor stopped", s)
	}

	results := make([]claudecli.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, sid := range sids {
		wg.Go(func() {
			results[i], errs[i] = p.runClaude(nil, "--session-id", sid, "/drover:start")
		})
	}
	wg.Wait()
	for i := range sids {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i+1, errs[i])
		}
		if results[i].ExitCode != 0 || strings.TrimSpace(results[i].Stdout) != "Review clean: nothing to add." {
			t.Errorf("session %d: exit %d, stdout %q; want 0 and the clean review", i+1, results[i].ExitCode, results[i].Stdout)
		}
	}

	all := p.model.Messages()
	for i, sid := range sids {
		other := sids[1-i]
		dir := filepath.Join(p.root, ".drover", "sessions", sid)
		var mine []fakemodel.Request
		for _, r := range all {
			if r.SessionID == sid {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			t.Fatalf("session %d sent no model request", i+1)
		}
		for _, r := range mine {
			if bytes.Contains(r.Body, []byte(other)) {
				t.Errorf("session %d: request #%d mentions the other session %s", i+1, r.Seq, other)
			}
		}
		reasons := blockReasons(all, sid)
		want := []string{"loop " + filepath.Base(tasks[i][1]), "review"}
		if got := kinds(reasons); !slices.Equal(got, want) {
			t.Errorf("session %d block reasons %q, want %q", i+1, got, want)
		}
		for _, r := range reasons {
			if !strings.Contains(r, dir) {
				t.Errorf("session %d: a block does not name its session directory %s:\n%s", i+1, dir, r)
			}
			if task := nextTask(r); task != "" && filepath.Dir(task) != dir {
				t.Errorf("session %d was handed %s, outside its session directory", i+1, task)
			}
		}
		if !strings.Contains(mine[0].LastUserText, "Next task: "+tasks[i][0]) {
			t.Errorf("session %d did not start with its own first task:\n%s", i+1, mine[0].LastUserText)
		}
		p.wantSession(sid, "off", 3, 0, 2, 0)
	}
	if st := p.status(); len(st.Sessions) != 2 {
		t.Errorf("status lists %d sessions, want 2: %+v", len(st.Sessions), st.Sessions)
	}
	if m, _ := filepath.Glob(filepath.Join(p.run, "drover", "*.sock")); len(m) != 1 {
		t.Errorf("sockets %q, want one supervisor's", m)
	}
}

// TestSupervisorKill9MidQueue: the model's Bash call for task 2 kills the
// supervisor with SIGKILL between two Stops. The next Stop's hook starts a
// new supervisor, which goes on from the stored state: the iteration
// continues exactly (the block after the kill is iteration 2) and the
// queue finishes.
func TestSupervisorKill9MidQueue(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "kill9.yaml"))
	sid := newSessionID(t)
	tasks := p.addTasks(sid, "one", "two", "three")
	first := p.supervisorPID()
	if first == 0 {
		t.Fatal("drover add started no supervisor")
	}

	res := p.claude("--session-id", sid, "/drover:start")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review clean: nothing to add." {
		t.Fatalf("exit %d, stdout %q; want 0 and the clean review", res.ExitCode, res.Stdout)
	}
	killed, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(p.root, ".git", "killed-supervisor-pid"))))
	if err != nil || killed != first {
		t.Fatalf("the model killed pid %d (%v), want the supervisor %d", killed, err, first)
	}
	if !waitGone(first, 10*time.Second) {
		t.Errorf("supervisor %d survived kill -9", first)
	}

	reasons := blockReasons(p.model.Messages(), sid)
	want := []string{"loop " + filepath.Base(tasks[1]), "loop " + filepath.Base(tasks[2]), "review"}
	if got := kinds(reasons); !slices.Equal(got, want) {
		t.Fatalf("block reasons %q, want %q", got, want)
	}
	for i, r := range reasons[:2] {
		if w := "Iteration: " + strconv.Itoa(i+1); !strings.Contains(r, w) {
			t.Errorf("block %d does not say %q:\n%s", i+1, w, r)
		}
	}
	if tr := p.transcript(sid); strings.Contains(tr, "drover could not decide") {
		t.Error("a hook failed open after the kill; the transcript says drover could not decide")
	}
	second := p.supervisorPID()
	if second == 0 || second == first {
		t.Errorf("supervisor after the kill: pid %d (the killed one was %d), want a new one", second, first)
	}
	p.wantSession(sid, "off", 4, 0, 3, 0)
	for _, task := range tasks {
		if _, err := os.Stat(doneName(task)); err != nil {
			t.Errorf("task not done: %v", err)
		}
	}
}
