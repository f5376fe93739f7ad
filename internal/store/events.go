package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-dev/drover/internal/api"
)

// bucketEvents holds the event history (internal/events): one JSON
// api.Event per id, keyed by the id big-endian so that keys sort by id. It
// is created by the first write.
var bucketEvents = []byte("events")

// keyEventsReserved, in the meta bucket, is the highest event id handed
// out or about to be (events.Hub reserves ids in blocks).
var keyEventsReserved = []byte("events_reserved")

func eventKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// AppendEvents adds evs to the event history and trims it to its last
// keep events.
func (s *Store) AppendEvents(ctx context.Context, evs []api.Event, keep int) error {
	if len(evs) == 0 {
		return nil
	}
	raws := make([][]byte, len(evs))
	for i, e := range evs {
		raw, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding event %d: %w", e.ID, err)
		}
		raws[i] = raw
	}
	return s.AppendEncodedEvents(ctx, evs, raws, keep)
}

// AppendEncodedEvents is AppendEvents with each event's JSON already
// encoded (raws[i] is json.Marshal of evs[i]): the hub encodes every event
// once, for its subscribers and for the store.
func (s *Store) AppendEncodedEvents(ctx context.Context, evs []api.Event, raws [][]byte, keep int) error {
	if len(evs) == 0 {
		return nil
	}
	if len(raws) != len(evs) {
		return fmt.Errorf("saving events: %d encodings for %d events", len(raws), len(evs))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("saving events: %w", err)
	}
	err := s.db.Batch(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEvents)
		if err != nil {
			return err
		}
		for i, e := range evs {
			if err := b.Put(eventKey(e.ID), raws[i]); err != nil {
				return err
			}
		}
		// Trim from the oldest: ids are dense, so the last id less keep
		// is the bound.
		last := evs[len(evs)-1].ID
		if keep <= 0 || last <= uint64(keep) {
			return nil
		}
		bound := last - uint64(keep)
		// A Delete moves the cursor on, so Next would skip every other
		// key: take the first one again each time.
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= bound; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("saving events: %w", err)
	}
	return nil
}

// ReserveEventIDs records upTo as the highest event id that may be in use.
func (s *Store) ReserveEventIDs(ctx context.Context, upTo uint64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reserving event ids: %w", err)
	}
	err := s.db.Batch(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keyEventsReserved, eventKey(upTo))
	})
	if err != nil {
		return fmt.Errorf("reserving event ids: %w", err)
	}
	return nil
}

// LoadEvents returns the last keep events of the history, oldest first,
// and the highest event id reserved. An event that does not decode is
// skipped: the history is for watching, not for deciding.
func (s *Store) LoadEvents(ctx context.Context, keep int) ([]api.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("loading events: %w", err)
	}
	var evs []api.Event
	var reserved uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		meta, err := bucket(tx, bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyEventsReserved); len(v) == 8 {
			reserved = binary.BigEndian.Uint64(v)
		}
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && (keep <= 0 || len(evs) < keep); k, v = c.Prev() {
			var e api.Event
			if json.Unmarshal(v, &e) == nil {
				evs = append(evs, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("loading events: %w", err)
	}
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs, reserved, nil
}
