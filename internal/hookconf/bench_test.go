package hookconf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover/internal/hook"
)

// BenchmarkStopLookups is what a Stop's client reads of the configuration:
// its budget and review.hold, from a project file that sets a few keys.
func BenchmarkStopLookups(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".drover"), 0o755); err != nil {
		b.Fatal(err)
	}
	conf := "# drover configuration\nhook:\n  budget:\n    stop: 20s\n  start_timeout: 3s\nreview:\n  hold: 2m\nqueue:\n  max_iterations: 50\n"
	if err := os.WriteFile(filepath.Join(root, ".drover", "config.yaml"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	getenv := func(string) string { return "" }
	for i := 0; i < b.N; i++ {
		src := DefaultSources(root, getenv)
		budget, err := Budget(src, hook.Stop)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Hold(src, budget); err != nil {
			b.Fatal(err)
		}
	}
}
