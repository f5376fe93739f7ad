package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// ReadCodex, cut at every byte of a rollout (as if the CLI were still
// writing there) and then read on from its cursor, reports what ScanUsage
// reports of the whole file: each usage once, the unterminated line's as
// pending only. A rewritten file is not resumable.
func TestReadCodexResumes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "othercli", "codex-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var want []Usage
	if err := ScanUsage(ctx, FormatCodex, bytes.NewReader(data), func(u Usage) error { want = append(want, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("the rollout reports %d usages; the test needs several", len(want))
	}
	for cut := range len(data) + 1 {
		var got []Usage
		add := func(u Usage) error { got = append(got, u); return nil }
		c, pending, err := ReadCodex(ctx, CodexCursor{}, bytes.NewReader(data[:cut]), add)
		if err != nil {
			t.Fatal(err)
		}
		if c.Offset > int64(cut) || c.Offset > 0 && data[c.Offset-1] != '\n' || !c.Resumable(bytes.NewReader(data), int64(len(data))) {
			t.Fatalf("cut %d: cursor at %d, not after a complete line the whole file still has", cut, c.Offset)
		}
		if whole := append(slices.Clone(got), pending...); len(whole) > len(want) || len(whole) > 0 && !reflect.DeepEqual(whole, want[:len(whole)]) {
			t.Fatalf("cut %d: read %+v then pending %+v; want a prefix of %+v", cut, got, pending, want)
		}
		c, pending, err = ReadCodex(ctx, c, bytes.NewReader(data[c.Offset:]), add)
		if err != nil || len(pending) != 0 || c.Offset != int64(len(data)) {
			t.Fatalf("cut %d: read on to %d of %d, pending %v, err %v", cut, c.Offset, len(data), pending, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cut %d: read %+v in two parts, want %+v", cut, got, want)
		}
	}
	c, _, _ := ReadCodex(ctx, CodexCursor{}, bytes.NewReader(data), nil)
	rewritten := bytes.Replace(data, []byte("\n"), []byte("\n\n"), 1)
	for name, file := range map[string][]byte{"truncated": data[:len(data)/2], "rewritten": rewritten[:len(data)]} {
		if c.Resumable(bytes.NewReader(file), int64(len(file))) {
			t.Errorf("a %s rollout is resumable", name)
		}
	}
}

// CodexLastMessage gives the text of a rollout's last assistant message,
// not a user's, and says when there is none.
func TestCodexLastMessage(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "othercli", "codex-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rollout, want string
		found               bool
	}{
		{"the testdata rollout", string(golden), "ok", true},
		{"two parts, then a user's message", `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"first"}]}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done "},{"type":"output_text","text":"<promise>X</promise>"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"assistant"}]}}
not json "assistant"
`, "done <promise>X</promise>", true},
		{"no assistant message", `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}` + "\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := CodexLastMessage(context.Background(), strings.NewReader(tc.rollout))
			if err != nil || got != tc.want || found != tc.found {
				t.Errorf("CodexLastMessage = %q, %v, %v; want %q, %v", got, found, err, tc.want, tc.found)
			}
		})
	}
}

// TestCodexLastMessageAt: read from the end, the last message is the one
// CodexLastMessage finds reading the whole rollout: near the end, far
// before it (windows grow), in a last line longer than the first window
// (the line the window starts in is not taken for the last), or none.
func TestCodexLastMessageAt(t *testing.T) {
	msg := func(text string) string {
		return `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + text + `"}]}}` + "\n"
	}
	filler := strings.Repeat(`{"type":"event_msg","payload":{"type":"token_count"}}`+"\n", 3*lastMessageWindow/50)
	for _, tc := range []struct {
		name, rollout, want string
		found               bool
	}{
		{"at the end", filler + msg("first") + filler + msg("last"), "last", true},
		{"far before the end", msg("only") + filler + filler, "only", true},
		{"a last line longer than the window", msg("before") + filler + msg(strings.Repeat("x", 2*lastMessageWindow)), strings.Repeat("x", 2*lastMessageWindow), true},
		{"none", filler, "", false},
		{"short", msg("a") + msg("b"), "b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := strings.NewReader(tc.rollout)
			got, found, err := CodexLastMessageAt(context.Background(), r, r.Size())
			if err != nil || got != tc.want || found != tc.found {
				t.Errorf("CodexLastMessageAt = %.40q, %v, %v; want %.40q, %v", got, found, err, tc.want, tc.found)
			}
			whole, wfound, _ := CodexLastMessage(context.Background(), strings.NewReader(tc.rollout))
			if whole != got || wfound != found {
				t.Errorf("CodexLastMessage of the whole rollout = %.40q, %v; from the end %.40q, %v", whole, wfound, got, found)
			}
		})
	}
}

// BenchmarkCodexLastMessage compares reading a Stop's last message from
// a rollout of 8 MiB whole (CodexLastMessage) and from its end
// (CodexLastMessageAt), the message in its last line.
func BenchmarkCodexLastMessage(b *testing.B) {
	line := `{"type":"event_msg","payload":{"type":"token_count"}}` + "\n"
	rollout := strings.Repeat(line, (8<<20)/len(line)) + `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}` + "\n"
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if msg, _, _ := CodexLastMessage(context.Background(), strings.NewReader(rollout)); msg != "done" {
				b.Fatal(msg)
			}
		}
	})
	b.Run("from-the-end", func(b *testing.B) {
		r := strings.NewReader(rollout)
		for b.Loop() {
			if msg, _, _ := CodexLastMessageAt(context.Background(), r, r.Size()); msg != "done" {
				b.Fatal(msg)
			}
		}
	})
}
