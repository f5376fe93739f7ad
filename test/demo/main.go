// Command demo shows drover at work, for a newcomer: `make demo` (or
// `go run ./test/demo`) builds drover, starts a scripted model server, and
// runs the real, pinned Claude Code CLI with drover's plugin in a scratch
// git project, on a queue of three tasks. It then tells, turn by turn,
// what the agent was told and what it did, and prints drover's status.
//
// Only the model is scripted (scenario.yaml, served by test/fakemodel);
// Claude Code, its hooks, drover's supervisor and git are real. Nothing
// leaves the machine: the CLI talks to the scripted model on loopback.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

//go:embed scenario.yaml
var scenarioYAML []byte

func main() {
	keep := flag.Bool("keep", false, "keep the scratch project (and print where it is) for a look around")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout, *keep)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// tasks are the queue of the demo: two added with `drover add`, the last
// one given to `/drover:do`, which starts the queue.
var tasks = []string{
	"Add a greeting: Hello, drover!",
	"Add a farewell: Goodbye, and thanks for the commits.",
	"Add a note that the agent's work is reviewed before it may stop.",
}

func run(ctx context.Context, w io.Writer, keep bool) error {
	root, err := claudecli.ModuleRoot(".")
	if err != nil {
		return err
	}
	claude, err := claudecli.Find()
	if err != nil {
		return err
	}
	version, err := claudecli.Version(ctx, claude)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "drover-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(w, "\nThe scratch project is kept in %s.\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	tmp, err = filepath.EvalSymlinks(tmp)
	if err != nil {
		return err
	}
	d := &demo{
		w:       w,
		project: filepath.Join(tmp, "project"),
		home:    filepath.Join(tmp, "home"),
		run:     filepath.Join(tmp, "run"),
		bin:     filepath.Join(tmp, "bin"),
	}
	for _, dir := range []string{d.home, d.run, d.bin} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}

	d.say("Building drover and droverd from %s ...", root)
	build := exec.CommandContext(ctx, "go", "build", "-o", d.bin, "./cmd/drover", "./cmd/droverd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building drover and droverd: %w\n%s", err, out)
	}
	// drover finds droverd beside itself.
	d.env = []string{
		"PATH=" + d.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"XDG_RUNTIME_DIR=" + d.run,
	}
	// Whatever happens, the supervisor the demo started does not outlive it.
	defer d.stopSupervisor()

	sc, err := fakemodel.ParseScenario(scenarioYAML)
	if err != nil {
		return err
	}
	model, err := fakemodel.Start(ctx, sc)
	if err != nil {
		return err
	}
	defer model.Close()
	if err := claudecli.GitProject(ctx, d.project); err != nil {
		return err
	}
	sid, err := newSessionID()
	if err != nil {
		return err
	}

	d.title("drover demo")
	d.say(`Claude Code %s runs with drover's plugin (plugin/) in a fresh git project,
%s. Its "model" is a script (test/demo/scenario.yaml) served on %s:
it does each task with one Bash command, commits, and renames the task file
to .done.md, as drover's loop prompt asks. Everything else is real.

Each time the agent tries to stop, Claude Code runs drover's Stop hook, and
drover decides: the next task, a commit reminder, a review, or "you may stop".`,
		version, d.project, model.URL())

	d.title("1. Queue two tasks from the terminal")
	for _, task := range tasks[:2] {
		d.say("$ drover add --session %s %q", sid, task)
		out, err := d.drover(ctx, "add", "--session", sid, task)
		if err != nil {
			return err
		}
		d.indent(out)
	}

	d.title("2. In Claude Code: /drover:do with a third task")
	prompt := "/drover:do " + tasks[2]
	d.say("$ claude --print --plugin-dir plugin --session-id %s %q", sid, prompt)
	d.say("(drover on PATH; the session id is fixed only so this demo can name it in advance)")
	res, err := claudecli.Run{
		Bin:       claude,
		Dir:       d.project,
		Home:      d.home,
		BaseURL:   model.URL(),
		PluginDir: filepath.Join(root, "plugin"),
		Args:      []string{"--dangerously-skip-permissions", "--session-id", sid, prompt},
		Env:       d.env,
		Timeout:   2 * time.Minute,
	}.Exec(ctx)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("claude exited %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if n := len(model.Unmatched()); n > 0 {
		return fmt.Errorf("%d model request(s) matched no rule of the scenario", n)
	}

	d.title("3. What happened, turn by turn")
	d.turns(model.Messages(), res.Stdout)

	d.title("4. The result")
	d.say("$ drover status")
	out, err := d.drover(ctx, "status")
	if err != nil {
		return err
	}
	d.indent(out)
	d.say("$ git log --oneline")
	out, err = claudecli.Git(ctx, d.project, "log", "--oneline")
	if err != nil {
		return err
	}
	d.indent(out)
	d.say("$ cat CHANGES.md")
	changes, err := os.ReadFile(filepath.Join(d.project, "CHANGES.md"))
	if err != nil {
		return err
	}
	d.indent(string(changes))
	d.say(`Every task was worked in the order it was queued, committed, and renamed to
.done.md; the review found nothing, so drover let the agent stop (state off).
Try it yourself: make install, then claude --plugin-dir plugin, then
/drover:do <your task>.`)
	return nil
}

// demo holds the scratch world and prints the narration.
type demo struct {
	w                       io.Writer
	project, home, run, bin string
	env                     []string
}

func (d *demo) title(s string) {
	fmt.Fprintf(d.w, "\n%s\n%s\n", s, strings.Repeat("=", len(s)))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.w, format+"\n", args...)
}

