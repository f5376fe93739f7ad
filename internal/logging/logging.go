// Package logging builds drover's zap logger: JSON lines to a rotated file
// (for later reading by people and tools), optionally a human-readable copy
// on a console, one level shared by both that can be changed at run time,
// and a log/slog view of the same output for libraries that log through
// slog (protoactor).
//
// Nothing is sampled: drover logs little, and a dropped hook decision line
// would be exactly the one someone goes looking for.
package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Options says where a Logger writes.
type Options struct {
	// File is the JSON log file (e.g. .drover/logs/drover.log); "" = none.
	// Its directory is created 0700 if missing; the file itself is 0600.
	File string
	// MaxSizeMB is the size in megabytes at which File is rotated; 0 = 10.
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept; 0 = 3.
	MaxBackups int
	// Level is debug, info, warn or error; "" = info.
	Level string
	// Console gets a human-readable copy of every entry (for `drover serve`
	// in the foreground); nil = none.
	Console io.Writer
}

// Default rotation settings, used where Options leaves them 0.
const (
	DefaultMaxSizeMB  = 10
	DefaultMaxBackups = 3
)

// Logger is a zap logger with a level that can be changed while it runs
// and a file that Close flushes and closes.
type Logger struct {
	zap   *zap.Logger
	level zap.AtomicLevel
	file  *closableFile // nil without a file
}

// New builds a Logger as opts say. It opens the log file at once, so that a
// file that cannot be written is an error here rather than lost lines later.
func New(opts Options) (*Logger, error) {
	lvl, err := parseLevel(opts.Level)
	if err != nil {
		return nil, err
	}
	level := zap.NewAtomicLevelAt(lvl)

	var cores []zapcore.Core
	var file *closableFile
	if opts.File != "" {
		if err := os.MkdirAll(filepath.Dir(opts.File), 0o700); err != nil {
			return nil, fmt.Errorf("creating log directory for %q: %w", opts.File, err)
		}
		// lumberjack renames aside whatever it cannot open for appending,
		// a directory included; refuse instead.
		if fi, err := os.Stat(opts.File); err == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("opening log file %q: not a regular file", opts.File)
		}
		lj := &lumberjack.Logger{
			Filename:   opts.File,
			MaxSize:    orDefault(opts.MaxSizeMB, DefaultMaxSizeMB),
			MaxBackups: orDefault(opts.MaxBackups, DefaultMaxBackups),
		}
		// lumberjack opens lazily; an empty write opens (or creates) now.
		if _, err := lj.Write(nil); err != nil {
			return nil, fmt.Errorf("opening log file %q: %w", opts.File, err)
		}
		file = &closableFile{lj: lj}
		enc := zap.NewProductionEncoderConfig()
		enc.EncodeTime = zapcore.ISO8601TimeEncoder
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(enc), file, level))
	}
	if opts.Console != nil {
		enc := zap.NewDevelopmentEncoderConfig()
		enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		// writerOnly hides a Sync method: syncing a terminal fails with
		// EINVAL and would turn every Close into an error.
		ws := zapcore.Lock(zapcore.AddSync(writerOnly{opts.Console}))
		cores = append(cores, zapcore.NewCore(zapcore.NewConsoleEncoder(enc), ws, level))
	}

	zl := zap.New(zapcore.NewTee(cores...), zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel))
	return &Logger{zap: zl, level: level, file: file}, nil
}

// Nop returns a Logger that discards everything.
func Nop() *Logger {
	return &Logger{zap: zap.NewNop(), level: zap.NewAtomicLevelAt(zapcore.InfoLevel)}
}

// Zap returns the underlying zap logger.
func (l *Logger) Zap() *zap.Logger { return l.zap }

// Level returns the level shared by every output. It is also an
// http.Handler (GET and PUT of {"level":"debug"}) for a control endpoint.
func (l *Logger) Level() zap.AtomicLevel { return l.level }

// SetLevel changes the level of every output, including Slog loggers
// already handed out. An unknown level is an error and changes nothing.
func (l *Logger) SetLevel(level string) error {
	lvl, err := parseLevel(level)
	if err != nil {
		return err
	}
	l.level.SetLevel(lvl)
	return nil
}

// Slog returns a log/slog logger, named name, that writes through the same
// outputs and level as Zap. Stack traces are left off: for slog callers
// they show the library's internals, not drover's.
func (l *Logger) Slog(name string) *slog.Logger {
	return slog.New(zapslog.NewHandler(l.zap.Core(),
		zapslog.WithName(name),
		zapslog.WithCaller(true),
		zapslog.AddStacktraceAt(slog.LevelError+1),
	))
}

// Close flushes and closes the log file. Entries logged after Close are
// dropped rather than reopening the file. Closing twice is harmless.
func (l *Logger) Close() error {
	syncErr := l.zap.Sync()
	if l.file == nil {
		return nil // a console is not ours to close, and has nothing to flush
	}
	if err := l.file.Close(); err != nil {
		return errors.Join(syncErr, fmt.Errorf("closing log file: %w", err))
	}
	if syncErr != nil {
		return fmt.Errorf("flushing log: %w", syncErr)
	}
	return nil
}

// parseLevel accepts the four levels drover documents (zap's own parser
// also takes dpanic, panic and fatal, which make no sense as a threshold).
func parseLevel(s string) (zapcore.Level, error) {
	switch s {
	case "debug":
		return zapcore.DebugLevel, nil
	case "", "info":
		return zapcore.InfoLevel, nil
	case "warn":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// writerOnly hides every method of a writer but Write.
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// closableFile is the rotated log file, made to drop writes once closed:
// lumberjack would otherwise reopen the file on the next write and leave it
// open for good.
type closableFile struct {
	mu     sync.Mutex
	lj     *lumberjack.Logger
	closed bool
}

func (f *closableFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return len(p), nil
	}
	return f.lj.Write(p)
}

// Sync is a no-op: lumberjack writes straight to the file without a
// buffer, and fsyncing every flush would cost the hooks latency for a log.
func (f *closableFile) Sync() error { return nil }

func (f *closableFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	return f.lj.Close()
}
