// Package tasks reads and writes the queue workflow's task files: one
// Markdown file per task in .drover/sessions/<id>/, named by the time it was
// added (YYYYMMDDTHHMMSS.md while pending), renamed by the agent to .done.md
// or .stuck.md. The file name is the task's whole state, so the agent, the
// reviewer and the user can all work on the queue with nothing but a file
// manager.
package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The suffixes of task files.
const (
	PendingSuffix = ".md"
	DoneSuffix    = ".done.md"
	StuckSuffix   = ".stuck.md"
)

// TimestampLayout is the time layout of a task file's name.
const TimestampLayout = "20060102T150405"

// List is the task files of one session directory, as absolute paths, each
// slice sorted by file name (that is, by the time each task was added).
type List struct {
	Pending, Done, Stuck []string
}

// reserved names live in a session directory but are not tasks: the loop
// workflow's tracker.
var reserved = map[string]bool{"loop.md": true}

// Scan lists the task files in dir. A missing dir is an empty List: a session
// that never had a task. Subdirectories, files not ending in .md and dot
// files (such as Add's temporary files) and the loop tracker (loop.md) are
// not tasks and are skipped.
func Scan(dir string) (List, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return List{}, fmt.Errorf("resolving task directory %q: %w", dir, err)
	}
	// os.ReadDir returns the entries sorted by file name, which keeps each
	// list in the order the tasks were added.
	ents, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return List{}, nil
	}
	if err != nil {
		return List{}, fmt.Errorf("reading task directory %q: %w", abs, err)
	}
	var l List
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, PendingSuffix) || reserved[name] || !isFile(abs, e) {
			continue
		}
		p := filepath.Join(abs, name)
		switch {
		case strings.HasSuffix(name, DoneSuffix):
			l.Done = append(l.Done, p)
		case strings.HasSuffix(name, StuckSuffix):
			l.Stuck = append(l.Stuck, p)
		default:
			l.Pending = append(l.Pending, p)
		}
	}
	return l, nil
}

// isFile reports whether e is a regular file, following a symlink.
func isFile(dir string, e fs.DirEntry) bool {
	switch t := e.Type(); {
	case t.IsRegular():
		return true
	case t&fs.ModeSymlink != 0:
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}

// maxBumps bounds Add's search for a free name: a day's worth of seconds is
// far beyond any real burst of adds.
const maxBumps = 24 * 60 * 60

// Add writes prompt as a new pending task in dir and returns its path. dir is
// created (0755) if needed. The file is named by now (YYYYMMDDTHHMMSS.md);
// if that name is taken in any of its forms (pending, done or stuck), now is
// moved on a second at a time until it is free, so tasks added within one
// second keep their order. The prompt is written as given, with a final
// newline added if it lacks one (the agent appends its work summary), and
// the file appears whole or not at all. An empty or blank prompt is an
// error.
func Add(dir, prompt string, now time.Time) (string, error) {
	if strings.TrimSpace(prompt) == "" {
		return "", errors.New("adding task: the prompt is empty")
	}
	if !strings.HasSuffix(prompt, "\n") {
		prompt += "\n"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving task directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("creating task directory %q: %w", abs, err)
	}
	tmp, err := writeTemp(abs, prompt)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)

	for i := 0; i < maxBumps; i, now = i+1, now.Add(time.Second) {
		base := filepath.Join(abs, now.Format(TimestampLayout))
		if taken(base+DoneSuffix) || taken(base+StuckSuffix) {
			continue
		}
		path := base + PendingSuffix
		err := placeNoReplace(tmp, path)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("writing task file %q: %w", path, err)
		}
		syncDir(abs)
		return path, nil
	}
	return "", fmt.Errorf("adding task in %q: no free task name within %d seconds of %s", abs, maxBumps, now.Format(TimestampLayout))
}

// writeTemp writes content to a new dot file in dir (which Scan skips) and
// flushes it to disk.
func writeTemp(dir, content string) (string, error) {
	f, err := os.CreateTemp(dir, ".task-*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating temporary task file in %q: %w", dir, err)
	}
	name := f.Name()
	_, werr := f.WriteString(content)
	serr := f.Sync()
	cerr := f.Close()
	merr := os.Chmod(name, 0o644)
	if err := errors.Join(werr, serr, cerr, merr); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("writing temporary task file %q: %w", name, err)
	}
	return name, nil
}

