package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestScanUsageOtherCLIs(t *testing.T) {
	for _, tc := range []struct{ file, format string }{
		{"codex-rollout.jsonl", FormatCodex},
		{"gemini-chat.jsonl", FormatGemini},
		{"gemini-legacy.json", FormatGemini},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "othercli", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []Usage
			if err := ScanUsage(context.Background(), tc.format, f, func(u Usage) error { got = append(got, u); return nil }); err != nil {
				t.Fatal(err)
			}
			out, _ := json.MarshalIndent(got, "", "  ")
			base := strings.TrimSuffix(tc.file, filepath.Ext(tc.file))
			goldenfile.Check(t, filepath.Join("testdata", "othercli", base+".golden.json"), append(out, '\n'), *update)
		})
	}
	stop := errors.New("stop")
	f, err := os.Open(filepath.Join("testdata", "othercli", "codex-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ScanUsage(context.Background(), FormatCodex, f, func(Usage) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: got %v", err)
	}
	if err := ScanUsage(context.Background(), "vim", strings.NewReader(""), nil); err == nil {
		t.Error("an unknown format is read")
	}
}

// FuzzScanUsage feeds arbitrary transcripts to both readers: they never
// fail on bad input, and report no negative count.
func FuzzScanUsage(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "othercli", "*.json*"))
	for _, n := range names {
		if strings.Contains(n, ".golden.") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{FormatCodex, FormatGemini} {
			err := ScanUsage(context.Background(), format, strings.NewReader(string(data)), func(u Usage) error {
				if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens != 0 {
					t.Fatalf("%s: bad usage %+v", format, u)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
