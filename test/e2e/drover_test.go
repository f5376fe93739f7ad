//go:build unix

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// cliTimeout bounds one CLI run of these tests. A scripted queue of ten
// tasks takes a few seconds; this only stops a hang.
const cliTimeout = 2 * time.Minute

// stopFeedback is how the CLI 2.1.197 hands a Stop hook's block reason to
// the model: a user message of its own, this prefix, then the reason.
const stopFeedback = "Stop hook feedback:\n"

// nextTaskRE finds the pending task path at the end of drover's loop prompt.
var nextTaskRE = regexp.MustCompile(`Next task: (\S+)`)

// queueProject is one scratch git project with everything drover and the
// CLI need to run there in isolation: its own HOME, its own runtime
// directory (so its own supervisor socket), the scripted model, and
// drover's binary first on PATH.
type queueProject struct {
	t      *testing.T
	cliBin string
	root   string
	home   string
	run    string
	model  *fakemodel.Server
	// env is added to the environment of the CLI and of drover commands.
	env []string
}

// newQueueProject sets up a project for sc. The supervisor any hook or
// command starts there is stopped (SIGTERM, then waited for) when the test
// ends, before its directories are removed.
func newQueueProject(t *testing.T, sc *fakemodel.Scenario) *queueProject {
	t.Helper()
	return newProjectFor(t, claudeBin(t), sc)
}

// newProjectFor is newQueueProject for the agent CLI at bin.
func newProjectFor(t *testing.T, bin string, sc *fakemodel.Scenario) *queueProject {
	t.Helper()
	if droverBin == "" {
		t.Fatal("drover was not built (TestMain)")
	}
	p := &queueProject{t: t, cliBin: bin, root: gitProject(t), home: t.TempDir()}
	// Short, because the socket path must fit in sun_path.
	run, err := os.MkdirTemp("", "drv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	p.run = run
	p.env = []string{
		"PATH=" + droverDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"XDG_RUNTIME_DIR=" + run,
		// A Stop that starts a plan review is answered at once with the
		// `drover plan wait` instruction, the flow these tests script,
		// unless a test sets a hold (review.hold) for its CLI run.
		"DROVER_REVIEW_HOLD=0s",
	}
	t.Cleanup(p.stopSupervisor)
	p.model = startModel(t, sc)
	return p
}

// loadScenario reads testdata/<name>.
func loadScenario(t *testing.T, name string) *fakemodel.Scenario {
	t.Helper()
	sc, err := fakemodel.LoadScenario(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// claude runs `claude --print` in the project with drover's plugin and
// the given arguments (flags, then the prompt) and returns what it printed.
// Only a failure to run it (or a timeout) fails the test; the exit code is
// the caller's to check.
func (p *queueProject) claude(args ...string) claudecli.Result {
	p.t.Helper()
	return p.claudeEnv(nil, args...)
}

// claudeEnv is claude with extra environment variables for the CLI (and
// so for its hooks, and for a supervisor one of them starts).
func (p *queueProject) claudeEnv(env []string, args ...string) claudecli.Result {
	p.t.Helper()
	res, err := p.runClaude(env, args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

// runClaude runs the CLI like claudeEnv but returns its error instead of
// failing the test, so that it can run in a goroutine.
func (p *queueProject) runClaude(env []string, args ...string) (claudecli.Result, error) {
	p.t.Helper()
	res, err := claudecli.Run{
		Bin:       p.cliBin,
		Dir:       p.root,
		Home:      p.home,
		BaseURL:   p.model.URL(),
		PluginDir: filepath.Join(moduleRoot, "plugin"),
		Args:      append([]string{"--dangerously-skip-permissions"}, args...),
		Env:       append(slices.Clone(p.env), env...),
		Timeout:   cliTimeout,
	}.Exec(p.t.Context())
	p.t.Logf("claude %q: exit %d after %s\nstdout:\n%s\nstderr:\n%s", args, res.ExitCode, res.Duration.Round(time.Millisecond), res.Stdout, res.Stderr)
	return res, err
}

// droverEnviron is the environment of drover commands the test runs:
// the test's own, less anything that could point drover or git elsewhere.
func (p *queueProject) droverEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "CLAUDE") || strings.HasPrefix(k, "XDG_") ||
			strings.HasPrefix(k, "DROVER_") || strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+p.home), p.env...)
}

// droverRun runs the drover binary in the project and returns its stdout,
// its stderr and its exit code.
func (p *queueProject) droverRun(stdin string, args ...string) (string, string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Dir = p.root
	cmd.Env = p.droverEnviron()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		p.t.Fatalf("running drover %q: %v", args, err)
	}
	return out.String(), errb.String(), 0
}

