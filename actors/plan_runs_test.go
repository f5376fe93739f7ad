package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// TestRecordRunsDedupesAgainstTheTail: the runs a restart records again
// are the newest, so a log longer than the read limit is deduplicated
// against its tail, wherever the limit cuts it.
func TestRecordRunsDedupesAgainstTheTail(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	run := func(i int, model string) api.PlanReviewRun {
		return api.PlanReviewRun{Time: at.Add(time.Duration(i) * time.Minute), Session: "s1", Plan: "demo", Kind: "task", Task: "t1", Iteration: i, Model: model, CostUSD: 0.1}
	}
	line := func(r api.PlanReviewRun) string {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data) + "\n"
	}
	var head strings.Builder
	for i := range 200 {
		head.WriteString(line(run(i, "opus")))
	}
	last := run(500, "opus")
	for _, tc := range []struct {
		name   string
		log    string
		limit  int64
		record []api.PlanReviewRun
		// want is how many lines the log has after.
		want int
	}{
		{"a short log holds the run", line(last), maxRunsRead, []api.PlanReviewRun{last, run(501, "sonnet")}, 2},
		{"a long log holds the run in its tail", head.String() + line(last), 1024, []api.PlanReviewRun{last}, 201},
		{"the tail is exactly the last line", head.String() + line(last), int64(len(line(last))), []api.PlanReviewRun{last}, 201},
		{"the tail starts within a line", head.String() + line(last), int64(len(line(last)) + 7), []api.PlanReviewRun{last}, 201},
		{"a new run is appended to a long log", head.String() + line(last), 1024, []api.PlanReviewRun{last, run(501, "sonnet")}, 202},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), RunsFile)
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				// An actor that starts twice records the same runs twice.
				if err := recordRuns(path, tc.record, tc.limit); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), "\n"); n != tc.want {
				t.Errorf("%d lines in the run log, want %d", n, tc.want)
			}
		})
	}
}
