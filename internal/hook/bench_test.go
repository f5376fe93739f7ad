package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadFrom is the hook client's read of a Stop payload, as the
// Claude Code plugin's hooks run it (no --cli: the CLI is told from the
// payload) and as drover init's Codex hook does (--cli codex).
func BenchmarkReadFrom(b *testing.B) {
	for _, bc := range []struct {
		name, file string
		cli        CLI
	}{
		{"claude-detected", "claude_stop", ""},
		{"codex", "codex_stop", Codex},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "payloads", bc.file+".json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ReadFrom(bytes.NewReader(data), 0, bc.cli, Stop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