// placeNoReplace gives tmp the name path, failing with fs.ErrExist when path
// exists. A hard link does that atomically; where the file system has no
// hard links, a check and a rename is the best there is.
func placeNoReplace(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || (errno != syscall.EPERM && errno != syscall.ENOTSUP && errno != syscall.EOPNOTSUPP && errno != syscall.EXDEV) {
		return err
	}
	if taken(path) {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

func taken(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// syncDir makes a new name in dir durable. It is best effort: a file
// system that cannot sync a directory still has the file.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// ErrNameTaken marks an error of Unstick about a stuck task whose pending
// name is taken: the user's to resolve, not drover's failure.
var ErrNameTaken = errors.New("already exists")

// ErrNotPendingName marks an error of Unstick about a stuck task whose
// name without .stuck.md still ends in .done.md or .stuck.md (a.done.stuck.md):
// renamed, it would read as done or stuck, not pending. The user's to
// rename, as with ErrNameTaken.
var ErrNotPendingName = errors.New("would not read as a pending task")

// Unstick renames every stuck task in dir (X.stuck.md) back to pending
// (X.md) and returns the new paths, sorted. A stuck task whose pending name
// is already taken is left stuck and reported in the error (ErrNameTaken),
// naming both files, and so is one whose pending name would not read as
// pending (ErrNotPendingName); the others are still renamed.
func Unstick(dir string) ([]string, error) {
	l, err := Scan(dir)
	if err != nil {
		return nil, err
	}
	var (
		renamed []string
		errs    []error
	)
	for _, p := range l.Stuck {
		to := strings.TrimSuffix(p, StuckSuffix) + PendingSuffix
		if strings.HasSuffix(to, DoneSuffix) || strings.HasSuffix(to, StuckSuffix) {
			errs = append(errs, fmt.Errorf("cannot unstick %s: its pending name %s %w; rename it to a name ending in only .md", p, filepath.Base(to), ErrNotPendingName))
			continue
		}
		if taken(to) {
			errs = append(errs, fmt.Errorf("cannot unstick %s: %s %w; rename or remove one of the two, then run drover unstick again", p, to, ErrNameTaken))
			continue
		}
		if err := os.Rename(p, to); err != nil {
			errs = append(errs, fmt.Errorf("unsticking task %q: %w", p, err))
			continue
		}
		renamed = append(renamed, to)
	}
	if len(renamed) > 0 {
		syncDir(filepath.Dir(renamed[0]))
	}
	return renamed, errors.Join(errs...)
}

// Cleanup removes old session directories from sessionsDir, as `drover
// cleanup` does. A session is old when neither its directory nor anything in
// it was modified within olderThan of now. An old session is deleted when
// force is set, or when it is finished: not active (per the active callback)
// and with no pending and no stuck task. Active and unfinished sessions are
// never deleted without force. A nil active counts every session as active,
// so that a caller who cannot tell deletes nothing by mistake.
//
// It returns the paths of the deleted session directories and of the ones
// kept (young, active or unfinished), each sorted. A missing sessionsDir has
// nothing to clean. A session that cannot be read or removed is kept, named
// in the error, and does not stop the others.
func Cleanup(sessionsDir string, olderThan time.Duration, force bool, now time.Time, active func(sessionID string) bool) (deleted []string, kept []string, err error) {
	abs, err := filepath.Abs(sessionsDir)
	if err != nil {
		return nil, nil, fmt.Errorf("resolving sessions directory %q: %w", sessionsDir, err)
	}
	ents, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading sessions directory %q: %w", abs, err)
	}
	if active == nil {
		active = func(string) bool { return true }
	}
	var errs []error
	for _, e := range ents {
		// Only real directories: a symlink could point anywhere, and
		// RemoveAll must never reach outside .drover/sessions.
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		id, dir := e.Name(), filepath.Join(abs, e.Name())
		del, err := shouldDelete(dir, id, olderThan, force, now, active)
		if err == nil && del {
			if err = os.RemoveAll(dir); err == nil {
				deleted = append(deleted, dir)
				continue
			}
			err = fmt.Errorf("removing session directory %q: %w", dir, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
		kept = append(kept, dir)
	}
	return deleted, kept, errors.Join(errs...)
}

func shouldDelete(dir, id string, olderThan time.Duration, force bool, now time.Time, active func(string) bool) (bool, error) {
	mod, err := lastModified(dir)
	if err != nil {
		return false, err
	}
	if now.Sub(mod) <= olderThan {
		return false, nil
	}
	if force {
		return true, nil
	}
	if active(id) {
		return false, nil
	}
	l, err := Scan(dir)
	if err != nil {
		return false, err
	}
	return len(l.Pending) == 0 && len(l.Stuck) == 0, nil
}

// lastModified returns the newest modification time of dir and everything
// in it, so that a session whose files are still being written counts as
// young however old its directory is.
func lastModified(dir string) (time.Time, error) {
	var newest time.Time
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if t := fi.ModTime(); t.After(newest) {
			newest = t
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading session directory %q: %w", dir, err)
	}
	return newest, nil
}

// gitignoreLines are the entries of .drover/.gitignore that drover needs:
// everything machine-local. config.yaml, templates/ and plans/ stay
// committed.
var gitignoreLines = []string{"sessions/", "state/", "logs/", "worktrees/", "run/"}

// EnsureDroverDir creates projectRoot/.drover and makes sure its .gitignore
// lists the machine-local directories, keeping any lines the user added. It
// returns the .drover path.
func EnsureDroverDir(projectRoot string) (string, error) {
	d := filepath.Join(projectRoot, ".drover")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating drover directory %q: %w", d, err)
	}
	file := filepath.Join(d, ".gitignore")
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading %q: %w", file, err)
	}
	content := mergeGitignore(string(old))
	if content == string(old) {
		return d, nil
	}
	tmp, err := writeTemp(d, content)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing %q: %w", file, err)
	}
	return d, nil
}

// mergeGitignore returns old with each of gitignoreLines appended that it
// does not already hold in some spelling ("sessions", "/sessions/", ...).
func mergeGitignore(old string) string {
	have := map[string]bool{}
	for line := range strings.Lines(old) {
		have[strings.Trim(strings.TrimSpace(line), "/")] = true
	}
	var missing []string
	for _, l := range gitignoreLines {
		if !have[strings.Trim(l, "/")] {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return old
	}
	var b strings.Builder
	b.WriteString(old)
	if old == "" {
		b.WriteString("# Written by drover: machine-local state. Lines you add are kept.\n")
	} else if !strings.HasSuffix(old, "\n") {
		b.WriteByte('\n')
	}
	for _, l := range missing {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
