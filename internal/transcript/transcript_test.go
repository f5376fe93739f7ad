package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

// scanAll collects every event of input.
func scanAll(t *testing.T, s Scanner, input string) ([]Event, Stats) {
	t.Helper()
	var evs []Event
	st, err := s.Scan(context.Background(), strings.NewReader(input), func(ev Event) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if st.Events != len(evs) {
		t.Errorf("Stats.Events = %d, callback saw %d", st.Events, len(evs))
	}
	for _, ev := range evs {
		if n := strings.Count(input[:ev.Offset], "\n"); n != ev.Line-1 {
			t.Errorf("event on line %d has offset %d, which is on line %d", ev.Line, ev.Offset, n+1)
		}
	}
	return evs, st
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// brief renders the fields of an event that its kind uses.
func brief(ev Event) string {
	s := fmt.Sprintf("%d %s", ev.Line, ev.Kind)
	if ev.Sidechain {
		s += " sidechain"
	}
	switch ev.Kind {
	case AssistantText:
		s += fmt.Sprintf(" %s %q", ev.MessageID, ev.Text)
	case ToolUse:
		s += fmt.Sprintf(" %s %s %s cmd=%q file=%q", ev.MessageID, ev.ToolUseID, ev.ToolName, ev.Command, ev.FilePath)
	case ToolResult:
		s += fmt.Sprintf(" %s err=%v %q", ev.ToolUseID, ev.IsError, ev.Text)
	case UserPrompt, StopFeedback:
		s += fmt.Sprintf(" %q", ev.Text)
	}
	return s
}

func TestScanLoopTranscript(t *testing.T) {
	evs, st := scanAll(t, Scanner{}, readTestdata(t, "loop.jsonl"))
	want := []string{
		`2 user_prompt "<command-message>drover:loop</command-message>\n<command-name>/drover:loop</command-name>\n<command-args>fix the calc tests</command-args>"`,
		`5 assistant_text msg_A "I'll run the tests first."`,
		`6 tool_use msg_A toolu_1 Bash cmd="go test ./..." file=""`,
		`7 tool_result toolu_1 err=true "Exit code 1\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:12: Add(2, 2) = 5, want 4\nFAIL\nFAIL\texample.com/calc\t0.003s\nFAIL"`,
		`8 tool_use msg_B toolu_2 Edit cmd="" file="/project/calc.go"`,
		`10 tool_result toolu_2 err=false "The file /project/calc.go has been updated."`,
		`13 assistant_text msg_C "Fixed Add: it added one too many."`,
		`14 stop_feedback "# drover loop\nIteration 2 of 10. Keep going."`,
		`15 tool_use msg_D toolu_3 Bash cmd="go test ./..." file=""`,
		`16 tool_result toolu_3 err=false "ok  \texample.com/calc\t0.002s"`,
		`17 compact_boundary`,
		`19 assistant_text msg_E "All tests pass."`,
		`20 assistant_text msg_E "<promise>DONE</promise>"`,
		`21 tool_use sidechain msg_S toolu_9 Bash cmd="ls" file=""`,
		`22 user_prompt sidechain "Explore the repository layout."`,
	}
	var got []string
	for _, ev := range evs {
		got = append(got, brief(ev))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantStats := Stats{Lines: 25, Events: 15, Malformed: 2, TooLong: 0, Duplicates: 1, Skipped: 7}
	if st != wantStats {
		t.Errorf("stats = %+v, want %+v", st, wantStats)
	}
	if string(evs[2].Input) != `{"command":"go test ./...","description":"Run tests"}` {
		t.Errorf("tool input = %s", evs[2].Input)
	}
}

func TestScanTolerance(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string
		stats Stats
	}{
		{
			name:  "a field of the wrong type costs only that field",
			input: `{"type":"user","isSidechain":"no","uuid":"u1","message":{"content":"hello"}}`,
			want:  []string{`1 user_prompt "hello"`},
			stats: Stats{Lines: 1, Events: 1},
		},
		{
			name:  "content of an unknown shape",
			input: `{"type":"user","message":{"content":42}}` + "\n" + `{"type":"assistant","message":{"content":{"a":1}}}`,
			stats: Stats{Lines: 2, Skipped: 1},
		},
		{
			name:  "not objects",
			input: "[1,2]\nnull\n\"x\"\n42\n{\"type\":\n}",
			stats: Stats{Lines: 6, Malformed: 6},
		},
		{
			name: "toolUseResult string when the block has no text",
			input: `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true}]},"toolUseResult":"Error: Exit code 2\nls: cannot access"}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2"}]},"toolUseResult":{"stdout":"out","stderr":"err","interrupted":false}}`,
			want: []string{
				`1 tool_result t1 err=true "Error: Exit code 2\nls: cannot access"`,
				`2 tool_result t2 err=false "out\nerr"`,
			},
			stats: Stats{Lines: 2, Events: 2},
		},
		{
			name:  "tool result with text and image blocks",
			input: `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}]}}`,
			want:  []string{`1 tool_result t1 err=false "a\nb"`},
			stats: Stats{Lines: 1, Events: 1},
		},
		{
			name: "repeated ids across lines",
			input: `{"type":"assistant","uuid":"a","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"x"}}]}}` + "\n" +
				`{"type":"assistant","uuid":"b","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"x"}}]}}` + "\n" +
				`{"type":"assistant","uuid":"c","message":{"id":"m1","content":[{"type":"text","text":"hi"},{"type":"text","text":"hi"}]}}` + "\n" +
				`{"type":"assistant","uuid":"d","message":{"id":"m2","content":[{"type":"text","text":"hi"}]}}` + "\n" +
				`{"type":"user","uuid":"e","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}` + "\n" +
				`{"type":"user","uuid":"f","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}` + "\n" +
				`{"type":"user","uuid":"e","message":{"content":"same uuid again"}}`,
			want: []string{
				`1 tool_use m1 t1 Read cmd="" file="x"`,
				`3 assistant_text m1 "hi"`,
				`4 assistant_text m2 "hi"`,
				`5 tool_result t1 err=false "x"`,
			},
			stats: Stats{Lines: 7, Events: 4, Duplicates: 4},
		},
		{
			name: "blocks without ids are never merged",
			input: `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"file_path":"/p/a"}}]}}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"file_path":"/p/a"}}]}}`,
			want: []string{
				`1 tool_use   Write cmd="" file="/p/a"`,
				`2 tool_use   Write cmd="" file="/p/a"`,
			},
			stats: Stats{Lines: 2, Events: 2},
		},
		{
			name: "what is not a prompt",
			input: `{"type":"user","message":{"content":"[Request interrupted by user]"}}` + "\n" +
				`{"type":"user","message":{"content":"<local-command-stdout>Compacted</local-command-stdout>"}}` + "\n" +
				`{"type":"user","isMeta":true,"message":{"content":"<local-command-caveat>Caveat</local-command-caveat>"}}` + "\n" +
				`{"type":"user","isCompactSummary":true,"message":{"content":"This session is being continued"}}` + "\n" +
				`{"type":"user","message":{"content":"   "}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"image","source":{}}]}}`,
			want:  []string{`6 user_prompt ""`},
			stats: Stats{Lines: 6, Events: 1, Skipped: 5},
		},
		{
			name: "stop feedback as a string or as text blocks",
			input: `{"type":"user","isMeta":true,"message":{"content":"Stop hook feedback:\nrun the tests"}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"text","text":"Stop hook feedback:\n[drover] go on"}]}}`,
			want: []string{
				`1 stop_feedback "run the tests"`,
				`2 stop_feedback "[drover] go on"`,
			},
			stats: Stats{Lines: 2, Events: 2},
		},
		{
			name:  "CRLF endings and a last line without newline",
			input: "{\"type\":\"user\",\"message\":{\"content\":\"a\"}}\r\n{\"type\":\"user\",\"message\":{\"content\":\"b\"}}",
			want:  []string{`1 user_prompt "a"`, `2 user_prompt "b"`},
			stats: Stats{Lines: 2, Events: 2},
		},
		{
			name:  "bash command only for Bash",
			input: `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Task","input":{"command":"x","notebook_path":"/n.ipynb"}}]}}`,
			want:  []string{`1 tool_use  t Task cmd="" file="/n.ipynb"`},
			stats: Stats{Lines: 1, Events: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, st := scanAll(t, Scanner{}, c.input)
			var got []string
			for _, ev := range evs {
				got = append(got, brief(ev))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if st != c.stats {
				t.Errorf("stats = %+v, want %+v", st, c.stats)
			}
		})
	}
}

func TestScanLongLines(t *testing.T) {
	prompt := func(s string) string { return `{"type":"user","message":{"content":"` + s + `"}}` }
	big := strings.Repeat("x", 200<<10) // spans several reader buffers
	cases := []struct {
		name    string
		max     int
		input   string
		want    []string
		tooLong int
	}{
		{"over the limit, then a normal line", 100, prompt(strings.Repeat("a", 1000)) + "\n" + prompt("b") + "\n", []string{`2 user_prompt "b"`}, 1},
		{"over the limit at the end without newline", 100, prompt("b") + "\n" + prompt(strings.Repeat("a", 1000)), []string{`1 user_prompt "b"`}, 1},
		{"exactly the limit", len(prompt("abc")), prompt("abc") + "\n", []string{`1 user_prompt "abc"`}, 0},
		{"one byte over", len(prompt("abc")) - 1, prompt("abc") + "\n" + prompt("d"), []string{`2 user_prompt "d"`}, 1},
		{"longer than the read buffer, under the limit", 0, prompt(big) + "\n" + prompt("d"), []string{`1 user_prompt "` + big + `"`, `2 user_prompt "d"`}, 0},
		{"longer than the read buffer, over the limit", 100 << 10, prompt(big) + "\n" + prompt("d"), []string{`2 user_prompt "d"`}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, st := scanAll(t, Scanner{MaxLine: c.max}, c.input)
			var got []string
			for _, ev := range evs {
				got = append(got, brief(ev))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("events differ: got %d events, want %d", len(got), len(c.want))
			}
			if st.TooLong != c.tooLong {
				t.Errorf("TooLong = %d, want %d", st.TooLong, c.tooLong)
			}
		})
	}
}

// repeatReader yields n bytes of a repeated pattern, then one suffix.
type repeatReader struct {
	pattern []byte
	left    int
	suffix  *strings.Reader
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return r.suffix.Read(p)
	}
	n := 0
	for n < len(p) && r.left > 0 {
		c := copy(p[n:min(len(p), n+r.left)], r.pattern)
		n += c
		r.left -= c
	}
	return n, nil
}

// TestScanSkipsHugeLineInBoundedMemory reads a 48 MiB line with a 1 MiB
// limit: the bytes read must not be held.
func TestScanSkipsHugeLineInBoundedMemory(t *testing.T) {
	r := &repeatReader{pattern: []byte(`{"type":"user","message":{"content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxx`), left: 48 << 20,
		suffix: strings.NewReader("\n" + `{"type":"user","message":{"content":"after"}}` + "\n")}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got []string
	st, err := Scanner{MaxLine: 1 << 20}.Scan(context.Background(), r, func(ev Event) error {
		got = append(got, ev.Text)
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if st.TooLong != 1 || len(got) != 1 || got[0] != "after" {
		t.Fatalf("stats %+v, events %q", st, got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d bytes to skip a 48 MiB line", alloc)
	}
}

func TestScanCallbackErrors(t *testing.T) {
	input := readTestdata(t, "loop.jsonl")
	n := 0
	st, err := Scan(context.Background(), strings.NewReader(input), func(Event) error {
		n++
		if n == 3 {
			return ErrStop
		}
		return nil
	})
	if err != nil || n != 3 || st.Events != 3 {
		t.Errorf("ErrStop: err=%v n=%d stats=%+v", err, n, st)
	}

	boom := errors.New("boom")
	_, err = Scan(context.Background(), strings.NewReader(input), func(ev Event) error {
		if ev.Kind == ToolResult {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 7") {
		t.Errorf("callback error: %v", err)
	}
}

func TestScanContextAndReadErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	many := strings.Repeat(`{"type":"user","message":{"content":"a"}}`+"\n", 200)
	n := 0
	_, err := Scan(ctx, strings.NewReader(many), func(Event) error { n++; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: err=%v", err)
	}
	if n >= 200 {
		t.Errorf("read all %d lines despite a canceled context", n)
	}

	bad := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader(`{"type":"user","message":{"content":"a"}}`+"\n"), errReader{bad})
	_, err = Scan(context.Background(), r, func(Event) error { return nil })
	if !errors.Is(err, bad) {
		t.Errorf("read error: %v", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestDeduperForgetsBeyondWindow(t *testing.T) {
	d := newDeduper(3)
	k := func(s string) uint64 { return key('x', s) }
	for _, s := range []string{"a", "b", "c"} {
		if d.repeat(k(s)) {
			t.Fatalf("%s reported as a repeat on first sight", s)
		}
	}
	if !d.repeat(k("a")) {
		t.Error("a forgotten inside the window")
	}
	d.repeat(k("d")) // pushes out a
	if d.repeat(k("a")) {
		t.Error("a remembered beyond the window")
	}
	for range 2 {
		if d.repeat(k("")) {
			t.Error("the empty key must never be a repeat")
		}
	}
	if len(d.seen) > 3 {
		t.Errorf("deduper holds %d keys, window is 3", len(d.seen))
	}
}

func TestKindString(t *testing.T) {
	if ToolUse.String() != "tool_use" || Kind(0).String() != "kind(0)" || Kind(99).String() != "kind(99)" {
		t.Errorf("names: %s %s %s", ToolUse, Kind(0), Kind(99))
	}
}

func BenchmarkScan(b *testing.B) {
	var buf bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&buf, `{"type":"assistant","uuid":"a%d","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"go test ./..."}}]}}`+"\n", i, i, i)
		fmt.Fprintf(&buf, `{"type":"user","uuid":"u%d","message":{"content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}}`+"\n", i, i, strings.Repeat("ok  \tpkg\t0.01s\n", 50))
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Scan(context.Background(), bytes.NewReader(data), func(Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
