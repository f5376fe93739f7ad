// Package store keeps the supervisor's records in an embedded bbolt file
// (under .drover/state/): every session's record (session.Record) and
// every run of `drover run` (api.Run), so a restarted supervisor recovers
// them all.
//
// A write returns only after bbolt's commit has been fsynced: a hook may be
// answered once Save returns. A record that cannot be decoded is quarantined
// (moved aside with its raw bytes and the reason) rather than failing every
// later read of that session. The file carries a schema version, so an
// older drover refuses a file it does not understand. What the engine
// relies on of a store is written down as a test in storetest.
//
// The store knows the two record types only to encode, decode and key
// them (JSON, under the session or run id); it applies no workflow rule.
// It imports internal/session, and through it the workflow cores whose
// states a session record composes: the one place plumbing depends on the
// engine's types, kept because the records are small and their JSON is
// the on-disk format.
package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
)

// SchemaVersion is the layout version this package reads and writes. It is
// stored in the meta bucket so that a later version can migrate old files
// and an older drover refuses a file it does not understand.
const SchemaVersion = 1

// DefaultLockTimeout is how long Open waits for another process to release
// the file lock when Options.LockTimeout is zero.
const DefaultLockTimeout = 2 * time.Second

// DefaultMaxQuarantine bounds the quarantine bucket when
// Options.MaxQuarantine is zero; the oldest entries are dropped beyond it.
const DefaultMaxQuarantine = 256

// ErrLocked is wrapped by the error Open returns when another process holds
// the store's file lock past the lock timeout.
var ErrLocked = errors.New("store is locked by another process")

var (
	bucketSessions   = []byte("sessions")
	bucketQuarantine = []byte("quarantine")
	bucketMeta       = []byte("meta")
	keySchemaVersion = []byte("schema_version")
)

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// LockTimeout bounds the wait for the file lock held by another process
	// (default DefaultLockTimeout). A context deadline sooner than it wins.
	LockTimeout time.Duration
	// Logger receives quarantine warnings; nil means zap.NewNop().
	Logger *zap.Logger
	// MaxBatchDelay and MaxBatchSize tune how Save groups concurrent commits
	// (bbolt's DB.MaxBatchDelay and DB.MaxBatchSize; zero keeps bbolt's
	// defaults of 10ms and 1000). A lone Save waits up to MaxBatchDelay for
	// company before it commits.
	MaxBatchDelay time.Duration
	MaxBatchSize  int
	// MaxQuarantine bounds the number of quarantine entries kept (default
	// DefaultMaxQuarantine), so a record that keeps arriving corrupt cannot
	// grow the file without bound.
	MaxQuarantine int
}

// Status says what Load found.
type Status int

// The statuses Load reports.
const (
	// Found: the record was stored and decoded.
	Found Status = iota + 1
	// NotFound: no record is stored under the id.
	NotFound
	// Quarantined: a stored record could not be decoded and was moved to
	// the quarantine bucket; the caller gets a fresh record.
	Quarantined
)

// String returns the status name for logs.
func (st Status) String() string {
	switch st {
	case Found:
		return "found"
	case NotFound:
		return "not_found"
	case Quarantined:
		return "quarantined"
	}
	return "Status(" + strconv.Itoa(int(st)) + ")"
}

// QuarantineEntry is one record that was moved aside because it could not
// be decoded.
type QuarantineEntry struct {
	// Key is the entry's key in the quarantine bucket: "<id>/<unix-nanos>".
	Key       string
	SessionID string
	// Error is why the record was quarantined.
	Error string
	// Raw holds the stored bytes exactly as they were found.
	Raw []byte
	At  time.Time
}

