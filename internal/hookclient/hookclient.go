// Package hookclient is what `drover hook <event>` does: read the hook JSON,
// find or start the project's supervisor, forward the event, and print the
// decision. It never blocks the agent because of its own trouble: every
// failure becomes "allow", with a systemMessage that names the problem.
package hookclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/client"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/hookconf"
	"github.com/drover-dev/drover/internal/project"
)

// ReviewerEnv is set in the environment of every reviewer process drover
// starts; a hook that sees it does nothing, so a review never triggers
// drover recursively.
const ReviewerEnv = "DROVER_REVIEWER"

// DisableEnv, when set to a non-empty value, turns every hook into a no-op.
const DisableEnv = "DROVER_HOOK_DISABLE"

// Options is the world a hook invocation sees.
type Options struct {
	Event hook.Event
	// CLI is the agent CLI that runs the hook (the --cli flag); "" detects
	// it from the payload (hook.ReadFrom).
	CLI   hook.CLI
	Stdin io.Reader
	// Getenv reads the environment.
	Getenv func(string) string
	// Cwd is the process's working directory, used when neither --project
	// nor CLAUDE_PROJECT_DIR nor the payload's cwd names the project.
	Cwd string
	// Project is the --project flag ("" = unset).
	Project string
	// Spawn starts a supervisor for root; nil uses client.Spawner with the
	// running executable.
	Spawn func(root string, p project.Paths) error
	// Now and NewRequestID are for tests.
	NewRequestID func() string
}

// Result is what the hook prints: Stdout (JSON, plain text, or empty for a
// silent allow). The exit code is always 0.
type Result struct {
	Stdout string
	// Problem is the trouble that made the hook fail open, if any.
	Problem string
	// Retries counts the times the request was sent again, with the same
	// id, after a supervisor did not answer; Replayed says the answer was
	// the one recorded for an earlier send. Both are for the crash soak.
	Retries  int
	Replayed bool
}

// Run handles one hook event. A panic on the way is recovered and turned
// into a fail-open answer: an uncaught panic exits 2, which Claude Code
// reads as "block" on Stop, so drover's own bug would wedge the agent.
func Run(ctx context.Context, o Options) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Recovered(o.Event, r)
		}
	}()
	return run(ctx, o)
}

// Recovered is the fail-open answer for a panic r recovered while handling
// event e (which may be empty when the event is not known yet).
func Recovered(e hook.Event, r any) Result {
	what := "the hook"
	if e != "" {
		what = fmt.Sprintf("the %s hook", e)
	}
	return failOpen(fmt.Sprintf("drover: internal error in %s (panic: %v); letting the agent go on. Please report this with .drover/logs/drover.log.", what, r))
}

