package agentrun

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzStream feeds an arbitrary agent stdout, cut into arbitrary writes,
// through the reader Run uses. Where the pipe happens to cut the output
// changes nothing: the result and the events are those of the whole
// output written at once, and of its lines read one by one; every line
// that is not blank is either an event or skipped; the result is that of
// the last result line.
func FuzzStream(f *testing.F) {
	stream := []byte(`{"type":"system","subtype":"init","session_id":"s","model":"m"}
{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":3,"output_tokens":5},"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"1","name":"Bash","input":{"command":"ls"}}]}}
not json at all
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"1","is_error":true,"content":"x"}]}}

{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"num_turns":3,"result":"done","session_id":"s"}`)
	f.Add(stream, []byte{1, 7, 200, 3}, uint16(0))
	f.Add(stream, []byte{}, uint16(40))
	f.Add([]byte("{\"type\":\"result\"}\r\n{\"type\":\"result\",\"is_error\":true,\"result\":\"429\"}"), []byte{5}, uint16(17))
	f.Add([]byte("\n\n{\"type\":\n\"x\"}\n"), []byte{2, 2, 2}, uint16(3))
	f.Fuzz(func(t *testing.T, out, cuts []byte, capSeed uint16) {
		checkStream(t, FormatClaude, out, cuts, capSeed)
	})
}

// checkStream is the body of the stream fuzz targets, for format.
func checkStream(t *testing.T, format Format, out, cuts []byte, capSeed uint16) {
	price := func(model string, in, cached, out int64) float64 { return float64(in+cached+out) / 1e6 }
	parser := func() lineParser { return newParser(format, "m", price) }
	outputCap := int(capSeed)%4096 + 1
	if capSeed == 0 {
		outputCap = DefaultOutputCap
	}
	var whole Result
	var wholeEvents []Event
	w := whole.stream(outputCap, parser(), func(ev Event) { wholeEvents = append(wholeEvents, ev) })
	_, _ = w.Write(out)
	whole.endStream(w)

	var cut Result
	var cutEvents []Event
	w = cut.stream(outputCap, parser(), func(ev Event) { cutEvents = append(cutEvents, ev) })
	rest := out
	for _, c := range cuts {
		n := min(int(c), len(rest))
		_, _ = w.Write(rest[:n])
		rest = rest[n:]
	}
	_, _ = w.Write(rest)
	cut.endStream(w)
	if !reflect.DeepEqual(cut, whole) || !reflect.DeepEqual(cutEvents, wholeEvents) {
		t.Fatalf("cutting the output at %v changed the result\nwhole: %+v\ncut:   %+v", cuts, whole, cut)
	}

	var want Result
	p := parser()
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(line) > outputCap {
			want.Skipped++
			continue
		}
		switch ev, ok := p.parse(line); {
		case ok:
			want.add(ev)
		case len(bytes.TrimSpace(line)) > 0:
			want.Skipped++
		}
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("the stream's result differs from its lines read one by one\nstream: %+v\nlines:  %+v", whole, want)
	}
	if whole.Events != len(wholeEvents) {
		t.Fatalf("Events = %d, but %d events were handed on", whole.Events, len(wholeEvents))
	}
	if whole.CostUSD < 0 || whole.ToolCalls < 0 {
		t.Fatalf("negative cost or tool calls: %+v", whole)
	}
}

// FuzzCodexStream is FuzzStream for `codex exec --json` output, seeded
// with the events of the offline runs of other-clis.md.
func FuzzCodexStream(f *testing.F) {
	for _, s := range seedStreams(f, "codex") {
		f.Add(s, []byte{1, 7, 200, 3}, uint16(0))
		f.Add(s, []byte{}, uint16(40))
	}
	f.Fuzz(func(t *testing.T, out, cuts []byte, capSeed uint16) {
		checkStream(t, FormatCodex, out, cuts, capSeed)
	})
}

// FuzzGeminiStream is FuzzStream for `gemini --output-format stream-json`.
func FuzzGeminiStream(f *testing.F) {
	for _, s := range seedStreams(f, "gemini") {
		f.Add(s, []byte{1, 7, 200, 3}, uint16(0))
		f.Add(s, []byte{}, uint16(40))
	}
	f.Fuzz(func(t *testing.T, out, cuts []byte, capSeed uint16) {
		checkStream(t, FormatGemini, out, cuts, capSeed)
	})
}

// seedStreams reads the recorded streams testdata/streams/<cli>-*.jsonl.
func seedStreams(f *testing.F, cli string) [][]byte {
	names, err := filepath.Glob(filepath.Join("testdata", "streams", cli+"-*.jsonl"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no recorded %s streams in testdata/streams (%v)", cli, err)
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