// quarantineValue is the stored form of a QuarantineEntry.
type quarantineValue struct {
	SessionID string    `json:"session_id"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
	Raw       []byte    `json:"raw"`
}

// Store is the session record store. Its methods are safe for concurrent
// use.
type Store struct {
	db            *bolt.DB
	path          string
	log           *zap.Logger
	maxQuarantine int
	now           func() time.Time
}

// Open opens (creating if needed) the store file at path, creating its
// parent directory owner-only. It fails with an error wrapping ErrLocked if
// another process keeps the file locked past the lock timeout, and with an
// error naming the version if the file was written by a newer schema.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("opening store %q: %w", path, err)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxQuarantine <= 0 {
		opts.MaxQuarantine = DefaultMaxQuarantine
	}
	timeout := opts.LockTimeout
	if dl, ok := ctx.Deadline(); ok {
		// bbolt's Timeout of 0 means "wait forever", so never pass it 0.
		timeout = max(min(timeout, time.Until(dl)), time.Millisecond)
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating store directory for %q: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("opening store %q: %w (waited %s; is another drover supervisor running for this project?): %w",
			path, ErrLocked, timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening store %q: %w", path, err)
	}
	if opts.MaxBatchDelay > 0 {
		db.MaxBatchDelay = opts.MaxBatchDelay
	}
	if opts.MaxBatchSize > 0 {
		db.MaxBatchSize = opts.MaxBatchSize
	}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening store %q: %w", path, err)
	}
	return &Store{
		db:            db,
		path:          path,
		log:           opts.Logger,
		maxQuarantine: opts.MaxQuarantine,
		now:           time.Now,
	}, nil
}

// initSchema creates the buckets and checks or records the schema version.
func initSchema(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketSessions, bucketQuarantine, bucketMeta, bucketRuns} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("creating bucket %q: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	raw := meta.Get(keySchemaVersion)
	if raw == nil {
		if err := meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return fmt.Errorf("writing schema version: %w", err)
		}
		return nil
	}
	v, err := strconv.Atoi(string(raw))
	switch {
	case err != nil:
		return fmt.Errorf("reading schema version %q: %w", truncate(string(raw), 32), err)
	case v > SchemaVersion:
		return fmt.Errorf("store schema version %d is newer than this drover supports (%d); upgrade drover", v, SchemaVersion)
	case v < 1:
		return fmt.Errorf("store schema version %d is not valid", v)
	}
	// v == SchemaVersion; migrations from older versions go here.
	return nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close releases the file and its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing store %q: %w", s.path, err)
	}
	return nil
}

// Load returns the record stored for id. NotFound and Quarantined both come
// with a fresh record (only ID set) and no error: a corrupt record is moved
// to the quarantine bucket, logged at Warn, and never blocks the session.
// An error means the id is invalid, ctx is done, or the store failed.
func (s *Store) Load(ctx context.Context, id string) (session.Record, Status, error) {
	fresh := session.Record{ID: id}
	if err := hook.CheckSessionID(id); err != nil {
		return fresh, 0, fmt.Errorf("loading session record: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fresh, 0, fmt.Errorf("loading session %s: %w", id, err)
	}
	var raw []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		raw = cloneBytes(b.Get([]byte(id)))
		return nil
	})
	if err != nil {
		return fresh, 0, fmt.Errorf("loading session %s: %w", id, err)
	}
	if raw == nil {
		return fresh, NotFound, nil
	}
	if rec, derr := decode(id, raw); derr == nil {
		return rec, Found, nil
	}
	return s.quarantine(ctx, id)
}

// quarantine moves the undecodable record stored under id to the quarantine
// bucket. It re-reads the record inside its write transaction, so a good
// record saved since the caller looked is returned rather than moved.
func (s *Store) quarantine(ctx context.Context, id string) (session.Record, Status, error) {
	fresh := session.Record{ID: id}
	if err := ctx.Err(); err != nil {
		return fresh, 0, fmt.Errorf("quarantining session %s: %w", id, err)
	}
	var (
		status  Status
		rec     session.Record
		entry   QuarantineEntry
		dropped int
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		sessions, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		q, err := bucket(tx, bucketQuarantine)
		if err != nil {
			return err
		}
		raw := cloneBytes(sessions.Get([]byte(id)))
		if raw == nil {
			status = NotFound
			return nil
		}
		r, derr := decode(id, raw)
		if derr == nil {
			status, rec = Found, r
			return nil
		}
		dropped, err = s.evictOldest(q)
		if err != nil {
			return err
		}
		at := s.now()
		key := quarantineKey(q, id, at)
		val, err := json.Marshal(quarantineValue{SessionID: id, Error: derr.Error(), At: at, Raw: raw})
		if err != nil {
			return fmt.Errorf("encoding quarantine entry: %w", err)
		}
		if err := q.Put([]byte(key), val); err != nil {
			return fmt.Errorf("writing quarantine entry %q: %w", key, err)
		}
		if err := sessions.Delete([]byte(id)); err != nil {
			return fmt.Errorf("deleting corrupt record: %w", err)
		}
		status = Quarantined
		entry = QuarantineEntry{Key: key, SessionID: id, Error: derr.Error(), Raw: raw, At: at}
		return nil
	})
	if err != nil {
		return fresh, 0, fmt.Errorf("quarantining session %s: %w", id, err)
	}
	switch status {
	case Found:
		return rec, Found, nil
	case Quarantined:
		s.log.Warn("quarantined undecodable session record",
			zap.String("session_id", id),
			zap.String("quarantine_key", entry.Key),
			zap.String("error", entry.Error),
			zap.Int("raw_bytes", len(entry.Raw)),
			zap.Int("evicted_old_entries", dropped))
	}
	return fresh, status, nil
}

// evictOldest deletes the oldest quarantine entries until there is room for
// one more, and reports how many it deleted.
func (s *Store) evictOldest(q *bolt.Bucket) (int, error) {
	type aged struct {
		key []byte
		at  int64
	}
	var all []aged
	err := q.ForEach(func(k, _ []byte) error {
		all = append(all, aged{key: cloneBytes(k), at: keyNanos(k)})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scanning quarantine: %w", err)
	}
	excess := len(all) - s.maxQuarantine + 1
	if excess <= 0 {
		return 0, nil
	}
	slices.SortFunc(all, func(a, b aged) int {
		return cmp.Or(cmp.Compare(a.at, b.at), bytes.Compare(a.key, b.key))
	})
	for _, e := range all[:excess] {
		if err := q.Delete(e.key); err != nil {
			return 0, fmt.Errorf("evicting quarantine entry %q: %w", e.key, err)
		}
	}
	return excess, nil
}

// quarantineKey returns an unused key "<id>/<unix-nanos>"; the nanos are
// zero-padded so one id's entries sort by time.
func quarantineKey(q *bolt.Bucket, id string, at time.Time) string {
	n := at.UnixNano()
	for {
		key := fmt.Sprintf("%s/%019d", id, n)
		if q.Get([]byte(key)) == nil {
			return key
		}
		n++
	}
}

// keyNanos returns the nanos suffix of a quarantine key, or 0 if it has none.
func keyNanos(key []byte) int64 {
	k := string(key)
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseInt(k[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// decode parses a stored record and checks it belongs under key id.
func decode(id string, raw []byte) (session.Record, error) {
	if !hook.ValidSessionID(id) {
		return session.Record{}, fmt.Errorf("key %q is not a valid session id", truncate(id, 64))
	}
	var rec session.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return session.Record{}, fmt.Errorf("decoding session record: %w", err)
	}
	if rec.ID != id {
		return session.Record{}, fmt.Errorf("record id %q does not match its key %q", truncate(rec.ID, 64), id)
	}
	return rec, nil
}

// Save stores rec under rec.ID and returns once the commit is on disk.
// Concurrent Saves are grouped into one commit (bbolt's Batch).
func (s *Store) Save(ctx context.Context, rec session.Record) error {
	if err := hook.CheckSessionID(rec.ID); err != nil {
		return fmt.Errorf("saving session record: %w", err)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding session %s: %w", rec.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("saving session %s: %w", rec.ID, err)
	}
	// Batch may run this function more than once; a Put of the same bytes
	// is idempotent.
	err = s.db.Batch(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		return b.Put([]byte(rec.ID), raw)
	})
	if err != nil {
		return fmt.Errorf("saving session %s: %w", rec.ID, err)
	}
	return nil
}

// PutRaw stores raw bytes as the record of id, unchecked. It is for tests
// (to plant a corrupt record) and repair tools; production code uses Save.
func (s *Store) PutRaw(ctx context.Context, id string, raw []byte) error {
	if err := hook.CheckSessionID(id); err != nil {
		return fmt.Errorf("writing raw session record: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("writing raw session %s: %w", id, err)
	}
	raw = cloneBytes(raw)
	if raw == nil {
		raw = []byte{}
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), raw)
	})
	if err != nil {
		return fmt.Errorf("writing raw session %s: %w", id, err)
	}
	return nil
}

// Delete removes the record of id; deleting a missing record is not an
// error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := hook.CheckSessionID(id); err != nil {
		return fmt.Errorf("deleting session record: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("deleting session %s: %w", id, err)
	}
	err := s.db.Batch(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("deleting session %s: %w", id, err)
	}
	return nil
}

// List returns every decodable record, sorted by id. Undecodable records
// are quarantined as in Load and left out.
func (s *Store) List(ctx context.Context) ([]session.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var (
		recs []session.Record
		bad  []string
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if v == nil { // a nested bucket: not ours, leave it alone
				return nil
			}
			id := string(k)
			rec, derr := decode(id, v)
			if derr != nil {
				bad = append(bad, id)
				return nil
			}
			recs = append(recs, rec)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	for _, id := range bad {
		rec, st, err := s.quarantine(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		if st == Found {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b session.Record) int { return strings.Compare(a.ID, b.ID) })
	return recs, nil
}

// Quarantined returns every quarantine entry, sorted by key (so by session
// id, then time). An entry that cannot itself be decoded is returned with
// its stored bytes as Raw and the reason in Error.
func (s *Store) Quarantined(ctx context.Context) ([]QuarantineEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listing quarantine: %w", err)
	}
	var out []QuarantineEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		q, err := bucket(tx, bucketQuarantine)
		if err != nil {
			return err
		}
		return q.ForEach(func(k, v []byte) error {
			key := string(k)
			var qv quarantineValue
			if err := json.Unmarshal(v, &qv); err != nil {
				id, _, _ := strings.Cut(key, "/")
				out = append(out, QuarantineEntry{
					Key:       key,
					SessionID: id,
					Error:     fmt.Sprintf("undecodable quarantine entry: %v", err),
					Raw:       cloneBytes(v),
					At:        time.Unix(0, keyNanos(k)),
				})
				return nil
			}
			out = append(out, QuarantineEntry{Key: key, SessionID: qv.SessionID, Error: qv.Error, Raw: qv.Raw, At: qv.At})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing quarantine: %w", err)
	}
	return out, nil
}

// bucket returns the named top-level bucket, which Open created.
func bucket(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	b := tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("bucket %q is missing", name)
	}
	return b, nil
}

// cloneBytes copies b, keeping nil as nil; bbolt's slices are only valid
// inside their transaction.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
