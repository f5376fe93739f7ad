package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/agentrun"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/watchdog"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/router"
)

func TestAddStartDoStop(t *testing.T) {
	p := newProj(t)
	id := "cmd-session"

	// add writes the raw prompt and starts nothing.
	out := p.must("", "add", "--session", id, "fix the", "login bug")
	if !strings.Contains(out, "Added task") {
		t.Errorf("add printed %q", out)
	}
	s := p.session(id)
	if s.State != "off" || s.Pending != 1 {
		t.Fatalf("after add: %+v, want off with 1 pending", s)
	}
	data, err := os.ReadFile(s.NextTask)
	if err != nil || strings.TrimSpace(string(data)) != "fix the login bug" {
		t.Errorf("task file holds %q (%v)", data, err)
	}
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() {
		t.Errorf("a stop before start blocked: %+v", h)
	}

	// start turns the queue on and prints the loop prompt for the task.
	out = p.must("", "start", "--session", id)
	if !strings.Contains(out, "Next task: "+s.NextTask) {
		t.Errorf("start does not name the task:\n%s", out)
	}
	if s := p.session(id); s.State != "on" || s.Iteration != 0 {
		t.Errorf("after start: %+v", s)
	}

	// do adds (from stdin, verbatim) and starts.
	prompt := "it's \"quoted\" $HOME `x`\nsecond line"
	out = p.must(prompt, "do", "--session", id, "-")
	if !strings.Contains(out, "Started session") {
		t.Errorf("do printed:\n%s", out)
	}
	if s := p.session(id); s.Pending != 2 {
		t.Errorf("after do: %+v, want 2 pending", s)
	}
	files, _ := filepath.Glob(filepath.Join(p.root, ".drover", "sessions", id, "*.md"))
	var found bool
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.TrimRight(string(b), "\n") == prompt {
			found = true
		}
	}
	if !found {
		t.Errorf("no task file holds the stdin prompt verbatim")
	}

	// stop turns it off; the next Stop hook is allowed.
	out = p.must("", "stop", "--session", id)
	if !strings.Contains(out, "Stopped") {
		t.Errorf("stop printed %q", out)
	}
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() {
		t.Errorf("a stop after drover stop blocked: %+v", h)
	}
	if s := p.session(id); s.State != "off" {
		t.Errorf("after stop: %+v", s)
	}
}

