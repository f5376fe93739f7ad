package rungraph

// Parse and its checks: the strict reading of a graph file.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/hook"
)

// Keys of the file. Only these are accepted.
const (
	keyTasks       = "tasks"
	keyID          = "id"
	keyDescription = "description"
	keyFiles       = "files"
	keyTests       = "tests"
	keyDependsOn   = "depends-on"
	keyParallel    = "parallel"
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
		p.errorf(n.Line, "", "task %d must be a mapping with %q, %q and optionally %q, %q, %q, %q", i+1, keyID, keyDescription, keyFiles, keyTests, keyDependsOn, keyParallel)
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
			// An empty list says "none"; only an absent or null field
			// leaves the tests to be derived.
			t.NoTests = v.Kind == yaml.SequenceNode && len(v.Content) == 0
		case keyDependsOn:
			t.DependsOn = p.strings(v, name, key)
		case keyParallel:
			var parallel bool
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&parallel) != nil {
				p.errorf(v.Line, name, "%q must be true or false", keyParallel)
				return
			}
			t.Alone = !parallel
		default:
			p.errorf(k.Line, name, "unknown key %q (known: %s, %s, %s, %s, %s, %s)", key, keyID, keyDescription, keyFiles, keyTests, keyDependsOn, keyParallel)
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
