// Package storetest is the contract of drover's store: what the engine
// relies on of it, written once as a test that any store implementation
// runs (internal/store runs it against its bbolt file).
//
// The contract: a Save is durable once it returns (a reopened store loads
// it); a Save overwrites; a missing record is NotFound with a fresh record
// and no error; saves of many sessions at once all land; a canceled
// context is refused before anything is written; ids that are not valid
// session ids are refused; runs round trip, newest first, without their
// live Active flag. What only one implementation does (bbolt's
// quarantine, file lock and schema version) is tested beside it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/workflow/queue"
)

// Store is what the engine and the supervisor use of a store.
type Store interface {
	Load(ctx context.Context, id string) (session.Record, store.Status, error)
	Save(ctx context.Context, rec session.Record) error
	Delete(ctx context.Context, id string) error
	List(ctx context.Context) ([]session.Record, error)
	SaveRun(ctx context.Context, run api.Run) error
	LoadRun(ctx context.Context, id string) (api.Run, bool, error)
	ListRuns(ctx context.Context) ([]api.Run, error)
	Close() error
}

// Open opens the store kept at path, creating it if there is none. The
// contract closes every store it opens, and opens path again only after
// it closed the last store on it.
type Open func(t *testing.T, path string) Store

// ID is a session id as Claude Code writes them.
const ID = "3f2c9a1e-5b7d-4c2e-9f10-a1b2c3d4e5f6"

// FullRecord returns a record with every kind of field set, for round
// trips.
func FullRecord(id string) session.Record {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	return session.Record{
		ID:        id,
		Workflow:  session.Queue,
		Queue:     queue.Session{State: queue.Review, Iteration: 7},
		CreatedAt: t0,
		UpdatedAt: t0.Add(90 * time.Minute),
		Events:    42,
		Recorded: []session.Recorded{
			{RequestID: "r1", Event: hook.Stop, Output: hook.Block("keep going: 2 tasks left")},
			{RequestID: "r2", Event: hook.SessionStart, Output: hook.Context(hook.SessionStart, "queue is on")},
			{RequestID: "r3", Event: hook.Stop, Output: hook.Output{SystemMessage: "drover: supervisor slow"}},
		},
	}
}

// Contract runs the store contract against the stores open opens.
func Contract(t *testing.T, open Open) {
	tests := []struct {
		name string
		run  func(t *testing.T, open func() Store, reopen func(Store) Store)
	}{
		{"RoundTrip", roundTrip},
		{"DurableOnceSaved", durable},
		{"Overwrite", overwrite},
		{"NotFound", notFound},
		{"Delete", deleteRecord},
		{"ConcurrentSaves", concurrentSaves},
		{"CanceledContext", canceledContext},
		{"InvalidIDs", invalidIDs},
		{"Runs", runs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "drover.db")
			var cur Store
			t.Cleanup(func() {
				if cur != nil {
					if err := cur.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
			})
			first := func() Store {
				cur = open(t, path)
				return cur
			}
			reopen := func(s Store) Store {
				t.Helper()
				cur = nil
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				cur = open(t, path)
				return cur
			}
			tt.run(t, first, reopen)
		})
	}
}

func roundTrip(t *testing.T, open func() Store, _ func(Store) Store) {
	tests := []struct {
		name string
		rec  session.Record
	}{
		{"minimal", session.Record{ID: "a"}},
		{"full", FullRecord(ID)},
		{"max length id", session.Record{ID: strings.Repeat("x", 128), Events: 1}},
		{"unicode text", session.Record{ID: "u_1", Recorded: []session.Recorded{{RequestID: "é", Output: hook.Block("ünïcödé \u2028 \"quoted\"")}}}},
	}
	s := open()
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Save(ctx, tt.rec); err != nil {
				t.Fatalf("Save: %v", err)
			}
			got, st, err := s.Load(ctx, tt.rec.ID)
			if err != nil || st != store.Found {
				t.Fatalf("Load = %v, %v; want Found, nil", st, err)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("Load = %+v\nwant %+v", got, tt.rec)
			}
		})
	}
}

// durable: what Save returned for is there after the store is closed and
// opened again, as after a supervisor restart.
func durable(t *testing.T, open func() Store, reopen func(Store) Store) {
	ctx := context.Background()
	s := open()
	want := FullRecord(ID)
	if err := s.Save(ctx, want); err != nil {
		t.Fatalf("Save: %v", err)
	}
	run := api.Run{ID: "run-1", State: api.RunRunning, CreatedAt: want.CreatedAt}
	if err := s.SaveRun(ctx, run); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	s = reopen(s)
	got, st, err := s.Load(ctx, ID)
	if err != nil || st != store.Found || !reflect.DeepEqual(got, want) {
		t.Errorf("Load after reopen = %+v, %v, %v; want %+v, Found", got, st, err, want)
	}
	if r, found, err := s.LoadRun(ctx, run.ID); err != nil || !found || r.State != api.RunRunning || !r.CreatedAt.Equal(run.CreatedAt) {
		t.Errorf("LoadRun after reopen = %+v, %v, %v; want %+v", r, found, err, run)
	}
}