// drover runs a drover command that must succeed and returns its stdout.
func (p *queueProject) drover(args ...string) string {
	p.t.Helper()
	out, errs, code := p.droverRun("", args...)
	if code != 0 {
		p.t.Fatalf("drover %q exited %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// addTasks queues prompts for session sid with `drover add` (which starts
// the supervisor) and returns the task files, oldest first.
func (p *queueProject) addTasks(sid string, prompts ...string) []string {
	p.t.Helper()
	var paths []string
	re := regexp.MustCompile(`Added task (\S+) `)
	for _, prompt := range prompts {
		out := p.drover("add", "--session", sid, prompt)
		m := re.FindStringSubmatch(out)
		if m == nil {
			p.t.Fatalf("drover add printed no task path: %q", out)
		}
		paths = append(paths, m[1])
	}
	return paths
}

// statusJSON is `drover status --json` as the README documents it; the
// field names are part of what the tests check.
type statusJSON struct {
	Project     string          `json:"project"`
	PID         int             `json:"pid"`
	Sessions    []sessionStatus `json:"sessions"`
	Quarantined int             `json:"quarantined"`
}

type sessionStatus struct {
	ID        string  `json:"id"`
	Workflow  string  `json:"workflow"`
	State     string  `json:"state"`
	Iteration int     `json:"iteration"`
	Pending   int     `json:"pending"`
	Done      int     `json:"done"`
	Stuck     int     `json:"stuck"`
	CostUSD   float64 `json:"cost_usd"`
	// BudgetUSD and SpentUSD are a loop's or a plan's budget and what
	// counts against it (a plan's: every session's reviews).
	BudgetUSD float64   `json:"budget_usd"`
	SpentUSD  float64   `json:"spent_usd"`
	NextTask  string    `json:"next_task"`
	UpdatedAt time.Time `json:"updated_at"`
	// Health is idle, working, stale or ended; LastHookAt is the time of
	// the session's last hook.
	Health     string    `json:"health"`
	LastHookAt time.Time `json:"last_hook_at"`
}

func (p *queueProject) status() statusJSON {
	p.t.Helper()
	out := p.drover("status", "--json")
	var st statusJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		p.t.Fatalf("drover status --json: %v\n%s", err, out)
	}
	return st
}

// session returns the status of session sid; it fails the test if
// status does not list it.
func (p *queueProject) session(sid string) sessionStatus {
	p.t.Helper()
	st := p.status()
	for _, s := range st.Sessions {
		if s.ID == sid {
			return s
		}
	}
	p.t.Fatalf("drover status does not list session %s: %+v", sid, st)
	return sessionStatus{}
}

// wantSession checks the parts of a session's status that the test names.
func (p *queueProject) wantSession(sid, state string, iteration, pending, done, stuck int) sessionStatus {
	p.t.Helper()
	s := p.session(sid)
	if s.Workflow != "queue" || s.State != state || s.Iteration != iteration || s.Pending != pending || s.Done != done || s.Stuck != stuck || s.CostUSD != 0 {
		p.t.Errorf("session %s: workflow %s, state %s, iteration %d, %d pending, %d done, %d stuck, cost $%v; want queue, %s, %d, %d, %d, %d, $0 (no reviewer runs in a queue)",
			sid, s.Workflow, s.State, s.Iteration, s.Pending, s.Done, s.Stuck, s.CostUSD, state, iteration, pending, done, stuck)
	}
	return s
}

// socket is the supervisor's socket in the project's runtime directory, or
// "" when none is there.
func (p *queueProject) socket() string {
	m, _ := filepath.Glob(filepath.Join(p.run, "drover", "*.sock"))
	if len(m) == 1 {
		return m[0]
	}
	return ""
}

// supervisorPID asks the running supervisor for its pid; 0 when none runs.
func (p *queueProject) supervisorPID() int {
	p.t.Helper()
	if p.socket() == "" {
		return 0
	}
	out, _, code := p.droverRun("", "status", "--json")
	var st statusJSON
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		return 0
	}
	return st.PID
}

// stopSupervisor ends the project's supervisor the documented way (SIGTERM)
// and waits for it, so that no test leaves a process behind.
func (p *queueProject) stopSupervisor() {
	pid := p.supervisorPID()
	if pid == 0 {
		return
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return
	}
	if !waitGone(pid, 20*time.Second) {
		p.t.Errorf("supervisor %d still running 20s after SIGTERM; killing it", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, 5*time.Second)
	}
}

// waitGone waits until no process pid exists, and reports whether that
// happened within d.
func waitGone(pid int, d time.Duration) bool {
	return eventually.Holds(d, func() bool { return syscall.Kill(pid, 0) != nil })
}

// git runs git in the project and returns its trimmed output.
func (p *queueProject) git(args ...string) string {
	p.t.Helper()
	out, err := claudecli.Git(p.t.Context(), p.root, args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// subjects returns the project's commit subjects, oldest first.
func (p *queueProject) subjects() []string {
	p.t.Helper()
	return strings.Split(p.git("log", "--reverse", "--format=%s"), "\n")
}

// readFile returns the content of path; it fails the test if it cannot.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustNotExist fails the test if path exists.
func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (err %v), want it gone", path, err)
	}
}

// newSessionID returns a random version 4 UUID, the form Claude Code's
// --session-id takes.
func newSessionID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// blockReasons returns the Stop hook block reasons the model received in
// reqs, in order: each is the last user message of the first request after
// a block. Only requests of session sid count, unless sid is empty.
func blockReasons(reqs []fakemodel.Request, sid string) []string {
	var out []string
	for _, r := range reqs {
		if sid != "" && r.SessionID != sid {
			continue
		}
		if reason, ok := strings.CutPrefix(r.LastUserText, stopFeedback); ok && !r.LastIsToolResult {
			out = append(out, reason)
		}
	}
	return out
}

// nextTask returns the path a loop prompt names as the next task, or "".
func nextTask(reason string) string {
	m := nextTaskRE.FindStringSubmatch(reason)
	if m == nil {
		return ""
	}
	return m[1]
}

// doneName is the name drover tells the agent to rename a finished task to.
func doneName(task string) string { return strings.TrimSuffix(task, ".md") + ".done.md" }

// stuckName is the name for a task the agent cannot finish.
func stuckName(task string) string { return strings.TrimSuffix(task, ".md") + ".stuck.md" }

// kind names a block reason by the template it came from, for compact
// assertions on the sequence of decisions a model received.
func kind(reason string) string {
	switch {
	case strings.HasPrefix(reason, "You have uncommitted changes"):
		return "uncommitted"
	case strings.HasPrefix(reason, "All tasks complete. Spawn a review subagent"):
		return "review"
	case strings.HasPrefix(reason, "Review found issues."):
		return "review-found " + filepath.Base(nextTask(reason))
	case strings.HasPrefix(reason, "# drover Work Loop"):
		return "loop " + filepath.Base(nextTask(reason))
	}
	return "other: " + firstLine(reason)
}

func kinds(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = kind(r)
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// since returns the model requests recorded after the first n.
func since(reqs []fakemodel.Request, n int) []fakemodel.Request {
	if n > len(reqs) {
		return nil
	}
	return reqs[n:]
}

// transcript returns the CLI's JSONL transcript of session sid, from the
// project's scratch HOME.
func (p *queueProject) transcript(sid string) string {
	p.t.Helper()
	m, _ := filepath.Glob(filepath.Join(p.home, ".claude", "projects", "*", sid+".jsonl"))
	if len(m) != 1 {
		p.t.Fatalf("transcript of session %s: found %q", sid, m)
	}
	return readFile(p.t, m[0])
}
