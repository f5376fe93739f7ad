package goldenfile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records a failure instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func (r *recorder) Errorf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.golden")
	for _, tc := range []struct {
		name     string
		got      string
		update   bool
		wantFail bool
	}{
		{"missing file", "a", false, true},
		{"update writes it", "a", true, false},
		{"same", "a", false, false},
		{"differs", "b", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, path, []byte(tc.got), tc.update)
			if (r.failed != "") != tc.wantFail {
				t.Errorf("failed = %q, want failure %t", r.failed, tc.wantFail)
			}
		})
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a" {
		t.Errorf("golden file = %q (%v), want %q", b, err, "a")
	}
}
