//go:build linux

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/drover-dev/drover/internal/faultfs"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
)

// TestFailedCommitOnAFullDiskLeavesTheStoreUsable: on a full tmpfs, a Save
// that needs pages the file does not have fails with ENOSPC, naming the
// file; the last committed record still loads; once space returns the same
// open store commits, and the file reopens with that record.
func TestFailedCommitOnAFullDiskLeavesTheStoreUsable(t *testing.T) {
	const size = 1 << 20
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	faultfs.MountTmpfs(t, dir, size)
	path := filepath.Join(dir, "drover.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	small := session.Record{ID: testID, Events: 1}
	if err := s.Save(ctx, small); err != nil {
		t.Fatal(err)
	}
	faultfs.Fill(t, filepath.Join(dir, "filler"))

	// Larger than the whole file: its pages cannot come from the free list.
	big := small
	big.Events = 2
	big = big.Remember("req-1", hook.Stop, hook.Output{SystemMessage: strings.Repeat("x", 256<<10)})
	err = s.Save(ctx, big)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Save on a full disk: %v, want ENOSPC naming %s", err, path)
	}
	if got, st, err := s.Load(ctx, testID); err != nil || st != Found || !reflect.DeepEqual(got, small) {
		t.Fatalf("Load after the failed commit: %+v %v %v, want the committed %+v", got, st, err, small)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, big); err != nil {
		t.Fatalf("Save once space returned: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopening after the failed commit: %v", err)
	}
	if got, st, err := s.Load(ctx, testID); err != nil || st != Found || got.Events != 2 || len(got.Recorded) != 1 {
		t.Fatalf("Load after reopening: events %d, %d recorded, %v %v", got.Events, len(got.Recorded), st, err)
	}
}
