package rungraph

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// PlanTasks is the task list of a plan folder, as `drover run --plan`
// reads it.
type PlanTasks struct {
	// File names tasks.md in errors, e.g. ".drover/plans/p1/tasks.md".
	File string
	// TasksMD is the content of tasks.md: a Markdown table with the task
	// id first, a Status column, a Description column and optionally a
	// "Depends on" column of comma-separated task ids.
	TasksMD string
	// TaskFiles holds the content of task-<id>.md by task id, for the
	// tasks that have one.
	TaskFiles map[string]string
}

// FromPlan turns a plan's task table into a task graph: one task per row
// that is not done (plan.TaskRow.Done), described by its task file (or,
// without one, by the row's Description). A task depends on the tasks its
// "Depends on" cell names; without that column, on the task before it, so
// the plan's tasks run one after the other. A dependency on a done task is
// already met and dropped.
//
// It returns the graph as a graph file (what a run stores and resumes
// from) and parsed. Problems are *Error values naming File, the row's line
// and the task: a row whose id is not a task id, a duplicate id, a task
// with nothing to do, a dependency on a task not in the table, a cycle.
func FromPlan(p PlanTasks) ([]byte, Graph, error) {
	file := p.File
	if file == "" {
		file = "tasks.md"
	}
	pr := parser{file: file}
	header, rows := plan.Table(p.TasksMD)
	descCol, depsCol := planColumns(header)

	byID := make(map[string]plan.TableRow, len(rows))
	for _, r := range rows {
		id := cellID(r.Cells[0])
		switch {
		case !plan.ValidTaskID(id):
			pr.errorf(r.Line, "", "%q is not a task id (letters, digits, '_' and '-', at most 64)", clip(id))
		case !hook.ValidSessionID(id):
			pr.errorf(r.Line, id, "a task id of a run must start with a letter or a digit")
		default:
			if first, dup := byID[id]; dup {
				pr.errorf(r.Line, id, "duplicate id; the first row with it is on line %d", first.Line)
				continue
			}
			byID[id] = r
		}
	}
	if len(pr.errs) > 0 {
		return nil, Graph{}, pr.err()
	}
	list := plan.Tasks(p.TasksMD)
	if len(list) == 0 {
		pr.errorf(0, "", "has no task rows (a Markdown table | Id | Status | Description |)")
		return nil, Graph{}, pr.err()
	}

	done := make(map[string]bool, len(list))
	for _, row := range list {
		done[row.ID] = row.Done()
	}
	var tasks []Task
	prev := ""
	for _, row := range list {
		if done[row.ID] {
			continue
		}
		r := byID[row.ID]
		t := Task{ID: row.ID, Line: r.Line}
		t.Description = strings.TrimSpace(p.TaskFiles[row.ID])
		if t.Description == "" && descCol < len(r.Cells) {
			t.Description = strings.TrimSpace(r.Cells[descCol])
		}
		if t.Description == "" {
			pr.errorf(r.Line, t.ID, "has nothing to do: no task-%s.md and an empty description", t.ID)
		}
		switch {
		case depsCol < 0:
			if prev != "" {
				t.DependsOn = []string{prev}
			}
		case depsCol < len(r.Cells):
			for _, d := range dependencyIDs(r.Cells[depsCol]) {
				if _, ok := byID[d]; !ok {
					pr.errorf(r.Line, t.ID, "depends on %q, which is not a task of the plan", clip(d))
					continue
				}
				if !done[d] {
					t.DependsOn = append(t.DependsOn, d)
				}
			}
		}
		prev = t.ID
		tasks = append(tasks, t)
	}
	if len(pr.errs) == 0 && len(tasks) == 0 {
		pr.errorf(0, "", "every task is done; there is nothing to run")
	}
	if len(pr.errs) == 0 {
		pr.checkGraph(tasks)
	}
	if len(pr.errs) > 0 {
		return nil, Graph{}, pr.err()
	}
	data, err := marshalGraph(tasks)
	if err != nil {
		return nil, Graph{}, fmt.Errorf("writing the task graph of %s: %w", file, err)
	}
	g, err := Parse(data, file)
	if err != nil {
		return nil, Graph{}, err
	}
	return data, g, nil
}