func overwrite(t *testing.T, open func() Store, reopen func(Store) Store) {
	s := open()
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if err := s.Save(ctx, session.Record{ID: ID, Events: i}); err != nil {
			t.Fatalf("Save %d: %v", i, err)
		}
	}
	got, st, err := s.Load(ctx, ID)
	if err != nil || st != store.Found || got.Events != 3 {
		t.Fatalf("Load = %+v, %v, %v; want Events 3, Found", got, st, err)
	}
	s = reopen(s)
	if got, _, err := s.Load(ctx, ID); err != nil || got.Events != 3 {
		t.Errorf("Load after reopen = %+v, %v; want the last save, Events 3", got, err)
	}
}

func notFound(t *testing.T, open func() Store, _ func(Store) Store) {
	s := open()
	got, st, err := s.Load(context.Background(), ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if st != store.NotFound {
		t.Errorf("status = %v, want %v", st, store.NotFound)
	}
	if !reflect.DeepEqual(got, session.Record{ID: ID}) {
		t.Errorf("record = %+v, want a fresh record with the id", got)
	}
	if _, found, err := s.LoadRun(context.Background(), "run-9"); found || err != nil {
		t.Errorf("LoadRun of a missing run: found %v, err %v; want neither", found, err)
	}
}

func deleteRecord(t *testing.T, open func() Store, _ func(Store) Store) {
	s := open()
	ctx := context.Background()
	if err := s.Save(ctx, session.Record{ID: ID}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	for i := range 2 { // deleting a missing record is fine too
		if err := s.Delete(ctx, ID); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	if _, st, err := s.Load(ctx, ID); err != nil || st != store.NotFound {
		t.Errorf("Load after Delete = %v, %v; want NotFound", st, err)
	}
}

// concurrentSaves: many sessions saving at once (bbolt groups them into
// one commit) each find their own record, after a reopen too.
func concurrentSaves(t *testing.T, open func() Store, reopen func(Store) Store) {
	const n = 50
	s := open()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.Save(ctx, session.Record{ID: fmt.Sprintf("s-%02d", i), Events: i})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Save: %v", err)
		}
	}
	s = reopen(s)
	recs, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(recs) != n {
		t.Fatalf("List has %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("s-%02d", i); r.ID != want || r.Events != i {
			t.Errorf("record %d = %s/%d, want %s/%d", i, r.ID, r.Events, want, i)
		}
	}
}

// canceledContext: every call refuses a done context with an error that
// wraps it, and a refused Save writes nothing.
func canceledContext(t *testing.T, open func() Store, _ func(Store) Store) {
	s := open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := map[string]func() error{
		"Save":     func() error { return s.Save(ctx, session.Record{ID: ID}) },
		"Load":     func() error { _, _, err := s.Load(ctx, ID); return err },
		"List":     func() error { _, err := s.List(ctx); return err },
		"Delete":   func() error { return s.Delete(ctx, ID) },
		"SaveRun":  func() error { return s.SaveRun(ctx, api.Run{ID: "run-1"}) },
		"LoadRun":  func() error { _, _, err := s.LoadRun(ctx, "run-1"); return err },
		"ListRuns": func() error { _, err := s.ListRuns(ctx); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			if err := op(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s = %v, want context.Canceled", name, err)
			}
		})
	}
	if _, st, err := s.Load(context.Background(), ID); err != nil || st != store.NotFound {
		t.Errorf("canceled Save stored something: Load = %v, %v", st, err)
	}
	if _, found, err := s.LoadRun(context.Background(), "run-1"); err != nil || found {
		t.Errorf("canceled SaveRun stored something: LoadRun = %v, %v", found, err)
	}
}

// invalidIDs: ids are used in paths and keys, so what is not a valid
// session id is refused by every call, and nothing is stored.
func invalidIDs(t *testing.T, open func() Store, _ func(Store) Store) {
	s := open()
	ctx := context.Background()
	ops := []struct {
		name, noun string
		do         func(id string) error
	}{
		{"Save", "session", func(id string) error { return s.Save(ctx, session.Record{ID: id}) }},
		{"Load", "session", func(id string) error { _, _, err := s.Load(ctx, id); return err }},
		{"Delete", "session", func(id string) error { return s.Delete(ctx, id) }},
		{"SaveRun", "run", func(id string) error { return s.SaveRun(ctx, api.Run{ID: id}) }},
		{"LoadRun", "run", func(id string) error { _, _, err := s.LoadRun(ctx, id); return err }},
	}
	for _, id := range []string{"", "../x", "a/b", ".", "-lead", "a b", strings.Repeat("x", 129)} {
		for _, op := range ops {
			t.Run(fmt.Sprintf("%s(%q)", op.name, id), func(t *testing.T) {
				err := op.do(id)
				if err == nil {
					t.Fatalf("%s(%q) succeeded, want an error", op.name, id)
				}
				if !strings.Contains(err.Error(), op.noun) {
					t.Errorf("error %q does not say what was wrong (%s)", err, op.noun)
				}
			})
		}
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != 0 {
		t.Errorf("List = %v, %v; want nothing stored", recs, err)
	}
	if runs, err := s.ListRuns(ctx); err != nil || len(runs) != 0 {
		t.Errorf("ListRuns = %v, %v; want nothing stored", runs, err)
	}
}

// runs: a run round trips, ListRuns is newest first, and Active, a
// property of the live supervisor, is not stored.
func runs(t *testing.T, open func() Store, _ func(Store) Store) {
	s := open()
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
	list, err := s.ListRuns(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "run-2" || list[1].ID != "run-1" {
		t.Fatalf("ListRuns: %+v, %v; want newest first", list, err)
	}
	if list[0].Active {
		t.Errorf("Active was stored; it belongs to the live supervisor")
	}
}