func run(ctx context.Context, o Options) Result {
	if o.Getenv(ReviewerEnv) != "" || o.Getenv(DisableEnv) != "" {
		return Result{}
	}
	in, cli, err := hook.ReadFrom(o.Stdin, hook.MaxInputBytes, o.CLI, o.Event)
	if err != nil {
		return failOpen(fmt.Sprintf("could not read the %s hook input: %v", o.Event, err))
	}
	if cli == hook.Claude && o.Getenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP") == "0" {
		// drover init turns Claude Code's cap off in the settings' env,
		// which the hook inherits.
		in.Uncapped = true
	}
	if err := hook.CheckSessionID(in.SessionID); err != nil {
		return failOpen(fmt.Sprintf("ignoring the %s hook: %v", o.Event, err))
	}
	start := in.Cwd
	if start == "" {
		start = o.Cwd
	}
	root, err := project.FromEnv(o.Project, start, o.Getenv)
	if err != nil {
		return failOpen(fmt.Sprintf("finding the project for the %s hook: %v", o.Event, err))
	}
	paths, err := project.PathsFor(root, o.Getenv)
	if err != nil {
		return failOpen(fmt.Sprintf("locating the supervisor for %s: %v", root, err))
	}
	// No store means no session was ever started here, or .drover/ was
	// removed. Only a supervisor that still runs can have work in
	// progress then: it is asked, with a warning, and none is started.
	var warn string
	noStore := false
	if _, err := os.Stat(paths.DB); errors.Is(err, os.ErrNotExist) {
		// No socket either: drover was never used here. One more stat
		// spares such a project the config load and the dials below.
		if _, err := os.Stat(paths.Socket); errors.Is(err, os.ErrNotExist) {
			return Result{}
		}
		noStore = true
		warn = fmt.Sprintf("drover: %s is missing (was .drover/ removed?): the running supervisor still has the sessions in memory, but they will not survive its restart", paths.DB)
	}

	// Only the hook's own keys are read (internal/hookconf), not the
	// whole configuration: the budget now, the start timeout only if a
	// supervisor must be started.
	src := hookconf.DefaultSources(root, o.Getenv)
	budget, err := hookconf.Budget(src, o.Event)
	if err != nil {
		warn = joinMsg(warn, fmt.Sprintf("drover: %v; using default hook budgets", err))
	}
	// A Stop may be held while a plan reviewer runs (review.hold): it
	// waits that much longer, and tells the supervisor so.
	var hold time.Duration
	if o.Event == hook.Stop {
		if hold, err = hookconf.Hold(src, budget); err != nil {
			warn = joinMsg(warn, fmt.Sprintf("drover: %v; the Stop is not held for a reviewer", err))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, budget+hold)
	defer cancel()
	var started time.Duration
	startTimeout := func() time.Duration {
		if started == 0 {
			var err error
			if started, err = hookconf.StartTimeout(src); err != nil {
				warn = joinMsg(warn, fmt.Sprintf("drover: %v; using default hook budgets", err))
			}
		}
		return started
	}

	spawn := o.Spawn
	// answered counts the supervisors this hook started that then
	// answered (see send's up); killed hears of one killed before that.
	var spawns, answered atomic.Int64
	killed := make(chan struct{}, 1)
	if noStore {
		spawn = func(string, project.Paths) error { return errNoStore }
	} else if spawn == nil {
		// A supervisor that cannot start (a bad config) exits at once:
		// stop waiting for it then, and say why, instead of spending the
		// start timeout on every hook. One that had answered and then
		// died (killed mid-request) did start, and one killed by a signal
		// did not fail to: the request is sent again, to a new one.
		var exited context.CancelCauseFunc
		ctx, exited = context.WithCancelCause(ctx)
		defer exited(nil)
		spawn = func(root string, p project.Paths) error {
			n := spawns.Add(1)
			onExit := func(err error) {
				switch {
				case answered.Load() >= n:
				case client.Killed(err):
					select {
					case killed <- struct{}{}:
					default:
					}
				default:
					exited(err)
				}
			}
			return client.Spawner{Getenv: o.Getenv, Root: root, OutFile: p.LogsDir + "/serve.out", OnExit: onExit}.Spawn()
		}
	}
	newID := o.NewRequestID
	if newID == nil {
		newID = randomID
	}
	req := api.HookRequest{RequestID: newID(), Input: in, HoldMS: hold.Milliseconds()}
	c := client.New(paths.Socket)

	// The hold is for an answer the supervisor holds, not for reaching a
	// supervisor: retries and starts end with the budget.
	retry, cancelRetry := context.WithTimeout(ctx, budget)
	defer cancelRetry()
	up := func() { answered.Store(spawns.Load()) }
	resp, retries, err := send(ctx, retry, c, o.Event, req, startTimeout, func() error { return spawn(root, paths) }, up, killed)
	if errors.Is(err, errNoStore) {
		// Nothing runs and nothing is stored: drover was never used here.
		return Result{}
	}
	if err != nil {
		res := failOpen(joinMsg(warn, fmt.Sprintf("drover could not decide on %s for session %s: %v; letting the agent go on", o.Event, in.SessionID, err)))
		res.Retries = retries
		return res
	}
	res := Result{Retries: retries, Replayed: resp.Replayed}
	if resp.Text != "" {
		// PreCompact's plain text: a warning goes on its own line first.
		text := resp.Text
		if warn != "" {
			text = warn + "\n" + resp.Text
		}
		res.Stdout = hook.Render(cli, o.Event, hook.Output{}, text)
		return res
	}
	out := resp.Output
	out.SystemMessage = joinMsg(warn, out.SystemMessage)
	res.Stdout = hook.Render(cli, o.Event, out, "")
	return res
}

