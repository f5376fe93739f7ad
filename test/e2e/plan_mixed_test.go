//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/fakemodel"
	"github.com/drover-dev/drover/test/othercli"
)

// TestPlanMixedReviewers runs TestPlanReviews/pass with Claude Code as the
// agent and review.models alternating a claude and a codex model: review
// 1 (opus) runs on the real Claude Code CLI, review 2 (o3) on the real
// Codex CLI, each against the scripted model in its own protocol, and the
// cycle ends after two clean reviews.
func TestPlanMixedReviewers(t *testing.T) {
	t.Parallel()
	codex := codexAgent.bin(t)
	sc := loadScenario(t, "plan-pass.yaml")
	no := false
	// Codex has no StructuredOutput tool: its answer is the final
	// message, the JSON that --output-schema asks for.
	sc.Rules = append([]fakemodel.Rule{{Name: "codex-review-pass",
		When:   fakemodel.Match{ModelContains: "o3", LastIsToolResult: &no, LastUserContains: "You are an independent reviewer"},
		Answer: fakemodel.Answer{Text: `{"review":"Read the plan; it says how it is tested.","verdict":"PASS","findings":[]}`}}}, sc.Rules...)
	p := newQueueProject(t, sc)
	p.reviewerCLIOnPath()
	if err := othercli.SetupCodex(p.home, p.model.ResponsesURL()); err != nil {
		t.Fatal(err)
	}
	for i, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p.env[i] = "PATH=" + filepath.Dir(codex) + string(os.PathListSeparator) + v
		}
	}
	p.env = append(p.env, "CODEX_HOME="+othercli.CodexHome(p.home), "FAKE_OPENAI_KEY=sk-fake-offline-key")
	if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("review:\n  models: opus,o3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := newSessionID(t)
	res := p.claude("--session-id", sid, "/drover:plan new demo-plan")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review 2 is done: PASS." {
		t.Fatalf("exit %d, stdout %q; want 0 and the second review's answer\nunmatched: %d", res.ExitCode, res.Stdout, len(p.model.Unmatched()))
	}
	if got, want := planBlocks(blockReasons(p.model.Messages(), sid)), []string{"wait 1 opus", "post-review 1 opus: PASS, 0 blocking", "wait 2 o3"}; !slices.Equal(got, want) {
		t.Errorf("block reasons %q, want %q", got, want)
	}
	var revs []string
	for _, r := range p.model.Turns() {
		switch {
		case r.Kind == fakemodel.KindMessages && r.HasTool("StructuredOutput"):
			revs = append(revs, "claude "+r.Model)
		case r.Kind == fakemodel.KindResponses:
			revs = append(revs, "codex "+r.Model)
		}
	}
	if len(revs) != 2 || !strings.HasPrefix(revs[0], "claude claude-opus-") || revs[1] != "codex o3" {
		t.Errorf("reviewer requests %q; want claude's opus, then codex's o3", revs)
	}
	dir := filepath.Join(p.root, ".drover", "plans", "demo-plan")
	if body := readFile(t, filepath.Join(dir, "plan-review-2.md")); !strings.Contains(body, "Read the plan; it says how it is tested.") {
		t.Errorf("plan-review-2.md lacks codex's review:\n%s", body)
	}
}
