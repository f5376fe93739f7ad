package agentsetup

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
	"github.com/drover-dev/drover/internal/hook"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The trust hashes are the ones Codex 0.169's app-server (hooks/list)
// reported as currentHash for these hooks in a hooks.json at this path:
// a hash off by a byte leaves the hook untrusted and silently skipped.
func TestCodexTrustMatchesCodex(t *testing.T) {
	const file = "/home/u/.codex/hooks.json"
	_, hs, err := MergeHooks(hook.Codex, []byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./my-stop.sh","timeout":5}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		file + ":session_start:0:0":      "sha256:dfa53bfa8ce9baa2c0dead8d5ce831f6caa54beb70b0f33ae8877ee19f9c9ddd",
		file + ":user_prompt_submit:0:0": "sha256:415ee099f2dffcbc3d43b63cd229daf5bf0ab5349c0c1e16559a3d44d10125c5",
		file + ":stop:1:0":               "sha256:73aa8086d9be537e89f4c7de013738746fa1304371ad7bc347e0825c8eefa170",
		file + ":pre_compact:0:0":        "sha256:b12dda05ef712237c09f69330e2058cb770d0782923dd7f6452d3153583716cb",
		file + ":session_end:0:0":        "sha256:0fcd4c9079cdfacca59aa8011c0465c433b797e2f09b5d24ea411a8eb8097216",
	}
	trust := CodexTrust("/p", file, hs)
	for key, hash := range want {
		if !strings.Contains(trust, "[hooks.state."+`"`+key+`"]`+"\ntrusted_hash = \""+hash+"\"") {
			t.Errorf("trust lines lack %s = %s:\n%s", key, hash, trust)
		}
	}
}

// MergeHooks keeps every key and hook the file had, adds drover's after
// them, and adds nothing twice.
func TestMergeHooksKeepsTheUsers(t *testing.T) {
	for _, tc := range []struct {
		name string
		cli  hook.CLI
		in   string
	}{
		{"codex_empty", hook.Codex, ""},
		{"codex_users_stop", hook.Codex, `{"description":"mine","hooks":{"Stop":[{"hooks":[{"type":"command","command":"./my-stop.sh","timeout":5}]}],"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./lint.sh"}]}]}}`},
		{"gemini_settings", hook.Gemini, `{"model":{"name":"gemini-2.5-flash"},"hooks":{"AfterAgent":[{"hooks":[{"name":"mine","type":"command","command":"./after.sh","timeout":1000}]}]},"hooksConfig":{"enabled":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, hs, err := MergeHooks(tc.cli, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if tc.in != "" {
				var before, after map[string]any
				_ = json.Unmarshal([]byte(tc.in), &before)
				if err := json.Unmarshal(out, &after); err != nil {
					t.Fatal(err)
				}
				for k, v := range before {
					if k == "hooks" {
						continue
					}
					if a, _ := json.Marshal(after[k]); string(a) != mustJSON(v) {
						t.Errorf("key %s changed: %s", k, a)
					}
				}
				for event, groups := range before["hooks"].(map[string]any) {
					got := after["hooks"].(map[string]any)[event].([]any)
					for i, g := range groups.([]any) {
						if mustJSON(got[i]) != mustJSON(g) {
							t.Errorf("the user's %s group %d changed: %s", event, i, mustJSON(got[i]))
						}
					}
				}
			}
			again, hs2, err := MergeHooks(tc.cli, out)
			if err != nil || string(again) != string(out) {
				t.Errorf("a second merge changed the file (%v):\n%s", err, again)
			}
			for i := range hs2 {
				if !hs2[i].Kept || hs2[i].Group != hs[i].Group {
					t.Errorf("second merge: %+v, first %+v", hs2[i], hs[i])
				}
			}
			goldenfile.Check(t, filepath.Join("testdata", tc.name+".golden"), out, *update)
		})
	}
}

func TestMergeHooksRefusesWhatItCannotMerge(t *testing.T) {
	for _, in := range []string{`{`, `{"hooks":[]}`, `{"hooks":{"Stop":{}}}`, `[1]`} {
		if _, _, err := MergeHooks(hook.Codex, []byte(in)); err == nil {
			t.Errorf("MergeHooks(%s) gave no error", in)
		}
	}
}

// The commands each CLI gets, as files: a change is a diff to review.
func TestCommandsGolden(t *testing.T) {
	for _, cli := range []hook.CLI{hook.Codex, hook.Gemini} {
		var b strings.Builder
		for _, f := range Commands(cli) {
			b.WriteString("=== " + f.Path + "\n" + f.Content)
		}
		goldenfile.Check(t, filepath.Join("testdata", "commands_"+string(cli)+".golden"), []byte(b.String()), *update)
	}
	if n := len(Commands(hook.Claude)); n != 0 {
		t.Errorf("claude got %d command files; its commands are the plugin's", n)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A drover hook the file already has, in a group of the user's or with a
// timeout of its own, is trusted as the file has it: the trust key names
// its handler's index and the hash its timeout, else Codex skips it.
func TestCodexTrustOfAKeptHook(t *testing.T) {
	in := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./lint.sh"},{"type":"command","command":"drover hook stop --cli codex","timeout":30}]}]}}`
	_, hs, err := MergeHooks(hook.Codex, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	trust := CodexTrust("/p", "/p/.codex/hooks.json", hs)
	want := "[hooks.state.\"/p/.codex/hooks.json:stop:0:1\"]\ntrusted_hash = \"" + CodexHash(Hook{Name: "Stop", Command: "drover hook stop --cli codex", Timeout: 30}) + "\""
	if !strings.Contains(trust, want) {
		t.Errorf("trust lines:\n%s\nwant them to hold:\n%s", trust, want)
	}
}
