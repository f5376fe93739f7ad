package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/drover-dev/drover/internal/session"
)

const testID = "3f2c9a1e-5b7d-4c2e-9f10-a1b2c3d4e5f6"

// openTest opens a store in a fresh temp dir and closes it when the test
// ends. It returns the logs observed at Debug and above.
func openTest(tb testing.TB, opts Options) (*Store, *observer.ObservedLogs) {
	tb.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	if opts.Logger == nil {
		opts.Logger = zap.New(core)
	}
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "state", "drover.db"), opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s, logs
}

func TestCorruptRecordIsQuarantined(t *testing.T) {
	tests := []struct {
		name    string
		raw     []byte
		wantErr string // a fragment of the recorded reason
	}{
		{"not json", []byte("\x00\xffgarbage"), "decoding session record"},
		{"truncated json", []byte(`{"id":"` + testID + `","events":`), "decoding session record"},
		{"empty value", []byte{}, "decoding session record"},
		{"wrong field type", []byte(`{"id":"` + testID + `","events":"many"}`), "decoding session record"},
		{"json array", []byte(`[1,2,3]`), "decoding session record"},
		{"trailing garbage", []byte(`{"id":"` + testID + `"} x`), "decoding session record"},
		{"null", []byte(`null`), "does not match its key"},
		{"empty object", []byte(`{}`), "does not match its key"},
		{"id mismatch", []byte(`{"id":"someone-else","events":3}`), "does not match its key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := openTest(t, Options{})
			ctx := context.Background()
			if err := s.PutRaw(ctx, testID, tt.raw); err != nil {
				t.Fatalf("PutRaw: %v", err)
			}

			got, st, err := s.Load(ctx, testID)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if st != Quarantined {
				t.Fatalf("status = %v, want %v", st, Quarantined)
			}
			if !reflect.DeepEqual(got, session.Record{ID: testID}) {
				t.Errorf("record = %+v, want a fresh record with the id", got)
			}

			// The corrupt bytes are gone from the session bucket.
			if _, st, err := s.Load(ctx, testID); err != nil || st != NotFound {
				t.Errorf("second Load = %v, %v; want NotFound, nil", st, err)
			}

			q, err := s.Quarantined(ctx)
			if err != nil {
				t.Fatalf("Quarantined: %v", err)
			}
			if len(q) != 1 {
				t.Fatalf("Quarantined has %d entries, want 1: %+v", len(q), q)
			}
			e := q[0]
			if !bytes.Equal(e.Raw, tt.raw) {
				t.Errorf("quarantined raw = %q, want %q", e.Raw, tt.raw)
			}
			if e.SessionID != testID || !strings.HasPrefix(e.Key, testID+"/") {
				t.Errorf("entry id/key = %q/%q, want id %q and key prefix %q/", e.SessionID, e.Key, testID, testID)
			}
			if !strings.Contains(e.Error, tt.wantErr) {
				t.Errorf("entry error = %q, want it to contain %q", e.Error, tt.wantErr)
			}
			if e.At.IsZero() {
				t.Error("entry At is zero")
			}

			warns := logs.FilterLevelExact(zapcore.WarnLevel).FilterField(zap.String("session_id", testID)).All()
			if len(warns) != 1 {
				t.Errorf("got %d Warn logs for the session, want 1 (all logs: %v)", len(warns), logs.All())
			}

			// The session is not wedged: it can be saved and loaded again.
			if err := s.Save(ctx, session.Record{ID: testID, Events: 1}); err != nil {
				t.Fatalf("Save after quarantine: %v", err)
			}
			if rec, st, err := s.Load(ctx, testID); err != nil || st != Found || rec.Events != 1 {
				t.Errorf("Load after re-save = %+v, %v, %v; want Events 1, Found", rec, st, err)
			}
		})
	}
}

func TestQuarantineIsBounded(t *testing.T) {
	s, _ := openTest(t, Options{MaxQuarantine: 3})
	ctx := context.Background()
	var tick int64
	s.now = func() time.Time { tick++; return time.Unix(1_700_000_000, tick) }
	for i := range 5 {
		if err := s.PutRaw(ctx, testID, []byte("bad "+strconv.Itoa(i))); err != nil {
			t.Fatalf("PutRaw: %v", err)
		}
		if _, st, err := s.Load(ctx, testID); err != nil || st != Quarantined {
			t.Fatalf("Load %d = %v, %v; want Quarantined", i, st, err)
		}
	}
	q, err := s.Quarantined(ctx)
	if err != nil {
		t.Fatalf("Quarantined: %v", err)
	}
	var raws []string
	for _, e := range q {
		raws = append(raws, string(e.Raw))
	}
	if want := []string{"bad 2", "bad 3", "bad 4"}; !reflect.DeepEqual(raws, want) {
		t.Errorf("kept entries = %q, want the newest %q", raws, want)
	}
}

