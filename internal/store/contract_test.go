package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/store/storetest"
)

func openBolt(tb testing.TB, path string) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

// TestContract: the bbolt store keeps the contract the engine relies on.
func TestContract(t *testing.T) {
	storetest.Contract(t, func(t *testing.T, path string) storetest.Store { return openBolt(t, path) })
}

func BenchmarkSave(b *testing.B) {
	s := openBolt(b, filepath.Join(b.TempDir(), "drover.db"))
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	rec := storetest.FullRecord(storetest.ID)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec.Events = i
		if err := s.Save(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSaveParallel(b *testing.B) {
	s := openBolt(b, filepath.Join(b.TempDir(), "drover.db"))
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	var mu sync.Mutex
	next := 0
	b.ReportAllocs()
	b.SetParallelism(16) // many sessions at once, as with many agents on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		rec := storetest.FullRecord(fmt.Sprintf("sess-%04d", next))
		next++
		mu.Unlock()
		for pb.Next() {
			rec.Events++
			if err := s.Save(ctx, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
