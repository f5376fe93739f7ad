package reviewer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/templates"
)

func TestBuildCommandClaude(t *testing.T) {
	base := []string{"PATH=/bin", "CLAUDECODE=1", GuardEnv + "=0", "HOME=/h"}
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{
			name: "seed 4.1 4.4 4.14 model print and structured json output",
			spec: Spec{Model: "opus", Prompt: "p", Env: base},
			want: []string{"--print", "--model", "opus", "--allowedTools", "Read,Grep,Glob,Bash", "--disallowedTools", "Edit,Write,NotebookEdit", "--output-format", "json", "--json-schema", string(Schema()), "--settings", `{"disableAllHooks":true}`, "p"},
		},
		{
			name: "seed 4.2 sonnet and a budget",
			spec: Spec{CLI: CLIClaude, Model: "sonnet", Prompt: "p", BudgetUSD: 1.5, Env: base},
			want: []string{"--print", "--model", "sonnet", "--allowedTools", "Read,Grep,Glob,Bash", "--disallowedTools", "Edit,Write,NotebookEdit", "--output-format", "json", "--json-schema", string(Schema()), "--settings", `{"disableAllHooks":true}`, "--max-budget-usd", "1.5", "p"},
		},
		{
			name: "no model leaves the CLI default and a custom schema is used",
			spec: Spec{Prompt: "p", Schema: []byte(`{"type":"object"}`), Env: base},
			want: []string{"--print", "--allowedTools", "Read,Grep,Glob,Bash", "--disallowedTools", "Edit,Write,NotebookEdit", "--output-format", "json", "--json-schema", `{"type":"object"}`, "--settings", `{"disableAllHooks":true}`, "p"},
		},
		{
			name: "a prompt starting with a dash is not a flag",
			spec: Spec{Model: "opus", Prompt: "- review this", Env: base},
			want: []string{"--print", "--model", "opus", "--allowedTools", "Read,Grep,Glob,Bash", "--disallowedTools", "Edit,Write,NotebookEdit", "--output-format", "json", "--json-schema", string(Schema()), "--settings", `{"disableAllHooks":true}`, "\n- review this"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, args, env, err := BuildCommand(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if name != "claude" {
				t.Errorf("name = %q, want claude", name)
			}
			if !slices.Equal(args, tt.want) {
				t.Errorf("args =\n%q\nwant\n%q", args, tt.want)
			}
			// seed 4.3: the reviewer never gets permission to write; drover writes the review file.
			for _, a := range args {
				if strings.Contains(a, "dangerously") || a == "--permission-mode" {
					t.Errorf("args grant permissions: %q", a)
				}
			}
			wantEnv := []string{"PATH=/bin", "HOME=/h", GuardEnv + "=1"}
			if !slices.Equal(env, wantEnv) {
				t.Errorf("env = %q, want %q (guard set once, CLAUDECODE removed)", env, wantEnv)
			}
		})
	}
}

func TestBuildCommandPath(t *testing.T) {
	name, _, _, err := BuildCommand(Spec{Path: "/opt/claude/bin/claude", Prompt: "p", Env: []string{}})
	if err != nil || name != "/opt/claude/bin/claude" {
		t.Fatalf("name = %q, err = %v", name, err)
	}
}

func TestBuildCommandNilEnvInheritsWithGuard(t *testing.T) {
	t.Setenv("DROVER_TEST_MARKER", "yes")
	_, _, env, err := BuildCommand(Spec{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "DROVER_TEST_MARKER=yes") || env[len(env)-1] != GuardEnv+"=1" {
		t.Errorf("env does not inherit the caller's with the guard last: %q", env[len(env)-3:])
	}
}

func TestBuildCommandCustom(t *testing.T) {
	spec := Spec{
		CLI:       CLICustom,
		Model:     "gpt-x",
		Prompt:    "look at {{schema}} $HOME `rm -rf /`",
		BudgetUSD: 2,
		Env:       []string{"CLAUDECODE=1"},
		Command:   []string{"mycli", "--model={{model}}", "--schema", "{{ schema }}", "--budget", "{{budget_usd}}", "{{prompt}}"},
	}
	name, args, env, err := BuildCommand(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--model=gpt-x", "--schema", string(Schema()), "--budget", "2", spec.Prompt}
	if name != "mycli" || !slices.Equal(args, want) {
		t.Errorf("got %q %q, want mycli %q (no shell, prompt passed as it is)", name, args, want)
	}
	if !slices.Equal(env, []string{"CLAUDECODE=1", GuardEnv + "=1"}) {
		t.Errorf("env = %q", env)
	}
}

func TestBuildCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"empty prompt", Spec{Prompt: " \n"}, "prompt is empty"},
		{"huge prompt", Spec{Prompt: strings.Repeat("x", MaxPromptBytes+1)}, "more than"},
		{"negative budget", Spec{Prompt: "p", BudgetUSD: -1}, "negative budget"},
		{"model like a flag", Spec{Prompt: "p", Model: "--evil"}, "looks like a flag"},
		{"unknown cli", Spec{CLI: "gpt", Prompt: "p"}, `unknown CLI "gpt"`},
		{"codex without a schema file", Spec{CLI: CLICodex, Prompt: "p"}, "schema file"},
		{"gemini model like a flag", Spec{CLI: CLIGemini, Prompt: "p", Model: "-y"}, "looks like a flag"},
		{"custom without command", Spec{CLI: CLICustom, Prompt: "p"}, "custom command is empty"},
		{"custom without prompt", Spec{CLI: CLICustom, Prompt: "p", Command: []string{"x", "{{model}}"}}, "no {{prompt}}"},
		{"custom unknown placeholder", Spec{CLI: CLICustom, Prompt: "p", Command: []string{"x", "{{modle}}", "{{prompt}}"}}, "{{modle}}"},
		{"custom placeholder in executable", Spec{CLI: CLICustom, Prompt: "p", Command: []string{"{{model}}", "{{prompt}}"}}, "executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := BuildCommand(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if !slices.Equal(s.Required, []string{"review", "verdict", "findings"}) {
		t.Errorf("required = %v", s.Required)
	}
	for _, want := range []string{`"review":{"type":"string"}`, `"enum":["PASS","FAIL"]`, `"enum":["blocking","minor"]`, `"file"`, `"line"`, `"summary"`} {
		if !strings.Contains(string(Schema()), want) {
			t.Errorf("schema lacks %s", want)
		}
	}
	a := Schema()
	a[0] = 'X'
	if Schema()[0] != '{' {
		t.Error("Schema returns a shared slice")
	}
}

