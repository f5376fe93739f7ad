package store

import (
	"context"
	"testing"

	"github.com/drover-dev/drover/internal/api"
)

// TestAppendEventsTrimsToItsBound appends more events in one batch than
// the history keeps: every event past the bound goes, none is skipped.
func TestAppendEventsTrimsToItsBound(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name        string
		first, last uint64
		keep        int
		want        int
	}{
		{"a batch larger than the history", 1, 100, 10, 10},
		{"a batch that trims an earlier one", 101, 105, 10, 10},
		{"no bound", 106, 110, 0, 15},
	}
	for _, tt := range tests {
		var evs []api.Event
		for id := tt.first; id <= tt.last; id++ {
			evs = append(evs, api.Event{ID: id, Kind: "test"})
		}
		if err := s.AppendEvents(ctx, evs, tt.keep); err != nil {
			t.Fatalf("%s: AppendEvents: %v", tt.name, err)
		}
		got, _, err := s.LoadEvents(ctx, 0)
		if err != nil {
			t.Fatalf("%s: LoadEvents: %v", tt.name, err)
		}
		if len(got) != tt.want || got[len(got)-1].ID != tt.last || got[0].ID != tt.last-uint64(tt.want)+1 {
			t.Errorf("%s: history holds %d events (%d..%d), want %d ending at %d", tt.name, len(got), got[0].ID, got[len(got)-1].ID, tt.want, tt.last)
		}
	}
}
