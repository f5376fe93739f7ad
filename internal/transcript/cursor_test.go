package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// cursorFixture is loop.jsonl with a loop's later life appended: a Stop
// hook's feedback, lines a resume wrote again, a subagent's line, a blank
// line, a line that is not JSON, a message written over two lines, and a
// last line with no newline yet.
func cursorFixture(t testing.TB) []byte {
	t.Helper()
	more := strings.Join([]string{
		`{"type":"user","uuid":"f1","isMeta":true,"message":{"role":"user","content":"Stop hook feedback:\nkeep going"}}`,
		`{"type":"assistant","uuid":"b1","timestamp":"2026-08-23T13:10:00Z","message":{"id":"msg_X","model":"claude-opus-4-5","content":[{"type":"text","text":"Running the tests again."}],"usage":{"input_tokens":7,"output_tokens":3}}}`,
		`{"type":"assistant","uuid":"b2","timestamp":"2026-08-23T13:10:01Z","message":{"id":"msg_X","model":"claude-opus-4-5","content":[{"type":"tool_use","id":"tx1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":7,"output_tokens":30}}}`,
		``,
		`{"type":"user","uuid":"b3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tx1","is_error":true,"content":"--- FAIL: TestAdd (0.00s)\nFAIL"}]}}`,
		`{"type":"assistant","uuid":"b1","timestamp":"2026-08-23T13:10:00Z","message":{"id":"msg_X","model":"claude-opus-4-5","content":[{"type":"text","text":"Running the tests again."}],"usage":{"input_tokens":7,"output_tokens":3}}}`,
		`{"type":"assistant","uuid":"s1","isSidechain":true,"timestamp":"2026-08-23T13:10:02Z","message":{"id":"msg_S","model":"claude-haiku-4-5","content":[{"type":"text","text":"subagent"}],"usage":{"input_tokens":2,"output_tokens":2}}}`,
		`not json at all`,
		`{"type":"assistant","uuid":"b4","timestamp":"2026-08-23T13:10:03+02:00","message":{"id":"msg_Y","model":"claude-opus-4-5","content":[{"type":"tool_use","id":"tx2","name":"Edit","input":{"file_path":"calc.go"}}],"usage":{"input_tokens":9,"output_tokens":1}}}`,
		`{"type":"assistant","uuid":"b5","message":{"id":"msg_Z","content":[{"type":"tool_use","id":"tx3","name":"Bash","input":{"command":"go vet ./...","output_hint":"ok"}}]}}`,
		`{"type":"assistant","uuid":"b6","timestamp":"2026-08-23T13:10:05Z","message":{"id":"msg_W","model":"claude-opus-4-5","content":[{"type":"text","text":"Fixed."}],"usage":{"input_tokens":4,"output_tokens":2}}}`,
	}, "\n")
	return []byte(readTestdata(t, "loop.jsonl") + more)
}

// readResult is what a reading found: the part, and every usage, the
// completed and the pending.
type readResult struct {
	Iteration Iteration
	Usage     []Usage
}

// readInParts reads data as a file that grew: at each cut the file held
// data[:cut] and the cursor, stored and loaded as JSON between reads, read
// what had been appended.
func readInParts(t testing.TB, data []byte, cuts []int) readResult {
	t.Helper()
	var usage []Usage
	c := NewCursor(SinceIteration)
	var p Progress
	for _, cut := range append(cuts, len(data)) {
		file := data[:cut]
		if !c.Resumable(bytes.NewReader(file), int64(len(file))) {
			t.Fatalf("a file that only grew is not resumable at %d of %d bytes", c.Offset(), len(file))
		}
		var err error
		p, err = c.Read(context.Background(), bytes.NewReader(file[c.Offset():]), func(u Usage) { usage = append(usage, u) })
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p.Cursor)
		if err != nil {
			t.Fatal(err)
		}
		c = Cursor{}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
	}
	return readResult{Iteration: p.Iteration, Usage: normalUsage(append(usage, p.Pending...))}
}

// normalUsage puts every timestamp in UTC, so that equal times compare
// equal after a JSON round trip.
func normalUsage(us []Usage) []Usage {
	for i := range us {
		us[i].Timestamp = us[i].Timestamp.UTC()
	}
	return us
}

func fullRead(t testing.TB, data []byte) readResult {
	t.Helper()
	return readInParts(t, data, nil)
}

