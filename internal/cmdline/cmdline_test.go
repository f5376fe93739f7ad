package cmdline

import (
	"slices"
	"testing"

	"github.com/drover-dev/drover/internal/config"
)

// drover cannot link internal/config, so it names the restart keys from
// this list: it must be config's.
func TestRestartKeysAreConfigs(t *testing.T) {
	if want := config.RestartKeys(); !slices.Equal(RestartKeys, want) {
		t.Errorf("RestartKeys = %q, internal/config has %q", RestartKeys, want)
	}
}
