package templates

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var allNames = []string{
	Compact, Context, Loop, MaxIterations, Review, ReviewContext,
	ReviewFound, ReviewStart, Start, StuckReminder, Uncommitted,
	Stopped, Quarantined, SaveFailed, BlockCap, SessionHeldQueue, SessionHeldLoop, SessionHeldPlan,
}

func TestNames(t *testing.T) {
	want := slices.Concat(allNames, planNames, loopNames, runNames, queueNames, notesNames)
	slices.Sort(want)
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

// TestDefaultsContent pins what each built-in must say and which
// placeholders it must use: the workflow relies on both.
func TestDefaultsContent(t *testing.T) {
	tests := []struct {
		name    string
		phrases []string
	}{
		{Loop, []string{"{{next_task}}", "{{session_dir}}", "{{iteration}}", "{{pending_count}}", "{{done_count}}", "{{stuck_count}}", ".done.md", ".stuck.md", "Work Summary", "Commit", "Next task: {{next_task}}"}},
		{Review, []string{"{{session_dir}}", "{{done_files}}", "{{session_id}}", "VERIFY, not to IMPLEMENT", "YYYYMMDDTHHMMSS.md"}},
		{ReviewStart, []string{"All tasks complete. Spawn a review subagent", "Pass the session ID ({{session_id}})", "{{review_prompt}}"}},
		{ReviewFound, []string{"Review found issues.", "{{loop_prompt}}"}},
		{Uncommitted, []string{"You have uncommitted changes. Please commit your work before continuing.", "{{dirty_files}}"}},
		{StuckReminder, []string{"[drover] There are {{stuck_count}} stuck task(s): {{stuck_files}}", "If your input helps resolve these, rename them from .stuck.md to .md"}},
		{Context, []string{"[drover] State: on", "{{iteration}}", "{{next_task}}"}},
		{ReviewContext, []string{"[drover] State: review"}},
		{Compact, []string{"[drover] Active session: {{session_id}}", "{{state}}", "{{iteration}}", "{{pending_count}} pending, {{done_count}} done, {{stuck_count}} stuck", "{{instructions}}"}},
		{Start, []string{"{{loop_prompt}}", "next task"}},
		{MaxIterations, []string{"[drover]", "{{max_iterations}}"}},
		{Stopped, []string{"[drover] Stopped session {{session_id}} at iteration {{iteration}}.", "The agent may stop now."}},
		{Quarantined, []string{"{{session_id}}", "could not be read", "quarantined", "starts clean"}},
		{SessionHeldQueue, []string{"session {{session_id}} has an active queue", "a task queue in state {{state}}", "drover stop", "{{workflow}}"}},
		{SessionHeldLoop, []string{"session {{session_id}} runs a loop (iteration {{iteration}})", "drover loop cancel", "{{workflow}}"}},
		{SessionHeldPlan, []string{"session {{session_id}} works on plan {{plan_id}}", "a {{workflow}} needs its own session"}},
		{BlockCap, []string{"[drover]", "{{blocks}}", "{{cap}}", "{{session_id}}", "drover init", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0"}},
		{SaveFailed, []string{"drover: could not save the state of session {{session_id}} ({{error}}); letting the agent stop."}},
	}
	d := Defaults()
	seen := map[string]bool{}
	for _, tt := range slices.Concat(tests, planContent, loopContent, runContent, queueContent, notesContent) {
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Render(tt.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.phrases {
				if !strings.Contains(got, p) {
					t.Errorf("built-in %s does not contain %q:\n%s", tt.name, p, got)
				}
			}
			if strings.Contains(got, "dr-done") {
				t.Errorf("built-in %s still says dr-done", tt.name)
			}
			if d.Source(tt.name) != BuiltIn {
				t.Errorf("Source(%s) = %q, want %q", tt.name, d.Source(tt.name), BuiltIn)
			}
		})
	}
	for _, n := range Names() {
		if !seen[n] {
			t.Errorf("template %s has no content test", n)
		}
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		text string
		vars map[string]string
		want string
	}{
		{"replaces all", "a {{x}} b {{y}} c {{x}}", map[string]string{"x": "1", "y": "2"}, "a 1 b 2 c 1"},
		{"missing var left as is", "a {{x}} {{nope}}", map[string]string{"x": "1"}, "a 1 {{nope}}"},
		{"nil vars", "{{x}}", nil, "{{x}}"},
		{"spaces inside braces", "{{ x }}|{{x }}", map[string]string{"x": "1"}, "1|1"},
		{"value not expanded again", "{{x}}", map[string]string{"x": "{{y}}", "y": "boom"}, "{{y}}"},
		{"empty value", "a{{x}}b", map[string]string{"x": ""}, "ab"},
		{"dollar signs kept", "{{x}}", map[string]string{"x": "$1 ${x}"}, "$1 ${x}"},
		{"not a placeholder", "{{a b}} {x} {{}} {{{x}}}", map[string]string{"x": "1", "a b": "2"}, "{{a b}} {x} {{}} {1}"},
		{"trailing whitespace trimmed", "text\n\n{{x}}\n", map[string]string{"x": ""}, "text"},
		{"multiline value", "- {{x}}", map[string]string{"x": "a\nb"}, "- a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Set{texts: map[string]string{"t": tt.text}}
			got, err := s.Render("t", tt.vars)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Render = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderUnknown(t *testing.T) {
	for _, s := range []Set{Defaults(), {}} {
		_, err := s.Render("nope", nil)
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("Render(nope) error = %v, want one naming the template", err)
		}
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // relative path -> content; "dir/" makes a directory
		noDir   bool
		wantErr string
		// wantWarn is in Warnings (none expected when empty).
		wantWarn []string
		// over maps template name to the rendered override text.
		over map[string]string
	}{
		{name: "missing dir is defaults", noDir: true},
		{name: "empty dir is defaults"},
		{
			name:  "override replaces one",
			files: map[string]string{"loop.md": "my loop {{next_task}}\n"},
			over:  map[string]string{Loop: "my loop /t.md"},
		},
		{
			name:  "several overrides",
			files: map[string]string{"loop.md": "L", "review.md": "R"},
			over:  map[string]string{Loop: "L", Review: "R"},
		},
		{
			name: "other files ignored",
			files: map[string]string{
				"README.txt": "x", ".loop.md": "hidden", "loop.md~": "backup", "sub.md/": "",
			},
		},
		{
			name:    "unknown name is an error naming the file",
			files:   map[string]string{"lop.md": "typo"},
			wantErr: "lop.md",
		},
		{
			// Refused with a warning naming the file; the built-in
			// stands (issue 12, item 23).
			name:     "empty override is refused for the built-in",
			files:    map[string]string{"review.md": " \n", "loop.md": "", "start.md": "S"},
			wantWarn: []string{"loop.md is empty: drover uses the built-in loop template", "review.md is empty: drover uses the built-in review template"},
			over:     map[string]string{Start: "S"},
		},
		{
			name:    "oversized override is an error",
			files:   map[string]string{"start.md": strings.Repeat("x", MaxOverrideBytes+1)},
			wantErr: "larger than",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "templates")
			if !tt.noDir {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for rel, content := range tt.files {
				p := filepath.Join(dir, rel)
				if strings.HasSuffix(rel, "/") {
					if err := os.Mkdir(p, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warns := s.Warnings()
			if len(warns) != len(tt.wantWarn) {
				t.Errorf("Warnings() = %q, want %d naming %q", warns, len(tt.wantWarn), tt.wantWarn)
			}
			for i, w := range tt.wantWarn {
				if want := dir + string(filepath.Separator) + w; i < len(warns) && !strings.Contains(warns[i], want) {
					t.Errorf("warning %q does not say %q", warns[i], want)
				}
			}
			vars := map[string]string{"next_task": "/t.md"}
			d := Defaults()
			for _, name := range Names() {
				got, err := s.Render(name, vars)
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := tt.over[name]; ok {
					if got != want {
						t.Errorf("%s = %q, want override %q", name, got, want)
					}
					if src := s.Source(name); src != filepath.Join(dir, name+".md") {
						t.Errorf("Source(%s) = %q, want the override path", name, src)
					}
					continue
				}
				want, _ := d.Render(name, vars)
				if got != want {
					t.Errorf("%s differs from the built-in", name)
				}
				if src := s.Source(name); src != BuiltIn {
					t.Errorf("Source(%s) = %q, want %q", name, src, BuiltIn)
				}
			}
		})
	}
}

// TestLoadDoesNotChangeDefaults guards the immutability of sets: an
// override must not leak into a set loaded earlier or later.
func TestLoadDoesNotChangeDefaults(t *testing.T) {
	before := Defaults()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loop.md"), []byte("over"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Set{before, Defaults()} {
		if got, _ := s.Render(Loop, nil); got == "over" {
			t.Fatal("override leaked into a defaults set")
		}
	}
}

func TestSourceUnknown(t *testing.T) {
	if got := Defaults().Source("nope"); got != "" {
		t.Errorf("Source(nope) = %q, want empty", got)
	}
}

func TestWriteDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".drover", "templates")
	mine := filepath.Join(dir, "loop.md")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("my own loop"), 0o644); err != nil {
		t.Fatal(err)
	}

	written, skipped, err := WriteDefaults(dir, Names())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{mine}) {
		t.Errorf("skipped = %v, want [%s]", skipped, mine)
	}
	if len(written) != len(Names())-1 {
		t.Errorf("wrote %d files, want %d", len(written), len(Names())-1)
	}
	if data, _ := os.ReadFile(mine); string(data) != "my own loop" {
		t.Errorf("user's loop.md was changed to %q", data)
	}
	d := Defaults()
	for _, p := range written {
		name := strings.TrimSuffix(filepath.Base(p), ".md")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != d.texts[name] {
			t.Errorf("%s is not the built-in %s", p, name)
		}
	}

	// The written files load as overrides of themselves.
	s, err := Load(dir)
	if err != nil {
		t.Fatalf("Load after WriteDefaults: %v", err)
	}
	if got, _ := s.Render(Loop, nil); got != "my own loop" {
		t.Errorf("loop after WriteDefaults = %q", got)
	}

	// A second run writes nothing.
	written, skipped, err = WriteDefaults(dir, Names())
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 0 || len(skipped) != len(Names()) {
		t.Errorf("second run wrote %v, skipped %d; want none written, all skipped", written, len(skipped))
	}
}

func FuzzRender(f *testing.F) {
	f.Add("{{x}} and {{ y }}", "v")
	f.Add("{{{{x}}}}", "{{x}}")
	f.Add("no placeholders\n", "")
	f.Fuzz(func(t *testing.T, text, value string) {
		s := Set{texts: map[string]string{"t": text}}
		plain, err := s.Render("t", nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(text, " \t\r\n"); plain != want {
			t.Fatalf("Render with no vars = %q, want the text %q", plain, want)
		}
		if _, err := s.Render("t", map[string]string{"x": value, "y": value}); err != nil {
			t.Fatal(err)
		}
	})
}

// WriteDefaults copies only the templates named, and none at all when one
// name is unknown (issue 12, item 24).
func TestWriteDefaultsNamed(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		want    []string // base names written
		wantErr []string
	}{
		{"the seed's two", SeedNames(), []string{"loop.md", "review.md"}, nil},
		{"one, twice", []string{Start, Start}, []string{"start.md"}, nil},
		{"none", nil, nil, nil},
		{"an unknown name writes nothing", []string{Loop, "lop", "revew"}, nil, []string{`no template named "lop"`, `no template named "revew"`}},
		{"a misspelt name is suggested", []string{"lop"}, nil, []string{`no template named "lop" (did you mean loop?)`}},
		{"a near name is suggested", []string{"max_iteration"}, nil, []string{`no template named "max_iteration" (did you mean `, "max_iterations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "templates")
			written, skipped, err := WriteDefaults(dir, tt.names)
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want one containing %q", err, w)
				}
			}
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range written {
				got = append(got, filepath.Base(p))
			}
			if !slices.Equal(got, tt.want) || len(skipped) != 0 {
				t.Errorf("wrote %v, skipped %v; want %v written", got, skipped, tt.want)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != len(tt.want) {
				t.Errorf("%s holds %d files, want %d", dir, len(ents), len(tt.want))
			}
		})
	}
}
