package transcript

import (
	"context"
	"strings"
	"testing"
	"time"
)

// readUsage is every usage a Cursor reads in input, pending included.
func readUsage(t *testing.T, input string) []Usage {
	t.Helper()
	var got []Usage
	p, err := NewCursor(SinceIteration).Read(context.Background(), strings.NewReader(input), func(u Usage) { got = append(got, u) })
	if err != nil {
		t.Fatalf("Read of a strings.Reader failed: %v", err)
	}
	return append(got, p.Pending...)
}

func TestCursorUsage(t *testing.T) {
	input := strings.Join([]string{
		`{"type":"user","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"go"}}`,
		// Two content blocks of one message, the second with the final output count.
		`{"type":"assistant","uuid":"a1","timestamp":"2026-01-01T10:00:01Z","message":{"id":"msg_1","model":"claude-opus-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}}`,
		`{"type":"assistant","uuid":"a2","timestamp":"2026-01-01T10:00:02Z","message":{"id":"msg_1","model":"claude-opus-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":10,"output_tokens":50,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}}`,
		`not json`,
		`{"type":"assistant","uuid":"a3","timestamp":"2026-01-01T10:00:03Z","message":{"id":"msg_2","model":"claude-haiku-4-5","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":5,"output_tokens":7}}}`,
		// A repeat of msg_1 (resume) is not counted again.
		`{"type":"assistant","uuid":"a4","timestamp":"2026-01-01T10:00:04Z","message":{"id":"msg_1","model":"claude-opus-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"output_tokens":50}}}`,
		`{"type":"assistant","uuid":"a5","message":{"id":"msg_3","model":"claude-sonnet-4-5","content":[]}}`,
	}, "\n")
	got := readUsage(t, input)
	want := []Usage{
		{MessageID: "msg_1", Model: "claude-opus-4-5", Timestamp: time.Date(2026, 1, 1, 10, 0, 1, 0, time.UTC), InputTokens: 10, OutputTokens: 50, CacheReadInputTokens: 100, CacheCreationInputTokens: 20},
		{MessageID: "msg_2", Model: "claude-haiku-4-5", Timestamp: time.Date(2026, 1, 1, 10, 0, 3, 0, time.UTC), InputTokens: 5, OutputTokens: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d usages %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !got[i].Timestamp.Equal(want[i].Timestamp) {
			t.Errorf("usage %d timestamp %v, want %v", i, got[i].Timestamp, want[i].Timestamp)
		}
		got[i].Timestamp = want[i].Timestamp
		if got[i] != want[i] {
			t.Errorf("usage %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzCursorUsage feeds arbitrary bytes to a Cursor: no negative counts,
// and no message id reported twice in a row.
func FuzzCursorUsage(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","model":"claude-opus-4-5","usage":{"input_tokens":1,"output_tokens":2}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := ""
		for _, u := range readUsage(t, string(data)) {
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens < 0 {
				t.Errorf("negative count: %+v", u)
			}
			if u.MessageID != "" && u.MessageID == last {
				t.Errorf("message %q reported twice in a row", u.MessageID)
			}
			last = u.MessageID
		}
	})
}
