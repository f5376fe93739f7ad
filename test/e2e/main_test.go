//go:build unix

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/test/claudecli"
)

// The drover binary the end-to-end tests put on the CLI's PATH, built once
// by TestMain from the module's own source with droverd beside it (where
// drover looks for it first), and the module root (for the plugin
// directory).
var (
	droverBin  string
	droverDir  string
	moduleRoot string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	root, err := claudecli.ModuleRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	moduleRoot = root
	if testing.Short() {
		// Every test that needs drover also needs the CLI and skips.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	droverDir = dir
	droverBin = filepath.Join(dir, "drover")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", dir, "./cmd/drover", "./cmd/droverd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building drover and droverd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
