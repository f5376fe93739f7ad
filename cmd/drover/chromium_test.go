package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover-dev/drover/internal/eventually"
)

// chromiumPath is Debian's Chromium, which `make chromium` installs (make
// test depends on it).
const chromiumPath = "/usr/bin/chromium"

// chromiumFlags are the flags this machine's Chromium needs: headless as
// root in a container (no sandbox, no GPU), and none of the background
// connections that a closed network refuses many at a time (QUIC,
// component updates, sync, first-run pages).
var chromiumFlags = []chromedp.ExecAllocatorOption{
	chromedp.ExecPath(chromiumPath),
	chromedp.Headless,
	chromedp.NoSandbox,
	chromedp.DisableGPU,
	chromedp.NoFirstRun,
	chromedp.NoDefaultBrowserCheck,
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.WindowSize(1280, 800),
}

// lockedBuffer is Chromium's output, kept for a failing test's log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newBrowser starts a headless Chromium with a fresh profile and returns a
// tab's context. The test's cleanup ends the browser and checks that no
// process of it is left. Chromium's home is a folder of the test's, with
// the profile in it: every Chromium process carries that folder on its
// command line (the browser, zygotes and renderers by the profile, the
// crash handlers by their database under $HOME/.config), and nothing is
// written to the user's home.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no Chromium at %s (make chromium installs it): %v", chromiumPath, err)
	}
	home := t.TempDir()
	var out lockedBuffer
	opts := append(append([]chromedp.ExecAllocatorOption(nil), chromiumFlags...),
		chromedp.UserDataDir(filepath.Join(home, "profile")), chromedp.CombinedOutput(&out),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache")))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		var left []int
		if !eventually.Holds(30*time.Second, func() bool { left = processesWith(home); return len(left) == 0 }) {
			t.Errorf("Chromium processes left behind: %v", left)
		}
		if t.Failed() {
			t.Logf("Chromium's output, its end:\n%s", lastLines(out.String(), 40))
		}
	})
	// The first action starts the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v\n%s", err, lastLines(out.String(), 40))
	}
	return ctx
}

// lastLines returns the last n lines of s: Chromium logs much that is
// noise here (no D-Bus in a container).
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// processesWith returns the pids of the live processes whose command line
// contains s.
func processesWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		// A zombie's command line is empty; one that matched is alive.
		pids = append(pids, pid)
	}
	return pids
}
