package tracker

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
	goldenfile.Check(t, path, got, *update)
}

// same compares trackers, times by instant (Parse keeps the offset it read).
func same(a, b Tracker) bool {
	if !a.StartedAt.Equal(b.StartedAt) {
		return false
	}
	a.StartedAt, b.StartedAt = time.Time{}, time.Time{}
	return a == b
}

var started = time.Date(2026, 2, 25, 10, 0, 0, 0, time.UTC)

// full is a tracker with every field set, including strings YAML would
// otherwise fold, strip or reinterpret.
func full() Tracker {
	return Tracker{
		Iteration:         3,
		MaxIterations:     20,
		CompletionMarker:  DefaultCompletionMarker,
		Active:            true,
		StartedAt:         started,
		Prompt:            "make the parser handle unicode\n\n  - keep \"quotes\" and \\backslashes\\\n\ttabs, trailing space \nand: colons # not a comment",
		CompletionPromise: "DONE",
		MaxMinutes:        90,
		MaxUSD:            12.5,
		CheckpointEvery:   3,
		RequireChecks:     true,
		Role:              "debugger",
		Status:            "stuck_plateau",
		StatusReason:      "pass rate 0.71 → 0.72 over 3 iterations; ünïcödé \u2028 line separator \u0085 NEL \x01 control",
		Body:              "# Loop Progress\n\n---\n\n- [x] lexer\n- [ ] parser\n",
	}
}

