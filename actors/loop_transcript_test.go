package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/loop"
)

// feedbackLine is the entry Claude Code writes when a Stop hook blocked:
// the start of the next iteration.
func feedbackLine(id string) string {
	return `{"type":"user","uuid":"fb-` + id + `","isMeta":true,"message":{"role":"user","content":"Stop hook feedback:\nkeep going"}}` + "\n"
}

// TestLoopTranscriptOffsetSurvivesARestart: the session actor crashes
// right after committing a Stop, and its supervisor restarts it from the
// store. The next Stop reads on from the stored offset with the stored
// spend: it does not read the first iteration again (rewritten in place
// here, where a reading from the start would count $1.35 for it, not
// $0.30), and the offset it stores is the file's end.
func TestLoopTranscriptOffsetSurvivesARestart(t *testing.T) {
	f := newCrashFixture(t, func(*config.Config, string) {})
	f.startLoop(api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10})
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	now := time.Now()
	// $0.30 of sonnet output in iteration 1.
	iter1 := usageLine("m1", "claude-sonnet-4-5", now.Add(time.Second), "working", 0, 20_000)
	if err := os.WriteFile(path, []byte(iter1), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := func(req, msg string) *HookResult {
		return f.ask("s1", &HandleHook{RequestID: req, Event: hook.Stop, Input: hook.Input{SessionID: "s1", TranscriptPath: path, LastAssistantMessage: &msg}}).(*HookResult)
	}
	f.crash.armed.Store(true)
	if r := stop("a", "working"); !errors.Is(r.Err, ErrSessionFailed) {
		t.Fatalf("the crashing stop: %+v", r)
	}
	if r := stop("a", "working"); r.Err != nil || !r.Replayed {
		t.Fatalf("the retried stop was not answered from the record: %+v", r)
	}
	read := f.record().LoopTranscript
	if read == nil || read.Cursor.Offset() != int64(len(iter1)) || read.CostUSD != 0 {
		t.Fatalf("stored reading after the first stop: %+v, want offset %d", read, len(iter1))
	}

	// Iteration 1 rewritten in place (same length, $1.35 of output): a
	// reading from the start would count it.
	data := []byte(strings.Replace(iter1, `"output_tokens":20000`, `"output_tokens":90000`, 1))
	// $0.15 of sonnet output in iteration 2.
	iter2 := feedbackLine("1") + usageLine("m2", "claude-sonnet-4-5", now.Add(2*time.Second), "more work", 0, 10_000)
	if err := os.WriteFile(path, append(data, iter2...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := stop("b", "more work"); r.Err != nil || !r.Output.IsBlock() {
		t.Fatalf("the stop after the restart: %+v", r)
	}
	st := f.loop("s1", "status", nil)
	if st.CostUSD < 0.449 || st.CostUSD > 0.451 {
		t.Errorf("cost after the restart $%.4f, want $0.45: the first iteration was read again, or its spend lost", st.CostUSD)
	}
	rec := f.record()
	if got := rec.LoopTranscript.Cursor.Offset(); got != int64(len(data)+len(iter2)) {
		t.Errorf("stored offset %d, want the file's end %d", got, len(data)+len(iter2))
	}
	if h := rec.LoopHistory; len(h) == 0 || h[len(h)-1].Iteration != 2 {
		t.Errorf("history %+v, want the second iteration measured", h)
	}
}

// f.loop for a crashFixture.
func (f *crashFixture) loop(id, verb string, args any) api.LoopStatus {
	f.t.Helper()
	return (&planFixture{fixture: f.fixture}).loop(id, verb, args)
}

// TestReadLoopTranscript: whatever happened to the file between two
// Stops, the second reading equals a reading of the whole file from the
// start; only a file that grew is read from the stored offset.
func TestReadLoopTranscript(t *testing.T) {
	now := time.Now()
	s := loop.State{Active: true, StartedAt: now}
	iter := func(n string, out int) string {
		return feedbackLine(n) + usageLine("m"+n, "claude-sonnet-4-5", now.Add(time.Second), "work "+n, 0, out)
	}
	first := iter("1", 20_000) + iter("2", 10_000)
	later := iter("3", 30_000)
	other := iter("9", 40_000) + iter("8", 1_000)
	cases := []struct {
		name string
		// change changes the file at path after the first reading.
		change func(t *testing.T, path string)
		// loop is the loop the second reading is for.
		loop loop.State
		// resumed says whether the second reading went on from the first.
		resumed bool
	}{
		{"grown", func(t *testing.T, p string) { appendFile(t, p, later) }, s, true},
		{"unchanged", func(*testing.T, string) {}, s, true},
		{"replaced by a new file", func(t *testing.T, p string) { replaceFile(t, p, first+later) }, s, false},
		{"truncated", func(t *testing.T, p string) { writeInPlace(t, p, first[:len(first)/2]) }, s, false},
		{"truncated and written again, longer", func(t *testing.T, p string) { writeInPlace(t, p, other+later) }, s, false},
		{"a new loop", func(t *testing.T, p string) { appendFile(t, p, later) }, loop.State{Active: true, StartedAt: now.Add(-time.Minute)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "transcript.jsonl")
			if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
				t.Fatal(err)
			}
			r1, err := readLoopTranscript(context.Background(), path, nil, s)
			if err != nil {
				t.Fatal(err)
			}
			if r1.next.Cursor.Offset() != int64(len(first)) {
				t.Fatalf("first reading stopped at %d of %d bytes", r1.next.Cursor.Offset(), len(first))
			}
			tc.change(t, path)
			got, err := readLoopTranscript(context.Background(), path, r1.next, tc.loop)
			if err != nil {
				t.Fatal(err)
			}
			want, err := readLoopTranscript(context.Background(), path, nil, tc.loop)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.it, want.it) || !near(got.cost, want.cost) {
				t.Errorf("second reading: %+v, $%v\nfrom the start: %+v, $%v", got.it, got.cost, want.it, want.cost)
			}
			if got.next.Cursor.Offset() != want.next.Cursor.Offset() {
				t.Errorf("second reading stopped at %d, reading from the start at %d", got.next.Cursor.Offset(), want.next.Cursor.Offset())
			}
			if got.resumed != tc.resumed {
				t.Errorf("resumed %v, want %v", got.resumed, tc.resumed)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// replaceFile puts a new file at path (a new inode), as a rename does.
func replaceFile(t *testing.T, path, s string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace truncates the file at path and writes s into it (the same
// inode).
func writeInPlace(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
