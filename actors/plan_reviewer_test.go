package actors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// TestPlanMissingReviewerAllowsTheStop has a plan whose reviewer CLI does
// not exist: the first stop allows, with a message that names the CLI and
// its config key, and no review starts (no "a reviewer is running" block,
// no failed run); the next stop says the same. Once the CLI is there, the
// next stop starts the review.
func TestPlanMissingReviewerAllowsTheStop(t *testing.T) {
	tests := []struct {
		name string
		// configure points the reviewer at a CLI that is not there and
		// returns the path where the CLI would be found, and the words
		// the message must hold.
		configure func(t *testing.T, cfg *config.Config) (where string, want []string)
	}{
		{
			name: "custom command",
			configure: func(t *testing.T, cfg *config.Config) (string, []string) {
				where := filepath.Join(t.TempDir(), "no-such-reviewer")
				cfg.Review.Command = "'" + where + "' {{model}} {{prompt}}"
				return where, []string{`the reviewer CLI "` + where + `" cannot be started (no such file or directory)`, "review.command"}
			},
		},
		{
			name: "claude not on PATH",
			configure: func(t *testing.T, cfg *config.Config) (string, []string) {
				bin := t.TempDir()
				t.Setenv("PATH", bin)
				cfg.Review.CLI, cfg.Review.Command = "claude", ""
				return filepath.Join(bin, "claude"), []string{`the reviewer CLI "claude" cannot be started (executable file not found in $PATH)`, "review.cli"}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				where string
				want  []string
			)
			f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(cfg *config.Config) {
				where, want = tt.configure(t, cfg)
			})
			const sid = "plan-no-reviewer"
			f.write("p", "plan.md", "# P\n\nDo the thing.\n")
			f.mustPlan(sid, "new", api.PlanArgs{PlanID: "p"})

			for _, req := range []string{"stop-1", "stop-2"} {
				r := f.stop(sid, req)
				if r.Err != nil || r.Output.IsBlock() {
					t.Fatalf("%s with no reviewer CLI: %+v", req, r)
				}
				for _, w := range append(want, "No plan review ran") {
					if !strings.Contains(r.Output.SystemMessage, w) {
						t.Errorf("%s: the message lacks %q:\n%s", req, w, r.Output.SystemMessage)
					}
				}
				st := f.mustPlan(sid, "status", api.PlanArgs{})
				if st.ReviewRunning || st.PhaseIteration != 0 || st.NextPhase == nil || *st.NextPhase != "plan-review" || st.Totals.Runs != 0 {
					t.Fatalf("%s: a review started or the plan moved: %+v", req, st)
				}
			}

			// The CLI appears where the configuration looks: the next
			// stop starts the review. (It runs no other command: PATH
			// may hold nothing else.)
			if err := os.WriteFile(where, []byte(reviewingReviewer), 0o755); err != nil {
				t.Fatal(err)
			}
			if r := f.stop(sid, "stop-3"); !r.Output.IsBlock() {
				t.Fatalf("stop-3 with the CLI there did not start the review: %+v", r)
			}
			f.waitReview(sid)
			if r := f.stop(sid, "stop-4"); !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "plan-review-1.md") {
				t.Fatalf("stop-4 did not give review 1: %+v", r)
			}
		})
	}
}

// reviewingReviewer is a review.command CLI that answers as claude does,
// with its own review text and a Bash call it was refused, as the real CLI
// lists it in permission_denials.
const reviewingReviewer = `#!/bin/sh
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"structured_output":{"review":"I read plan.md and tried the tests.\n\nThe plan has no test section, so nothing says how the change is checked.","verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":1,"summary":"the plan has no test section"}]},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"go test ./...","description":"Run the tests"}}],"total_cost_usd":0.5}'
`

// TestPlanReviewFileHoldsTheReview: the review file drover writes holds
// the reviewer's own review before the findings table, and the tool call
// its CLI refused; the agent sent to the post-review hears of that call.
func TestPlanReviewFileHoldsTheReview(t *testing.T) {
	f := newPlanFixtureOpts(t, SessionsOptions{RestartMax: 3}, func(cfg *config.Config) {
		script := filepath.Join(t.TempDir(), "reviewing-reviewer")
		if err := os.WriteFile(script, []byte(reviewingReviewer), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.Review.Command = "'" + script + "' {{model}} {{prompt}}"
	})
	const sid = "plan-review-text"
	f.write("p", "plan.md", "# P\n\nDo the thing.\n")
	f.mustPlan(sid, "new", api.PlanArgs{PlanID: "p"})
	f.stop(sid, "stop-1")
	f.waitReview(sid)
	r := f.stop(sid, "stop-2")
	if !r.Output.IsBlock() || !strings.Contains(r.Output.Reason, "refused it 1 tool call(s) (`Bash` `go test ./...`)") {
		t.Fatalf("the post-review block does not report the refused call: %+v", r)
	}
	data, err := os.ReadFile(filepath.Join(f.planDir("p"), "plan-review-1.md"))
	if err != nil {
		t.Fatal(err)
	}
	file := string(data)
	review := strings.Index(file, "## Review\n\nI read plan.md and tried the tests.\n\nThe plan has no test section, so nothing says how the change is checked.\n")
	findings := strings.Index(file, "## Blocking\n\n1. `plan.md:1`: the plan has no test section")
	if review < 0 || findings < review {
		t.Errorf("plan-review-1.md does not hold the review, then the findings:\n%s", file)
	}
	if !strings.Contains(file, "Refused tool calls") || !strings.Contains(file, "- `Bash` `go test ./...`") {
		t.Errorf("plan-review-1.md does not list the refused call:\n%s", file)
	}
}

// TestConsensusTextNamesRefusedCalls: a loop checkpoint whose reviewers'
// CLIs refused them tool calls says which, after the consensus, so that the
// agent does not take the verdict for checks nobody made.
func TestConsensusTextNamesRefusedCalls(t *testing.T) {
	results := []reviewer.Result{
		{Model: "opus", Outcome: reviewer.Pass, Denials: []reviewer.Denial{{Tool: "Bash", Input: "go test ./..."}}},
		{Model: "sonnet", Outcome: reviewer.Pass, Denials: []reviewer.Denial{{Tool: "WebFetch", Input: "https://example.invalid/spec"}}},
	}
	got := consensusText(templates.Defaults(), 4, reviewer.Combined{Result: reviewer.Result{Outcome: reviewer.Pass}, PassVotes: 2}, results)
	want := "After iteration 4: PASS (2 pass, 0 fail, 0 reviewer run(s) failed).\n" +
		"The reviewers' CLIs refused them 2 tool call(s) (`Bash` `go test ./...` (opus); `WebFetch` `https://example.invalid/spec` (sonnet)), so this checkpoint may rest on checks they could not make: run them yourself."
	if !strings.HasPrefix(got, "After iteration 4: PASS") || !strings.HasSuffix(got, want[strings.Index(want, "\n")+1:]) {
		t.Errorf("consensus:\n%s\nwant it to end with:\n%s", got, want)
	}
	if clean := consensusText(templates.Defaults(), 4, reviewer.Combined{Result: reviewer.Result{Outcome: reviewer.Pass}, PassVotes: 1}, []reviewer.Result{{Model: "opus", Outcome: reviewer.Pass}}); strings.Contains(clean, "refused") {
		t.Errorf("a checkpoint with no refused call mentions one:\n%s", clean)
	}
}
