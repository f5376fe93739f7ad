//go:build linux

package agentrun

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestRunKillsToolCallsInTheirOwnSession(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, "setsid", fakePidFile+"="+pidFile)
	spec.WaitDelay = 100 * time.Millisecond
	res, err := Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Err != nil || res.FinalText != "All done." {
		t.Errorf("Result = %+v; want a clean finish", res)
	}
	waitDead(t, grandchildPid(t, pidFile))
}
