// Package rungraph reads the task graph of `drover run tasks.yaml` and answers
// the scheduling questions about it: which tasks form each wave, which tasks
// can start now, and which tests a task runs between its iterations.
//
// The file is written by a person or an agent and drives processes that
// change a repository, so Parse is strict: an unknown key, a duplicate id, a
// missing or circular dependency is an error that names the task, the file
// and the line, rather than a graph that runs something unexpected.
//
// FromPlan builds such a graph from a plan folder's tasks.md (`drover run
// --plan`); it reads the table with internal/workflow/plan's parser, the
// one reading of tasks.md, so this package depends on that core.
package rungraph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/hook"
)

// MaxFileSize bounds the graph file Parse accepts. A task graph is a few
// kilobytes; anything near this is a mistake, not a plan.
const MaxFileSize = 1 << 20

// maxErrors bounds how many problems one Parse reports, so that a badly
// broken file gives a readable error rather than a wall of them.
const maxErrors = 20

// Task is one unit of work in the graph: one agent run in its own work tree.
type Task struct {
	// ID names the task in branches, work tree paths and reports. It has
	// the shape of a session id: letters, digits, '-' and '_'.
	ID string
	// Description is what the agent is asked to do.
	Description string
	// Files are the repository paths (relative to its root) the task is
	// expected to change. They are a hint for the agent and the source of
	// the targeted tests when Tests is empty.
	Files []string
	// Tests are the targeted tests run between the task's iterations, as
	// written in the file (see TargetedTests for the form the runner uses).
	Tests []string
	// DependsOn lists the ids of the tasks that must be done first.
	DependsOn []string
	// Line is the line of the task in the file (1-based), for reports.
	Line int
}

// Graph is a parsed, validated task graph. Tasks are in file order; every
// dependency names a task of the graph and there are no cycles.
type Graph struct {
	// File is the name the graph was parsed under, for reports.
	File string
	// Tasks are the graph's tasks in the order of the file.
	Tasks []Task
}

// Error is one problem found in a graph file. Parse returns these, joined
// with errors.Join when there are several; errors.As finds the first.
type Error struct {
	// File is the name passed to Parse.
	File string
	// Line is the 1-based line of the problem, or 0 when it has none.
	Line int
	// Task is the id of the task the problem belongs to, or "".
	Task string
	// Msg says what is wrong.
	Msg string
}

// Error renders the problem as "file:line: task "id": msg".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Task != "" {
		fmt.Fprintf(&b, "task %q: ", e.Task)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Keys of the file. Only these are accepted.
const (
	keyTasks       = "tasks"
	keyID          = "id"
	keyDescription = "description"
	keyFiles       = "files"
	keyTests       = "tests"
	keyDependsOn   = "depends-on"
)

// Parse reads a task graph from data. file names it in errors. Every
// problem found is reported (up to a bound), each as an *Error naming the
// file, the line and, where there is one, the task.
func Parse(data []byte, file string) (Graph, error) {
	if file == "" {
		file = "<task graph>"
	}
	p := parser{file: file}
	if len(data) > MaxFileSize {
		p.errorf(0, "", "is %d bytes, more than the %d a task graph may have", len(data), MaxFileSize)
		return Graph{}, p.err()
	}
	root, err := decodeOne(data)
	if err != nil {
		return Graph{}, fmt.Errorf("parsing task graph %s: %w", file, err)
	}
	if root == nil {
		p.errorf(0, "", "is empty; it needs a %q list", keyTasks)
		return Graph{}, p.err()
	}
	tasks := p.document(root)
	if len(p.errs) == 0 {
		p.checkGraph(tasks)
	}
	if len(p.errs) > 0 {
		return Graph{}, p.err()
	}
	return Graph{File: file, Tasks: tasks}, nil
}

// decodeOne decodes the single YAML document in data, or nil when there is
// none. A second document is an error: it would otherwise be ignored.
func decodeOne(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second YAML document; a task graph is one document", extra.Line)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return nil, nil
}

type parser struct {
	file string
	errs []error
}

func (p *parser) errorf(line int, task, format string, args ...any) {
	if len(p.errs) == maxErrors {
		p.errs = append(p.errs, &Error{File: p.file, Msg: "too many problems; stopped reporting"})
	}
	if len(p.errs) > maxErrors {
		return
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Task: task, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) err() error {
	if len(p.errs) == 1 {
		return p.errs[0]
	}
	return errors.Join(p.errs...)
}

// document reads the top-level mapping, which holds only the task list.
func (p *parser) document(root *yaml.Node) []Task {
	if root.Kind != yaml.MappingNode {
		p.errorf(root.Line, "", "the top level must be a mapping with a %q list", keyTasks)
		return nil
	}
	var list *yaml.Node
	p.mapping(root, "", func(key string, k, v *yaml.Node) {
		switch key {
		case keyTasks:
			list = v
		default:
			p.errorf(k.Line, "", "unknown key %q at the top level (known: %s)", key, keyTasks)
		}
	})
	if list == nil {
		if len(p.errs) == 0 {
			p.errorf(root.Line, "", "no %q list", keyTasks)
		}
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list.Line, "", "%q must be a list of tasks", keyTasks)
		return nil
	}
	if len(list.Content) == 0 {
		p.errorf(list.Line, "", "%q is empty", keyTasks)
		return nil
	}
	tasks := make([]Task, 0, len(list.Content))
	seen := make(map[string]int, len(list.Content))
	for i, n := range list.Content {
		t, ok := p.task(n, i)
		if !ok {
			continue
		}
		if first, dup := seen[t.ID]; dup {
			p.errorf(t.Line, t.ID, "duplicate id; the first task with it is on line %d", first)
			continue
		}
		seen[t.ID] = t.Line
		tasks = append(tasks, t)
	}
	return tasks
}

