package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	blocked := filepath.Join(dir, "blocked")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		data    string
		perm    fs.FileMode
		wantErr bool
	}{
		{"new file", path, "one", 0o644, false},
		{"overwrite, owner only", path, "two", 0o600, false},
		{"rename over a folder fails", blocked, "three", 0o644, true},
		{"no folder", filepath.Join(dir, "missing", "f"), "four", 0o644, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(tc.path, []byte(tc.data), tc.perm)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Write: %v, want error %t", err, tc.wantErr)
			}
			if !tc.wantErr {
				got, err := os.ReadFile(tc.path)
				if err != nil || string(got) != tc.data {
					t.Errorf("%s holds %q (%v), want %q", tc.path, got, err, tc.data)
				}
				if fi, err := os.Stat(tc.path); err != nil || fi.Mode().Perm() != tc.perm {
					t.Errorf("%s mode = %v (%v), want %v", tc.path, fi.Mode().Perm(), err, tc.perm)
				}
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}
