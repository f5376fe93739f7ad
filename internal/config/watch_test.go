package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// event is one onChange call.
type event struct {
	cfg Config
	err error
}

// watchEvents starts a fast-polling watch and returns its calls on a channel.
func watchEvents(t *testing.T, ctx context.Context, src Sources) (<-chan event, func()) {
	t.Helper()
	ch := make(chan event, 16)
	stop, err := watch(ctx, src, 10*time.Millisecond, func(c Config, err error) { ch <- event{c, err} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return ch, stop
}

// writeAtomic replaces dir/name by renaming a finished file over it, so
// that the watcher never sees it half-written.
func writeAtomic(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := writeFile(t, dir, name+".tmp", content)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// next waits for an onChange call with a deadline generous enough for a
// loaded machine; it asserts that the call happens, not how fast.
func next(t *testing.T, ch <-chan event) event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no onChange call")
		return event{}
	}
}

func TestWatchPicksUpChanges(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, ".drover", "config.yaml") // neither the file nor its directory exists yet
	ch, _ := watchEvents(t, context.Background(), Sources{ProjectFile: project, Environ: []string{"DROVER_LOG_LEVEL=warn"}})

	writeFile(t, dir, filepath.Join(".drover", "config.yaml"), "queue:\n  max_iterations: 7\n")
	ev := next(t, ch)
	if ev.err != nil || ev.cfg.Queue.MaxIterations != 7 {
		t.Fatalf("after creating the file: %+v", ev)
	}
	if ev.cfg.Log.Level != "warn" {
		t.Errorf("reload dropped the env layer: log.level = %q", ev.cfg.Log.Level)
	}

	// Same size as before, so only the content tells it apart.
	writeAtomic(t, dir, filepath.Join(".drover", "config.yaml"), "queue:\n  max_iterations: 8\n")
	if ev := next(t, ch); ev.err != nil || ev.cfg.Queue.MaxIterations != 8 {
		t.Fatalf("after editing the file: %+v", ev)
	}

	writeAtomic(t, dir, filepath.Join(".drover", "config.yaml"), "queue:\n  max_iteratons: 9\n")
	if ev := next(t, ch); ev.err == nil || !strings.Contains(ev.err.Error(), "queue.max_iteratons") {
		t.Fatalf("after breaking the file: %+v", ev)
	}

	// Atomic rename-over, as editors save.
	tmp := writeFile(t, dir, "tmp.yaml", "queue:\n  max_iterations: 9\n")
	if err := os.Rename(tmp, project); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err != nil || ev.cfg.Queue.MaxIterations != 9 {
		t.Fatalf("after replacing the file: %+v", ev)
	}

	if err := os.Remove(project); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err != nil || ev.cfg.Queue.MaxIterations != 50 {
		t.Fatalf("after removing the file: %+v", ev)
	}

	// And it keeps watching after the removal.
	writeFile(t, dir, filepath.Join(".drover", "config.yaml"), "queue:\n  max_iterations: 3\n")
	if ev := next(t, ch); ev.err != nil || ev.cfg.Queue.MaxIterations != 3 {
		t.Fatalf("after recreating the file: %+v", ev)
	}
}

func TestWatchIgnoresChangesThatChangeNothing(t *testing.T) {
	dir := t.TempDir()
	project := writeFile(t, dir, "config.yaml", "queue:\n  max_iterations: 7\n")
	ch, _ := watchEvents(t, context.Background(), Sources{ProjectFile: project})

	writeAtomic(t, dir, "config.yaml", "# a comment\nqueue:\n  max_iterations: 7\n")
	writeAtomic(t, dir, "config.yaml", "# a comment\nqueue:\n  max_iterations: 6\n")
	// The first call must be the real change, not the comment.
	if ev := next(t, ch); ev.err != nil || ev.cfg.Queue.MaxIterations != 6 {
		t.Fatalf("first onChange = %+v, want max_iterations 6", ev)
	}
}

func TestWatchUserFile(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "drover", "config.yaml")
	ch, _ := watchEvents(t, context.Background(), Sources{UserFile: user})
	writeFile(t, dir, filepath.Join("drover", "config.yaml"), "log:\n  level: debug\n")
	if ev := next(t, ch); ev.err != nil || ev.cfg.Log.Level != "debug" {
		t.Fatalf("after writing the user file: %+v", ev)
	}
}

func TestWatchNilCallback(t *testing.T) {
	if _, err := Watch(context.Background(), Sources{}, nil); err == nil {
		t.Fatal("Watch with a nil onChange did not fail")
	}
}

func TestWatchStopLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)

	dir := t.TempDir()
	project := writeFile(t, dir, "config.yaml", "queue:\n  max_iterations: 7\n")
	got := make(chan Config, 4)
	stop, err := watch(context.Background(), Sources{ProjectFile: project}, 10*time.Millisecond, func(c Config, err error) {
		if err == nil {
			got <- c
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, dir, "config.yaml", "queue:\n  max_iterations: 4\n")
	select {
	case c := <-got:
		if c.Queue.MaxIterations != 4 {
			t.Errorf("max_iterations = %d, want 4", c.Queue.MaxIterations)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no onChange call")
	}
	stop()
	stop() // a second stop is harmless

	// The public entry point, stopped at once.
	stop, err = Watch(context.Background(), Sources{ProjectFile: project}, func(Config, error) {})
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

func TestWatchEndsWithContext(t *testing.T) {
	defer goleak.VerifyNone(t)

	ctx, cancel := context.WithCancel(context.Background())
	stop, err := watch(ctx, Sources{}, 10*time.Millisecond, func(Config, error) {})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	stop() // returns only once the goroutine has exited
}