func TestListSortsAndQuarantines(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	for _, id := range []string{"c", "a", "b"} {
		if err := s.Save(ctx, session.Record{ID: id}); err != nil {
			t.Fatalf("Save %s: %v", id, err)
		}
	}
	if err := s.PutRaw(ctx, "bad", []byte("{")); err != nil {
		t.Fatalf("PutRaw: %v", err)
	}
	if err := s.PutRaw(ctx, "b2", []byte(`{"id":"b"}`)); err != nil {
		t.Fatalf("PutRaw: %v", err)
	}

	recs, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("List ids = %q, want %q", ids, want)
	}
	q, err := s.Quarantined(ctx)
	if err != nil {
		t.Fatalf("Quarantined: %v", err)
	}
	var qids []string
	for _, e := range q {
		qids = append(qids, e.SessionID)
	}
	if want := []string{"b2", "bad"}; !reflect.DeepEqual(qids, want) {
		t.Errorf("quarantined ids = %q, want %q", qids, want)
	}
	// A second List has nothing left to quarantine.
	recs, err = s.List(ctx)
	if err != nil || len(recs) != 3 {
		t.Errorf("second List = %d records, %v; want 3, nil", len(recs), err)
	}
}

// PutRaw refuses what is not a session id, as every call of the contract
// does (storetest.Contract).
func TestPutRawRefusesInvalidIDs(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	for _, id := range []string{"", "../x", "a/b", ".", "-lead", "a b", strings.Repeat("x", 129)} {
		err := s.PutRaw(ctx, id, []byte("{}"))
		if err == nil {
			t.Fatalf("PutRaw(%q) succeeded, want an error", id)
		}
		if !strings.Contains(err.Error(), "session") {
			t.Errorf("error %q does not say what was wrong", err)
		}
	}
	if recs, err := s.List(ctx); err != nil || len(recs) != 0 {
		t.Errorf("List = %v, %v; want nothing stored", recs, err)
	}
}

func TestCanceledContext(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The calls of the contract are tested by storetest.Contract.
	ops := map[string]func() error{
		"PutRaw":      func() error { return s.PutRaw(ctx, testID, nil) },
		"Quarantined": func() error { _, err := s.Quarantined(ctx); return err },
		"Open": func() error {
			_, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"), Options{})
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			if err := op(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s = %v, want context.Canceled", name, err)
			}
		})
	}
	if _, st, err := s.Load(context.Background(), testID); err != nil || st != NotFound {
		t.Errorf("canceled PutRaw stored something: Load = %v, %v", st, err)
	}
}

// The quarantine survives a reopen, as the records do (the contract's
// DurableOnceSaved).
func TestQuarantineSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "drover.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.PutRaw(ctx, "bad", []byte("nope")); err != nil {
		t.Fatalf("PutRaw: %v", err)
	}
	if _, st, err := s.Load(ctx, "bad"); err != nil || st != Quarantined {
		t.Fatalf("Load bad = %v, %v; want Quarantined", st, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if q, err := s.Quarantined(ctx); err != nil || len(q) != 1 || string(q[0].Raw) != "nope" {
		t.Errorf("Quarantined after reopen = %+v, %v; want the one entry", q, err)
	}
}

func TestOpenPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project", ".drover", "state")
	s, err := Open(context.Background(), filepath.Join(dir, "drover.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	for _, p := range []string{dir, filepath.Dir(dir), filepath.Join(dir, "drover.db")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group/other access", filepath.Base(p), perm)
		}
	}
}

func TestSecondOpenFailsWhileLocked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "drover.db")
	first, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer first.Close()

	// flock locks belong to the open file description, so a second open in
	// this process contends exactly as another process would.
	second, err := Open(ctx, path, Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		second.Close()
		t.Fatal("second Open succeeded while the store was open")
	}
	if !errors.Is(err, ErrLocked) {
		t.Errorf("error = %v, want it to wrap ErrLocked", err)
	}
	for _, frag := range []string{path, "locked", "another drover supervisor"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not mention %q", err, frag)
		}
	}

	// Once the first closes, the lock is free.
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	third, err := Open(ctx, path, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	third.Close()
}