func TestStartWithoutTasksFails(t *testing.T) {
	p := newProj(t)
	p.must("", "serve", "--detach")
	r := p.drover("", "start", "--session", "empty")
	if r.code == 0 || !strings.Contains(r.stderr, "no pending tasks") {
		t.Errorf("start without tasks: exit %d stderr %q", r.code, r.stderr)
	}
	r = p.drover("", "add", "--session", "empty", "   ")
	if r.code == 0 {
		t.Errorf("add of a blank prompt succeeded: %q", r.stdout)
	}
	r = p.drover("", "add", "x")
	if r.code == 0 || !strings.Contains(r.stderr, "CLAUDE_CODE_SESSION_ID") {
		t.Errorf("add without a session: exit %d stderr %q", r.code, r.stderr)
	}
	r = p.drover("", "add", "--session", "../escape", "x")
	if r.code == 0 || !strings.Contains(r.stderr, "not a valid session id") {
		t.Errorf("add with a path-like session: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestUnstickRestartsTheQueue(t *testing.T) {
	p := newProj(t)
	id := "stuck-session"
	p.must("", "do", "--session", id, "hard task")
	task := p.session(id).NextTask
	stuck := strings.TrimSuffix(task, ".md") + ".stuck.md"
	if err := os.Rename(task, stuck); err != nil {
		t.Fatal(err)
	}
	// All tasks stuck: the stop goes to review, the prompt reminder names
	// the stuck task.
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() || !strings.Contains(h.Reason, "review") {
		t.Fatalf("stop with only a stuck task: %+v", h)
	}
	h := p.hook(hook.UserPromptSubmit, map[string]any{"session_id": id, "prompt": "help"})
	if h.HookSpecificOutput == nil || !strings.Contains(h.HookSpecificOutput.AdditionalContext, "stuck") {
		t.Errorf("prompt reminder does not mention the stuck task: %+v", h)
	}
	out := p.must("", "unstick", "--session", id)
	if !strings.Contains(out, "Unstuck") || !strings.Contains(out, task) {
		t.Errorf("unstick printed:\n%s", out)
	}
	if _, err := os.Stat(task); err != nil {
		t.Errorf("task not renamed back: %v", err)
	}
	if s := p.session(id); s.State != "on" || s.Iteration != 0 || s.Stuck != 0 || s.Pending != 1 {
		t.Errorf("after unstick: %+v", s)
	}
}

// A stuck task whose pending name is taken: drover unstick says so in
// plain words naming the files, with no HTTP status (issue 12, item 22).
func TestUnstickNameClash(t *testing.T) {
	p := newProj(t)
	id := "clash"
	p.must("", "add", "--session", id, "hard task")
	task := p.session(id).NextTask
	stuck := strings.TrimSuffix(task, ".md") + ".stuck.md"
	if err := os.Rename(task, stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(task, []byte("another task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.drover("", "unstick", "--session", id)
	if r.code == 0 {
		t.Fatalf("unstick with a name clash exited 0:\n%s", r.stdout)
	}
	want := "drover: unstick: cannot unstick " + stuck + ": " + task + " already exists"
	if !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr = %q, want it to start %q", r.stderr, want)
	}
	for _, bad := range []string{"supervisor answered", "HTTP", "supervisor failed", "bad request"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr %q holds %q", r.stderr, bad)
		}
	}
	// Refused, not failed: the supervisor went on, and the queue starts
	// once the user has sorted the files out.
	if err := os.Remove(task); err != nil {
		t.Fatal(err)
	}
	if out := p.must("", "unstick", "--session", id); !strings.Contains(out, "Unstuck "+task) {
		t.Errorf("unstick after the clash was resolved printed:\n%s", out)
	}
}

func TestCleanup(t *testing.T) {
	p := newProj(t)
	p.must("", "add", "--session", "finished", "a")
	p.must("", "do", "--session", "active", "b")
	p.must("", "add", "--session", "unfinished", "c")
	// Sessions of the other workflows have no pending tasks, only their
	// own files: an active loop or plan is protected by its state.
	p.must("", "loop", "start", "--session", "looping", "keep going")
	p.must("", "plan", "new", "--session", "planning", "demo")
	sessions := filepath.Join(p.root, ".drover", "sessions")
	if err := os.MkdirAll(filepath.Join(sessions, "planning"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "planning", "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Finish the first session's task, and age every session folder.
	fin := p.session("finished").NextTask
	if err := os.Rename(fin, strings.TrimSuffix(fin, ".md")+".done.md"); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	_ = filepath.Walk(sessions, func(path string, _ os.FileInfo, _ error) error {
		if path != sessions {
			_ = os.Chtimes(path, old, old)
		}
		return nil
	})

	out := p.must("", "cleanup")
	if !strings.Contains(out, "Deleted 1 session") {
		t.Errorf("cleanup printed:\n%s", out)
	}
	for id, want := range map[string]bool{"finished": false, "active": true, "unfinished": true, "looping": true, "planning": true} {
		_, err := os.Stat(filepath.Join(sessions, id))
		if (err == nil) != want {
			t.Errorf("after cleanup, session %s exists=%v, want %v", id, err == nil, want)
		}
	}
	ids := map[string]bool{}
	for _, s := range p.status().Sessions {
		ids[s.ID] = true
	}
	if ids["finished"] || !ids["active"] {
		t.Errorf("status after cleanup: %v", ids)
	}

	// Younger than N days: kept even with -f.
	out = p.must("", "cleanup", "30", "-f")
	if !strings.Contains(out, "Deleted 0 session") {
		t.Errorf("cleanup 30 -f printed:\n%s", out)
	}
	out = p.must("", "cleanup", "--force")
	if !strings.Contains(out, "Deleted 4 session") {
		t.Errorf("cleanup -f printed:\n%s", out)
	}
	// With every session gone, status says so, with no table header after.
	if out := p.must("", "status"); !strings.Contains(out, "no sessions") || strings.Contains(out, "SESSION") {
		t.Errorf("status with no sessions printed:\n%s", out)
	}
	if r := p.drover("", "cleanup", "soon"); r.code == 0 || !strings.Contains(r.stderr, "DAYS") {
		t.Errorf("cleanup with a bad DAYS: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestTemplatesOverride(t *testing.T) {
	p := newProj(t)
	out := p.must("", "templates")
	dir := filepath.Join(p.root, ".drover", "templates")
	loop := filepath.Join(dir, "loop.md")
	if !regexp.MustCompile(`(?m)^\[drover\] Wrote \d+ template\(s\) into ` + regexp.QuoteMeta(dir) + `: .*\bloop\.md\b`).MatchString(out) {
		t.Errorf("templates printed:\n%s", out)
	}
	if err := os.WriteFile(loop, []byte("CUSTOM LOOP for {{next_task}} at {{iteration}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second run keeps the user's file.
	if out := p.must("", "templates"); !regexp.MustCompile(`(?m)^\[drover\] Kept your \d+ file\(s\) in ` + regexp.QuoteMeta(dir) + `: .*\bloop\.md\b`).MatchString(out) {
		t.Errorf("second templates run:\n%s", out)
	}
	id := "tmpl"
	p.must("", "do", "--session", id, "x")
	h := p.hook(hook.Stop, stopInput(id))
	if !strings.Contains(h.Reason, "CUSTOM LOOP for "+p.session(id).NextTask+" at 1") {
		t.Errorf("the override was not used:\n%s", h.Reason)
	}
	// An override with an unknown name is an error the agent is told about,
	// not a block.
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "templates", "lop.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h = p.hook(hook.Stop, stopInput(id))
	if h.IsBlock() || !strings.Contains(h.SystemMessage, "lop.md") {
		t.Errorf("stop with a misnamed template: %+v", h)
	}
}

// drover templates copies the seed's two by default, the ones named, or
// --all; an unknown name copies nothing and says so (issue 12, item 24).
func TestTemplatesCopiesWhatIsNamed(t *testing.T) {
	p := newProj(t)
	dir := filepath.Join(p.root, ".drover", "templates")
	files := func() []string {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	out := p.must("", "templates")
	if got := files(); !slices.Equal(got, []string{"loop.md", "review.md"}) {
		t.Errorf("drover templates wrote %v, want loop.md and review.md", got)
	}
	if !strings.Contains(out, "Wrote 2 template(s)") || !strings.Contains(out, "--list") || !strings.Contains(out, "--all") {
		t.Errorf("templates printed:\n%s", out)
	}

	out = p.must("", "templates", "start", "stuck_reminder.md", "loop")
	if got := files(); !slices.Equal(got, []string{"loop.md", "review.md", "start.md", "stuck_reminder.md"}) {
		t.Errorf("drover templates start stuck_reminder.md loop: files %v", got)
	}
	if !strings.Contains(out, "Wrote 2 template(s) into "+dir+": start.md, stuck_reminder.md") || !strings.Contains(out, "Kept your 1 file(s) in "+dir+": loop.md") {
		t.Errorf("templates with names printed:\n%s", out)
	}

	r := p.drover("", "templates", "lop", "review")
	if r.code == 0 || !strings.Contains(r.stderr, `no template named "lop"`) || !strings.Contains(r.stderr, "drover templates --list") {
		t.Errorf("templates with an unknown name: exit %d stderr %q", r.code, r.stderr)
	}
	if got := len(files()); got != 4 {
		t.Errorf("an unknown name still wrote files: %d there", got)
	}

	list := p.must("", "templates", "--list")
	if !strings.Contains(list, "loop\t(yours: "+filepath.Join(dir, "loop.md")+")\n") || !regexp.MustCompile(`(?m)^uncommitted$`).MatchString(list) {
		t.Errorf("templates --list printed:\n%s", list)
	}
	names := strings.Count(list, "\n")

	if r := p.drover("", "templates", "--all", "loop"); r.code == 0 {
		t.Errorf("templates --all loop exited 0: %s", r.stdout)
	}
	p.must("", "templates", "--all")
	if got := len(files()); got != names {
		t.Errorf("templates --all left %d files, want one for each of the %d listed", got, names)
	}
}

// An empty override is refused with a warning naming the file, and the
// built-in is used: the Stop still blocks with the loop prompt (issue 12,
// item 23).
func TestEmptyTemplateOverrideUsesTheBuiltIn(t *testing.T) {
	p := newProj(t)
	id := "empty-tmpl"
	p.must("", "do", "--session", id, "x")
	loop := filepath.Join(p.root, ".drover", "templates", "loop.md")
	if err := os.MkdirAll(filepath.Dir(loop), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loop, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := p.hook(hook.Stop, stopInput(id))
	if !h.IsBlock() || !strings.Contains(h.Reason, "# drover Work Loop") || !strings.Contains(h.Reason, p.session(id).NextTask) {
		t.Fatalf("stop with an empty loop.md: %+v, want a block with the built-in loop prompt", h)
	}
	if !strings.Contains(h.SystemMessage, loop+" is empty") || !strings.Contains(h.SystemMessage, "built-in loop template") {
		t.Errorf("systemMessage %q does not name %s", h.SystemMessage, loop)
	}
	// Said once; the next Stop blocks as usual.
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() || strings.Contains(h.SystemMessage, "loop.md") {
		t.Errorf("second stop: %+v", h)
	}
	log, err := os.ReadFile(filepath.Join(p.root, ".drover", "logs", "drover.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), loop+" is empty") {
		t.Errorf("the supervisor log does not name %s:\n%s", loop, log)
	}
}

func TestConfigLayersAndReload(t *testing.T) {
	p := newProj(t)
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(p.root, ".drover", "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("queue:\n  max_iterations: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := p.must("", "config")
	if !strings.Contains(out, "max_iterations: 7") {
		t.Errorf("config does not show the project file's value:\n%s", out)
	}
	p.env = append(p.env, "DROVER_QUEUE_MAX_ITERATIONS=9")
	if out := p.must("", "config"); !strings.Contains(out, "max_iterations: 9") {
		t.Errorf("env does not override the file:\n%s", out)
	}
	p.env = p.env[:len(p.env)-1]

	if err := os.WriteFile(cfgFile, []byte("queue:\n  max_iteratons: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.drover("", "config")
	if r.code == 0 || !strings.Contains(r.stderr, "max_iteratons") || !strings.Contains(r.stderr, cfgFile) {
		t.Errorf("unknown key: exit %d stderr %q", r.code, r.stderr)
	}

	// A running supervisor picks up a changed project config: with
	// max_iterations 1 the second stop ends the queue.
	if err := os.WriteFile(cfgFile, []byte("queue:\n  max_iterations: 50\n  git_commit_check: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := "reload"
	p.must("", "do", "--session", id, "x")
	if h := p.hook(hook.Stop, stopInput(id)); !h.IsBlock() {
		t.Fatalf("first stop: %+v", h)
	}
	if err := os.WriteFile(cfgFile, []byte("queue:\n  max_iterations: 1\n  git_commit_check: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 30*time.Second, "the supervisor to pick up the changed config", func() bool {
		return strings.Contains(p.supervisorConfig(), "max_iterations: 1\n")
	})
	if h := p.hook(hook.Stop, stopInput(id)); h.IsBlock() {
		t.Errorf("stop past the reloaded max_iterations blocked: %+v", h)
	}
	if s := p.session(id); s.State != "off" {
		t.Errorf("after the budget: %+v", s)
	}
}

// supervisorConfig asks the running supervisor for its effective config.
func (p *proj) supervisorConfig() string {
	p.t.Helper()
	return p.must("", "config", "--from-supervisor")
}

// The tags drover puts in the environment of its agents and reviewers
// reach the drover hooks and commands those run: they are drover's own,
// so the check of DROVER_* variables lets them through without the
// warning it gives a variable that is no config key.
func TestProcessTagsAreNotConfigKeys(t *testing.T) {
	for _, name := range []string{watchdog.TagKey, agentrun.TagEnv, reviewer.TagEnv} {
		if !config.IsNonConfigEnv(name) {
			t.Errorf("config.IsNonConfigEnv(%q) = false", name)
		}
	}
	p := newProj(t)
	env := append(p.env, "CLAUDE_PROJECT_DIR="+p.root, watchdog.TagKey+"=a", agentrun.TagEnv+"=b", reviewer.TagEnv+"=c")
	cmd := exec.Command(droverBin, "config")
	cmd.Dir, cmd.Env = p.root, env
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "ignoring environment variable") {
		t.Errorf("drover config with drover's process tags in the environment: %v\n%s", err, out)
	}
}

// A DROVER_* variable that is no config key (someone else's, or a
// misspelt key) is warned about, on the command's stderr and in the
// supervisor's log, and stops nothing: the supervisor starts, commands
// work (issue 12, item 21).
func TestUnrelatedDroverVariableWarns(t *testing.T) {
	p := newProj(t)
	p.env = append(p.env, "DROVER_UNRELATED=1", "DROVER_QUEUE_MAX_ITERATONS=5")
	id := "env"
	// do starts the supervisor with this environment.
	out := p.must("", "do", "--session", id, "x")
	if !strings.Contains(out, "Added task") {
		t.Errorf("do printed:\n%s", out)
	}
	if s := p.session(id); s.State != "on" {
		t.Errorf("after do: %+v", s)
	}
	r := p.drover("", "config")
	if r.code != 0 {
		t.Fatalf("config exited %d: %s", r.code, r.stderr)
	}
	for _, name := range []string{"DROVER_UNRELATED", "DROVER_QUEUE_MAX_ITERATONS"} {
		if !strings.Contains(r.stderr, "warning: ignoring environment variable "+name) {
			t.Errorf("config's stderr does not warn about %s:\n%s", name, r.stderr)
		}
	}
	if strings.Count(r.stderr, "DROVER_UNRELATED") != 1 {
		t.Errorf("config warned more than once:\n%s", r.stderr)
	}
	log, err := os.ReadFile(filepath.Join(p.root, ".drover", "logs", "drover.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "ignoring environment variable DROVER_UNRELATED") {
		t.Errorf("the supervisor log does not warn about DROVER_UNRELATED:\n%s", log)
	}
	// The started droverd serve said so on its stderr too.
	serveOut, err := os.ReadFile(filepath.Join(p.root, ".drover", "logs", "serve.out"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(serveOut), "droverd: warning: ignoring environment variable DROVER_UNRELATED"); n != 1 {
		t.Errorf("serve's stderr warns about DROVER_UNRELATED %d times, want once:\n%s", n, serveOut)
	}
}

func TestInitLiftsTheBlockCap(t *testing.T) {
	p := newProj(t)
	settings := filepath.Join(p.root, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"model": "opus", "env": {"FOO": "1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := p.must("", "init")
	if !strings.Contains(out, "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0") {
		t.Errorf("init printed:\n%s", out)
	}
	var got map[string]any
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	env, _ := got["env"].(map[string]any)
	if got["model"] != "opus" || env["FOO"] != "1" || env["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] != "0" {
		t.Errorf("settings after init: %s", b)
	}
	if out := p.must("", "init"); !strings.Contains(out, "already sets") {
		t.Errorf("second init:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(p.root, ".drover", ".gitignore")); err != nil {
		t.Errorf("init did not create .drover/.gitignore: %v", err)
	}
}

// Every command, however deep, documents itself: a one-line Short for the
// command lists and a Long or an Example for its own --help. Cobra prints
// "Usage:" for any command, so that proves nothing.
func TestHelpOnEveryCommand(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n++
			if strings.TrimSpace(sub.Short) == "" {
				t.Errorf("%q has no Short", sub.CommandPath())
			}
			if strings.TrimSpace(sub.Long) == "" && strings.TrimSpace(sub.Example) == "" {
				t.Errorf("%q has neither Long nor Example", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk((&app{}).rootCmd())
	if n < 12 {
		t.Errorf("walked %d commands, want at least the 12 of the queue workflow", n)
	}
}

// readme returns the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README names every command and every config key. A top-level command
// appears as "drover NAME"; a subcommand as "drover PARENT NAME" or, in a
// list after its parent, as a code span starting with its name.
func TestReadmeNamesEveryCommandAndConfigKey(t *testing.T) {
	doc := readme(t)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			pat := regexp.QuoteMeta(sub.CommandPath())
			if c.HasParent() {
				pat = "(" + pat + "|`" + regexp.QuoteMeta(sub.Name()) + ")"
			}
			if !regexp.MustCompile(pat + "[` \\]]").MatchString(doc) {
				t.Errorf("README.md does not mention %q", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk((&app{}).rootCmd())
	for _, k := range config.Keys() {
		if !strings.Contains(doc, k) {
			t.Errorf("README.md does not mention the config key %q", k)
		}
	}
}

// The README's loop.routes row spells out the default rules exactly as
// drover config would read them.
func TestReadmeStatesTheDefaultRoutes(t *testing.T) {
	want := "`" + router.FormatRules(router.DefaultRules()) + "`"
	if !strings.Contains(readme(t), want) {
		t.Errorf("README.md does not give the default loop.routes as %s", want)
	}
}

// frontMatter returns the YAML front matter of a markdown file.
func frontMatter(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(string(b), "---\n")
	if !ok {
		t.Fatalf("%s does not start with front matter", path)
	}
	fm, _, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatalf("%s: front matter not closed", path)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(fm), &m); err != nil {
		t.Fatalf("%s: front matter: %v", path, err)
	}
	return m
}

// The plugin's slash commands run drover without a permission prompt, and
// the queue workflow's eight commands are there.
func TestPluginCommands(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "plugin", "commands", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plugin commands (%v)", err)
	}
	have := map[string]bool{}
	for _, f := range files {
		fm := frontMatter(t, f)
		have[strings.TrimSuffix(filepath.Base(f), ".md")] = true
		if d, _ := fm["description"].(string); strings.TrimSpace(d) == "" {
			t.Errorf("%s: no description", f)
		}
		if at, _ := fm["allowed-tools"].(string); !strings.Contains(at, "Bash(drover:*)") {
			t.Errorf("%s: allowed-tools %q does not allow drover", f, at)
		}
	}
	for _, c := range []string{"do", "add", "start", "stop", "unstick", "status", "templates", "cleanup"} {
		if !have[c] {
			t.Errorf("plugin/commands/%s.md is missing", c)
		}
	}
}

// slash runs the shell block of the plugin's /drover:NAME command as
// Claude Code does: $ARGUMENTS replaced by what the user typed after the
// command, in the session's environment, with drover on PATH.
func (p *proj) slash(name, id, arguments string) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "plugin", "commands", name+".md"))
	if err != nil {
		p.t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "```!\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		p.t.Fatalf("%s.md has no ```! block:\n%s", name, b)
	}
	cmd := exec.Command("bash", "-c", strings.ReplaceAll(block, "$ARGUMENTS", arguments))
	cmd.Dir = p.root
	cmd.Env = append(slices.Clone(p.env), "CLAUDE_PROJECT_DIR="+p.root, "CLAUDE_CODE_SESSION_ID="+id)
	for i, e := range cmd.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			cmd.Env[i] = "PATH=" + filepath.Dir(droverBin) + string(os.PathListSeparator) + v
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("the /drover:%s block failed: %v\n%s", name, err, out)
	}
	return string(out)
}

// shellArguments matches $ARGUMENTS on a line of its own right after a
// quoted heredoc's start: the one way a slash command hands drover what
// the user typed with no shell reading it.
var shellArguments = regexp.MustCompile(`<<'([A-Z_]+)'\n\$ARGUMENTS\n([A-Z_]+)\n`)

// Every plugin command that passes what the user typed to drover passes it
// as text, in a quoted heredoc: no shell expands $(...), ; or quotes in it.
func TestPluginCommandsPassArgumentsAsText(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "plugin", "commands", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plugin commands (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var shell []string
		if _, block, ok := strings.Cut(string(b), "```!\n"); ok {
			block, _, _ = strings.Cut(block, "\n```")
			shell = append(shell, block+"\n")
		}
		for _, m := range regexp.MustCompile("!`([^`]*)`").FindAllStringSubmatch(string(b), -1) {
			shell = append(shell, m[1])
		}
		for _, sh := range shell {
			quoted := 0
			for _, m := range shellArguments.FindAllStringSubmatch(sh, -1) {
				if m[1] == m[2] {
					quoted++
				}
			}
			if n := strings.Count(sh, "$ARGUMENTS"); n != quoted {
				t.Errorf("%s: %d of its shell's %d $ARGUMENTS are not alone in a quoted heredoc:\n%s", f, n-quoted, n, sh)
			}
		}
	}
}

// What the user types after /drover:templates and /drover:cleanup reaches
// drover as words: a $(...) or ; in it runs nothing, and is refused as a
// name or a number of days.
func TestTemplatesAndCleanupSlashCommandsRunNothingTyped(t *testing.T) {
	p := newProj(t)
	const id = "slash"
	pwned := filepath.Join(p.root, "pwned")
	out := p.slash("templates", id, "loop start")
	if !strings.Contains(out, "Wrote 2 template(s)") || !strings.Contains(out, "loop.md, start.md") {
		t.Errorf("/drover:templates loop start printed:\n%s", out)
	}
	if out := p.slash("templates", id, "--list"); !strings.Contains(out, "loop\t(yours: ") {
		t.Errorf("/drover:templates --list printed:\n%s", out)
	}
	out = p.slash("templates", id, "review $(touch "+pwned+"); touch "+pwned)
	if !strings.Contains(out, "no template named") {
		t.Errorf("/drover:templates with a command in it printed:\n%s", out)
	}
	out = p.slash("cleanup", id, "`touch "+pwned+"`")
	if !strings.Contains(out, "accepts at most 1 arg(s), received 2") {
		t.Errorf("/drover:cleanup with a command in it printed:\n%s", out)
	}
	if out := p.slash("cleanup", id, "$HOME"); !strings.Contains(out, `DAYS must be a whole number of days, 0 or more, got "$HOME"`) {
		t.Errorf("/drover:cleanup $HOME printed:\n%s", out)
	}
	if out := p.slash("cleanup", id, "3 -f"); !strings.Contains(out, "older than 3 day(s)") && !strings.Contains(out, "nothing to clean up") {
		t.Errorf("/drover:cleanup 3 -f printed:\n%s", out)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("a command typed after a slash command ran")
	}
}

// Arguments on stdin (--args -) larger than drover reads are refused as
// such, by every command that takes them, not cut and then read as
// something else (an unterminated quote, a shorter prompt).
func TestArgsOnStdinOverTheCap(t *testing.T) {
	p := newProj(t)
	big := `"` + strings.Repeat("x", maxPromptBytes) + `"`
	for _, args := range [][]string{
		{"loop", "start"},
		{"plan"},
		{"note"},
		{"templates"},
		{"cleanup"},
	} {
		r := p.drover(big, append(args, "--session", "big", "--args", "-")...)
		if r.code == 0 || !strings.Contains(r.stderr, "the arguments on stdin are larger than "+strconv.Itoa(maxPromptBytes)+" bytes") {
			t.Errorf("drover %s with %d bytes on stdin: exit %d, stderr %.200q", strings.Join(args, " "), len(big), r.code, r.stderr)
		}
	}
}

// The repository's marketplace lists the plugin at the directory that holds
// its manifest, under the manifest's name.
func TestMarketplaceListsThePlugin(t *testing.T) {
	repo := filepath.Join("..", "..")
	var market struct {
		Name  string `json:"name"`
		Owner struct {
			Name string `json:"name"`
		} `json:"owner"`
		Plugins []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"plugins"`
	}
	b, err := os.ReadFile(filepath.Join(repo, ".claude-plugin", "marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &market); err != nil {
		t.Fatalf("marketplace.json: %v", err)
	}
	if market.Name == "" || market.Owner.Name == "" || len(market.Plugins) != 1 {
		t.Fatalf("marketplace.json: want a name, an owner and one plugin, got %+v", market)
	}
	pl := market.Plugins[0]
	if !strings.HasPrefix(pl.Source, "./") {
		t.Fatalf("plugin source %q is not a relative path", pl.Source)
	}
	var manifest struct {
		Name string `json:"name"`
	}
	b, err = os.ReadFile(filepath.Join(repo, filepath.FromSlash(pl.Source), ".claude-plugin", "plugin.json"))
	if err != nil {
		t.Fatalf("the plugin source %q has no manifest: %v", pl.Source, err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatalf("plugin.json: %v", err)
	}
	if manifest.Name != pl.Name {
		t.Errorf("marketplace lists %q, the manifest is named %q", pl.Name, manifest.Name)
	}
	if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(pl.Source), "hooks", "hooks.json")); err != nil {
		t.Errorf("the plugin has no hooks: %v", err)
	}
}

// The keys a running supervisor does not reload are named where users look:
// drover config --help and the README's configuration section.
func TestRestartKeysDocumented(t *testing.T) {
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := a.execute(context.Background(), []string{"config", "--help"}); code != 0 {
		t.Fatalf("config --help exited %d: %s", code, stderr.String())
	}
	help := stdout.String()
	doc := readme(t)
	start := strings.Index(doc, "## Configuration")
	end := strings.Index(doc[start+1:], "\n| key |")
	if start < 0 || end < 0 {
		t.Fatal("README.md has no configuration section before its key table")
	}
	intro := doc[start : start+1+end]
	for _, k := range config.RestartKeys() {
		if !strings.Contains(help, k) {
			t.Errorf("drover config --help does not name %s", k)
		}
		if !strings.Contains(intro, "`"+k+"`") {
			t.Errorf("README.md's configuration section does not say %s needs a restart", k)
		}
	}
}

// drover config does not print the NATS password it was given.
func TestConfigHidesNATSCredentials(t *testing.T) {
	p := newProj(t)
	p.env = append(p.env, "DROVER_RUN_NATS_USER=drover", "DROVER_RUN_NATS_PASSWORD=pw-s3cret")
	out := p.must("", "config")
	if strings.Contains(out, "s3cret") || !strings.Contains(out, "password: <hidden>") {
		t.Errorf("drover config shows the NATS credentials, or not that they are set:\n%s", out)
	}
}
