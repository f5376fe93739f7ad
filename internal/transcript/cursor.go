package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Cursor is where an incremental reading of one transcript stopped, with
// everything the reading gathered up to there: the lines read and their
// byte length, the Stats, the dedupe window, the part of the transcript
// that Since selects so far, and the usage of the message still being
// written. A long session's transcript only grows, so the next read takes
// up where the last one stopped and costs what the new lines cost, not
// what the whole file costs.
//
// A Cursor only ever stands after a complete line: the unterminated last
// line of a file being written is read at every Read and kept by none.
// The zero Cursor reads from the start with SinceIteration; a Cursor is a
// value, and Read leaves it unchanged. It encodes as JSON, to be kept
// with the state of the session whose transcript it reads.
type Cursor struct {
	since Since
	lines int   // lines read: the number of the last one
	off   int64 // where the next line starts
	tail  []byte
	stats Stats
	seen  *deduper
	acc   *accumulator
	usage usageMerger
}

// NewCursor returns a Cursor at the start of a transcript that selects
// the part since says.
func NewCursor(since Since) Cursor { return Cursor{since: since} }

// Offset is the byte offset the next Read starts from: the end of the
// last complete line read. The reader handed to Read must start there.
func (c Cursor) Offset() int64 { return c.off }

// Since is what part of the transcript c selects.
func (c Cursor) Since() Since { return c.since }

// Lines is how many lines (complete ones, blank ones included) were read.
func (c Cursor) Lines() int { return c.lines }

// Resumable reports whether the file r, of size bytes, may be read on
// from c: it is not shorter than what was read, and the bytes just before
// the offset (the end of the last line read, newline included) are still
// there. A file that was truncated, or rewritten with other lines, is
// not: read it again from the start. (A file replaced by another one is
// for the caller to tell, by the file's identity.)
func (c Cursor) Resumable(r io.ReaderAt, size int64) bool {
	return resumable(r, size, c.off, c.tail)
}

// resumable reports whether the file r, of size bytes, still holds tail
// just before off, tail ending with the newline of the last line read:
// whether a reading that stopped at off may go on from there.
func resumable(r io.ReaderAt, size, off int64, tail []byte) bool {
	if off == 0 {
		return true
	}
	if size < off || len(tail) == 0 || int64(len(tail)) > off || tail[len(tail)-1] != '\n' {
		return false
	}
	got := make([]byte, len(tail))
	if _, err := r.ReadAt(got, off-int64(len(got))); err != nil {
		return false
	}
	return bytes.Equal(got, tail)
}

// Progress is what a Read found.
type Progress struct {
	// Cursor stands after the last complete line read: the next Read
	// starts from it.
	Cursor Cursor
	// Iteration is the part of the whole transcript (what was read before
	// and what this Read read, the unterminated last line included) that
	// the Cursor's Since selects: what Summarize of the whole file returns.
	Iteration Iteration
	// Pending is the usage that Read did not report to its callback: the
	// message whose lines may still go on, and what the unterminated last
	// line completed (at most three in all). Read reports each message's
	// usage to its callback once a complete line after it shows the
	// message is over; until then it is here, and is here again (perhaps
	// grown) at the next Read.
	Pending []Usage
}

// Read reads the transcript from r, which starts at c.Offset(), to its
// end, and calls usage once per assistant message completed on the way
// (as ScanUsage does; sidechain messages count, they are spent too). It
// stops early when ctx is done or reading fails, with the Progress up to
// there and the error.
func (c Cursor) Read(ctx context.Context, r io.Reader, usage func(Usage)) (Progress, error) {
	n := c.clone()
	lr := lineReader{br: bufio.NewReaderSize(r, readBuffer), max: DefaultMaxLine, off: n.off, last: append(make([]byte, 0, 2*tailLen), n.tail...)}
	report := func(u Usage) error {
		if usage != nil {
			usage(u)
		}
		return nil
	}
	for lineNo := n.lines + 1; ; lineNo++ {
		if lineNo%64 == 0 {
			if err := ctx.Err(); err != nil {
				return n.progress(), fmt.Errorf("reading transcript at line %d: %w", lineNo, err)
			}
		}
		line, offset, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return n.progress(), fmt.Errorf("reading transcript line %d: %w", lineNo, err)
		}
		if err != nil {
			// The end. An unterminated last line is read, but on a copy:
			// the agent may still be writing it.
			if len(bytes.TrimSpace(line)) == 0 && !tooLong {
				return n.progress(), nil
			}
			t := n.clone()
			var done []Usage
			t.line(line, tooLong, lineNo, offset, func(u Usage) error { done = append(done, u); return nil })
			p := t.progress()
			p.Cursor = n
			p.Pending = append(done, p.Pending...)
			return p, nil
		}
		n.line(line, tooLong, lineNo, offset, report)
		n.lines, n.off = lineNo, lr.off
		n.tail = append(n.tail[:0], lr.last...)
	}
}

