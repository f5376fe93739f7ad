package proc

import (
	"fmt"
	"slices"
)

// Output is what was kept of one captured stream: its first bytes, its
// last bytes, and how many bytes between them were dropped at the cap.
type Output struct {
	// Head is the start of the stream, Tail its end; when nothing was
	// dropped, Head followed by Tail is the whole stream.
	Head, Tail []byte
	// Dropped counts the bytes between Head and Tail that were not kept.
	Dropped int64
}

// Truncated reports whether some of the stream was dropped.
func (o Output) Truncated() bool { return o.Dropped > 0 }

// Bytes returns Head followed by Tail: the whole stream when it was not
// truncated, else its two ends joined without a mark.
func (o Output) Bytes() []byte {
	if len(o.Tail) == 0 {
		return o.Head
	}
	return slices.Concat(o.Head, o.Tail)
}

// String returns the stream as text for a person: when it was truncated,
// a line between the two ends says how much was cut.
func (o Output) String() string {
	if !o.Truncated() {
		return string(o.Bytes())
	}
	return fmt.Sprintf("%s\n[... %d bytes cut by drover ...]\n%s", o.Head, o.Dropped, o.Tail)
}

// capture is a writer that keeps the first headMax and the last tailMax
// bytes written to it and counts the rest. It never fails a write.
type capture struct {
	headMax, tailMax int
	head, tail       []byte
	dropped          int64
}

// newCapture keeps limit bytes: a quarter from the start (where a build
// error or a usage message is), the rest from the end (where a summary is).
func newCapture(limit int) *capture {
	head := limit / 4
	return &capture{headMax: head, tailMax: limit - head}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	c.tail = append(c.tail, p...)
	// Trim only now and then, so that many small writes stay cheap.
	if len(c.tail) > 2*c.tailMax {
		c.trim()
	}
	return n, nil
}

func (c *capture) trim() {
	if extra := len(c.tail) - c.tailMax; extra > 0 {
		c.dropped += int64(extra)
		c.tail = append(c.tail[:0], c.tail[extra:]...)
	}
}

func (c *capture) output() Output {
	c.trim()
	return Output{Head: c.head, Tail: c.tail, Dropped: c.dropped}
}
