package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
)

// bucketRuns holds the runs of `drover run`, one JSON api.Run per run id.
var bucketRuns = []byte("runs")

// SaveRun stores run under run.ID and returns once the commit is on disk.
func (s *Store) SaveRun(ctx context.Context, run api.Run) error {
	if err := hook.CheckSessionID(run.ID); err != nil {
		return fmt.Errorf("saving run: %w", err)
	}
	run.Active = false // a property of the live supervisor, not of the run
	raw, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", run.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("saving run %s: %w", run.ID, err)
	}
	err = s.db.Batch(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketRuns)
		if err != nil {
			return err
		}
		return b.Put([]byte(run.ID), raw)
	})
	if err != nil {
		return fmt.Errorf("saving run %s: %w", run.ID, err)
	}
	return nil
}

// LoadRun returns the run stored under id; found is false when there is
// none.
func (s *Store) LoadRun(ctx context.Context, id string) (run api.Run, found bool, err error) {
	if err := hook.CheckSessionID(id); err != nil {
		return api.Run{}, false, fmt.Errorf("loading run: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return api.Run{}, false, fmt.Errorf("loading run %s: %w", id, err)
	}
	var raw []byte
	err = s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketRuns)
		if err != nil {
			return err
		}
		raw = cloneBytes(b.Get([]byte(id)))
		return nil
	})
	if err != nil {
		return api.Run{}, false, fmt.Errorf("loading run %s: %w", id, err)
	}
	if raw == nil {
		return api.Run{}, false, nil
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		return api.Run{}, false, fmt.Errorf("decoding run %s: %w", id, err)
	}
	return run, true, nil
}

// ListRuns returns every stored run, newest first. A run that cannot be
// decoded is left out and logged.
func (s *Store) ListRuns(ctx context.Context) ([]api.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var runs []api.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketRuns)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return nil
			}
			var r api.Run
			if err := json.Unmarshal(v, &r); err != nil {
				s.log.Warn(fmt.Sprintf("skipping undecodable run %q: %v", truncate(string(k), 64), err))
				return nil
			}
			runs = append(runs, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	slices.SortFunc(runs, func(a, b api.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return runs, nil
}