// planColumns finds the description and dependency columns by their
// headers. Without a header that says so the description is the third
// column (| Id | Status | Description |) and there are no dependencies
// (-1).
func planColumns(header []string) (desc, deps int) {
	desc, deps = 2, -1
	for i, h := range header {
		switch normalize(h) {
		case "description", "task", "title", "summary":
			if i > 0 {
				desc = i
			}
		case "dependson", "depends", "dependencies", "deps":
			deps = i
		}
	}
	return desc, deps
}

// normalize keeps the lower-cased letters of a header: "Depends on",
// "depends-on" and "**Depends On**" are one name.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cellID is the task id written in a cell, without Markdown emphasis or
// code marks.
func cellID(s string) string {
	return strings.Trim(strings.TrimSpace(s), "`*")
}

// dependencyIDs splits a "Depends on" cell: comma-separated ids, where an
// empty cell, "-", "—", "none" or "n/a" means none.
func dependencyIDs(cell string) []string {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(cell, ",") {
		id := cellID(part)
		switch strings.ToLower(id) {
		case "", "-", "—", "none", "n/a":
			continue
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// graphFile and graphTask are the graph file's shape, for writing one.
type graphFile struct {
	Tasks []graphTask `yaml:"tasks"`
}

type graphTask struct {
	ID          string   `yaml:"id"`
	Description string   `yaml:"description"`
	DependsOn   []string `yaml:"depends-on,omitempty"`
}

func marshalGraph(tasks []Task) ([]byte, error) {
	f := graphFile{Tasks: make([]graphTask, len(tasks))}
	for i, t := range tasks {
		f.Tasks[i] = graphTask{ID: t.ID, Description: t.Description, DependsOn: t.DependsOn}
	}
	return yaml.Marshal(f)
}

// MarkDone returns tasksMD with the Status cell of each row whose task id
// is in ids set to "done", the word the plan workflow reads as finished
// (plan.TaskRow.Done), so that the next `drover run --plan` (FromPlan)
// and the plan workflow skip those tasks. The status column is the one
// the plan workflow reads (plan.StatusColumn). Everything else is kept
// byte for byte; a row already done, or without a status cell, is left as
// it is. marked are the ids changed.
func MarkDone(tasksMD string, ids []string) (out string, marked []string) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	header, rows := plan.Table(tasksMD)
	statusCol := plan.StatusColumn(header)
	lines := strings.Split(tasksMD, "\n")
	for _, r := range rows {
		id := cellID(r.Cells[0])
		if !want[id] || statusCol >= len(r.Cells) || (plan.TaskRow{ID: id, Status: r.Cells[statusCol]}).Done() {
			continue
		}
		line, ok := setCell(lines[r.Line-1], statusCol, "done")
		if !ok {
			continue
		}
		lines[r.Line-1] = line
		// A task listed twice has each of its rows marked (the plan
		// workflow would read the one left as not done), and is named
		// once.
		if !slices.Contains(marked, id) {
			marked = append(marked, id)
		}
	}
	return strings.Join(lines, "\n"), marked
}

// setCell replaces the text of cell col (0-based, as plan.Table counts
// them) of a table line with text, padded to the cell's old width so that
// an aligned table stays aligned.
func setCell(line string, col int, text string) (string, bool) {
	body, cr := strings.CutSuffix(line, "\r")
	start := strings.IndexByte(body, '|')
	if start < 0 {
		return line, false
	}
	// plan.Table trims every leading pipe ("|| 1 |" is the row "1"): the
	// first cell starts after the last of them.
	for start+1 < len(body) && body[start+1] == '|' {
		start++
	}
	// The cell's bounds: after the col+1-th pipe from the first, up to
	// the next pipe or the end of the line.
	from := start
	for range col {
		next := strings.IndexByte(body[from+1:], '|')
		if next < 0 {
			return line, false
		}
		from += 1 + next
	}
	to := len(body)
	if next := strings.IndexByte(body[from+1:], '|'); next >= 0 {
		to = from + 1 + next
	}
	cell := " " + text + " "
	if pad := (to - from - 1) - len(cell); pad > 0 {
		cell += strings.Repeat(" ", pad)
	}
	out := body[:from+1] + cell + body[to:]
	if cr {
		out += "\r"
	}
	return out, true
}
