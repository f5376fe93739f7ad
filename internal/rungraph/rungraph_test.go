package rungraph

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/drover-dev/drover/internal/hook"
)

const example = `tasks:
  - id: parser-unicode
    description: Make the tokenizer accept any Unicode letter in identifiers.
    files: [internal/lex/lexer.go]
    tests: [internal/lex/...]          # targeted tests; derived from files when absent
    depends-on: []
  - id: docs
    description: Document identifiers.
    depends-on: [parser-unicode]
`

func TestParseExample(t *testing.T) {
	g, err := Parse([]byte(example), "tasks.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Task{
		{
			ID:          "parser-unicode",
			Description: "Make the tokenizer accept any Unicode letter in identifiers.",
			Files:       []string{"internal/lex/lexer.go"},
			Tests:       []string{"internal/lex/..."},
			DependsOn:   []string{},
			Line:        2,
		},
		{
			ID:          "docs",
			Description: "Document identifiers.",
			DependsOn:   []string{"parser-unicode"},
			Line:        7,
		},
	}
	if g.File != "tasks.yaml" || len(g.Tasks) != len(want) {
		t.Fatalf("Parse = %+v, want file tasks.yaml and %d tasks", g, len(want))
	}
	for i := range want {
		if !equalTask(g.Tasks[i], want[i]) {
			t.Errorf("task %d = %+v, want %+v", i, g.Tasks[i], want[i])
		}
	}
}

// Seed 003's own task graph loads: its parallel flags are accepted, and
// its waves are the ones its dependencies give.
func TestParseSeed003(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "seed003.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(data, "tasks.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := [][]string{
		{"collab-compact-skill", "collab-resume-modification", "rough-draft-tests-field"},
		{"executing-plans-targeted-tests", "brainstorming-snapshot", "rough-draft-snapshot"},
		{"implementer-prompt-tests", "executing-plans-snapshot"},
	}
	if got := waveIDs(g.Waves()); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("waves = %q, want %q", got, want)
	}
	for _, task := range g.Tasks {
		if task.Alone {
			t.Errorf("task %s runs alone; the seed's tasks are parallel", task.ID)
		}
		// tests: [] is "no targeted tests" (skill files), not "derive
		// them from the files".
		if !task.NoTests || TargetedTests(task, nil) != nil {
			t.Errorf("task %s: NoTests %v, targeted tests %q; want none", task.ID, task.NoTests, TargetedTests(task, nil))
		}
	}
}

// Only an explicit empty list says a task has no tests; an absent or null
// one leaves them to be derived from its files.
func TestParseEmptyTests(t *testing.T) {
	cases := []struct {
		name, tests string
		noTests     bool
		targeted    []string
	}{
		{"absent", "", false, []string{"./lex/..."}},
		{"null", "tests: ~", false, []string{"./lex/..."}},
		{"empty flow list", "tests: []", true, nil},
		{"empty list with a comment", "tests: [] # docs only", true, nil},
		{"listed", "tests: [lex/...]", false, []string{"./lex/..."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := "tasks:\n  - id: a\n    description: x\n    files: [lex/lexer.go]\n    " + c.tests + "\n"
			g, err := Parse([]byte(in), "g.yaml")
			if err != nil {
				t.Fatal(err)
			}
			task := g.Tasks[0]
			if task.NoTests != c.noTests {
				t.Errorf("NoTests = %v, want %v", task.NoTests, c.noTests)
			}
			if got := TargetedTests(task, nil); !slices.Equal(got, c.targeted) {
				t.Errorf("TargetedTests = %q, want %q", got, c.targeted)
			}
		})
	}
}

func TestParseParallel(t *testing.T) {
	cases := []struct {
		name, value string
		alone       bool
		err         string
	}{
		{"absent", "", false, ""},
		{"true", "parallel: true", false, ""},
		{"false", "parallel: false", true, ""},
		{"null", "parallel: ~", false, `g.yaml:4: task "a": "parallel" must be true or false`},
		{"yes is no boolean", "parallel: yes", false, `"parallel" must be true or false`},
		{"quoted", `parallel: "false"`, false, `"parallel" must be true or false`},
		{"a list", "parallel: [false]", false, `"parallel" must be true or false`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := "tasks:\n  - id: a\n    description: x\n    " + c.value + "\n"
			g, err := Parse([]byte(in), "g.yaml")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse = %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Tasks[0].Alone != c.alone {
				t.Errorf("Alone = %v, want %v", g.Tasks[0].Alone, c.alone)
			}
		})
	}
}

