package convergence

import "testing"

func TestMergeCommands(t *testing.T) {
	goFail := "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: want 3\nFAIL\nFAIL\texample.com/p\t0.01s\n"
	goOK := "ok  \texample.com/p\t0.01s\n"
	for _, tc := range []struct {
		name    string
		results []CommandResult
		outcome Outcome
		failed  int
		build   *bool
	}{
		{"none", nil, OutcomeNone, -1, nil},
		{"failing go test", []CommandResult{{Command: "go test ./...", Output: goFail, Failed: true}, {Command: "sleep 1", Output: ""}}, OutcomeTestsFailed, 1, nil},
		{"passing go test", []CommandResult{{Command: "go test ./...", Output: goOK}}, OutcomeOK, 0, nil},
		{"failing test command without summary", []CommandResult{{Command: "pytest", Output: "boom", Failed: true}}, OutcomeTestsFailed, 0, nil},
		{"failing build command", []CommandResult{{Command: "go build ./...", Output: "something broke", Failed: true}}, OutcomeBuildFailed, -1, ptr(false)},
		{"passing build command", []CommandResult{{Command: "go build ./...", Output: ""}}, OutcomeOK, -1, ptr(true)},
		{"other command failing says nothing", []CommandResult{{Command: "echo hi; false", Output: "hi", Failed: true}}, OutcomeNone, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := UnknownMetrics(2)
			in.TestsFailed = -1
			m := MergeCommands(in, tc.results)
			want := tc.outcome
			if len(tc.results) == 0 {
				want = ""
			}
			if m.CommandOutcome != want {
				t.Errorf("CommandOutcome = %q, want %q", m.CommandOutcome, want)
			}
			if tc.outcome != OutcomeNone && m.LastOutcome != tc.outcome {
				t.Errorf("LastOutcome = %q, want %q", m.LastOutcome, tc.outcome)
			}
			if m.TestsFailed != tc.failed {
				t.Errorf("TestsFailed = %d, want %d", m.TestsFailed, tc.failed)
			}
			if (m.BuildOK == nil) != (tc.build == nil) || (m.BuildOK != nil && *m.BuildOK != *tc.build) {
				t.Errorf("BuildOK = %v, want %v", m.BuildOK, tc.build)
			}
			if tc.outcome == OutcomeTestsFailed && tc.failed > 0 && m.ErrorHash == "" {
				t.Error("failing tests left no error hash")
			}
		})
	}
}
