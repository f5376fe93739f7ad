package argsplit

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  error
	}{
		{``, nil, nil},
		{`   `, nil, nil},
		{`a b  c`, []string{"a", "b", "c"}, nil},
		{`"make the parser handle unicode" --max-iterations 20`, []string{"make the parser handle unicode", "--max-iterations", "20"}, nil},
		{`'it''s' x`, []string{"its", "x"}, nil},
		{`"don't stop" --completion-promise DONE`, []string{"don't stop", "--completion-promise", "DONE"}, nil},
		{`"say \"hi\"" a\ b`, []string{`say "hi"`, "a b"}, nil},
		{`$HOME *.go` + " `x`", []string{"$HOME", "*.go", "`x`"}, nil},
		{"line one\nline two", []string{"line", "one", "line", "two"}, nil},
		{`a"b c"d`, []string{"ab cd"}, nil},
		{`""`, []string{""}, nil},
		{`"open`, nil, ErrUnterminated},
		{`'open`, nil, ErrUnterminated},
	}
	for _, c := range cases {
		got, err := Split(c.in)
		if !errors.Is(err, c.err) || !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
}

// FuzzSplit: Split never panics, and words made only of plain characters
// round-trip through a space-joined string.
func FuzzSplit(f *testing.F) {
	f.Add(`"make it work" --max-iterations 3`)
	f.Add(`'a' "b\"c" d\ e`)
	f.Add(`"unterminated`)
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err != nil {
			return
		}
		if !strings.ContainsAny(s, `'"\`) {
			blank := func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
			if got := strings.FieldsFunc(s, blank); !slices.Equal(got, words) && !(len(got) == 0 && len(words) == 0) {
				t.Fatalf("Split(%q) = %q, want %q", s, words, got)
			}
		}
	})
}
