package store

import (
	"context"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

func TestRunsRoundTripAndList(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	older := api.Run{ID: "run-1", State: api.RunDone, CreatedAt: t0, Tasks: []api.RunTask{{ID: "a", State: api.TaskDone, Iteration: 2, CostUSD: 0.5}}}
	newer := api.Run{ID: "run-2", State: api.RunRunning, CreatedAt: t0.Add(time.Minute), Active: true}
	for _, r := range []api.Run{older, newer} {
		if err := s.SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := s.LoadRun(ctx, "run-1")
	if err != nil || !found || got.Tasks[0].Iteration != 2 || got.Tasks[0].CostUSD != 0.5 || !got.CreatedAt.Equal(t0) {
		t.Errorf("LoadRun: %+v found %v err %v", got, found, err)
	}
	if _, found, err := s.LoadRun(ctx, "run-3"); found || err != nil {
		t.Errorf("LoadRun of a missing run: found %v err %v", found, err)
	}
	list, err := s.ListRuns(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "run-2" || list[1].ID != "run-1" {
		t.Fatalf("ListRuns: %+v, %v; want newest first", list, err)
	}
	if list[0].Active {
		t.Errorf("Active was stored; it belongs to the live supervisor")
	}
	for _, bad := range []string{"", "../x", "a/b"} {
		if err := s.SaveRun(ctx, api.Run{ID: bad}); err == nil {
			t.Errorf("SaveRun(%q) accepted an invalid id", bad)
		}
		if _, _, err := s.LoadRun(ctx, bad); err == nil {
			t.Errorf("LoadRun(%q) accepted an invalid id", bad)
		}
	}
}