func TestSchemaVersion(t *testing.T) {
	tests := []struct {
		name    string
		stored  []byte // nil: no meta bucket at all (a fresh or pre-meta file)
		wantErr string
	}{
		{"fresh file", nil, ""},
		{"current version", []byte("1"), ""},
		{"newer version", []byte("2"), "store schema version 2 is newer"},
		{"much newer version", []byte("17"), "version 17"},
		{"zero version", []byte("0"), "version 0 is not valid"},
		{"garbage version", []byte("one"), "reading schema version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "drover.db")
			if tt.stored != nil {
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = db.Update(func(tx *bolt.Tx) error {
					b, err := tx.CreateBucket(bucketMeta)
					if err != nil {
						return err
					}
					return b.Put(keySchemaVersion, tt.stored)
				})
				if err := errors.Join(err, db.Close()); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(context.Background(), path, Options{})
			if tt.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatalf("Open succeeded, want error containing %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var got string
			_ = db.View(func(tx *bolt.Tx) error {
				if b := tx.Bucket(bucketMeta); b != nil {
					got = string(b.Get(keySchemaVersion))
				}
				return nil
			})
			if got != "1" {
				t.Errorf("stored schema version = %q, want %q", got, "1")
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	for st, want := range map[Status]string{Found: "found", NotFound: "not_found", Quarantined: "quarantined", 0: "Status(0)"} {
		if got := st.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", int(st), got, want)
		}
	}
}

// FuzzLoadDecode stores arbitrary bytes as a record and checks that Load
// never errors or panics: it either decodes a record that belongs to the id
// or quarantines the bytes intact.
func FuzzLoadDecode(f *testing.F) {
	f.Add([]byte(`{"id":"fz"}`))
	f.Add([]byte(`{"id":"other"}`))
	f.Add([]byte(`not json`))
	s, _ := openTest(f, Options{})
	ctx := context.Background()
	const id = "fz"
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := s.PutRaw(ctx, id, raw); err != nil {
			t.Fatalf("PutRaw: %v", err)
		}
		before, err := s.Quarantined(ctx)
		if err != nil {
			t.Fatalf("Quarantined: %v", err)
		}
		rec, st, err := s.Load(ctx, id)
		if err != nil {
			t.Fatalf("Load errored on %q: %v", raw, err)
		}
		switch st {
		case Found:
			if rec.ID != id {
				t.Fatalf("Found record with id %q under key %q", rec.ID, id)
			}
		case Quarantined:
			if !reflect.DeepEqual(rec, session.Record{ID: id}) {
				t.Fatalf("quarantined Load returned %+v, want a fresh record", rec)
			}
			if _, st, err := s.Load(ctx, id); err != nil || st != NotFound {
				t.Fatalf("Load after quarantine = %v, %v; want NotFound", st, err)
			}
			after, err := s.Quarantined(ctx)
			if err != nil {
				t.Fatalf("Quarantined: %v", err)
			}
			if !hasNewRaw(before, after, raw) {
				t.Fatalf("quarantine does not hold the raw bytes %q", raw)
			}
		default:
			t.Fatalf("Load status = %v, want Found or Quarantined", st)
		}
	})
}

// hasNewRaw reports whether after holds an entry with raw that before lacks.
func hasNewRaw(before, after []QuarantineEntry, raw []byte) bool {
	seen := make(map[string]bool, len(before))
	for _, e := range before {
		seen[e.Key] = true
	}
	for _, e := range after {
		if !seen[e.Key] && bytes.Equal(e.Raw, raw) {
			return true
		}
	}
	return false
}

// A key that is not a valid session id (written by some other tool) is
// quarantined by List rather than handed to callers who would use it as a
// path.
func TestListQuarantinesInvalidKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "drover.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Save(ctx, session.Record{ID: "good"}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).Put([]byte("../evil"), []byte(`{"id":"../evil"}`))
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	recs, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(recs) != 1 || recs[0].ID != "good" {
		t.Errorf("List = %+v, want only the good record", recs)
	}
	q, err := s.Quarantined(ctx)
	if err != nil {
		t.Fatalf("Quarantined: %v", err)
	}
	if len(q) != 1 || q[0].SessionID != "../evil" || !strings.Contains(q[0].Error, "not a valid session id") {
		t.Errorf("Quarantined = %+v, want the ../evil entry", q)
	}
}
