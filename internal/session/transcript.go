package session

import (
	"time"

	"github.com/drover-dev/drover/internal/transcript"
)

// TranscriptRead is where a loop's reading of its session's transcript
// stopped, kept with the record so that each Stop reads only what the
// agent appended since the last one, across restarts of the supervisor
// too. Path, Dev and Ino name the file read: another file at the path (a
// transcript replaced) is read again from the start, and so is one the
// Cursor cannot resume (truncated, rewritten).
type TranscriptRead struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Cursor holds the lines read and what they gave: the iteration so
	// far, the usage of the message being written, the dedupe window.
	Cursor transcript.Cursor `json:"cursor"`
	// Codex, when set, is where the reading of a Codex rollout stopped
	// instead (Cursor reads only Claude Code's transcripts).
	Codex *transcript.CodexCursor `json:"codex,omitempty"`
	// CostSince is the start of the loop whose spend CostUSD adds up:
	// the cost of the messages completed before the Cursor that were
	// written since then (loop.UsageCost). A new loop reads again.
	CostSince time.Time `json:"cost_since"`
	CostUSD   float64   `json:"cost_usd"`
}
