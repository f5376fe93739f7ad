package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
)

// fakeCodex stands for `codex` on PATH: it logs its arguments, does the
// task's work in its work tree (a file and a commit) and prints what
// `codex exec --json` 0.169 prints for a turn with one shell command: the
// event shapes recorded in the offline runs of the session reference.
// Each turn reports 24,000 input tokens of which 20,000 cached, and 1,000
// output tokens.
const fakeCodex = `#!/bin/sh
d=$(dirname "$0")
t=$DROVER_TASK_ID
printf '%s\n' "$@" > "$d/args-$t"
echo '{"type": "thread.started", "thread_id": "01a213ac-a5ed-7660-9e60-d944744e8ec0"}'
echo '{"type": "turn.started"}'
echo '{"type": "item.started", "item": {"id": "item_0", "type": "command_execution", "command": "/bin/bash -lc '"'git commit'"'", "aggregated_output": "", "exit_code": null, "status": "in_progress"}}'
echo "$t" > "$t.txt"
git add "$t.txt" && git commit -qm "task $t" || exit 4
echo '{"type": "item.completed", "item": {"id": "item_0", "type": "command_execution", "command": "/bin/bash -lc '"'git commit'"'", "aggregated_output": "", "exit_code": 0, "status": "completed"}}'
echo '{"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "done"}}'
echo '{"type": "turn.completed", "usage": {"input_tokens": 24000, "cached_input_tokens": 20000, "cache_write_input_tokens": 0, "output_tokens": 1000, "reasoning_output_tokens": 0}}'
`

// twoTaskGraph is a graph of two tasks, b after a.
const twoTaskGraph = `tasks:
  - id: a
    description: Write a.txt.
    tests: [a.txt]
  - id: b
    description: Write b.txt.
    tests: [b.txt]
    depends-on: [a]
`

func TestRunAgentCodex(t *testing.T) {
	p := newProj(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(fakeCodex), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, e := range p.env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p.env[i] = "PATH=" + bin + string(os.PathListSeparator) + v
		}
	}
	graph := filepath.Join(bin, "tasks.yaml")
	if err := os.WriteFile(graph, []byte(twoTaskGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	out := p.must("", "run", graph, "--agent", "codex:gpt-5-codex", "--test-command", "test -f {{packages}}", "--suite-command", "true", "--no-review")
	id := runIDFrom(t, out)
	if !strings.Contains(out, "run "+id+" done") {
		t.Fatalf("run did not report done:\n%s", out)
	}
	args, _ := os.ReadFile(filepath.Join(bin, "args-a"))
	lines := strings.Split(strings.TrimSpace(string(args)), "\n")
	if strings.Join(lines[:min(7, len(lines))], " ") != "exec --json --skip-git-repo-check --sandbox danger-full-access --model gpt-5-codex" || !strings.Contains(string(args), "Write a.txt.") {
		t.Errorf("codex was run with:\n%s", args)
	}
	for _, task := range []string{"a", "b"} {
		p.git("cat-file", "-e", "main:"+task+".txt")
	}
	var r api.Run
	if err := json.Unmarshal([]byte(p.must("", "run", "status", id, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	// gpt-5-codex at $1.25 per million input, $0.125 cached, $10 output:
	// 4,000 + 20,000 cached + 1,000 output tokens is $0.0175 a task.
	if r.State != api.RunDone || math.Abs(r.CostUSD-2*0.0175) > 1e-9 {
		t.Errorf("run %s cost $%v; want done, $%v", r.State, r.CostUSD, 2*0.0175)
	}
	for _, task := range r.Tasks {
		if task.State != api.TaskDone || task.ToolCalls != 1 || math.Abs(task.CostUSD-0.0175) > 1e-9 {
			t.Errorf("task %s: %s, %d tool calls, $%v; want done, 1, $0.0175", task.ID, task.State, task.ToolCalls, task.CostUSD)
		}
	}
}