func TestCursorEqualsFullScan(t *testing.T) {
	data := cursorFixture(t)
	full := fullRead(t, data)
	// The fixture is worth testing on: the part, its calls, the usage.
	if full.Iteration.StartedBy != StopFeedback || full.Iteration.ToolCalls != 3 || len(full.Usage) < 4 || full.Iteration.Stats.Duplicates == 0 {
		t.Fatalf("fixture read as %+v, usage %+v", full.Iteration, full.Usage)
	}
	it, err := Summarize(context.Background(), bytes.NewReader(data), SinceIteration)
	if err != nil || !reflect.DeepEqual(it, full.Iteration) {
		t.Fatalf("one Read is not Summarize: %+v\n%+v (%v)", full.Iteration, it, err)
	}

	var lineEnds, mid []int
	start := 0
	for i, b := range data {
		if b == '\n' {
			lineEnds = append(lineEnds, i+1)
			mid = append(mid, (start+i)/2)
			start = i + 1
		}
	}
	type split struct {
		name string
		cuts []int
	}
	var splits []split
	for _, e := range lineEnds {
		splits = append(splits, split{"after line ending at byte " + strconv.Itoa(e), []int{e}})
	}
	for _, m := range mid {
		splits = append(splits, split{"inside the line at byte " + strconv.Itoa(m), []int{m}})
	}
	splits = append(splits,
		split{"a read at every line", lineEnds},
		split{"a read inside every line", mid},
		split{"nothing read yet", []int{0}},
	)
	for _, s := range splits {
		t.Run(s.name, func(t *testing.T) {
			got := readInParts(t, data, s.cuts)
			if !reflect.DeepEqual(got, full) {
				t.Errorf("read in parts at %v:\n%+v\nwhole:\n%+v", s.cuts, got, full)
			}
		})
	}
}

// TestCursorResumable: a file that was truncated, or rewritten with other
// lines (whatever its size now), is read again from the start, and that
// reading equals a full scan of the new file.
func TestCursorResumable(t *testing.T) {
	data := cursorFixture(t)
	cut := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
	p, err := NewCursor(SinceIteration).Read(context.Background(), bytes.NewReader(data[:cut]), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cursor
	other := append([]byte{}, data...)
	other[cut-3] ^= 0x20 // the last line read, rewritten in place
	cases := []struct {
		name      string
		file      []byte
		resumable bool
	}{
		{"grown", data, true},
		{"unchanged", data[:cut], true},
		{"truncated", data[:cut-1], false},
		{"emptied", nil, false},
		{"truncated and grown again with other lines", append(append([]byte{}, data[:cut-20]...), bytes.Repeat([]byte("{}\n"), 200)...), false},
		{"rewritten, same size", other, false},
		{"the last line read lost its newline", append(append([]byte{}, data[:cut-1]...), ' '), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Resumable(bytes.NewReader(tc.file), int64(len(tc.file))); got != tc.resumable {
				t.Fatalf("Resumable = %v, want %v", got, tc.resumable)
			}
			from := c
			if !tc.resumable {
				from = NewCursor(c.Since())
			}
			got, err := from.Read(context.Background(), bytes.NewReader(tc.file[from.Offset():]), nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := Summarize(context.Background(), bytes.NewReader(tc.file), SinceIteration)
			if !reflect.DeepEqual(got.Iteration, want) {
				t.Errorf("read:\n%+v\nfull scan:\n%+v", got.Iteration, want)
			}
		})
	}
}

// TestCursorUnmarshalBad: a stored cursor that does not hold together
// starts over rather than being trusted.
func TestCursorUnmarshalBad(t *testing.T) {
	for _, in := range []string{
		`{"since":1,"offset":10}`,
		`{"since":1,"offset":10,"tail":"Cg==","seen":"AAA="}`,
		`{"since":1,"offset":-1}`,
		`{"since":1,"offset":10,"tail":"Cg==","seen_next":99999}`,
	} {
		var c Cursor
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if c.Offset() != 0 || c.Since() != SincePrompt {
			t.Errorf("%s decoded at offset %d since %v, want the start since prompt", in, c.Offset(), c.Since())
		}
	}
}

// FuzzCursorParts: reading any input in up to three parts, storing the
// cursor between them, finds what one read of the whole finds.
func FuzzCursorParts(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"content":"hi"}}`+"\n"+`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"yo"}],"usage":{"output_tokens":2}}}`), uint16(10), uint16(50))
	f.Add([]byte(`{"type":"user","uuid":"f","message":{"content":"Stop hook feedback: go"}}`+"\n\n"+`{"type":"assistant","uuid":"f","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}`+"\n"), uint16(70), uint16(71))
	fixture := cursorFixture(f)
	f.Add(fixture, uint16(len(fixture)/3), uint16(2*len(fixture)/3))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint16) {
		if len(data) > 1<<16 {
			return
		}
		cuts := []int{int(a) % (len(data) + 1), int(b) % (len(data) + 1)}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		full := fullRead(t, data)
		if got := readInParts(t, data, cuts); !reflect.DeepEqual(got, full) {
			t.Errorf("read in parts at %v:\n%+v\nwhole:\n%+v", cuts, got, full)
		}
	})
}
