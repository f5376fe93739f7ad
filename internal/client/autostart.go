package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/proctag"
)

// DaemonEnv names the droverd binary that drover starts and hands its
// supervisor commands to, overriding the search of Daemon. Test harnesses
// set it; so may a user whose droverd lies elsewhere.
const DaemonEnv = "DROVERD_BIN"

// DaemonName is the supervisor binary's name.
const DaemonName = "droverd"

// Daemon returns the droverd binary to run: $DROVERD_BIN when set, else
// the droverd beside the running executable (both are built and installed
// together), else the one on PATH. The error names where it looked.
func Daemon(getenv func(string) string) (string, error) {
	if getenv != nil {
		if p := getenv(DaemonEnv); p != "" {
			return p, nil
		}
	}
	var beside string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		beside = filepath.Join(filepath.Dir(exe), DaemonName)
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	p, err := exec.LookPath(DaemonName)
	if err != nil {
		where := "on PATH"
		if beside != "" {
			where = fmt.Sprintf("beside drover (%s) nor on PATH", beside)
		}
		return "", fmt.Errorf("%s, the drover supervisor binary, was not found %s: install both binaries (make install) or set %s", DaemonName, where, DaemonEnv)
	}
	return p, nil
}

// Spawner starts a detached supervisor for one project.
type Spawner struct {
	// Exe is the droverd binary; empty means the one Daemon finds.
	Exe string
	// Getenv reads the environment for Daemon; nil means os.Getenv.
	Getenv func(string) string
	// Root is the project root passed as --project.
	Root string
	// OutFile, when set, receives the new process's stdout and stderr, so a
	// supervisor that dies during start-up leaves a trace. Empty discards.
	OutFile string
	// Env is the new process's environment; nil means the current one.
	Env []string
	// OnExit, when set, is called from another goroutine if the new
	// process exits with a failure, with an ErrSupervisorExited error that
	// quotes the end of OutFile: a caller waiting for the supervisor to
	// answer can stop waiting and say why.
	OnExit func(error)
}

// ErrSupervisorExited is wrapped by the error Spawner.OnExit gets.
var ErrSupervisorExited = errors.New("the supervisor exited while starting")

// Killed reports whether err, from Spawner.OnExit, says that the
// supervisor was ended by a signal (a kill -9, the OOM killer) rather than
// exiting by itself: that is no reason to think that another would not
// start.
func Killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// Spawn starts `droverd serve --no-console --project Root` in its own
// session, so it outlives the hook that started it and is not killed with
// the agent's process group. It does not wait for the supervisor to answer.
func (s Spawner) Spawn() error {
	exe := s.Exe
	if exe == "" {
		getenv := s.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		var err error
		if exe, err = Daemon(getenv); err != nil {
			return err
		}
	}
	cmd := exec.Command(exe, "serve", "--no-console", "--project", s.Root)
	// A hook inside an agent or reviewer carries their tags: the new
	// supervisor must not be killed with them (nor by the watchdog of a
	// supervisor that died).
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = proctag.Strip(env)
	cmd.Dir = s.Root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if s.OutFile != "" {
		if err := os.MkdirAll(filepath.Dir(s.OutFile), 0o700); err != nil {
			return fmt.Errorf("creating log directory for %q: %w", s.OutFile, err)
		}
		f, err := os.OpenFile(s.OutFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening supervisor output file %q: %w", s.OutFile, err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting supervisor %q: %w", exe, err)
	}
	// Reap it in the background so a long-lived caller (a test, `droverd
	// serve --detach`) does not keep a zombie; a short-lived hook simply
	// exits and the process is re-parented.
	go func() {
		if err := cmd.Wait(); err != nil && s.OnExit != nil {
			s.OnExit(fmt.Errorf("%w (%w)%s", ErrSupervisorExited, err, lastLine(s.OutFile)))
		}
	}()
	return nil
}

// lastLine quotes the last non-empty line of the start-up output in file,
// where a supervisor that could not start says why (a bad config key).
func lastLine(file string) string {
	if file == "" {
		return ""
	}
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 4096
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(fi.Size()-tail, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tail))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	return fmt.Sprintf(": %s (see %s)", last, file)
}

// Ensure returns the health of the supervisor behind c, starting one with
// spawn when none answers and waiting for it until ctx ends. spawn is
// called at most once.
func Ensure(ctx context.Context, c *Client, spawn func() error) (api.HealthResponse, error) {
	h, err := c.Health(ctx)
	if err == nil || !IsUnavailable(err) {
		return h, err
	}
	if err := spawn(); err != nil {
		return api.HealthResponse{}, err
	}
	delay := 5 * time.Millisecond
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return api.HealthResponse{}, fmt.Errorf("waiting for the started supervisor: %w", ctx.Err())
		case <-t.C:
		}
		h, err = c.Health(ctx)
		if err == nil || !IsUnavailable(err) {
			return h, err
		}
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}
