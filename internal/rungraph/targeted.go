package rungraph

// TargetedTests: which tests a task runs between its iterations.

import (
	"io/fs"
	"path"
	"strings"
)

// TargetedTests returns the tests a task runs between its iterations, as
// paths or patterns relative to the repository root, without duplicates.
//
// A task whose file says `tests: []` (NoTests) has none. When the task
// lists tests, those are used; otherwise they are derived
// from the task's files: a Go file a/b/c.go gives the Go pattern ./a/b/...
// (its package and the packages below it; a Go file at the root gives ".",
// since "./..." would be the whole suite), any other file its directory.
//
// goTree, when not nil, is the tree the tests run in with `go test`, and
// the result is then what `go test` takes: package directories and
// patterns. Every relative directory gets a leading "./" (else go reads
// "internal/lex" as a standard-library import path); a testdata element
// and what follows it are dropped, leaving the enclosing package (go
// ignores testdata directories); a file that is not a Go file gives its
// directory only if that holds Go files (a root README.md in a module
// whose root is no package would fail `go test .`). When goTree is nil the
// entries are left for the runner of another language to read: a
// directory stays as written ("src/foo", "." for the root).
//
// An empty result means no targeted tests: for a NoTests task nothing
// runs between its iterations; for any other the caller runs the full
// suite instead, having nothing narrower to check the task with.
func TargetedTests(t Task, goTree fs.FS) []string {
	if t.NoTests {
		return nil
	}
	var out []string
	seen := make(map[string]bool)
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(t.Tests) > 0 {
		for _, s := range t.Tests {
			if goTree != nil {
				add(goTestEntry(goTree, s))
				continue
			}
			if strings.HasSuffix(s, "...") && !strings.HasPrefix(s, "./") {
				s = "./" + s
			}
			add(s)
		}
		return out
	}
	for _, f := range t.Files {
		if goTree != nil {
			add(goFileEntry(goTree, f))
			continue
		}
		f = path.Clean(f)
		dir := path.Dir(f)
		switch {
		case path.Ext(f) != ".go":
			add(dir)
		case dir == ".":
			add(".")
		default:
			add("./" + dir + "/...")
		}
	}
	return out
}

// goTestEntry is the `go test` argument of a tests entry s, or "" when it
// names nothing go can test.
func goTestEntry(tree fs.FS, s string) string {
	p, cut := dropTestdata(path.Clean(s))
	switch {
	case cut && holdsGoFiles(tree, p):
		// Inside testdata: the package around it, whatever the entry was.
		return goDir(p)
	case cut:
		return ""
	case p == "..." || strings.HasSuffix(p, "/..."):
		return goDir(p)
	case path.Ext(p) == ".go":
		return goDir(path.Dir(p))
	}
	if fi, err := fs.Stat(tree, p); err == nil && fi.IsDir() {
		return goDir(p)
	}
	if path.Ext(p) == "" && !strings.ContainsAny(p, "*?[") {
		// Not there yet, and shaped like a package directory: the agent
		// may create it.
		return goDir(p)
	}
	// A file, or a glob, of another language.
	if dir := path.Dir(p); holdsGoFiles(tree, dir) {
		return goDir(dir)
	}
	return ""
}

// goFileEntry is the `go test` argument a task's file f gives, or "".
func goFileEntry(tree fs.FS, f string) string {
	p, cut := dropTestdata(path.Clean(f))
	dir := path.Dir(p)
	if cut {
		dir = p
	}
	switch {
	case cut && holdsGoFiles(tree, dir):
		return goDir(dir)
	case cut:
		return ""
	case path.Ext(p) != ".go":
		if holdsGoFiles(tree, dir) {
			return goDir(dir)
		}
		return ""
	case dir == ".":
		return "."
	}
	return goDir(dir) + "/..."
}

// dropTestdata cuts the clean relative path p before its first testdata
// element, reporting whether it did ("a/testdata/x" gives "a", true;
// "testdata/x" gives ".", true).
func dropTestdata(p string) (string, bool) {
	els := strings.Split(p, "/")
	for i, el := range els {
		if el == "testdata" {
			if i == 0 {
				return ".", true
			}
			return strings.Join(els[:i], "/"), true
		}
	}
	return p, false
}

// goDir gives the clean relative directory or pattern p the leading "./"
// that makes go read it as a directory.
func goDir(p string) string {
	if p == "." || strings.HasPrefix(p, "./") {
		return p
	}
	return "./" + p
}

// holdsGoFiles reports whether the directory dir of tree holds a .go file.
func holdsGoFiles(tree fs.FS, dir string) bool {
	entries, err := fs.ReadDir(tree, dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}
