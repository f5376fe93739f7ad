//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/fakemodel"
	"github.com/drover-dev/drover/test/othercli"
)

// TestRunAgentCodex runs `drover run --agent codex` on a two-task graph
// (b after a) with the real Codex CLI against the scripted model: each
// task's agent writes its file and commits it through exec_command, the
// run merges both, and the run status counts each agent's tool call and
// the cost drover priced from the tokens Codex reported.
func TestRunAgentCodex(t *testing.T) {
	t.Parallel()
	testRunAgent(t, codexAgent)
}

// TestRunAgentGemini is TestRunAgentCodex with the real Gemini CLI
// (`drover run --agent gemini`, its stream-json read for the tool calls
// and the tokens), its shell tool run_shell_command.
func TestRunAgentGemini(t *testing.T) {
	t.Parallel()
	testRunAgent(t, geminiAgent)
}

// testRunAgent runs `drover run --agent a` on a two-task graph (b after
// a): see TestRunAgentCodex.
func testRunAgent(t *testing.T, a agentCLI) {
	yes, no := true, false
	sc := &fakemodel.Scenario{Rules: []fakemodel.Rule{
		{Name: "work", When: fakemodel.Match{LastUserMatches: `Write (?P<f>[a-z]+\.txt)\.`, LastIsToolResult: &no},
			Answer: fakemodel.Answer{Text: "Writing {{f}}.", ToolCalls: a.shell(
				`echo done > {{f}} && git add {{f}} && git commit -qm 'task {{f}}' && echo committed-{{f}}`)}},
		{Name: "done", When: fakemodel.Match{LastUserMatches: `committed-[a-z]+\.txt`, LastIsToolResult: &yes},
			Answer: fakemodel.Answer{Text: "Done."}},
	}}
	p := newProjectFor(t, a.bin(t), sc)
	// The supervisor the run starts inherits this environment, and the
	// agents it runs with it: the CLI on PATH, its scratch home and the
	// fake model's address.
	for i, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p.env[i] = "PATH=" + filepath.Dir(p.cliBin) + string(os.PathListSeparator) + v
		}
	}
	var err error
	switch a.cli.Name {
	case "codex":
		err = othercli.SetupCodex(p.home, p.model.ResponsesURL())
		p.env = append(p.env, "CODEX_HOME="+othercli.CodexHome(p.home), "FAKE_OPENAI_KEY=sk-fake-offline-key")
	case "gemini":
		err = othercli.SetupGemini(p.home)
		p.env = append(p.env, "GEMINI_CLI_HOME="+p.home, "GEMINI_API_KEY=fake-offline-key",
			"GOOGLE_GEMINI_BASE_URL="+p.model.URL(), "GEMINI_TELEMETRY_ENABLED=false")
	}
	if err != nil {
		t.Fatal(err)
	}
	p.env = append(p.env, "TMPDIR="+t.TempDir())
	graph := filepath.Join(t.TempDir(), "tasks.yaml")
	if err := os.WriteFile(graph, []byte("tasks:\n  - id: a\n    description: Write a.txt.\n    tests: [a.txt]\n  - id: b\n    description: Write b.txt.\n    tests: [b.txt]\n    depends-on: [a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := p.droverRun("", "run", graph, "--agent", a.cli.Name, "--test-command", "test -f {{packages}}", "--suite-command", "true", "--no-review")
	if code != 0 || !strings.Contains(out, " done") {
		t.Fatalf("drover run exited %d\nstdout:\n%s\nstderr:\n%s\nmodel requests: %d", code, out, errs, len(p.model.Requests()))
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		p.git("cat-file", "-e", "main:"+f)
	}
	var r struct {
		State   string  `json:"state"`
		CostUSD float64 `json:"cost_usd"`
		Tasks   []struct {
			ID        string  `json:"id"`
			State     string  `json:"state"`
			ToolCalls int     `json:"tool_calls"`
			CostUSD   float64 `json:"cost_usd"`
		} `json:"tasks"`
	}
	id := ""
	if f := strings.Fields(out); len(f) > 1 && f[0] == "run" {
		id = strings.TrimSuffix(f[1], ":")
	}
	if err := json.Unmarshal([]byte(p.drover("run", "status", id, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	if r.State != "done" || r.CostUSD <= 0 || len(r.Tasks) != 2 {
		t.Fatalf("run status %+v; want done, priced, two tasks", r)
	}
	for _, task := range r.Tasks {
		if task.State != "done" || task.ToolCalls != 1 || task.CostUSD <= 0 {
			t.Errorf("task %+v; want done with 1 tool call and a cost", task)
		}
	}
}