func equalTask(a, b Task) bool {
	return a.ID == b.ID && a.Description == b.Description && a.Line == b.Line &&
		slices.Equal(a.Files, b.Files) && slices.Equal(a.Tests, b.Tests) && slices.Equal(a.DependsOn, b.DependsOn) && a.Alone == b.Alone && a.NoTests == b.NoTests
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want are substrings of the error, each of which must appear.
		want []string
	}{
		{name: "empty file", in: "", want: []string{"g.yaml: is empty"}},
		{name: "comment only", in: "# nothing\n", want: []string{"g.yaml: is empty"}},
		{name: "not yaml", in: "tasks: [\n", want: []string{"parsing task graph g.yaml"}},
		{name: "top level list", in: "- id: a\n", want: []string{"g.yaml:1: the top level must be a mapping"}},
		{name: "no tasks key", in: "other: 1\n", want: []string{`g.yaml:1: unknown key "other" at the top level`}},
		{name: "tasks not a list", in: "tasks: 3\n", want: []string{`g.yaml:1: "tasks" must be a list`}},
		{name: "tasks null", in: "tasks:\n", want: []string{`g.yaml:1: "tasks" must be a list`}},
		{name: "tasks empty", in: "tasks: []\n", want: []string{`g.yaml:1: "tasks" is empty`}},
		{name: "two documents", in: "tasks: []\n---\ntasks: []\n", want: []string{"a second YAML document"}},
		{
			name: "unknown task key names the task and line",
			in:   "tasks:\n  - id: a\n    description: x\n    dependson: [b]\n",
			want: []string{`g.yaml:4: task "a": unknown key "dependson"`},
		},
		{
			name: "unknown key before the id still names the task",
			in:   "tasks:\n  - title: t\n    id: a\n    description: x\n",
			want: []string{`g.yaml:2: task "a": unknown key "title"`},
		},
		{
			name: "duplicate id",
			in:   "tasks:\n  - id: a\n    description: x\n  - id: b\n    description: y\n  - id: a\n    description: z\n",
			want: []string{`g.yaml:6: task "a": duplicate id; the first task with it is on line 2`},
		},
		{
			name: "missing dependency",
			in:   "tasks:\n  - id: a\n    description: x\n  - id: b\n    description: y\n    depends-on: [a, nope]\n",
			want: []string{`g.yaml:4: task "b": depends on "nope", which is not a task in this file`},
		},
		{
			name: "self dependency",
			in:   "tasks:\n  - id: a\n    description: x\n    depends-on: [a]\n",
			want: []string{`g.yaml:2: task "a": depends on itself`},
		},
		{
			name: "cycle",
			in: "tasks:\n  - id: a\n    description: x\n    depends-on: [c]\n" +
				"  - id: b\n    description: y\n    depends-on: [a]\n" +
				"  - id: c\n    description: z\n    depends-on: [b]\n" +
				"  - id: free\n    description: w\n",
			want: []string{`g.yaml:2: task "a": dependency cycle: a -> c -> b -> a`},
		},
		{
			name: "invalid id",
			in:   "tasks:\n  - id: a/b\n    description: x\n",
			want: []string{`g.yaml:2: task 1: id "a/b" is not valid`},
		},
		{
			name: "id starting with a dash",
			in:   "tasks:\n  - id: -a\n    description: x\n",
			want: []string{`g.yaml:2: task 1: id "-a" is not valid`},
		},
		{
			name: "id is a list",
			in:   "tasks:\n  - id: [a]\n    description: x\n",
			want: []string{`g.yaml:2: task 1: "id" must be a non-empty name`},
		},
		{name: "no id", in: "tasks:\n  - description: x\n", want: []string{`g.yaml:2: task 1 has no "id"`}},
		{name: "no description", in: "tasks:\n  - id: a\n", want: []string{`g.yaml:2: task "a": no "description"`}},
		{name: "blank description", in: "tasks:\n  - id: a\n    description: '  '\n", want: []string{`g.yaml:3: task "a": "description" is empty`}},
		{name: "task not a mapping", in: "tasks:\n  - a\n", want: []string{"g.yaml:2: task 1 must be a mapping"}},
		{
			name: "duplicate key",
			in:   "tasks:\n  - id: a\n    description: x\n    description: y\n",
			want: []string{`g.yaml:4: task "a": key "description" appears twice`},
		},
		{
			name: "files not a list",
			in:   "tasks:\n  - id: a\n    description: x\n    files: a.go\n",
			want: []string{`g.yaml:4: task "a": "files" must be a list of paths`},
		},
		{
			name: "absolute file",
			in:   "tasks:\n  - id: a\n    description: x\n    files: [/etc/passwd]\n",
			want: []string{`g.yaml:4: task "a": "files" entry "/etc/passwd" is not a relative path`},
		},
		{
			name: "file outside the repository",
			in:   "tasks:\n  - id: a\n    description: x\n    files:\n      - ok.go\n      - a/../../b.go\n",
			want: []string{`g.yaml:6: task "a": "files" entry "a/../../b.go" leaves the repository`},
		},
		{
			name: "test that looks like a flag",
			in:   "tasks:\n  - id: a\n    description: x\n    tests: [-exec=rm]\n",
			want: []string{`g.yaml:4: task "a": "tests" entry "-exec=rm" starts with '-'`},
		},
		{
			name: "dependency listed twice",
			in:   "tasks:\n  - id: a\n    description: x\n  - id: b\n    description: y\n    depends-on: [a, a]\n",
			want: []string{`g.yaml:6: task "b": "depends-on" lists "a" twice`},
		},
		{
			name: "dependency not a name",
			in:   "tasks:\n  - id: a\n    description: x\n    depends-on: [{x: 1}]\n",
			want: []string{`g.yaml:4: task "a": "depends-on" entries must be task ids`},
		},
		{
			name: "alias",
			in:   "tasks:\n  - id: a\n    description: &d x\n  - id: b\n    description: *d\n",
			want: []string{`g.yaml:5: task "b": key "description": YAML aliases are not supported`},
		},
		{
			name: "merge key",
			in:   "base: &b {description: x}\ntasks:\n  - id: a\n    <<: *b\n",
			want: []string{`unknown key "base"`, `g.yaml:4: task "a": keys must be plain names`},
		},
		{
			name: "several problems are all reported",
			in:   "tasks:\n  - id: a\n    description: x\n    color: red\n  - id: b\n    description: y\n    size: 3\n",
			want: []string{`g.yaml:4: task "a": unknown key "color"`, `g.yaml:7: task "b": unknown key "size"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse([]byte(tt.in), "g.yaml")
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", g)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseErrorType(t *testing.T) {
	_, err := Parse([]byte("tasks:\n  - id: a\n    description: x\n    depends-on: [zz]\n"), "g.yaml")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	want := Error{File: "g.yaml", Line: 2, Task: "a", Msg: `depends on "zz", which is not a task in this file`}
	if *e != want {
		t.Errorf("error = %+v, want %+v", *e, want)
	}
}

func TestParseBounds(t *testing.T) {
	big := make([]byte, MaxFileSize+1)
	if _, err := Parse(big, "big.yaml"); err == nil || !strings.Contains(err.Error(), "big.yaml: is 1048577 bytes") {
		t.Errorf("Parse of a too big file: %v", err)
	}
	var b strings.Builder
	b.WriteString("tasks:\n")
	for range 100 {
		b.WriteString("  - id: a\n    bad: 1\n")
	}
	_, err := Parse([]byte(b.String()), "many.yaml")
	if err == nil {
		t.Fatal("Parse of a file with 200 problems succeeded")
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != maxErrors+1 {
		t.Errorf("%d problems reported, want %d and a note", n, maxErrors)
	}
	if !strings.Contains(err.Error(), "too many problems") {
		t.Errorf("error does not say it stopped: %v", err)
	}
}

func graph(t *testing.T, spec string) Graph {
	t.Helper()
	// spec is "id:dep,dep id2: ...", a compact way to write a graph.
	var b strings.Builder
	b.WriteString("tasks:\n")
	for _, f := range strings.Fields(spec) {
		id, deps, _ := strings.Cut(f, ":")
		b.WriteString("  - id: " + id + "\n    description: do " + id + "\n")
		if deps != "" {
			b.WriteString("    depends-on: [" + deps + "]\n")
		}
	}
	g, err := Parse([]byte(b.String()), "t.yaml")
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return g
}

func ids(tasks []Task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.ID
	}
	return out
}

func waveIDs(waves [][]Task) [][]string {
	out := make([][]string, len(waves))
	for i, w := range waves {
		out[i] = ids(w)
	}
	return out
}

func TestWaves(t *testing.T) {
	tests := []struct {
		spec string
		want [][]string
	}{
		{spec: "a", want: [][]string{{"a"}}},
		{spec: "a b c", want: [][]string{{"a", "b", "c"}}},
		{spec: "c:b b:a a", want: [][]string{{"a"}, {"b"}, {"c"}}},
		// d waits for its latest dependency, not its first.
		{spec: "a b:a c:b d:a,c e", want: [][]string{{"a", "e"}, {"b"}, {"c"}, {"d"}}},
		// Diamond; file order within each wave.
		{spec: "z y:z x:z w:x,y", want: [][]string{{"z"}, {"y", "x"}, {"w"}}},
		{spec: "b:a a c:a", want: [][]string{{"a"}, {"b", "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			g := graph(t, tt.spec)
			got := waveIDs(g.Waves())
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("Waves = %q, want %q", got, tt.want)
			}
			var order []string
			for _, w := range tt.want {
				order = append(order, w...)
			}
			if got := ids(g.Order()); !slices.Equal(got, order) {
				t.Errorf("Order = %q, want %q", got, order)
			}
		})
	}
}

func TestWavesOfAHandBuiltGraph(t *testing.T) {
	g := Graph{Tasks: []Task{
		{ID: "a"},
		{ID: "b", DependsOn: []string{"a", "missing"}},
		{ID: "c", DependsOn: []string{"d"}},
		{ID: "d", DependsOn: []string{"c"}},
		{ID: "e", DependsOn: []string{"a", "a"}},
	}}
	if got, want := waveIDs(g.Waves()), [][]string{{"a"}, {"e"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Waves = %q, want %q", got, want)
	}
	if got := (Graph{}).Waves(); got != nil {
		t.Errorf("Waves of an empty graph = %q, want nil", waveIDs(got))
	}
}

func TestReady(t *testing.T) {
	g := graph(t, "a b c:a,b d:c e:a")
	set := func(s ...string) map[string]bool {
		m := make(map[string]bool)
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	tests := []struct {
		name          string
		done, running map[string]bool
		want          []string
	}{
		{name: "start", want: []string{"a", "b"}},
		{name: "a running", running: set("a"), want: []string{"b"}},
		{name: "a done", done: set("a"), want: []string{"b", "e"}},
		{name: "a done b running", done: set("a"), running: set("b", "e"), want: nil},
		{name: "a and b done", done: set("a", "b"), want: []string{"c", "e"}},
		{name: "all but d done", done: set("a", "b", "c", "e"), want: []string{"d"}},
		{name: "all done", done: set("a", "b", "c", "d", "e"), want: nil},
		{name: "unknown ids ignored", done: set("zz"), running: set("yy"), want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(g.Ready(tt.done, tt.running)); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("Ready = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTask(t *testing.T) {
	g := graph(t, "a b:a")
	if got, ok := g.Task("b"); !ok || got.ID != "b" || !slices.Equal(got.DependsOn, []string{"a"}) {
		t.Errorf("Task(b) = %+v, %v", got, ok)
	}
	if _, ok := g.Task("c"); ok {
		t.Error("Task(c) found a task")
	}
}

func TestTargetedTests(t *testing.T) {
	// A module whose root is no package: internal/lex and cmd/x are, docs
	// and web hold no Go file.
	tree := fstest.MapFS{
		"go.mod":                      {Data: []byte("module m\n")},
		"README.md":                   {Data: []byte("x")},
		"internal/lex/lexer.go":       {Data: []byte("package lex")},
		"internal/lex/testdata/a.txt": {Data: []byte("x")},
		"cmd/x/main.go":               {Data: []byte("package main")},
		"cmd/x/testdata/in.txt":       {Data: []byte("x")},
		"cmd/x/testdata/deep/b.txt":   {Data: []byte("x")},
		"docs/guide.md":               {Data: []byte("x")},
		"web/app.py":                  {Data: []byte("x")},
	}
	rootPkg := fstest.MapFS{"main.go": {Data: []byte("package main")}, "README.md": {Data: []byte("x")}}
	tests := []struct {
		name string
		task Task
		tree fs.FS // nil: a runner of another language
		want []string
	}{
		{name: "nothing", task: Task{}, want: nil},
		{name: "go: nothing", task: Task{}, tree: tree, want: nil},
		{name: "tests: [] means none, files or not", task: Task{NoTests: true, Files: []string{"a/b.go"}}, tree: tree, want: nil},
		{name: "tests win over files", task: Task{Tests: []string{"./x/..."}, Files: []string{"a/b.go"}}, want: []string{"./x/..."}},
		{name: "go pattern gets ./", task: Task{Tests: []string{"internal/lex/...", "..."}}, want: []string{"./internal/lex/...", "./..."}},
		{name: "other tests as written", task: Task{Tests: []string{"src/auth/*.test.ts", "tests/test_x.py", "./pkg"}}, want: []string{"src/auth/*.test.ts", "tests/test_x.py", "./pkg"}},
		{name: "duplicate tests once", task: Task{Tests: []string{"a/...", "./a/..."}}, want: []string{"./a/..."}},
		{name: "go file", task: Task{Files: []string{"a/b/c.go"}}, want: []string{"./a/b/..."}},
		{name: "go test file", task: Task{Files: []string{"a/b/c_test.go"}}, want: []string{"./a/b/..."}},
		{name: "go files in one package once", task: Task{Files: []string{"a/x.go", "a/y.go", "./a//z.go"}}, want: []string{"./a/..."}},
		{name: "root go file", task: Task{Files: []string{"main.go"}}, want: []string{"."}},
		{name: "other language: the directory", task: Task{Files: []string{"src/foo/bar.ts", "README.md", "web/app.py"}}, want: []string{"src/foo", ".", "web"}},

		{name: "go: package dir gets ./", task: Task{Tests: []string{"internal/lex", "./cmd/x", "internal/lex/"}}, tree: tree, want: []string{"./internal/lex", "./cmd/x"}},
		{name: "go: new package dir gets ./", task: Task{Tests: []string{"internal/parse"}}, tree: tree, want: []string{"./internal/parse"}},
		{name: "go: patterns get ./", task: Task{Tests: []string{"internal/lex/...", "...", "./cmd/..."}}, tree: tree, want: []string{"./internal/lex/...", "./...", "./cmd/..."}},
		{name: "go: root stays", task: Task{Tests: []string{"."}}, tree: tree, want: []string{"."}},
		{name: "go: a go file gives its package", task: Task{Tests: []string{"internal/lex/lexer_test.go"}}, tree: tree, want: []string{"./internal/lex"}},
		{name: "go: testdata gives the package", task: Task{Tests: []string{"cmd/x/testdata", "cmd/x/testdata/deep/b.txt", "internal/lex/testdata/..."}}, tree: tree, want: []string{"./cmd/x", "./internal/lex"}},
		{name: "go: other files only where go files are", task: Task{Tests: []string{"web/app.py", "internal/lex/*.txt", "docs/guide.md"}}, tree: tree, want: []string{"./internal/lex"}},
		{name: "go: go file", task: Task{Files: []string{"internal/lex/lexer.go"}}, tree: tree, want: []string{"./internal/lex/..."}},
		{name: "go: new go file", task: Task{Files: []string{"a/b/c.go"}}, tree: tree, want: []string{"./a/b/..."}},
		{name: "go: root go file", task: Task{Files: []string{"main.go"}}, tree: rootPkg, want: []string{"."}},
		{name: "go: README.md at a root that is no package", task: Task{Files: []string{"README.md"}}, tree: tree, want: nil},
		{name: "go: README.md at a root that is a package", task: Task{Files: []string{"README.md"}}, tree: rootPkg, want: []string{"."}},
		{name: "go: other files where no go files are", task: Task{Files: []string{"docs/guide.md", "web/app.py", "src/new.ts"}}, tree: tree, want: nil},
		{name: "go: mixed, testdata gives the package", task: Task{Files: []string{"cmd/x/main.go", "cmd/x/testdata/in.txt", "cmd/x/testdata/deep/b.txt"}}, tree: tree, want: []string{"./cmd/x/...", "./cmd/x"}},
		{name: "go: other file in a package", task: Task{Files: []string{"internal/lex/testdata/a.txt", "cmd/x/doc.md"}}, tree: tree, want: []string{"./internal/lex", "./cmd/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TargetedTests(tt.task, tt.tree); !slices.Equal(got, tt.want) {
				t.Errorf("TargetedTests = %q, want %q", got, tt.want)
			}
		})
	}
}

// fuzzTree is a module with Go files at the root and in a, and other files.
var fuzzTree = fstest.MapFS{
	"main.go": {Data: []byte("package main")}, "a/a.go": {Data: []byte("package a")},
	"a/testdata/x": {Data: []byte("x")}, "docs/d.md": {Data: []byte("x")},
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("tasks:\n  - id: a\n    description: x\n    depends-on: [b]\n  - id: b\n    description: y\n    depends-on: [a]\n"))
	f.Add([]byte("tasks: [{id: a, description: x, files: [a.go]}, {id: b, description: y, depends-on: [a], tests: [b/...]}]\n"))
	f.Add([]byte("tasks: [{id: a, description: x, files: [a.go], tests: [], parallel: false}, {id: b, description: y, parallel: true}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "f.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") && !strings.HasPrefix(err.Error(), "parsing task graph f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(g.Tasks) == 0 {
			t.Fatal("Parse succeeded with no tasks")
		}
		wave := make(map[string]int)
		for i, w := range g.Waves() {
			if len(w) == 0 {
				t.Fatalf("wave %d is empty", i)
			}
			for _, task := range w {
				if _, dup := wave[task.ID]; dup {
					t.Fatalf("task %q is in two waves", task.ID)
				}
				wave[task.ID] = i
			}
		}
		if len(wave) != len(g.Tasks) {
			t.Fatalf("waves hold %d tasks, the graph %d", len(wave), len(g.Tasks))
		}
		for _, task := range g.Tasks {
			if !hook.ValidSessionID(task.ID) || task.Description == "" || task.Line < 1 {
				t.Fatalf("invalid task %+v", task)
			}
			for _, d := range task.DependsOn {
				if wave[d] >= wave[task.ID] {
					t.Fatalf("task %q in wave %d depends on %q in wave %d", task.ID, wave[task.ID], d, wave[d])
				}
			}
			for _, p := range TargetedTests(task, nil) {
				if p == "" || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "/") || escapes(p) {
					t.Fatalf("task %q: targeted test %q", task.ID, p)
				}
			}
			for _, p := range TargetedTests(task, fuzzTree) {
				if p != "." && !strings.HasPrefix(p, "./") || escapes(p) || slices.Contains(strings.Split(p, "/"), "testdata") {
					t.Fatalf("task %q: go test argument %q", task.ID, p)
				}
			}
		}
		if got, want := ids(g.Ready(nil, nil)), ids(g.Waves()[0]); !slices.Equal(got, want) {
			t.Fatalf("Ready at the start = %q, first wave = %q", got, want)
		}
	})
}
