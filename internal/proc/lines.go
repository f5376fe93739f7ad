package proc

import "bytes"

// LineWriter is a Cmd.Stdout for output read record by record as it
// comes (an agent's stream-json lines, git's NUL-terminated entries): it
// splits what is written to it at Sep and calls Fn with each record,
// without its separator. A record longer than Max is skipped whole and
// counted, so memory stays bounded whatever the process prints. It never
// fails a write.
//
// Fn is called from the goroutine that writes, one record at a time; call
// Flush once the writing is over (after Run returns) for a last record
// that had no separator.
type LineWriter struct {
	// Sep ends a record: '\n' for lines, 0 for git's -z output.
	Sep byte
	// Max is the longest record passed to Fn; it must be positive.
	Max int
	// Fn receives each record; it must not keep the slice.
	Fn func(record []byte)

	buf      []byte
	skipping bool
	skipped  int
}

// Skipped returns how many records were longer than Max.
func (w *LineWriter) Skipped() int { return w.skipped }

func (w *LineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, w.Sep)
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skipping {
			if len(w.buf)+len(chunk) > w.Max {
				w.skipping = true
				w.skipped++
				w.buf = w.buf[:0]
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !w.skipping {
			w.Fn(w.buf)
		}
		w.buf = w.buf[:0]
		w.skipping = false
		p = p[i+1:]
	}
	return n, nil
}

// Flush hands on a last record that had no separator.
func (w *LineWriter) Flush() {
	if !w.skipping && len(w.buf) > 0 {
		w.Fn(w.buf)
	}
	w.buf = w.buf[:0]
	w.skipping = false
}
