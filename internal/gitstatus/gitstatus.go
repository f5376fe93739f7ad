// Package gitstatus answers one question for drover's uncommitted-changes
// gate: does a work tree have changes outside drover's own files, and which.
package gitstatus

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// MaxFiles caps the file names Dirty and ParsePorcelainZ return: enough to
// show the agent what to commit, small enough for a prompt.
const MaxFiles = 20

// ErrNotRepo is wrapped by Dirty when dir is not inside a git work tree.
// Callers treat it as "no gate".
var ErrNotRepo = errors.New("gitstatus: not a git work tree")

const (
	// timeout bounds one git status; a huge untracked tree can be slow, but
	// a hook is waiting on the answer.
	timeout = 10 * time.Second
	// waitDelay is how long Wait waits for git's pipes after a kill.
	waitDelay = 2 * time.Second
	// maxEntry bounds one NUL-terminated entry; paths are far shorter.
	maxEntry = 1 << 20
	// maxStderr bounds the captured error output.
	maxStderr = 4 << 10
)

// Dirty runs git status in dir and reports whether any path outside the
// ignored prefixes (such as ".drover/") is modified, staged or untracked,
// with up to MaxFiles of those paths, relative to the repository root. When
// dir is not in a git work tree the error wraps ErrNotRepo.
func Dirty(ctx context.Context, dir string, ignore []string) (dirty bool, files []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, "git", "status", "--porcelain=v1", "-z", "--untracked-files=all")
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	cmd.WaitDelay = waitDelay
	var stderr capped
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, nil, fmt.Errorf("git status in %q: %w", dir, err)
	}
	if err := cmd.Start(); err != nil {
		return false, nil, fmt.Errorf("git status in %q: %w", dir, err)
	}

	// Read as git writes, keeping at most MaxFiles names, so that a tree
	// with a million untracked files costs no more memory than one with
	// twenty.
	p := parser{ignore: ignore}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 4096), maxEntry)
	sc.Split(scanNUL)
	for sc.Scan() {
		p.entry(sc.Bytes())
	}
	p.finish()
	scanErr := sc.Err()
	if scanErr != nil {
		// Stop git rather than leave it blocked on a full pipe.
		cancel()
	}
	waitErr := cmd.Wait()

	switch {
	case scanErr != nil:
		return false, nil, fmt.Errorf("reading git status in %q: %w", dir, scanErr)
	case waitErr == nil:
	case ctx.Err() != nil:
		return false, nil, fmt.Errorf("git status in %q: %w", dir, ctx.Err())
	default:
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") {
			return false, nil, fmt.Errorf("git status in %q: %w", dir, ErrNotRepo)
		}
		if msg != "" {
			return false, nil, fmt.Errorf("git status in %q: %w: %s", dir, waitErr, msg)
		}
		return false, nil, fmt.Errorf("git status in %q: %w", dir, waitErr)
	}
	return len(p.files) > 0, p.files, nil
}

// gitEnv is env for a git status that neither writes the index (it would
// take index.lock and could fail the agent's own git commands running at the
// same moment) nor follows variables a parent git process may have set for
// another repository. Messages stay untranslated so that "not a git
// repository" can be recognised.
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_OPTIONAL_LOCKS", "LC_ALL":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
}

// ParsePorcelainZ returns the paths in out, the output of
// `git status --porcelain=v1 -z`, that are not under an ignored prefix, in
// order and at most MaxFiles of them. An ignore entry "dir/" (or "dir")
// covers dir and everything under it, but not "dir-other/". Malformed
// entries are skipped.
func ParsePorcelainZ(out []byte, ignore []string) (files []string) {
	p := parser{ignore: ignore}
	for len(out) > 0 {
		var e []byte
		e, out, _ = bytes.Cut(out, []byte{0})
		p.entry(e)
	}
	p.finish()
	return p.files
}

// parser consumes porcelain v1 -z entries one at a time. An entry is
// "XY PATH"; for a rename or copy it is followed by a second entry holding
// just the original path.
type parser struct {
	ignore []string
	files  []string
	// renamed is the new path of a rename or copy whose original path is
	// the next entry; "" when none is pending.
	renamed  string
	wantOrig bool
}

func (p *parser) entry(e []byte) {
	if p.wantOrig {
		p.wantOrig = false
		path := p.renamed
		p.renamed = ""
		// A rename out of an ignored directory still changes the new
		// path; a rename into one still deletes the old path.
		switch {
		case !p.ignored(path):
			p.add(path)
		case len(e) > 0 && !p.ignored(string(e)):
			p.add(string(e))
		}
		return
	}
	if len(e) < 4 || e[2] != ' ' {
		return
	}
	x, y, path := e[0], e[1], string(e[3:])
	if x == 'R' || x == 'C' || y == 'R' || y == 'C' {
		p.renamed, p.wantOrig = path, true
		return
	}
	if !p.ignored(path) {
		p.add(path)
	}
}

// finish ends the input: a rename cut off before its original path still
// counts by its new path.
func (p *parser) finish() {
	if p.wantOrig {
		p.entry(nil)
	}
}

func (p *parser) add(path string) {
	if len(p.files) < MaxFiles {
		p.files = append(p.files, path)
	}
}

func (p *parser) ignored(path string) bool {
	for _, ig := range p.ignore {
		ig = strings.TrimSuffix(ig, "/")
		if ig == "" {
			continue
		}
		if path == ig || strings.HasPrefix(path, ig+"/") {
			return true
		}
	}
	return false
}

// scanNUL is a bufio.SplitFunc for NUL-terminated entries; a last entry
// without its NUL is still returned.
func scanNUL(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(b) > room {
			c.buf.Write(b[:room])
		} else {
			c.buf.Write(b)
		}
	}
	return len(b), nil
}

func (c *capped) String() string { return c.buf.String() }
