package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// drover init --cli codex|gemini adds drover's hooks after the user's,
// never overwrites the user's hooks or command files, says the trust step,
// and a second run changes nothing.
func TestInitCLI(t *testing.T) {
	for _, tc := range []struct {
		cli, settings, users string
		// event is the CLI's name for Stop; stop drover's command for it.
		event, stop string
		trust       []string
		// commands are the command files (relative to root) drover
		// ships; userFile is one the user already has.
		commands []string
		userFile string
	}{
		{
			cli: "codex", settings: ".codex/hooks.json",
			users: `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./my-stop.sh","timeout":5}]}]}}`,
			event: "Stop", stop: "drover hook stop --cli codex",
			trust:    []string{"/hooks", "trust_level = \"trusted\"", ".codex/hooks.json:stop:1:0\"]\ntrusted_hash = \"sha256:", "CODEX_THREAD_ID"},
			commands: []string{".agents/skills/drover-do/SKILL.md", ".agents/skills/drover-add/SKILL.md", ".agents/skills/drover-loop/SKILL.md", ".agents/skills/drover-plan/SKILL.md", ".agents/skills/drover-cancel/SKILL.md"},
			userFile: ".agents/skills/drover-add/SKILL.md",
		},
		{
			cli: "gemini", settings: ".gemini/settings.json",
			users: `{"model":{"name":"gemini-2.5-flash"},"hooks":{"AfterAgent":[{"hooks":[{"name":"mine","type":"command","command":"./after.sh"}]}]}}`,
			event: "AfterAgent", stop: "drover hook stop --cli gemini",
			trust:    []string{"trustedFolders.json", "TRUST_FOLDER", "GEMINI_CLI_TRUST_WORKSPACE=true", `gemini --session-id "$GEMINI_SESSION_ID"`},
			commands: []string{".gemini/commands/drover/do.toml", ".gemini/commands/drover/add.toml", ".gemini/commands/drover/loop.toml", ".gemini/commands/drover/plan.toml", ".gemini/commands/drover/cancel.toml"},
			userFile: ".gemini/commands/drover/plan.toml",
		},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			p := newProj(t)
			p.env = append(p.env, "CODEX_HOME="+filepath.Join(t.TempDir(), "codex-home"))
			at := func(rel string) string { return filepath.Join(p.root, rel) }
			settings := filepath.Join(p.root, tc.settings)
			for path, data := range map[string]string{settings: tc.users, at(tc.userFile): "mine\n"} {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			out := p.must("", "init", "--cli", tc.cli)
			for _, want := range append(tc.trust, "left as it is") {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
			var got struct {
				Hooks map[string][]struct {
					Hooks []struct{ Command string }
				}
			}
			data, err := os.ReadFile(settings)
			if err != nil || json.Unmarshal(data, &got) != nil {
				t.Fatalf("reading %s: %v\n%s", settings, err, data)
			}
			groups := got.Hooks[tc.event]
			if len(groups) != 2 || groups[0].Hooks[0].Command != "./after.sh" && groups[0].Hooks[0].Command != "./my-stop.sh" || groups[1].Hooks[0].Command != tc.stop {
				t.Errorf("%s groups %+v: want the user's hook first, then %q", tc.event, groups, tc.stop)
			}
			if tc.cli == "gemini" && !strings.Contains(string(data), `"gemini-2.5-flash"`) {
				t.Errorf("the user's other settings were lost:\n%s", data)
			}
			for _, c := range tc.commands {
				b, err := os.ReadFile(at(c))
				switch {
				case err != nil:
					t.Errorf("command file %s: %v", c, err)
				case c == tc.userFile && string(b) != "mine\n":
					t.Errorf("the user's %s was overwritten:\n%s", c, b)
				case c != tc.userFile && !strings.Contains(string(b), "drover "):
					t.Errorf("%s does not run drover:\n%s", c, b)
				}
			}

			again := p.must("", "init", "--cli", tc.cli)
			if !strings.Contains(again, "already runs drover's hooks") {
				t.Errorf("second init:\n%s", again)
			}
			if after, _ := os.ReadFile(settings); string(after) != string(data) {
				t.Errorf("a second init changed %s", settings)
			}
		})
	}
}

// The session id line drover init --cli gemini prints (and the README
// gives) works in a plain sh where uuidgen is missing, as on Debian
// without uuid-runtime: it exports a UUID that gemini --session-id takes.
func TestInitGeminiSessionIDLineNeedsNoUUIDGen(t *testing.T) {
	p := newProj(t)
	out := p.must("", "init", "--cli", "gemini")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "export GEMINI_SESSION_ID=") {
			line = l
		}
	}
	export, _, ok := strings.Cut(line, "; gemini --session-id")
	if !ok {
		t.Fatalf("init prints no session id line:\n%s", out)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil || !strings.Contains(string(readme), line) {
		t.Errorf("README.md does not give the line init prints (%v): %s", err, line)
	}
	// A PATH of cat alone: no uuidgen, whatever this machine has.
	bin := t.TempDir()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cat, filepath.Join(bin, "cat")); err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", export+`; printf %s "$GEMINI_SESSION_ID"`)
	cmd.Env = []string{"PATH=" + bin}
	got, err := cmd.Output()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).Match(got) {
		t.Errorf("%s exported %q (%v); want a UUID", export, got, err)
	}
}