// send forwards the event, starting a supervisor when none answers and
// retrying with the same request id when one dies mid-request; it returns
// the answer and how many times the request was sent again. Each request
// may take until ctx ends; retrying and starting a supervisor stop when
// retry (within ctx) ends. up is called each time a supervisor answers
// its health check after one did not; a receive on killed says that a
// supervisor spawn started was killed before it answered, and ends the
// wait for it.
func send(ctx, retry context.Context, c *client.Client, e hook.Event, req api.HookRequest, startTimeout func() time.Duration, spawn func() error, up func(), killed <-chan struct{}) (api.HookResponse, int, error) {
	spawned := false
	pause := retryPause
	for try := 0; ; try++ {
		resp, err := c.Hook(ctx, e, req)
		if err == nil || !client.IsUnavailable(err) {
			return resp, try, err
		}
		// Every retry after the first waits, longer each time: a
		// supervisor that answers its health check but drops this request
		// (a handler that fails) must not be asked again in a tight loop
		// for the whole budget.
		if try > 0 {
			select {
			case <-retry.Done():
				return api.HookResponse{}, try, fmt.Errorf("no supervisor answered within the %s budget: %w", e, err)
			case <-time.After(pause):
			}
			pause = min(2*pause, maxRetryPause)
		}
		sctx, cancel := context.WithCancelCause(retry)
		sctx, cancelWait := context.WithTimeout(sctx, startTimeout())
		stopWatch := make(chan struct{})
		go func() {
			select {
			case <-killed:
				cancel(errKilled)
			case <-stopWatch:
			}
		}()
		_, err = client.Ensure(sctx, c, func() error {
			// Only one start attempt per supervisor that did not answer:
			// one that does not come up in time will not come up by
			// being started again.
			if spawned {
				return nil
			}
			spawned = true
			return spawn()
		})
		close(stopWatch)
		wasKilled := errors.Is(context.Cause(sctx), errKilled)
		cancelWait()
		cancel(nil)
		if err == nil || wasKilled {
			// A supervisor answers, or the one started was killed. Should
			// the next die before it answers this request (killed,
			// crashed), a new one is started: waiting for one that nobody
			// starts would only spend the budget and let the agent go on
			// undecided.
			spawned = false
			if err == nil {
				up()
			}
			continue
		}
		if cause := context.Cause(retry); errors.Is(cause, client.ErrSupervisorExited) {
			return api.HookResponse{}, try, cause
		}
		if retry.Err() != nil {
			return api.HookResponse{}, try, fmt.Errorf("no supervisor answered within the %s budget: %w", e, err)
		}
		return api.HookResponse{}, try, fmt.Errorf("starting the supervisor: %w", err)
	}
}

// The pause before a retry starts at retryPause and doubles up to
// maxRetryPause.
const (
	retryPause    = 20 * time.Millisecond
	maxRetryPause = 500 * time.Millisecond
)

// errKilled ends the wait for a supervisor that was killed while starting.
var errKilled = errors.New("the supervisor was killed while starting")

// errNoStore stops send from starting a supervisor for a project without
// a store.
var errNoStore = errors.New("no drover store in this project")

func failOpen(msg string) Result {
	if len(msg) > 0 && !hasPrefix(msg, "drover") {
		msg = "drover: " + msg
	}
	// A systemMessage alone is an allow in every CLI's format.
	return Result{Stdout: hook.Render(hook.Claude, "", hook.Output{SystemMessage: msg}, ""), Problem: msg}
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
