//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestQueueOfTenOutlastsBlockCap: ten tasks, no `drover init`, so the
// CLI's cap of 8 consecutive Stop-hook blocks is in force; the queue still
// runs to the end (ten blocks: nine loop prompts and the review), because
// the model uses a tool (Bash) for every task and tool use resets the
// CLI's count. The text-only answer to the review block is the only one in
// a row, far from the cap.
func TestQueueOfTenOutlastsBlockCap(t *testing.T) {
	t.Parallel()
	p := newQueueProject(t, loadScenario(t, "worker.yaml"))
	sid := newSessionID(t)
	var prompts []string
	for i := 1; i <= 10; i++ {
		prompts = append(prompts, "task "+string(rune('A'-1+i)))
	}
	tasks := p.addTasks(sid, prompts...)
	if _, err := os.Stat(filepath.Join(p.root, ".claude")); err == nil {
		t.Fatal("the project has .claude/: this test needs the CLI's default cap")
	}

	res := p.claude("--session-id", sid, "/drover:start")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "Review clean: nothing to add." {
		t.Fatalf("exit %d, stdout %q; want 0 and the clean review", res.ExitCode, res.Stdout)
	}
	var want []string
	for _, task := range tasks[1:] {
		want = append(want, "loop "+filepath.Base(task))
	}
	want = append(want, "review")
	if got := kinds(blockReasons(p.model.Messages(), sid)); !slices.Equal(got, want) {
		t.Fatalf("block reasons %q\nwant %q", got, want)
	}
	for _, task := range tasks {
		if _, err := os.Stat(doneName(task)); err != nil {
			t.Errorf("task not done: %v", err)
		}
	}
	p.wantSession(sid, "off", 11, 0, 10, 0)
}

// TestStopHookBlockCap documents Claude Code's consecutive-block cap with
// drover's queue and drover's answer to it. A model that answers only with
// text gets the same loop prompt on every Stop. Without the setting the
// CLI honours 8 blocks and ends the run at the 9th Stop (which drover
// counted and blocked: the queue stays on, the model never sees it). After
// `drover init` (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0 under "env" in
// .claude/settings.json) all 12 blocks of the budget are honoured, and
// drover's own queue.max_iterations ends the run.
func TestStopHookBlockCap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		init            bool
		blocks          int
		state           string
		iteration       int
		wantStdoutEmpty bool
	}{
		// 9 Stops: 8 blocks reached the model, the 9th ended the run.
		{name: "default cap", init: false, blocks: 8, state: "on", iteration: 9, wantStdoutEmpty: true},
		// 13 Stops: 12 blocks, then the 13th is past the budget.
		{name: "drover init", init: true, blocks: 12, state: "off", iteration: 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newQueueProject(t, loadScenario(t, "textonly.yaml"))
			if c.init {
				out := p.drover("init")
				if !strings.Contains(out, "set CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0") {
					t.Errorf("drover init printed %q", out)
				}
				var settings struct {
					Env map[string]string `json:"env"`
				}
				data := readFile(t, filepath.Join(p.root, ".claude", "settings.json"))
				if err := json.Unmarshal([]byte(data), &settings); err != nil || settings.Env["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] != "0" {
					t.Fatalf(".claude/settings.json = %s (%v), want env.CLAUDE_CODE_STOP_HOOK_BLOCK_CAP \"0\"", data, err)
				}
				// Committed, as a team would: an untracked file would only
				// turn every block into the commit gate's.
				p.git("add", ".claude/settings.json")
				p.git("commit", "-q", "-m", "drover init")
			}
			if err := os.MkdirAll(filepath.Join(p.root, ".drover"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.root, ".drover", "config.yaml"), []byte("queue:\n  max_iterations: 12\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sid := newSessionID(t)
			tasks := p.addTasks(sid, "a task the model will not do")

			res := p.claude("--session-id", sid, "/drover:start")
			if res.ExitCode != 0 {
				t.Errorf("exit %d, want 0", res.ExitCode)
			}
			if c.wantStdoutEmpty && strings.TrimSpace(res.Stdout) != "" {
				t.Errorf("stdout %q, want nothing: the run ended on a block the model never answered", res.Stdout)
			}
			reasons := blockReasons(p.model.Messages(), sid)
			want := slices.Repeat([]string{"loop " + filepath.Base(tasks[0])}, c.blocks)
			if got := kinds(reasons); !slices.Equal(got, want) {
				t.Fatalf("%d block reasons reached the model: %q\nwant %d", len(got), got, c.blocks)
			}
			if got := len(p.model.Messages()); got != c.blocks+1 {
				t.Errorf("%d model requests, want %d (the prompt and one per block)", got, c.blocks+1)
			}
			p.wantSession(sid, c.state, c.iteration, 1, 0, 0)
		})
	}
}