// line takes in one complete line.
func (c *Cursor) line(line []byte, tooLong bool, lineNo int, offset int64, report func(Usage) error) {
	if tooLong {
		c.stats.Lines++
		c.stats.TooLong++
		return
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	c.stats.Lines++
	decodeLine(line, lineNo, offset, &c.stats, c.seen, func(ev Event) bool {
		c.stats.Events++
		c.event(ev)
		return true
	}, func(e *entry) {
		_ = c.usage.add(c.seen, e.Message.ID, e.Message.Model, e.Timestamp, e.Message.Usage, report)
	})
}

// event adds ev to the part being gathered, or starts a new part at a
// boundary.
func (c *Cursor) event(ev Event) {
	if ev.Sidechain {
		return
	}
	if isBoundary(ev.Kind, c.since) {
		c.acc = newAccumulator(ev.Kind, ev.Line, ev.Text)
		c.acc.it.StartOffset = ev.Offset
		return
	}
	c.acc.add(ev)
}

// progress finishes a copy of what c gathered.
func (c *Cursor) progress() Progress {
	it := c.acc.clone().finish()
	it.Stats = c.stats
	var pending []Usage
	if c.usage.pending != nil {
		pending = append(pending, *c.usage.pending)
	}
	return Progress{Cursor: *c, Iteration: it, Pending: pending}
}

// clone returns a deep copy of c, with its zero parts made.
func (c Cursor) clone() Cursor {
	n := c
	n.tail = slices.Clone(c.tail)
	if c.seen == nil {
		n.seen = newDeduper(dedupeWindow)
	} else {
		n.seen = c.seen.clone()
	}
	if c.acc == nil {
		n.acc = newAccumulator(0, 0, "")
	} else {
		n.acc = c.acc.clone()
	}
	if c.usage.pending != nil {
		u := *c.usage.pending
		n.usage.pending = &u
	}
	return n
}

// clone returns a deep copy of a.
func (a *accumulator) clone() *accumulator {
	n := *a
	n.it.ToolCounts = maps.Clone(a.it.ToolCounts)
	n.it.Calls = slices.Clone(a.it.Calls)
	for i, c := range n.it.Calls {
		if c.Result != nil {
			r := *c.Result
			n.it.Calls[i].Result = &r
		}
	}
	n.it.FilesChanged = slices.Clone(a.it.FilesChanged)
	n.pending = maps.Clone(a.pending)
	n.files = maps.Clone(a.files)
	return &n
}

// cursorJSON is a Cursor's stored form.
type cursorJSON struct {
	Since  Since  `json:"since"`
	Lines  int    `json:"lines"`
	Offset int64  `json:"offset"`
	Tail   []byte `json:"tail,omitempty"`
	Stats  Stats  `json:"stats"`
	// Seen is the dedupe window, little-endian, trailing zeros cut.
	Seen     []byte         `json:"seen,omitempty"`
	SeenNext int            `json:"seen_next,omitempty"`
	Part     *Iteration     `json:"part,omitempty"`
	Hints    map[int]string `json:"hints,omitempty"`
	Dropped  int            `json:"dropped,omitempty"`
	Results  map[string]int `json:"results,omitempty"`
	TextMsg  string         `json:"text_msg,omitempty"`
	LastMsg  string         `json:"last_msg,omitempty"`
	Usage    *Usage         `json:"usage,omitempty"`
}

// MarshalJSON encodes the cursor.
func (c Cursor) MarshalJSON() ([]byte, error) {
	w := cursorJSON{Since: c.since, Lines: c.lines, Offset: c.off, Tail: c.tail, Stats: c.stats, Usage: c.usage.pending}
	if c.seen != nil {
		ring := c.seen.ring
		end := len(ring)
		for end > 0 && ring[end-1] == 0 {
			end--
		}
		w.Seen = make([]byte, 8*end)
		for i, k := range ring[:end] {
			binary.LittleEndian.PutUint64(w.Seen[8*i:], k)
		}
		w.SeenNext = c.seen.next
	}
	if a := c.acc; a != nil {
		it := a.it
		w.Part = &it
		for i, call := range a.it.Calls {
			if call.hint != "" {
				if w.Hints == nil {
					w.Hints = map[int]string{}
				}
				w.Hints[i] = call.hint
			}
		}
		w.Dropped, w.Results, w.TextMsg, w.LastMsg = a.dropped, a.pending, a.textMsgID, a.lastMsgID
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a cursor MarshalJSON encoded. One that does not
// hold together decodes as a cursor at the start (with its Since), so
// that the next Read reads the file again rather than trusting it.
func (c *Cursor) UnmarshalJSON(b []byte) error {
	var w cursorJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decoding transcript cursor: %w", err)
	}
	*c = Cursor{since: w.Since}
	if w.Offset < 0 || w.Lines < 0 || (w.Offset > 0 && len(w.Tail) == 0) || len(w.Tail) > tailLen ||
		len(w.Seen)%8 != 0 || len(w.Seen) > 8*dedupeWindow || w.SeenNext < 0 || w.SeenNext >= dedupeWindow {
		return nil
	}
	n := Cursor{since: w.Since, lines: w.Lines, off: w.Offset, tail: w.Tail, stats: w.Stats, seen: newDeduper(dedupeWindow)}
	for i := 0; i < len(w.Seen)/8; i++ {
		k := binary.LittleEndian.Uint64(w.Seen[8*i:])
		n.seen.ring[i] = k
		if k != 0 {
			n.seen.seen[k] = struct{}{}
		}
	}
	n.seen.next = w.SeenNext
	n.acc = newAccumulator(0, 0, "")
	if w.Part != nil {
		a := n.acc
		a.it = *w.Part
		a.it.Stats = Stats{}
		if a.it.ToolCounts == nil {
			a.it.ToolCounts = map[string]int{}
		}
		for i, h := range w.Hints {
			if i >= 0 && i < len(a.it.Calls) {
				a.it.Calls[i].hint = h
			}
		}
		for _, f := range a.it.FilesChanged {
			a.files[f] = struct{}{}
		}
		a.dropped, a.textMsgID, a.lastMsgID = w.Dropped, w.TextMsg, w.LastMsg
		if w.Results != nil {
			a.pending = w.Results
		}
	}
	n.usage.pending = w.Usage
	*c = n
	return nil
}
