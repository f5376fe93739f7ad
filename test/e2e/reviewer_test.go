//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// TestReviewerRunsTestsWithCLI runs one reviewer as drover starts it
// (reviewer.Run, the real CLI in its default permission mode, as a user's
// would be) against a scripted model that does what the review prompts
// ask: it runs the project's tests through Bash, tries to write a file,
// tries a tool drover does not allow, then answers with its review. The
// tests run (before, the CLI refused them: "This command requires
// approval"); the edit tools are not offered at all, so the file is not
// written; the refused call comes back in Result.Denials; and the review
// text comes back with the verdict.
func TestReviewerRunsTestsWithCLI(t *testing.T) {
	t.Parallel()
	bin := claudeBin(t)
	yes, no := true, false
	const review = "I ran the tests (sh ./check.sh): all 3 tests passed."
	srv := startModel(t, &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{
			Name:  "run-the-tests",
			When:  fakemodel.Match{HasTool: "StructuredOutput", LastIsToolResult: &no, LastUserContains: "Review the work"},
			Times: 1,
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
				Name: "Bash", Input: map[string]any{"command": "sh ./check.sh", "description": "Run the tests"},
			}}},
		},
		{
			Name:  "try-to-write",
			When:  fakemodel.Match{LastIsToolResult: &yes, LastUserContains: "all 3 tests passed"},
			Times: 1,
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
				Name: "Write", Input: map[string]any{"file_path": "fixed.txt", "content": "a reviewer's edit\n"},
			}}},
		},
		{
			Name:  "try-a-tool-not-allowed",
			When:  fakemodel.Match{LastIsToolResult: &yes, LastUserContains: "Write"},
			Times: 1,
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
				Name: "WebFetch", Input: map[string]any{"url": "https://example.invalid/spec", "prompt": "Read the spec."},
			}}},
		},
		{
			Name: "answer",
			When: fakemodel.Match{HasTool: "StructuredOutput", LastIsToolResult: &yes},
			Answer: fakemodel.Answer{ToolCalls: []fakemodel.ToolCall{{
				Name: "StructuredOutput", Input: map[string]any{"review": review, "verdict": "PASS", "findings": []any{}},
			}}},
		},
	}})
	dir := gitProject(t)
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte("echo 'ok: all 3 tests passed'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// As a user's: the CLI's default permission mode, not the sandbox
	// the harness allows for --dangerously-skip-permissions.
	env := claudecli.Environ(os.Environ(), t.TempDir(), srv.URL(), []string{"IS_SANDBOX=0"})
	res := reviewer.Run(t.Context(), reviewer.Spec{
		CLI: reviewer.CLIClaude, Path: bin, Model: "sonnet", Dir: dir, Env: env,
		Prompt: "Review the work in this repository: run its tests. Do not edit any file.", Timeout: 2 * time.Minute,
	})
	t.Logf("reviewer: outcome %s, err %v, %s\nstdout:\n%s\nstderr:\n%s", res.Outcome, res.Err, res.Duration, res.Stdout, res.Stderr)
	if res.Outcome != reviewer.Pass || res.Review != review {
		t.Fatalf("outcome %s, review %q; want pass with %q", res.Outcome, res.Review, review)
	}

	reqs := srv.Messages()
	ran := slices.IndexFunc(reqs, func(r fakemodel.Request) bool {
		return r.LastIsToolResult && strings.Contains(r.LastUserText, "ok: all 3 tests passed")
	})
	if ran < 0 {
		t.Errorf("the reviewer's test run never reached the model: it was refused")
	}
	for _, r := range reqs {
		if !r.HasTool("Bash") || !r.HasTool("Read") || r.HasTool("Write") || r.HasTool("Edit") {
			t.Errorf("the reviewer's tools are %q: want Bash and Read, neither Write nor Edit", r.Tools)
			break
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fixed.txt")); !os.IsNotExist(err) {
		t.Errorf("the reviewer wrote a file (stat: %v)", err)
	}
	if len(res.Denials) != 1 || res.Denials[0].Tool != "WebFetch" || res.Denials[0].Input != "https://example.invalid/spec" {
		t.Errorf("denials %+v, want the WebFetch call alone", res.Denials)
	}
}