func TestParseSeed002(t *testing.T) {
	// The tracker of seed 002's getState test, byte for byte.
	data := strings.Join([]string{
		"---",
		"iteration: 2",
		"max_iterations: 5",
		`completion_marker: "E2E_COMPLETE"`,
		"active: true",
		`started_at: "2026-02-25T10:00:00Z"`,
		"---",
		"# Progress",
		"Some content here",
	}, "\n")
	got, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := Tracker{
		Iteration: 2, MaxIterations: 5, CompletionMarker: "E2E_COMPLETE", Active: true,
		StartedAt: started, Body: "# Progress\nSome content here",
	}
	if !same(got, want) {
		t.Errorf("Parse = %+v\nwant    %+v", got, want)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		data string
		want Tracker
	}{
		{
			name: "unquoted values and a plain timestamp",
			data: "---\niteration: 0\nmax_iterations: 20\nactive: false\nstarted_at: 2026-02-25T10:00:00Z\nprompt: fix it\n---\nbody\n",
			want: Tracker{MaxIterations: 20, StartedAt: started, Prompt: "fix it", Body: "body\n"},
		},
		{
			name: "CRLF line ends and a byte order mark",
			data: "\ufeff---\r\niteration: 1\r\nmax_iterations: 2\r\nactive: true\r\n---\r\nline\r\n",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true, Body: "line\r\n"},
		},
		{
			name: "unknown keys ignored",
			data: "---\niteration: 1\nmax_iterations: 2\nactive: true\nsession_id: abc\nnotes: {a: [b], a: c}\nnotes: again\n<<: {iteration: 9}\n---\n",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true},
		},
		{
			name: "closing line at end of file without a newline",
			data: "---\niteration: 1\nmax_iterations: 2\nactive: true\n---",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true},
		},
		{
			name: "delimiter lines in the body stay in the body",
			data: "---\niteration: 1\nmax_iterations: 2\nactive: true\n---\n---\nmore: yaml-looking\n---\n",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true, Body: "---\nmore: yaml-looking\n---\n"},
		},
		{
			name: "started_at with an offset and fraction",
			data: "---\niteration: 1\nmax_iterations: 2\nactive: true\nstarted_at: \"2026-02-25T12:00:00.5+02:00\"\n---\n",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true, StartedAt: started.Add(500 * time.Millisecond)},
		},
		{
			name: "integral max_usd",
			data: "---\niteration: 1\nmax_iterations: 2\nactive: true\nmax_usd: 5\n---\n",
			want: Tracker{Iteration: 1, MaxIterations: 2, Active: true, MaxUSD: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if !same(got, tt.want) {
				t.Errorf("Parse = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	ok := "iteration: 1\nmax_iterations: 5\nactive: true\n"
	tests := []struct {
		name string
		data string
		says string // a phrase the error must contain
	}{
		{"empty file", "", "empty"},
		{"no front matter (seed 002)", "no frontmatter here", "does not start with"},
		{"seed 004 corrupt state", "this is {{ not valid yaml or json ]]", "does not start with"},
		{"opening line only", "---", "no closing"},
		{"no closing line", "---\n" + ok + "# body\n", "no closing"},
		{"yaml syntax error", "---\niteration: [1\n---\n", "front matter"},
		{"not a mapping", "---\n- a\n- b\n---\n", "front matter"},
		{"non-numeric iteration", "---\niteration: three\nmax_iterations: 5\nactive: true\n---\n", "front matter"},
		{"fractional iteration", "---\niteration: 1.5\nmax_iterations: 5\nactive: true\n---\n", "front matter"},
		{"duplicate key", "---\n" + ok + "iteration: 2\n---\n", "iteration is already set on line 1"},
		{"missing iteration (ralph-loop's brick)", "---\nmax_iterations: 5\nactive: true\n---\n", "no iteration"},
		{"null iteration", "---\niteration: null\nmax_iterations: 5\nactive: true\n---\n", "no iteration"},
		{"missing max_iterations", "---\niteration: 1\nactive: true\n---\n", "no max_iterations"},
		{"missing active", "---\niteration: 1\nmax_iterations: 5\n---\n", "no active"},
		{"empty front matter", "---\n---\nbody", "no iteration"},
		{"negative iteration", "---\niteration: -1\nmax_iterations: 5\nactive: true\n---\n", "iteration is -1"},
		{"negative max_iterations", "---\niteration: 1\nmax_iterations: -5\nactive: true\n---\n", "max_iterations is -5"},
		{"negative max_minutes", "---\n" + ok + "max_minutes: -1\n---\n", "max_minutes is -1"},
		{"negative max_usd", "---\n" + ok + "max_usd: -0.5\n---\n", "max_usd is -0.5"},
		{"NaN max_usd", "---\n" + ok + "max_usd: .nan\n---\n", "max_usd is NaN"},
		{"infinite max_usd", "---\n" + ok + "max_usd: .inf\n---\n", "max_usd is +Inf"},
		{"negative checkpoint_every", "---\n" + ok + "checkpoint_every: -3\n---\n", "checkpoint_every is -3"},
		{"bad started_at", "---\n" + ok + "started_at: yesterday\n---\n", `started_at "yesterday"`},
		{"too large", "---\n" + ok + "---\n" + strings.Repeat("x", MaxBytes), "larger than"},
		{"front matter too large", "---\n" + ok + "prompt: \"" + strings.Repeat("x", MaxFrontMatterBytes) + "\"\n---\n", "front matter is larger than"},
		{"nested value for a known key", "---\n" + ok + "prompt: {a: 1, a: 1}\n---\n", "prompt is not a plain value"},
		{"alias for a known key", "---\nx: &x 3\niteration: *x\nmax_iterations: 5\nactive: true\n---\n", "iteration is not a plain value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", got)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			if got != (Tracker{}) {
				t.Errorf("Parse returned %+v with its error, want the zero Tracker", got)
			}
		})
	}
}

func TestRender(t *testing.T) {
	tr := full()
	data := tr.Render()
	golden(t, data)
	back, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Render()) failed: %v\n%s", err, data)
	}
	if !same(back, tr) {
		t.Errorf("round trip changed the tracker:\ngot  %+v\nwant %+v", back, tr)
	}
	if again := back.Render(); string(again) != string(data) {
		t.Errorf("second Render differs:\n%s\n---\n%s", again, data)
	}
}

func TestRenderZero(t *testing.T) {
	data := Tracker{}.Render()
	back, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Render()) of the zero tracker: %v\n%s", err, data)
	}
	if back != (Tracker{}) {
		t.Errorf("zero tracker round trip = %+v", back)
	}
	if !strings.Contains(string(data), `started_at: ""`) {
		t.Errorf("zero start time not rendered empty:\n%s", data)
	}
}

func TestRenderFieldOrder(t *testing.T) {
	var keys []string
	for _, line := range strings.Split(string(full().Render()), "\n")[1:] {
		if line == delimiter {
			break
		}
		k, _, _ := strings.Cut(line, ":")
		keys = append(keys, k)
	}
	want := "iteration max_iterations completion_marker active started_at prompt completion_promise max_minutes max_usd checkpoint_every require_checks role status status_reason"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys = %s\nwant   %s", got, want)
	}
}

