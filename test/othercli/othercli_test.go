//go:build unix

package othercli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/test/claudecli"
	"github.com/drover-dev/drover/test/fakemodel"
)

// cliBin returns the pinned CLI, skips under -short, and fails with the
// install instruction when the CLI is missing.
func cliBin(t *testing.T, c CLI) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skipping tests that run the real %s CLI", c.Name)
	}
	bin, err := c.Find()
	if err != nil {
		t.Fatalf("%v\n(run `go test -short` to skip them)", err)
	}
	return bin
}

// TestPinnedVersions checks that the installed CLIs are the ones
// tools/*/package.json pin.
func TestPinnedVersions(t *testing.T) {
	for _, c := range []CLI{Codex, Gemini} {
		t.Run(c.Name, func(t *testing.T) {
			bin := cliBin(t, c)
			root, err := claudecli.ModuleRoot(".")
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(root, "tools", c.Name, "package.json"))
			if err != nil {
				t.Fatal(err)
			}
			var pkg struct {
				Dependencies map[string]string `json:"dependencies"`
			}
			if err := json.Unmarshal(data, &pkg); err != nil {
				t.Fatal(err)
			}
			got, err := c.Version(t.Context(), bin)
			if err != nil {
				t.Fatal(err)
			}
			if want := pkg.Dependencies[c.Package]; got != want {
				t.Errorf("%s is %s %s; tools/%s pins %s: run `make %s`", bin, c.Name, got, c.Name, want, c.Name)
			}
		})
	}
}

// probeHook is a stop hook that logs its stdin to the project's
// .git/probe-stops.jsonl and blocks the first stop with a reason.
const probeHook = `#!/bin/sh
log="$(git rev-parse --git-dir)/probe-stops.jsonl"
cat >> "$log"; echo >> "$log"
if [ "$(wc -l < "$log")" -le 1 ]; then
  echo '{"decision":"block","reason":"PROBE-CONTINUE: say the magic word"}'
fi
`

// TestHarness proves each harness and each of the fake model's protocols
// with the real CLI: a shell tool call that writes and commits a file, and
// a project stop hook (trusted the way a user would) whose block reason
// reaches the model and whose second stop is allowed.
func TestHarness(t *testing.T) {
	for _, c := range []CLI{Codex, Gemini} {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			bin := cliBin(t, c)
			shell, arg := "exec_command", "cmd"
			if c.Name == "gemini" {
				shell, arg = "run_shell_command", "command"
			}
			no, yes := false, true
			sc := &fakemodel.Scenario{Rules: []fakemodel.Rule{
				{Name: "write", When: fakemodel.Match{LastUserContains: "PROBE-START", LastIsToolResult: &no}, Times: 1,
					Answer: fakemodel.Answer{Text: "Writing.", ToolCalls: []fakemodel.ToolCall{{Name: shell, Input: map[string]any{
						arg: "echo probe > probe.txt && git add probe.txt && git commit -q -m 'probe: add probe.txt' && echo probe-committed"}}}}},
				{Name: "written", When: fakemodel.Match{LastUserContains: "probe-committed", LastIsToolResult: &yes}, Times: 1,
					Answer: fakemodel.Answer{Text: "Committed probe.txt."}},
				{Name: "stop-block", When: fakemodel.Match{LastUserContains: "PROBE-CONTINUE", LastIsToolResult: &no}, Times: 1,
					Answer: fakemodel.Answer{Text: "The magic word."}},
			}}
			srv, err := fakemodel.Start(t.Context(), sc, fakemodel.WithLogf(t.Logf))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			tmp, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			proj, home := filepath.Join(tmp, "project"), filepath.Join(tmp, "home")
			if err := claudecli.GitProject(t.Context(), proj); err != nil {
				t.Fatal(err)
			}
			hook := filepath.Join(tmp, "probe-hook.sh")
			if err := os.WriteFile(hook, []byte(probeHook), 0o755); err != nil {
				t.Fatal(err)
			}
			var args []string
			switch c.Name {
			case "codex":
				if err := SetupCodex(home, srv.ResponsesURL()); err != nil {
					t.Fatal(err)
				}
				if err := WriteCodexStopHook(proj, hook); err != nil {
					t.Fatal(err)
				}
				if err := TrustCodexProject(home, proj); err != nil {
					t.Fatal(err)
				}
				args = CodexExec("PROBE-START")
			case "gemini":
				if err := SetupGemini(home); err != nil {
					t.Fatal(err)
				}
				if err := WriteGeminiStopHook(proj, hook); err != nil {
					t.Fatal(err)
				}
				if err := TrustGeminiFolder(home, proj); err != nil {
					t.Fatal(err)
				}
				args = GeminiPrompt("PROBE-START", "")
			}
			// git identity for the tool's commit comes from the project.
			res, err := Run{CLI: c, Bin: bin, Dir: proj, Home: home, BaseURL: srv.URL(), Args: args}.Exec(t.Context())
			t.Logf("%s ran %s, exit %d\nstdout:\n%s\nstderr:\n%s", c.Name, res.Duration, res.ExitCode, res.Stdout, res.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("%s exited %d", c.Name, res.ExitCode)
			}
			if !strings.Contains(res.Stdout, "The magic word.") {
				t.Errorf("stdout lacks the final answer %q", "The magic word.")
			}
			for _, r := range srv.Unmatched() {
				t.Errorf("unanswered request: %s", r.Error)
			}
			for i, n := range srv.Used() {
				if n != 1 {
					t.Errorf("rule %d (%s) answered %d times, want 1", i, sc.Rules[i].Name, n)
				}
			}
			if subject, err := claudecli.Git(t.Context(), proj, "log", "-1", "--format=%s"); err != nil || subject != "probe: add probe.txt" {
				t.Errorf("last commit %q (%v), want the tool's", subject, err)
			}
			data, err := os.ReadFile(filepath.Join(proj, ".git", "probe-stops.jsonl"))
			if err != nil {
				t.Fatalf("the stop hook never ran: %v", err)
			}
			var stops []map[string]any
			for line := range strings.Lines(strings.TrimSpace(string(data))) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("hook stdin %q: %v", line, err)
				}
				stops = append(stops, m)
			}
			if len(stops) != 2 {
				t.Fatalf("stop hook ran %d times, want 2", len(stops))
			}
			t.Logf("stop hook inputs: %v", stops)
		})
	}
}

// Exec runs the binary in the project with the CLI's offline environment,
// stdin empty, and reports its output and exit code; no real CLI needed.
func TestExecFakeBinary(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	bin := filepath.Join(t.TempDir(), "gemini")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\"\necho \"HOME=$HOME BASE=$GOOGLE_GEMINI_BASE_URL EXTRA=$EXTRA PWD=$(pwd)\"\ncat\necho oops >&2\nexit 3\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Run{CLI: Gemini, Bin: bin, Dir: dir, Home: home, BaseURL: "http://127.0.0.1:9",
		Args: []string{"-p", "say ok"}, Env: []string{"EXTRA=yes"}}.Exec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := "-p\nsay ok\nHOME=" + home + " BASE=http://127.0.0.1:9 EXTRA=yes PWD=" + dir + "\n"
	if res.Stdout != want || res.Stderr != "oops\n" || res.ExitCode != 3 {
		t.Errorf("Exec = %+v\nwant stdout %q, stderr oops, exit 3", res, want)
	}
	if _, err := (Run{CLI: Codex, Bin: bin, Home: home}).Exec(t.Context()); err == nil || !strings.Contains(err.Error(), "BaseURL") {
		t.Errorf("Exec without BaseURL: %v", err)
	}
}