// indent prints s indented, as quoted output.
func (d *demo) indent(s string) {
	for line := range strings.Lines(strings.TrimRight(s, "\n") + "\n") {
		fmt.Fprint(d.w, "    "+line)
	}
}

// drover runs a drover command in the project and returns its output.
func (d *demo) drover(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, "drover"), args...)
	cmd.Dir = d.project
	cmd.Env = append(claudecli.Environ(os.Environ(), d.home, "http://127.0.0.1:9", nil), d.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("drover %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// stopSupervisor ends the project's supervisor (SIGTERM, as the README
// says) and waits for it.
func (d *demo) stopSupervisor() {
	if m, _ := filepath.Glob(filepath.Join(d.run, "drover", "*.sock")); len(m) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := d.drover(ctx, "status", "--json")
	if err != nil {
		return
	}
	var st struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal([]byte(out), &st) != nil || st.PID == 0 {
		return
	}
	if syscall.Kill(st.PID, syscall.SIGTERM) != nil {
		return
	}
	for i := 0; i < 1000 && syscall.Kill(st.PID, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

var nextTaskRE = regexp.MustCompile(`Next task: (\S+)`)

// turns narrates the recorded model requests. Request k carries, as its
// last user message, what the agent was told; what it answered is the
// last assistant message of request k+1 (or, for the last request, the
// CLI's final output). Every Stop counts one iteration, and every Stop but
// the last was blocked, so the blocks seen so far give the iteration.
func (d *demo) turns(reqs []fakemodel.Request, final string) {
	stops := 0
	for k, r := range reqs {
		fmt.Fprintf(d.w, "\nTurn %d\n", k+1)
		if strings.HasPrefix(r.LastUserText, "Stop hook feedback:") {
			stops++
		}
		d.told(r, k == 0, stops)
		if k+1 < len(reqs) {
			d.did(lastAssistant(reqs[k+1]))
		} else {
			d.did(strings.TrimSpace(final))
			d.say("  The agent tried to stop again (iteration %d). The review added no task, so", stops+1)
			d.say("  drover turned the queue off and let it stop. Claude Code exits.")
		}
	}
}

// told explains the last user message of r; stops is the Stop count.
func (d *demo) told(r fakemodel.Request, first bool, stops int) {
	text := r.LastUserText
	task := ""
	if m := nextTaskRE.FindStringSubmatch(text); m != nil {
		task = m[1]
	}
	switch {
	case first:
		d.say("  Told: the /drover:do command's output, which Claude Code put into the prompt:")
		for line := range strings.Lines(text) {
			if strings.HasPrefix(line, "[drover]") {
				d.say("    %s", d.short(strings.TrimSpace(line)))
			}
		}
		d.say("    ... followed by drover's loop prompt (how to work, commit and rename")
		d.say("    the task file), ending in: Next task: %s", filepath.Base(task))
		d.say("    which says: %q", taskText(task))
	case r.LastIsToolResult:
		d.say("  Told: the tool's output: %q", strings.TrimSpace(text))
	case strings.HasPrefix(text, "Stop hook feedback:"):
		reason := strings.TrimPrefix(text, "Stop hook feedback:\n")
		d.say("  The agent had tried to stop. drover's Stop hook counted iteration %d, blocked", stops)
		switch {
		case strings.HasPrefix(reason, "All tasks complete."):
			d.say("  the stop and told it: every task is done; spawn a review subagent to verify")
			d.say("  the work (review instructions: check each .done.md, queue a task per problem).")
		case strings.HasPrefix(reason, "Review found issues."):
			d.say("  the stop and told it: the review queued new tasks; next: %s", filepath.Base(task))
		case strings.HasPrefix(reason, "You have uncommitted changes"):
			d.say("  the stop and told it: commit first.")
		default:
			d.say("  the stop and gave it the loop prompt again: Next task: %s", filepath.Base(task))
			d.say("    which says: %q", taskText(task))
		}
	default:
		d.say("  Told: %q", firstLine(text))
	}
}

// short writes paths inside the scratch project relative to it.
func (d *demo) short(s string) string {
	return strings.ReplaceAll(s, d.project+string(filepath.Separator), "")
}

// did explains an assistant message: its text, and the command of each
// Bash call.
func (d *demo) did(msg string) {
	if msg == "" {
		return
	}
	for line := range strings.Lines(msg) {
		line = strings.TrimSpace(line)
		name, input, ok := strings.Cut(strings.TrimPrefix(line, "tool_use "), " ")
		if strings.HasPrefix(line, "tool_use ") && ok {
			var in struct {
				Command string `json:"command"`
			}
			if name == "Bash" && json.Unmarshal([]byte(input), &in) == nil {
				d.say("  Did:  Bash: %s", d.short(in.Command))
				continue
			}
			d.say("  Did:  %s %s", name, input)
			continue
		}
		if line != "" {
			d.say("  Said: %q", line)
		}
	}
}

// lastAssistant returns the text of the last assistant message of r.
func lastAssistant(r fakemodel.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "assistant" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// taskText returns the first line of a task file, wherever the agent has
// moved it since (it is .done.md by the time the demo narrates).
func taskText(path string) string {
	if path == "" {
		return ""
	}
	for _, p := range []string{path, strings.TrimSuffix(path, ".md") + ".done.md", strings.TrimSuffix(path, ".md") + ".stuck.md"} {
		b, err := os.ReadFile(p)
		if err == nil {
			return firstLine(string(b))
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return "(task file gone)"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// newSessionID returns a random version 4 UUID, the form --session-id
// takes.
func newSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
