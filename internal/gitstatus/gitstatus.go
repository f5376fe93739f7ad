// Package gitstatus answers one question for drover's uncommitted-changes
// gate: does a work tree have changes outside drover's own files, and which.
package gitstatus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/proc"
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
	// maxEntry bounds one NUL-terminated entry; paths are far shorter.
	maxEntry = 1 << 20
	// maxStderr bounds the captured error output.
	maxStderr = 4 << 10
)

// errLongEntry: git printed an entry longer than maxEntry.
var errLongEntry = errors.New("an entry is longer than 1 MiB")

// Dirty runs git status in dir and reports whether any path outside the
// ignored prefixes (such as ".drover/") is modified, staged or untracked,
// with up to MaxFiles of those paths, relative to the repository root. When
// dir is not in a git work tree the error wraps ErrNotRepo.
func Dirty(ctx context.Context, dir string, ignore []string) (dirty bool, files []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Read as git writes, keeping at most MaxFiles names, so that a tree
	// with a million untracked files costs no more memory than one with
	// twenty.
	p := parser{ignore: ignore}
	entries := &proc.LineWriter{Sep: 0, Max: maxEntry, Fn: p.entry}
	c := proc.GitCmd(dir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	c.Stdout = entries
	c.OutputCap = maxStderr
	res, runErr := proc.Run(ctx, c)
	entries.Flush()
	p.finish()

	switch {
	case runErr == nil && entries.Skipped() > 0:
		return false, nil, fmt.Errorf("reading git status in %q: %w", dir, errLongEntry)
	case runErr == nil:
	case !res.Started || ctx.Err() != nil:
		return false, nil, fmt.Errorf("git status in %q: %w", dir, runErr)
	default:
		msg := strings.TrimSpace(res.Stderr.String())
		if strings.Contains(msg, "not a git repository") {
			return false, nil, fmt.Errorf("git status in %q: %w", dir, ErrNotRepo)
		}
		if msg != "" {
			return false, nil, fmt.Errorf("git status in %q: %w: %s", dir, runErr, msg)
		}
		return false, nil, fmt.Errorf("git status in %q: %w", dir, runErr)
	}
	return len(p.files) > 0, p.files, nil
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