func TestBuildCommandCodexAndGemini(t *testing.T) {
	base := []string{"PATH=/bin", "CLAUDECODE=1", GuardEnv + "=0", "HOME=/h"}
	geminiTail := func(prompt string) []string {
		return []string{"--output-format", "json", "--approval-mode", "default", "--allowed-tools", "run_shell_command", "--prompt", prompt}
	}
	tests := []struct {
		name     string
		spec     Spec
		wantName string
		want     []string
	}{
		{
			name:     "codex: read-only exec with JSON events, the schema file and the model as given",
			spec:     Spec{CLI: CLICodex, Model: "gpt-5-codex", Prompt: "p", SchemaFile: "/tmp/s.json", BudgetUSD: 3, Env: base},
			wantName: "codex",
			want:     []string{"exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--output-schema", "/tmp/s.json", "--model", "gpt-5-codex", "p"},
		},
		{
			name:     "codex: no model leaves the CLI default, a path and a dash prompt",
			spec:     Spec{CLI: CLICodex, Path: "/opt/codex", Prompt: "- check", SchemaFile: "s.json", Env: base},
			wantName: "/opt/codex",
			want:     []string{"exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--output-schema", "s.json", "\n- check"},
		},
		{
			name:     "gemini: headless JSON, default approvals, schema in the prompt",
			spec:     Spec{CLI: CLIGemini, Model: "gemini-2.5-pro", Prompt: "Review plan.md.", BudgetUSD: 3, Env: base},
			wantName: "gemini",
			want:     append([]string{"--model", "gemini-2.5-pro"}, geminiTail(geminiPrompt(templates.Set{}, "Review plan.md.", Schema()))...),
		},
		{
			name:     "gemini: a custom schema, no model, a dash prompt",
			spec:     Spec{CLI: CLIGemini, Path: "/opt/gemini", Prompt: "- check", Schema: []byte(`{"type":"object"}`), Env: base},
			wantName: "/opt/gemini",
			want:     geminiTail("\n" + geminiPrompt(templates.Set{}, "- check", []byte(`{"type":"object"}`))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, args, env, err := BuildCommand(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.wantName || !slices.Equal(args, tt.want) {
				t.Errorf("got %q %q\nwant %q %q", name, args, tt.wantName, tt.want)
			}
			for _, a := range args {
				for _, bad := range []string{"yolo", "dangerously", "full-auto", "workspace-write", "auto_edit", "budget"} {
					if strings.Contains(a, bad) && a != args[len(args)-1] {
						t.Errorf("args hold %q: %q", bad, a)
					}
				}
			}
			if want := []string{"PATH=/bin", "HOME=/h", GuardEnv + "=1"}; !slices.Equal(env, want) {
				t.Errorf("env = %q, want %q", env, want)
			}
		})
	}
}

func TestGeminiPrompt(t *testing.T) {
	p := geminiPrompt(templates.Set{}, "Review plan.md.", Schema())
	if !strings.HasPrefix(p, "Review plan.md.\n\n") || !strings.Contains(p, string(Schema())) || !strings.Contains(p, "one JSON object and nothing else") {
		t.Errorf("prompt = %q", p)
	}
	want := "Review plan.md.\n\nAnswer with one JSON object and nothing else: no prose before or after it, no Markdown code fence. The object must match this JSON schema:\n{}\n"
	if got := geminiPrompt(templates.Defaults(), "Review plan.md.", []byte("{}")); got != want {
		t.Errorf("built-in prompt = %q, want %q", got, want)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, templates.ReviewerAnswerSchema+".md"), []byte("JSON please:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	over, err := templates.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := geminiPrompt(over, "R", []byte("{}")); got != "R\n\nJSON please:\n{}\n" {
		t.Errorf("overridden prompt = %q", got)
	}
}

func TestStrictSchema(t *testing.T) {
	// OpenAI's strict mode: every object lists all its properties as
	// required and forbids others.
	var walk func(path string, node any)
	walk = func(path string, node any) {
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			req, _ := m["required"].([]any)
			for k := range props {
				if !slices.Contains(req, any(k)) {
					t.Errorf("%s: property %q is not required", path, k)
				}
			}
			if m["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is not false", path)
			}
			for k, v := range props {
				walk(path+"."+k, v)
			}
		}
		if items, ok := m["items"]; ok {
			walk(path+"[]", items)
		}
	}
	var root any
	if err := json.Unmarshal(StrictSchema(), &root); err != nil {
		t.Fatal(err)
	}
	walk("$", root)
	// The same answers fit both schemas: the strict one only requires
	// what the other allows.
	var loose, strict map[string]any
	_ = json.Unmarshal(Schema(), &loose)
	_ = json.Unmarshal(StrictSchema(), &strict)
	if !slices.Equal(mapsKeys(loose["properties"]), mapsKeys(strict["properties"])) {
		t.Error("the schemas name different properties")
	}
}

func mapsKeys(v any) []string {
	m, _ := v.(map[string]any)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