// mapping calls f for each key of the mapping n in order, reporting
// non-string keys, duplicate keys and aliases (which the format has no use
// for, and which would let a small file expand into a huge one).
func (p *parser) mapping(n *yaml.Node, task string, f func(key string, k, v *yaml.Node)) {
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			p.errorf(k.Line, task, "keys must be plain names")
			continue
		}
		if seen[k.Value] {
			p.errorf(k.Line, task, "key %q appears twice", k.Value)
			continue
		}
		seen[k.Value] = true
		if v.Kind == yaml.AliasNode {
			p.errorf(v.Line, task, "key %q: YAML aliases are not supported", k.Value)
			continue
		}
		f(k.Value, k, v)
	}
}

// task reads the i-th entry of the task list.
func (p *parser) task(n *yaml.Node, i int) (Task, bool) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "task %d must be a mapping with %q, %q and optionally %q, %q, %q", i+1, keyID, keyDescription, keyFiles, keyTests, keyDependsOn)
		return Task{}, false
	}
	t := Task{Line: n.Line}
	// The id names the task in every later error, so find it first.
	for j := 0; j+1 < len(n.Content); j += 2 {
		if k, v := n.Content[j], n.Content[j+1]; k.Kind == yaml.ScalarNode && k.Value == keyID && v.Kind == yaml.ScalarNode && !isNull(v) {
			t.ID = v.Value
			break
		}
	}
	name := t.ID
	if !hook.ValidSessionID(name) {
		name = ""
	}
	before := len(p.errs)
	var hasID, hasDesc bool
	p.mapping(n, name, func(key string, k, v *yaml.Node) {
		switch key {
		case keyID:
			hasID = true
			switch {
			case v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "":
				p.errorf(v.Line, "", "task %d: %q must be a non-empty name", i+1, keyID)
			case !hook.ValidSessionID(v.Value):
				p.errorf(v.Line, "", "task %d: id %q is not valid (letters, digits, '-' and '_' only, not starting with '-' or '_', at most 128)", i+1, clip(v.Value))
			}
		case keyDescription:
			hasDesc = true
			if v.Kind != yaml.ScalarNode || isNull(v) {
				p.errorf(v.Line, name, "%q must be text", keyDescription)
				return
			}
			t.Description = strings.TrimSpace(v.Value)
			if t.Description == "" {
				p.errorf(v.Line, name, "%q is empty; the agent would have nothing to do", keyDescription)
			}
		case keyFiles:
			t.Files = p.paths(v, name, key, checkPath)
		case keyTests:
			t.Tests = p.paths(v, name, key, checkPath)
		case keyDependsOn:
			t.DependsOn = p.strings(v, name, key)
		default:
			p.errorf(k.Line, name, "unknown key %q (known: %s, %s, %s, %s, %s)", key, keyID, keyDescription, keyFiles, keyTests, keyDependsOn)
		}
	})
	if !hasID {
		p.errorf(n.Line, "", "task %d has no %q", i+1, keyID)
	}
	if !hasDesc {
		p.errorf(n.Line, name, "no %q", keyDescription)
	}
	return t, len(p.errs) == before
}

// strings reads a list of dependency ids. An absent or null list is empty.
func (p *parser) strings(v *yaml.Node, task, key string) []string {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, task, "%q must be a list", key)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	seen := make(map[string]bool, len(v.Content))
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode || isNull(e) {
			p.errorf(e.Line, task, "%q entries must be task ids", key)
			continue
		}
		if seen[e.Value] {
			p.errorf(e.Line, task, "%q lists %q twice", key, clip(e.Value))
			continue
		}
		seen[e.Value] = true
		out = append(out, e.Value)
	}
	return out
}

// paths reads a list of repository paths, each checked by check.
func (p *parser) paths(v *yaml.Node, task, key string, check func(string) string) []string {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, task, "%q must be a list of paths", key)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode || isNull(e) {
			p.errorf(e.Line, task, "%q entries must be paths", key)
			continue
		}
		if msg := check(e.Value); msg != "" {
			p.errorf(e.Line, task, "%q entry %q %s", key, clip(e.Value), msg)
			continue
		}
		out = append(out, e.Value)
	}
	return out
}

