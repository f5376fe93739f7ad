package transcript

import (
	"bytes"
	"context"
	"testing"
)

// FuzzScan feeds arbitrary bytes to Scan and Summarize: no panic, and the
// counts agree with what was delivered.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"content":"hi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range []Scanner{{}, {MaxLine: 64}} {
			n := 0
			st, err := s.Scan(context.Background(), bytes.NewReader(data), func(ev Event) error {
				n++
				if ev.Kind < AssistantText || ev.Kind > CompactBoundary {
					t.Errorf("event of unknown kind %d", ev.Kind)
				}
				if ev.Offset < 0 || ev.Offset > int64(len(data)) || bytes.Count(data[:ev.Offset], []byte("\n")) != ev.Line-1 {
					t.Errorf("event on line %d at offset %d of a %d-byte input", ev.Line, ev.Offset, len(data))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Scan of a bytes.Reader failed: %v", err)
			}
			if st.Events != n {
				t.Errorf("Stats.Events = %d, delivered %d", st.Events, n)
			}
			if st.Malformed+st.TooLong > st.Lines {
				t.Errorf("more bad lines than lines: %+v", st)
			}
		}
		for _, since := range []Since{SinceIteration, SincePrompt, SinceStart} {
			it, err := Summarize(context.Background(), bytes.NewReader(data), since)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			if len(it.Calls) > MaxCalls || len(it.Calls) > it.ToolCalls || len(it.FilesChanged) > MaxFiles {
				t.Errorf("bounds broken: %d calls of %d, %d files", len(it.Calls), it.ToolCalls, len(it.FilesChanged))
			}
		}
	})
}
