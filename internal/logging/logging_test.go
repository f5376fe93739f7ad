package logging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

// readLines parses the JSON lines of a log file.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func msgs(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l["msg"].(string))
	}
	return out
}

func TestFileGetsJSONLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "deeper")
	path := filepath.Join(dir, "drover.log")
	l, err := New(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	l.Zap().Info("hook decision", zap.String("session", "abc"), zap.Int("iteration", 3))
	l.Zap().Named("store").Warn("slow commit", zap.Bool("batched", true))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %v", len(lines), lines)
	}
	first := lines[0]
	for k, want := range map[string]any{"level": "info", "msg": "hook decision", "session": "abc", "iteration": 3.0} {
		if first[k] != want {
			t.Errorf("line 1 %s = %v, want %v", k, first[k], want)
		}
	}
	for _, k := range []string{"ts", "caller"} {
		if _, ok := first[k]; !ok {
			t.Errorf("line 1 has no %q: %v", k, first)
		}
	}
	if lines[1]["level"] != "warn" || lines[1]["logger"] != "store" || lines[1]["batched"] != true {
		t.Errorf("line 2 = %v", lines[1])
	}

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("log directory mode %o, want 700", perm)
	}
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("log file mode %o, want 600", perm)
	}
}

func TestFileIsCreatedByNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.log")
	l, err := New(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("New did not create the log file: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"unknown level", Options{Level: "verbose"}, `"verbose"`},
		{"panic is not a threshold", Options{Level: "panic"}, `"panic"`},
		{"parent is a file", Options{File: filepath.Join(notDir, "drover.log")}, "drover.log"},
		{"file is a directory", Options{File: dir}, dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.opts)
			if err == nil {
				l.Close()
				t.Fatal("New() = nil error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the race detector's eyes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConsoleIsHumanReadable(t *testing.T) {
	var console syncBuffer
	path := filepath.Join(t.TempDir(), "drover.log")
	l, err := New(Options{File: path, Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	l.Zap().Info("supervisor started", zap.String("socket", "/run/x.sock"))
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	out := strings.TrimSpace(console.String())
	if strings.Count(out, "\n") != 0 {
		t.Fatalf("want one console line, got %q", out)
	}
	if strings.HasPrefix(out, "{") {
		t.Errorf("console line is JSON, want the console format: %q", out)
	}
	for _, w := range []string{"INFO", "supervisor started", `"socket": "/run/x.sock"`} {
		if !strings.Contains(out, w) {
			t.Errorf("console line %q does not contain %q", out, w)
		}
	}
	// The same entry also went to the file.
	if got := msgs(readLines(t, path)); len(got) != 1 || got[0] != "supervisor started" {
		t.Errorf("file got %q", got)
	}
}

func TestConsoleOnly(t *testing.T) {
	var console syncBuffer
	l, err := New(Options{Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	l.Zap().Info("hello")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(console.String(), "hello") {
		t.Errorf("console = %q", console.String())
	}
}

func TestSetLevel(t *testing.T) {
	tests := []struct {
		level string
		want  []string
	}{
		{"debug", []string{"d", "i", "w", "e"}},
		{"info", []string{"i", "w", "e"}},
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "drover.log")
			l, err := New(Options{File: path, Level: "info"})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SetLevel(tt.level); err != nil {
				t.Fatal(err)
			}
			z := l.Zap()
			z.Debug("d")
			z.Info("i")
			z.Warn("w")
			z.Error("e")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := msgs(readLines(t, path)); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("at %s got %q, want %q", tt.level, got, tt.want)
			}
		})
	}
}

func TestSetLevelRejectsUnknown(t *testing.T) {
	l, err := New(Options{Level: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetLevel("loud"); err == nil {
		t.Fatal("SetLevel(loud) = nil")
	}
	if got := l.Level().Level().String(); got != "warn" {
		t.Errorf("level after a bad SetLevel = %s, want warn", got)
	}
}

func TestSlogArrivesInFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.log")
	l, err := New(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	sl := l.Slog("protoactor").With("system", "sys1")
	sl.Debug("[SUPERVISION]") // below info: dropped
	sl.Info("actor system started", "address", "nonhost")
	if err := l.SetLevel("debug"); err != nil {
		t.Fatal(err)
	}
	sl.Debug("[SUPERVISION] now") // the level change reaches loggers already handed out
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	lines := readLines(t, path)
	if got := msgs(lines); strings.Join(got, ",") != "actor system started,[SUPERVISION] now" {
		t.Fatalf("file got %q", got)
	}
	first := lines[0]
	for k, want := range map[string]any{"logger": "protoactor", "level": "info", "system": "sys1", "address": "nonhost"} {
		if first[k] != want {
			t.Errorf("%s = %v, want %v (line %v)", k, first[k], want, first)
		}
	}
	if lines[1]["level"] != "debug" {
		t.Errorf("second line level = %v, want debug", lines[1]["level"])
	}
}

// Hook decision lines must never be sampled away, even in a burst.
func TestNoSampling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.log")
	l, err := New(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := range n {
		l.Zap().Info("hook decision", zap.Int("i", i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readLines(t, path)); got != n {
		t.Errorf("got %d lines, want %d", got, n)
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "drover.log")
	l, err := New(Options{File: path, MaxSizeMB: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	for i := range 1500 { // about 1.6 MB
		l.Zap().Info("filler", zap.Int("i", i), zap.String("pad", pad))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var backups int
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over the 1 MB limit", e.Name(), fi.Size())
		}
		if e.Name() != "drover.log" && strings.HasPrefix(e.Name(), "drover-") && strings.HasSuffix(e.Name(), ".log") {
			backups++
		}
	}
	if backups != 1 {
		t.Errorf("got %d rotated files, want 1 (dir: %v)", backups, entries)
	}
	// Nothing was lost across the rotation.
	total := 0
	for _, e := range entries {
		total += len(readLines(t, filepath.Join(dir, e.Name())))
	}
	if total != 1500 {
		t.Errorf("got %d lines across the files, want 1500", total)
	}
}

func TestCloseThenLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drover.log")
	l, err := New(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l.Zap().Info("late")
	l.Slog("x").Info("late")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("logging after Close reopened the file (stat: %v)", err)
	}
}

func TestNop(t *testing.T) {
	l := Nop()
	l.Zap().Info("nothing")
	l.Slog("x").Info("nothing")
	if err := l.SetLevel("debug"); err != nil {
		t.Errorf("SetLevel = %v", err)
	}
	if l.Zap().Core().Enabled(zap.ErrorLevel) {
		t.Error("Nop logger is enabled")
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