// checkPath says what is wrong with an entry of a task's files or tests
// (a path, a glob or a Go package pattern), or "". Paths
// are relative to the repository root and stay inside it; they end up on
// command lines, so none may look like a flag.
func checkPath(s string) string {
	switch {
	case s == "":
		return "is empty"
	case strings.ContainsAny(s, "\x00\n\r"):
		return "contains a control character"
	case strings.HasPrefix(s, "-"):
		return "starts with '-'"
	case strings.HasPrefix(s, "/") || strings.Contains(s, "\\"):
		return "is not a relative path with '/' separators"
	case escapes(s):
		return "leaves the repository"
	}
	return ""
}

// escapes reports whether the relative path s has a ".." element.
func escapes(s string) bool {
	for _, el := range strings.Split(s, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

// checkGraph reports dependencies on unknown tasks, on the task itself,
// and cycles.
func (p *parser) checkGraph(tasks []Task) {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.ID] = i
	}
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			switch _, ok := index[d]; {
			case d == t.ID:
				p.errorf(t.Line, t.ID, "depends on itself")
			case !ok:
				p.errorf(t.Line, t.ID, "depends on %q, which is not a task in this file", clip(d))
			}
		}
	}
	if len(p.errs) > 0 {
		return
	}
	if cycle := findCycle(tasks, index); cycle != nil {
		first := tasks[index[cycle[0]]]
		p.errorf(first.Line, first.ID, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
}

// findCycle returns the ids along one dependency cycle, starting and ending
// with the same id, or nil when there is none. It assumes every dependency
// names a task. The search is iterative so that a long chain cannot exhaust
// the stack.
func findCycle(tasks []Task, index map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(tasks))
	type frame struct{ task, next int }
	for start := range tasks {
		if color[start] != white {
			continue
		}
		stack := []frame{{task: start}}
		color[start] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			deps := tasks[top.task].DependsOn
			if top.next == len(deps) {
				color[top.task] = black
				stack = stack[:len(stack)-1]
				continue
			}
			d := index[deps[top.next]]
			top.next++
			switch color[d] {
			case white:
				color[d] = grey
				stack = append(stack, frame{task: d})
			case grey:
				// d is on the stack: the cycle is from there to here, and
				// back to d.
				var cycle []string
				on := false
				for _, f := range stack {
					on = on || f.task == d
					if on {
						cycle = append(cycle, tasks[f.task].ID)
					}
				}
				return append(cycle, tasks[d].ID)
			}
		}
	}
	return nil
}

// Task returns the task with the given id.
func (g Graph) Task(id string) (Task, bool) {
	for _, t := range g.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return Task{}, false
}

// Waves returns the tasks in topological layers: a task is in the wave
// after the latest wave of any of its dependencies, so all tasks of a wave
// can run at the same time once the waves before it are done. Within a wave
// tasks keep file order. On a graph that did not come from Parse, a task
// whose dependencies are missing or circular is left out.
func (g Graph) Waves() [][]Task {
	index := make(map[string]int, len(g.Tasks))
	for i, t := range g.Tasks {
		index[t.ID] = i
	}
	// Kahn's algorithm: a task is placed once all its dependencies are,
	// one wave after the latest of them.
	level := make([]int, len(g.Tasks))
	waiting := make([]int, len(g.Tasks))
	dependents := make([][]int, len(g.Tasks))
	placed := make([]bool, len(g.Tasks))
	var queue []int
	for i, t := range g.Tasks {
		for _, d := range t.DependsOn {
			j, known := index[d]
			if !known {
				waiting[i] = -1 // never placed
				break
			}
			waiting[i]++
			dependents[j] = append(dependents[j], i)
		}
		if waiting[i] == 0 {
			queue = append(queue, i)
		}
	}
	var waves [][]Task
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		placed[i] = true
		for _, j := range dependents[i] {
			level[j] = max(level[j], level[i]+1)
			if waiting[j]--; waiting[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	for i, t := range g.Tasks {
		if !placed[i] {
			continue
		}
		l := level[i]
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], t)
	}
	return waves
}

// Order returns every task in an order where each task comes after its
// dependencies: the waves one after the other. It is the order in which
// finished branches are merged.
func (g Graph) Order() []Task {
	var out []Task
	for _, w := range g.Waves() {
		out = append(out, w...)
	}
	return out
}

// Ready returns the tasks that can start now, in file order: not done, not
// in running, and with every dependency done. running holds the tasks that
// are started or must not be started again (in flight, failed, waiting for
// review); a task whose dependency is not done is never ready.
func (g Graph) Ready(done map[string]bool, running map[string]bool) []Task {
	var out []Task
	for _, t := range g.Tasks {
		if done[t.ID] || running[t.ID] {
			continue
		}
		ok := true
		for _, d := range t.DependsOn {
			if !done[d] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// TargetedTests returns the tests a task runs between its iterations, as
// paths or patterns relative to the repository root, without duplicates.
//
// When the task lists tests, those are used; otherwise they are derived
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
// An empty result means no targeted tests; the caller runs the full suite
// instead.
func TargetedTests(t Task, goTree fs.FS) []string {
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
