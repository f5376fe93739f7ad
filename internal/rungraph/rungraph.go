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
	"fmt"
	"strings"
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
	// the targeted tests when the file gives no tests.
	Files []string
	// Tests are the targeted tests run between the task's iterations, as
	// written in the file (see TargetedTests for the form the runner uses).
	Tests []string
	// NoTests is set by an explicit empty list, `tests: []`: the task has
	// no targeted tests (a docs task, say), none are derived from its
	// files, and nothing runs between its iterations; the wave's suite
	// still checks it. An absent (or null) tests field is derived.
	NoTests bool
	// DependsOn lists the ids of the tasks that must be done first.
	DependsOn []string
	// Alone is set by `parallel: false`: the task runs with no other task
	// of its wave at the same time (it edits what they would, or needs
	// the machine to itself). The default, `parallel: true`, lets it run
	// beside the others, up to the run's concurrency.
	Alone bool
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
