package tracker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Path returns the tracker's path in sessionDir.
func Path(sessionDir string) string { return filepath.Join(sessionDir, FileName) }

// Read reads and parses the tracker at path. A missing file is an error
// that wraps fs.ErrNotExist; content that does not parse wraps ErrMalformed
// (quarantine it); anything else is the file system's error.
func Read(path string) (Tracker, error) {
	f, err := os.Open(path)
	if err != nil {
		return Tracker{}, fmt.Errorf("reading loop tracker %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return Tracker{}, fmt.Errorf("reading loop tracker %q: %w", path, err)
	}
	t, err := Parse(data)
	if err != nil {
		return Tracker{}, fmt.Errorf("reading loop tracker %q: %w", path, err)
	}
	return t, nil
}

// Write replaces the tracker at path with t, atomically: the agent, or a
// crash, sees the old file or the new one, never half of either. The
// directory is created (0755) if needed. A t that would not read back (one
// that Validate refuses, or too large) is not written, since the next Read
// would only quarantine it.
func Write(path string, t Tracker) error {
	data := t.Render()
	if _, err := Parse(data); err != nil {
		return fmt.Errorf("writing loop tracker %q: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating loop tracker directory %q: %w", dir, err)
	}
	// A dot name: the queue's task scanner skips dot files, and so does
	// anything else that lists the session directory.
	tmp, err := os.CreateTemp(dir, "."+FileName+"-*.tmp")
	if err != nil {
		return fmt.Errorf("writing loop tracker %q: %w", path, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	merr := os.Chmod(name, 0o644)
	if err := errors.Join(werr, serr, cerr, merr); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("writing loop tracker %q: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("writing loop tracker %q: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// QuarantineLayout is the time layout in a quarantined tracker's name.
const QuarantineLayout = "20060102T150405Z"

// maxQuarantined bounds the search for a free quarantine name within one
// second; past it something is rewriting the tracker in a tight loop.
const maxQuarantined = 100

// Quarantine renames the tracker at path aside, to
// path.corrupt-<UTC time>[-N], and returns the new path. The file is kept,
// not deleted: it holds the agent's notes and the evidence of what broke.
// An existing quarantined file is never overwritten.
func Quarantine(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format(QuarantineLayout)
	for i := 1; i <= maxQuarantined; i++ {
		to := base
		if i > 1 {
			to += "-" + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return "", fmt.Errorf("quarantining loop tracker %q: %w", path, err)
			}
			continue
		}
		if err := os.Rename(path, to); err != nil {
			return "", fmt.Errorf("quarantining loop tracker %q: %w", path, err)
		}
		syncDir(filepath.Dir(path))
		return to, nil
	}
	return "", fmt.Errorf("quarantining loop tracker %q: %d quarantined copies from %s already exist", path, maxQuarantined, now.UTC().Format(QuarantineLayout))
}

// syncDir makes a new name in dir durable. It is best effort: a file
// system that cannot sync a directory still has the file.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
