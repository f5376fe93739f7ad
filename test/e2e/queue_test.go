//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// workSummary is what the scripted model of queue.yaml appends to each
// task file it finishes.
const workSummary = "\n---\n## Work Summary\n- appended the task to work.log\n"

// TestQueueDoAddReview runs the queue workflow end to end through the real
// slash commands: two `/drover:add`s, then `/drover:do`, each a run of the
// CLI on the same session. The three tasks are worked in the order added
// (Bash: copy the task into work.log, commit, rename to .done.md); the
// empty queue starts the review, whose finding (a task queued with
// `drover add`) sends the loop back to on; the second, clean review lets
// the session stop.
func TestQueueDoAddReview(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "queue.yaml"))
	sid := newSessionID(t)
	sessDir := filepath.Join(p.root, ".drover", "sessions", sid)
	texts := []string{
		"alpha: write the first line",
		"beta: write the second line",
		// Quotes, an apostrophe, $ and backquotes must reach the task file
		// as typed: do.md passes $ARGUMENTS through a quoted heredoc.
		`gamma's "quoted" task: keep $HOME and ` + "`date`" + ` as typed`,
	}

	for i, args := range [][]string{
		{"--session-id", sid, "/drover:add " + texts[0]},
		{"--resume", sid, "/drover:add " + texts[1]},
	} {
		res := p.claude(args...)
		if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Task added." {
			t.Fatalf("/drover:add %d: exit %d, stdout %q; want 0 and %q", i+1, res.ExitCode, res.Stdout, "Task added.")
		}
	}
	// Adding starts nothing.
	p.wantSession(sid, "off", 0, 2, 0, 0)
	added := pendingTasks(t, sessDir)
	if len(added) != 2 {
		t.Fatalf("after two /drover:add: pending tasks %q, want 2", added)
	}
	for i, path := range added {
		if got := readFile(t, path); got != texts[i]+"\n" {
			t.Errorf("task file %s = %q, want the /drover:add text %q", path, got, texts[i]+"\n")
		}
	}

	before := len(p.model.Messages())
	res := p.claude("--resume", sid, "/drover:do "+texts[2])
	if res.ExitCode != 0 {
		t.Fatalf("/drover:do exited %d", res.ExitCode)
	}
	if !strings.Contains(res.Stdout, "Review clean: nothing to add.") {
		t.Errorf("stdout %q lacks the clean review's answer", res.Stdout)
	}
	reqs := since(p.model.Messages(), before)
	if len(reqs) == 0 {
		t.Fatal("the /drover:do run sent no model request")
	}

	// The do command's own task is queued after the two added ones, and the
	// loop starts with the oldest.
	done := doneTasks(t, sessDir)
	if len(done) != 4 {
		t.Fatalf("done tasks %q, want 4 (three queued, one from the review)", done)
	}
	tasks := make([]string, 4)
	for i, d := range done {
		tasks[i] = strings.TrimSuffix(d, ".done.md") + ".md"
	}
	if !slices.Equal(tasks[:2], added) {
		t.Errorf("the first two done tasks are %q, want the added ones %q", tasks[:2], added)
	}
	first := reqs[0].LastUserText
	for _, want := range []string{"[drover] Added task " + tasks[2], "[drover] Started session " + sid, "Next task: " + tasks[0]} {
		if !strings.Contains(first, want) {
			t.Errorf("the /drover:do prompt lacks %q:\n%s", want, first)
		}
	}
	// The command's shell block ran before the UserPromptSubmit hook: the
	// hook already saw the queue on and reminded the model of the task.
	if w := "UserPromptSubmit hook additional context: [drover] State: on | Iteration: 0 | Next task: " + tasks[0]; !strings.Contains(allText(reqs[0]), w) {
		t.Errorf("the /drover:do request lacks %q", w)
	}
	if strings.Contains(first, "<<'DROVER_PROMPT_END'") {
		t.Errorf("the /drover:do prompt still holds the unexpanded shell block:\n%s", first)
	}

	// What the model was told at each Stop, in order.
	reasons := blockReasons(reqs, sid)
	b := filepath.Base
	wantKinds := []string{
		"loop " + b(tasks[1]),
		"loop " + b(tasks[2]),
		"review",
		"review-found " + b(tasks[3]),
		"review",
	}
	if got := kinds(reasons); !slices.Equal(got, wantKinds) {
		t.Fatalf("block reasons received:\n%q\nwant:\n%q", got, wantKinds)
	}
	for i, r := range reasons {
		if want := "Iteration: " + strconv.Itoa(i+1); kind(r) != "review" && !strings.Contains(r, want) {
			t.Errorf("block %d does not say %q:\n%s", i+1, want, r)
		}
		if kind(r) == "review" {
			for _, want := range []string{"review subagent", "(" + sid + ")", sessDir, "drover add --session " + sid} {
				if !strings.Contains(r, want) {
					t.Errorf("review block %d lacks %q:\n%s", i+1, want, r)
				}
			}
		}
	}
	for _, d := range done[:3] {
		if !strings.Contains(reasons[2], "- "+d) {
			t.Errorf("the first review does not list the done task %s:\n%s", d, reasons[2])
		}
	}

	// The work itself: every task's text in work.log, in order, one commit
	// each, and each task file kept its text with the summary appended.
	wantLog := texts[0] + "\n" + texts[1] + "\n" + texts[2] + "\nreview: work.log needs a closing line\n"
	if got := readFile(t, filepath.Join(p.root, "work.log")); got != wantLog {
		t.Errorf("work.log = %q, want %q", got, wantLog)
	}
	wantSubjects := []string{"initial commit"}
	for _, task := range tasks {
		wantSubjects = append(wantSubjects, "work: "+strings.TrimSuffix(b(task), ".md"))
	}
	if got := p.subjects(); !slices.Equal(got, wantSubjects) {
		t.Errorf("git log: %q, want %q", got, wantSubjects)
	}
	if got := p.git("show", "HEAD:work.log") + "\n"; got != wantLog {
		t.Errorf("committed work.log = %q, want %q", got, wantLog)
	}
	if dirty := p.git("status", "--porcelain"); dirty != "" {
		t.Errorf("the work tree is not clean:\n%s", dirty)
	}
	wantText := append(slices.Clone(texts), "review: work.log needs a closing line")
	for i, d := range done {
		if got, want := readFile(t, d), wantText[i]+"\n"+workSummary; got != want {
			t.Errorf("%s = %q, want %q", d, got, want)
		}
		mustNotExist(t, tasks[i])
	}

	// Six stops: three tasks, review, the review's task, clean review.
	s := p.wantSession(sid, "off", 6, 0, 4, 0)
	if s.NextTask != "" {
		t.Errorf("status names next task %q for a finished queue", s.NextTask)
	}
}

// pendingTasks lists the pending task files of a session directory, oldest
// first.
func pendingTasks(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range taskFiles(t, dir) {
		if !strings.HasSuffix(f, ".done.md") && !strings.HasSuffix(f, ".stuck.md") {
			out = append(out, f)
		}
	}
	return out
}

// doneTasks lists the .done.md files of a session directory, oldest first.
func doneTasks(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range taskFiles(t, dir) {
		if strings.HasSuffix(f, ".done.md") {
			out = append(out, f)
		}
	}
	return out
}

func taskFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
