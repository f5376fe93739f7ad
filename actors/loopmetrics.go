package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tracker"
)

// The loop's metrics history: .drover/sessions/<id>/metrics.jsonl, one
// JSON object a line, one line per iteration (seed 004's metrics file).
// The line is an effect of the Stop that ended the iteration, written from
// the committed record after the answer; a restarted actor writes it again
// from the stored record, and the writer skips an iteration the file
// already has, so no iteration gets two lines.

// MetricsFile is the metrics history's name in the session's folder.
const MetricsFile = "metrics.jsonl"

// appendMetrics appends one iteration's line to the metrics history,
// unless the file already has it.
type appendMetrics struct {
	line session.IterationMetrics
}

func (a *sessionActor) metricsPath() string { return filepath.Join(a.sessionDir(), MetricsFile) }

// metricsEffect is the effect that writes the line of the last iteration
// rec's loop measured (none when it measured none).
func metricsEffect(rec session.Record, at time.Time) []effect {
	line, ok := rec.LastIterationMetrics(at)
	if !ok {
		return nil
	}
	return []effect{appendMetrics{line: line}}
}

// appendMetricsLine appends e's line to the metrics history unless its
// last line is of the same loop and of this iteration or a later one.
func (a *sessionActor) appendMetricsLine(e appendMetrics) {
	if err := appendMetricsLine(a.metricsPath(), e.line); err != nil {
		a.log.Warn("writing the loop's metrics history", zap.Error(err))
	}
}

// metricsTail is how much of the end of the metrics history is read for
// its last line; a line is well under it.
const metricsTail = 64 << 10

// appendMetricsLine is appendMetrics' file work.
func appendMetricsLine(path string, line session.IterationMetrics) error {
	last, endsLine, err := lastMetricsLine(path)
	if err != nil {
		return err
	}
	if last != nil && last.LoopStartedAt.Equal(line.LoopStartedAt) && last.Iteration >= line.Iteration {
		return nil
	}
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encoding metrics of iteration %d: %w", line.Iteration, err)
	}
	if !endsLine {
		// A line cut short by a crash stays on a line of its own.
		data = append([]byte("\n"), data...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating session folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening metrics history %q: %w", path, err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		// The next line's check reads what this one wrote.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to metrics history %q: %w", path, err)
	}
	return nil
}

// lastMetricsLine decodes the last complete line of the metrics history
// at path (nil when there is none, or it does not decode), and reports
// whether the file ends a line (true for a missing or empty file).
func lastMetricsLine(path string) (*session.IterationMetrics, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening metrics history %q: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading metrics history %q: %w", path, err)
	}
	off := max(0, info.Size()-metricsTail)
	buf := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("reading metrics history %q: %w", path, err)
	}
	if len(buf) == 0 {
		return nil, true, nil
	}
	endsLine := buf[len(buf)-1] == '\n'
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var m session.IterationMetrics
		if json.Unmarshal(lines[i], &m) == nil && m.Iteration > 0 {
			return &m, endsLine, nil
		}
	}
	return nil, endsLine, nil
}

// setAsideMetrics renames the metrics history of the session's earlier
// loop to metrics.<time>.jsonl when a new loop starts, as its reflections
// are set aside: the file is the running loop's. A history whose last
// line is this loop's stays (a restart that does the start's effects
// again).
func (a *sessionActor) setAsideMetrics(at time.Time) {
	path := a.metricsPath()
	last, _, err := lastMetricsLine(path)
	if err != nil {
		a.log.Warn("reading the earlier loop's metrics history", zap.Error(err))
		return
	}
	if _, serr := os.Stat(path); serr != nil || (last != nil && last.LoopStartedAt.Equal(a.rec.Loop.StartedAt.UTC())) {
		return
	}
	to := filepath.Join(a.sessionDir(), "metrics."+at.UTC().Format(tracker.QuarantineLayout)+".jsonl")
	if _, err := os.Lstat(to); err == nil {
		to = strings.TrimSuffix(to, ".jsonl") + "-" + strconv.FormatInt(a.env.now().UnixNano(), 10) + ".jsonl"
	}
	if err := os.Rename(path, to); err != nil {
		a.log.Warn("setting aside the earlier loop's metrics history", zap.Error(err))
	}
}
