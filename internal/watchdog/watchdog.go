// Package watchdog ends what a supervisor started when the supervisor dies
// without ending it itself: kill -9, a crash, the OOM killer. The
// parent-death signal reaches only a reviewer's or an agent's own process,
// not the processes of its group nor what it started in sessions of their
// own (an agent's tool calls), and test and check commands get none; so
// the supervisor starts one small watchdog process (the drover binary,
// run as `drover __watchdog TAG`) that holds the read end of a pipe whose
// write end only the supervisor has. When the supervisor dies the kernel
// closes that end, the watchdog reads EOF, kills every process whose
// environment carries the supervisor's tag (proctag), and exits.
package watchdog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/proctag"
)

// Command is the hidden drover subcommand that runs Watch.
const Command = "__watchdog"

// TagKey is the environment key of a supervisor's tag, which every process
// the watchdog is to end carries.
const TagKey = proctag.SupervisorKey

// closeWait bounds how long Close waits for the watchdog to exit.
const closeWait = 5 * time.Second

// NewTag returns a tag ("DROVER_SUPERVISOR_RUN=<random>") unique to one
// supervisor, for the environment of what it starts and for Start.
func NewTag() (string, error) { return proctag.New(TagKey) }

// ValidTag reports whether tag is a supervisor's tag: the watchdog kills
// nothing else, whatever it is given.
func ValidTag(tag string) bool {
	v, ok := strings.CutPrefix(tag, TagKey+"=")
	return ok && v != "" && !strings.ContainsAny(v, "=\x00")
}

// Watchdog is a running watchdog process.
type Watchdog struct {
	w    *os.File
	done chan struct{}
}

// Start starts exe (the drover binary) as the watchdog of this process for
// tag, with env (without any of drover's tags: the watchdog must not carry the tag it
// kills) and in a process group of its own, so that a terminal's Ctrl-C
// meant for the supervisor does not end it first. Keep the Watchdog until
// the supervisor ends, then Close it.
func Start(exe, tag string, env []string) (*Watchdog, error) {
	if !ValidTag(tag) {
		return nil, fmt.Errorf("starting the watchdog: %q is not a supervisor tag", tag)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the watchdog's pipe: %w", err)
	}
	cmd := exec.Command(exe, Command, tag)
	cmd.Stdin = r
	cmd.Env = proctag.Strip(env)
	cmd.SysProcAttr = ownGroup()
	err = cmd.Start()
	// The write end is ours alone: os.Pipe sets close-on-exec, so no child
	// of the supervisor inherits it and keeps the watchdog waiting.
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the watchdog %q: %w", exe, err)
	}
	d := &Watchdog{w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// Close ends the watchdog: it kills what still carries the tag (nothing,
// after a clean shutdown) and exits. Close waits a few seconds for that.
func (d *Watchdog) Close() error {
	err := d.w.Close()
	select {
	case <-d.done:
	case <-time.After(closeWait):
		return errors.Join(err, errors.New("the watchdog did not exit"))
	}
	return err
}

// Watch is the watchdog's body: it reads r until EOF or an error (its
// supervisor died or closed it), then kills every process tagged with tag
// and returns how many it signalled.
func Watch(r io.Reader, tag string) (int, error) {
	if !ValidTag(tag) {
		return 0, fmt.Errorf("watchdog: %q is not a supervisor tag", tag)
	}
	_, _ = io.Copy(io.Discard, r)
	return proctag.Kill(tag)
}