func TestRenderInvalidUTF8(t *testing.T) {
	tr := Tracker{Iteration: 1, MaxIterations: 2, Prompt: "bad \xff byte"}
	back, err := Parse(tr.Render())
	if err != nil {
		t.Fatal(err)
	}
	if back.Prompt != "bad \uFFFD byte" {
		t.Errorf("prompt = %q, want the invalid byte replaced", back.Prompt)
	}
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name   string
		marker string
		body   string
		want   bool
	}{
		// Seed 002's Stop handler cases.
		{"seed 002: marker in the tracker", "DONE", "# Progress\n\nDONE", true},
		{"seed 002: still working", "DONE", "# Progress\n\nStill working...", false},

		{"default marker on the last line", "", "# Progress\n- [x] all\n\n<!-- WORKFLOW_COMPLETE -->\n", true},
		{"trailing blank lines and spaces", "", "notes\n  <!-- WORKFLOW_COMPLETE -->  \n\n \n", true},
		{"CRLF body", "", "notes\r\n<!-- WORKFLOW_COMPLETE -->\r\n", true},
		{"marker is the whole body", "", "<!-- WORKFLOW_COMPLETE -->", true},
		{"marker followed by more notes", "", "<!-- WORKFLOW_COMPLETE -->\n\nwait, tests fail again\n", false},
		{"marker mentioned in an instruction", "", "When done, add <!-- WORKFLOW_COMPLETE --> as the last line.\n", false},
		{"marker inside other text on the last line", "", "done <!-- WORKFLOW_COMPLETE -->", false},
		{"empty body", "", "", false},
		{"blank body", "", "\n \n\t\n", false},
		{"custom marker replaces the default", "ALL_PASS", "<!-- WORKFLOW_COMPLETE -->\n", false},
		{"custom marker with spaces in the front matter", "  ALL_PASS ", "ALL_PASS\n", true},
		{"blank custom marker means the default", "  ", "<!-- WORKFLOW_COMPLETE -->", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Tracker{CompletionMarker: tt.marker, Body: tt.body}
			if got := tr.Complete(); got != tt.want {
				t.Errorf("Complete() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".drover", "sessions", "s1")
	path := Path(dir)
	if filepath.Base(path) != "loop.md" {
		t.Fatalf("Path = %s", path)
	}
	tr := full()
	if err := Write(path, tr); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !same(got, tr) {
		t.Errorf("Read after Write = %+v\nwant %+v", got, tr)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}

	// Overwrite, and leave no temporary file behind.
	tr.Iteration, tr.Body = 4, "new body\n"
	if err := Write(path, tr); err != nil {
		t.Fatal(err)
	}
	if got, err = Read(path); err != nil || got.Iteration != 4 || got.Body != "new body\n" {
		t.Errorf("after overwrite: %+v, %v", got, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only loop.md", names)
	}
}

func TestParseBinaryStringIsValidUTF8(t *testing.T) {
	got, err := Parse([]byte("---\niteration: 1\nmax_iterations: 1\nactive: true\nprompt: !!binary /w==\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompt != "\uFFFD" {
		t.Errorf("prompt = %q, want the replacement character", got.Prompt)
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	path := Path(t.TempDir())
	good := Tracker{Iteration: 1, MaxIterations: 2, Active: true, Body: "keep me\n"}
	if err := Write(path, good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Tracker{{Iteration: -1}, {MaxUSD: math.NaN()}, {Prompt: strings.Repeat("x", MaxFrontMatterBytes)}} {
		err := Write(path, bad)
		if err == nil || !errors.Is(err, ErrMalformed) {
			t.Fatalf("Write(%.60v): %v, want ErrMalformed", bad, err)
		}
		if got, err := Read(path); err != nil || got != good {
			t.Errorf("refused write changed the file: %+v, %v", got, err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(filepath.Join(dir, "missing.md")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrMalformed) {
		t.Errorf("missing file: %v, want fs.ErrNotExist and not ErrMalformed", err)
	}

	corrupt := filepath.Join(dir, "corrupt.md")
	if err := os.WriteFile(corrupt, []byte("this is {{ not valid yaml or json ]]"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(corrupt)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), corrupt) {
		t.Errorf("corrupt file: %v, want ErrMalformed naming the path", err)
	}

	big := filepath.Join(dir, "big.md")
	data := append([]byte("---\niteration: 1\nmax_iterations: 1\nactive: true\n---\n"), make([]byte, MaxBytes)...)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestQuarantine(t *testing.T) {
	dir := t.TempDir()
	path := Path(dir)
	now := time.Date(2026, 3, 1, 9, 8, 7, 0, time.FixedZone("CET", 3600))
	content := []byte("this is {{ not valid yaml or json ]]")

	var moved []string
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		to, err := Quarantine(path, now)
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, filepath.Base(to))
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("tracker still there after quarantine: %v", err)
		}
		if got, err := os.ReadFile(to); err != nil || string(got) != string(content) {
			t.Errorf("quarantined copy %s = %q, %v", to, got, err)
		}
	}
	want := []string{"loop.md.corrupt-20260301T080807Z", "loop.md.corrupt-20260301T080807Z-2", "loop.md.corrupt-20260301T080807Z-3"}
	if strings.Join(moved, " ") != strings.Join(want, " ") {
		t.Errorf("quarantined to %v, want %v", moved, want)
	}

	if _, err := Quarantine(path, now); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("quarantining a missing tracker: %v, want fs.ErrNotExist", err)
	}
}

// TestQuarantineThenRewrite is the caller's recovery: a corrupt tracker is
// set aside and a fresh one written in its place.
func TestQuarantineThenRewrite(t *testing.T) {
	path := Path(t.TempDir())
	if err := os.WriteFile(path, []byte("---\niteration: x\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	_, err := Read(path)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("Read: %v", err)
	}
	if _, err := Quarantine(path, now); err != nil {
		t.Fatal(err)
	}
	fresh := Tracker{Iteration: 2, MaxIterations: 5, Active: true, StartedAt: now}
	if err := Write(path, fresh); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path); err != nil || !same(got, fresh) {
		t.Errorf("after rewrite: %+v, %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(full().Render())
	f.Add(Tracker{}.Render())
	f.Add([]byte("---\niteration: 2\nmax_iterations: 5\ncompletion_marker: \"E2E_COMPLETE\"\nactive: true\nstarted_at: \"2026-02-25T10:00:00Z\"\n---\n# Progress\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// Whatever parses renders to something that parses back the same.
		out := tr.Render()
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Render()) failed: %v\ninput: %q\nrendered: %q", err, data, out)
		}
		if !same(back, tr) {
			t.Fatalf("round trip changed the tracker\ninput: %q\nfirst:  %+v\nsecond: %+v", data, tr, back)
		}
		_ = tr.Complete()
	})
}

func TestBody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		body   string
		wantOK bool
	}{
		{"broken front matter keeps the notes", "---\niteration: [broken\n---\n# Notes\n- tried X\n", "# Notes\n- tried X\n", true},
		{"CRLF and a byte order mark", "\ufeff---\r\niteration: {\r\n---\r\nnotes\r\n", "notes\r\n", true},
		{"closing line at the end of the file", "---\niteration: 1\n---", "", true},
		{"no front matter", "just notes\n", "", false},
		{"front matter never closed", "---\niteration: 1\nnotes\n", "", false},
		{"empty file", "", "", false},
		{"too large", "---\n---\n" + strings.Repeat("x", MaxBytes), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ok := Body([]byte(tc.data))
			if ok != tc.wantOK || body != tc.body {
				t.Errorf("Body = %q, %v; want %q, %v", body, ok, tc.body, tc.wantOK)
			}
		})
	}
}

// FuzzBody reads arbitrary bytes as a tracker whose front matter may be
// broken: the body Body keeps is the end of the file, is the body Parse
// gives when the front matter parses, and comes back whole from a tracker
// rendered around it.
func FuzzBody(f *testing.F) {
	f.Add(full().Render())
	f.Add([]byte("---\niteration: [broken\n---\n# Notes\n- tried X\n"))
	f.Add([]byte("\ufeff---\r\niteration: {\r\n---\r\nnotes\r\n"))
	f.Add([]byte("---\niteration: 1\n---"))
	f.Add([]byte("---\n---\n---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, ok := Body(data)
		if !ok {
			if body != "" {
				t.Fatalf("Body refused %q but returned %q", data, body)
			}
			if _, err := Parse(data); err == nil {
				t.Fatalf("Parse accepted %q, which Body finds no body in", data)
			}
			return
		}
		if !bytes.HasSuffix(data, []byte(body)) {
			t.Fatalf("body %q is not the end of %q", body, data)
		}
		if tr, err := Parse(data); err == nil && tr.Body != body {
			t.Fatalf("Parse's body %q differs from Body's %q", tr.Body, body)
		}
		tr := full()
		tr.Body = body
		if out := tr.Render(); len(out) > MaxBytes {
			return
		} else if got, ok := Body(out); !ok || got != body {
			t.Fatalf("Body of a rendered tracker = %q, %v; want %q", got, ok, body)
		}
	})
}
