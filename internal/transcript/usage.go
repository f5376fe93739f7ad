package transcript

import "time"

// Usage is the token usage the API reported for one assistant message.
type Usage struct {
	// MessageID is the API message id; Model the model that answered.
	MessageID string
	Model     string
	// Timestamp is when the entry was written (zero when the entry has
	// none or it does not parse).
	Timestamp time.Time
	// Token counts, as in the API's usage object.
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// Grow takes in one more report of the message's usage: the lines of one
// message repeat its id, each with the counts known then, so the largest
// count of each kind is the message's.
func (u *Usage) Grow(input, output, cacheRead, cacheCreation int64) {
	u.InputTokens = max(u.InputTokens, input)
	u.OutputTokens = max(u.OutputTokens, output)
	u.CacheReadInputTokens = max(u.CacheReadInputTokens, cacheRead)
	u.CacheCreationInputTokens = max(u.CacheCreationInputTokens, cacheCreation)
}

// usageMerger merges the usage lines of one message. Claude Code writes
// each content block of a message on its own line, all under the same
// message id and each with the usage known when it was written, so the
// lines of one message are merged (the largest count of each kind wins)
// and reported once; a message id seen again later (lines repeated on
// resume) is not reported twice.
type usageMerger struct {
	pending *Usage
}

// add takes one line's usage report of message id and calls fn for each
// message it completes (the one before, and this one when it has no id).
func (m *usageMerger) add(d *deduper, id, model, timestamp string, u *usageCounts, fn func(Usage) error) error {
	if m.pending != nil && (id == "" || id != m.pending.MessageID) {
		if err := m.flush(fn); err != nil {
			return err
		}
	}
	if id != "" && d.repeat(key('m', id)) && (m.pending == nil || m.pending.MessageID != id) {
		return nil
	}
	if m.pending == nil {
		ts, _ := time.Parse(time.RFC3339Nano, timestamp)
		m.pending = &Usage{MessageID: id, Model: model, Timestamp: ts}
	}
	m.pending.Grow(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	if id == "" {
		return m.flush(fn)
	}
	return nil
}

// flush reports the pending message, if any.
func (m *usageMerger) flush(fn func(Usage) error) error {
	if m.pending == nil {
		return nil
	}
	u := *m.pending
	m.pending = nil
	return fn(u)
}
