package agentrun

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testPrice prices every model alike, $1 per million input, $0.10 per
// million cached input, $10 per million output tokens.
func testPrice(model string, in, cached, out int64) float64 {
	return (float64(in)*1 + float64(cached)*0.1 + float64(out)*10) / 1e6
}

// TestRecordedStreams reads each recorded codex and gemini stream as Run
// does and checks the events and the result against golden files.
func TestRecordedStreams(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "streams", "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(base, func(t *testing.T) {
			format := Format(strings.SplitN(base, "-", 2)[0])
			out, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var res Result
			var events []Event
			w := res.stream(DefaultOutputCap, newParser(format, "gpt-5-codex", testPrice), func(ev Event) { events = append(events, ev) })
			_, _ = w.Write(out)
			res.endStream(w)
			got, err := json.MarshalIndent(struct {
				Events []Event
				Result Result
			}{events, res}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "streams", base+".golden.json"), append(got, '\n'), *update)
		})
	}
}

func TestCodexStreamFacts(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "streams", "codex-tool.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	w := res.stream(DefaultOutputCap, newParser(FormatCodex, "gpt-5-codex", testPrice), nil)
	_, _ = w.Write(out)
	res.endStream(w)
	// 4,000 input, 20,000 cached, 1,000 output tokens.
	want := (4000*1 + 20000*0.1 + 1000*10) / 1e6
	if !res.SawResult || res.IsError || res.FinalText != "ok" || res.ToolCalls != 3 || res.SessionID != "01a213ac-a5ed-7660-9e60-d944744e8ec0" || res.CostUSD != want || res.Turns != 1 {
		t.Errorf("result %+v; want ok, 3 tool calls, the thread id, $%v, 1 turn", res, want)
	}
}
