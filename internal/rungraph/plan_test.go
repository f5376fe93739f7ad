package rungraph

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/workflow/plan"
)

func TestFromPlan(t *testing.T) {
	type want struct {
		id, desc string
		deps     []string
	}
	cases := []struct {
		name  string
		md    string
		files map[string]string
		want  []want
		waves [][]string
	}{
		{
			name: "a chain, done tasks skipped, task files describe",
			md: "| Id | Status | Description |\n|----|--------|-------------|\n" +
				"| 1 | done | Set up. |\n" +
				"| 2 | pending | Parse. |\n" +
				"| 3 | ✅ | Lex. |\n" +
				"| 4 | in progress | Print. |\n",
			files: map[string]string{"2": "# Task 2\n\nParse the input into a tree.\n", "1": "ignored: done"},
			want: []want{
				{"2", "# Task 2\n\nParse the input into a tree.", nil},
				{"4", "Print.", []string{"2"}},
			},
			waves: [][]string{{"2"}, {"4"}},
		},
		{
			name: "a Depends on column",
			md: "| Id | Status | Depends on | Description |\n| --- | --- | --- | --- |\n" +
				"| a | done | | A. |\n" +
				"| b | todo | a | B. |\n" +
				"| c | todo | `a`, b | C. |\n" +
				"| d | todo | none | D. |\n" +
				"| e | todo | c, d | E. |\n",
			want: []want{
				{"b", "B.", nil},
				{"c", "C.", []string{"b"}},
				{"d", "D.", nil},
				{"e", "E.", []string{"c", "d"}},
			},
			waves: [][]string{{"b", "d"}, {"c"}, {"e"}},
		},
		{
			name: "no separator line, Task column, dependencies header spelt otherwise",
			md:   "intro text is ignored\n| ID | Task | Status | Dependencies |\n| x | Do x. | open | - |\n| **y** | Do y. | open | x |\n",
			want: []want{
				{"x", "Do x.", nil},
				{"y", "Do y.", []string{"x"}},
			},
			waves: [][]string{{"x"}, {"y"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, g, err := FromPlan(PlanTasks{File: ".drover/plans/p/tasks.md", TasksMD: c.md, TaskFiles: c.files})
			if err != nil {
				t.Fatal(err)
			}
			if g.File != ".drover/plans/p/tasks.md" || len(g.Tasks) != len(c.want) {
				t.Fatalf("graph %+v, want %d tasks from the plan file", g, len(c.want))
			}
			for i, w := range c.want {
				got := g.Tasks[i]
				if got.ID != w.id || got.Description != w.desc || !slices.Equal(got.DependsOn, w.deps) {
					t.Errorf("task %d = %+v, want %+v", i, got, w)
				}
			}
			if got := waveIDs(g.Waves()); !slices.EqualFunc(got, c.waves, slices.Equal) {
				t.Errorf("waves %q, want %q", got, c.waves)
			}
			// The graph file is what a run stores and resumes from.
			again, err := Parse(data, "stored")
			if err != nil || len(again.Tasks) != len(g.Tasks) {
				t.Fatalf("the graph file does not parse back: %v\n%s", err, data)
			}
			for i := range again.Tasks {
				a, b := again.Tasks[i], g.Tasks[i]
				if a.ID != b.ID || a.Description != b.Description || !slices.Equal(a.DependsOn, b.DependsOn) {
					t.Errorf("parsed back task %d = %+v, want %+v", i, a, b)
				}
			}
		})
	}
}

func TestFromPlanErrors(t *testing.T) {
	const head = "| Id | Status | Depends on | Description |\n|---|---|---|---|\n"
	cases := []struct {
		name string
		md   string
		want []string
	}{
		{"empty", "", []string{"tasks.md: has no task rows"}},
		{"header only", head, []string{"has no task rows"}},
		{"all done", head + "| 1 | done | | A. |\n| 2 | complete | | B. |\n", []string{"every task is done"}},
		{"bad id", head + "| 1.5 | todo | | A. |\n", []string{`tasks.md:3: "1.5" is not a task id`}},
		{"id a run refuses", head + "| _x | todo | | A. |\n", []string{`tasks.md:3: task "_x": a task id of a run must start`}},
		{"duplicate", head + "| 1 | todo | | A. |\n| 1 | todo | | B. |\n", []string{`tasks.md:4: task "1": duplicate id; the first row with it is on line 3`}},
		{"missing dependency", head + "| 1 | todo | 7 | A. |\n", []string{`tasks.md:3: task "1": depends on "7", which is not a task of the plan`}},
		{"self", head + "| 1 | todo | 1 | A. |\n", []string{`task "1": depends on itself`}},
		{"cycle", head + "| 1 | todo | 2 | A. |\n| 2 | todo | 1 | B. |\n", []string{`tasks.md:3: task "1": dependency cycle: 1 -> 2 -> 1`}},
		{"nothing to do", head + "| 1 | todo | | |\n", []string{`tasks.md:3: task "1": has nothing to do: no task-1.md`}},
		{"every problem", head + "| 1 | todo | 7 | |\n| 2 | todo | 8 | B. |\n", []string{`task "1": has nothing to do`, `task "1": depends on "7"`, `task "2": depends on "8"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := FromPlan(PlanTasks{File: ".drover/plans/p/tasks.md", TasksMD: c.md})
			if err == nil {
				t.Fatal("FromPlan accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), ".drover/plans/p/tasks.md") {
				t.Errorf("error %q does not name the plan file", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}

func TestDependencyIDs(t *testing.T) {
	for cell, want := range map[string][]string{
		"":             nil,
		"-":            nil,
		"None":         nil,
		"a":            {"a"},
		" a , `b`,,a ": {"a", "b"},
		"**c**, n/a":   {"c"},
	} {
		if got := dependencyIDs(cell); !slices.Equal(got, want) {
			t.Errorf("dependencyIDs(%q) = %q, want %q", cell, got, want)
		}
	}
}

func FuzzFromPlan(f *testing.F) {
	f.Add("| Id | Status | Description |\n|---|---|---|\n| 1 | todo | A. |\n| 2 | done | B. |\n", "task one")
	f.Add("| Id | Status | Depends on | Description |\n|---|---|---|---|\n| a | todo | b | A. |\n| b | todo | a | B. |\n", "")
	f.Add("| x |\n| y | | z, w |\n", "- starts with a dash\n\ttabs: {and} [yaml]\n")
	f.Fuzz(func(t *testing.T, md, file string) {
		data, g, err := FromPlan(PlanTasks{File: "tasks.md", TasksMD: md, TaskFiles: map[string]string{"1": file, "a": file}})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !strings.Contains(err.Error(), "tasks.md") {
				t.Fatalf("error %q names neither the file nor a task", err)
			}
			return
		}
		again, err := Parse(data, "tasks.md")
		if err != nil || len(again.Tasks) != len(g.Tasks) || len(g.Tasks) == 0 {
			t.Fatalf("FromPlan's graph file does not parse back to its graph: %v\n%s", err, data)
		}
		if n := len(g.Order()); n != len(g.Tasks) {
			t.Fatalf("%d of %d tasks are in the order", n, len(g.Tasks))
		}
	})
}

func TestMarkDone(t *testing.T) {
	cases := []struct {
		name   string
		md     string
		ids    []string
		want   string
		marked []string
	}{
		{
			name: "status second, aligned cells keep their width",
			md: "# Tasks\n\n| Id | Status      | Description |\n|----|-------------|-------------|\n" +
				"| 1  | done        | One.        |\n| 2  | in progress | Two.        |\n| 3  | pending     | Three.      |\n",
			ids: []string{"1", "2", "3"},
			want: "# Tasks\n\n| Id | Status      | Description |\n|----|-------------|-------------|\n" +
				"| 1  | done        | One.        |\n| 2  | done        | Two.        |\n| 3  | done        | Three.      |\n",
			marked: []string{"2", "3"},
		},
		{
			name:   "a Status column elsewhere, ids with emphasis, a task not named is kept",
			md:     "| ID | Task | Status |\n| **x** | Do x. | open |\n| `y` | Do y. |todo|\n",
			ids:    []string{"x"},
			want:   "| ID | Task | Status |\n| **x** | Do x. | done |\n| `y` | Do y. |todo|\n",
			marked: []string{"x"},
		},
		{
			name:   "a row that opens with two pipes keeps its id",
			md:     "| Id | Status |\n|---|---|\n|| 1 | todo |\n",
			ids:    []string{"1"},
			want:   "| Id | Status |\n|---|---|\n|| 1 | done |\n",
			marked: []string{"1"},
		},
		{
			name:   "no trailing pipe, CRLF line endings",
			md:     "| Id | Status | Description\r\n|---|---|---\r\n| a | todo | A.\r\n",
			ids:    []string{"a"},
			want:   "| Id | Status | Description\r\n|---|---|---\r\n| a | done | A.\r\n",
			marked: []string{"a"},
		},
		{
			name: "a row without a status cell is left",
			md:   "| Id | Status |\n|---|---|\n| a |\n",
			ids:  []string{"a"},
			want: "| Id | Status |\n|---|---|\n| a |\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, marked := MarkDone(tc.md, tc.ids)
			if got != tc.want || !slices.Equal(marked, tc.marked) {
				t.Errorf("MarkDone = %q, %v\nwant %q, %v", got, marked, tc.want, tc.marked)
			}
			// What is marked is done for the next run --plan.
			for _, id := range tc.marked {
				_, g, err := FromPlan(PlanTasks{TasksMD: got + "| zz | todo | Left. |\n"})
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := g.Task(id); ok {
					t.Errorf("task %s is still worked after MarkDone", id)
				}
			}
		})
	}
}

// TestMarkDoneMarksEveryRowOfATask: a task listed twice (a hand edit
// during the run; run --plan refuses such a file) has both rows marked, so
// that the plan workflow does not read it as still to do, and is named
// once.
func TestMarkDoneMarksEveryRowOfATask(t *testing.T) {
	md := "| Id | Status |\n|---|---|\n| 2 | todo |\n| 3 | todo |\n| 2 | todo |\n"
	want := "| Id | Status |\n|---|---|\n| 2 | done |\n| 3 | todo |\n| 2 | done |\n"
	got, marked := MarkDone(md, []string{"2"})
	if got != want || !slices.Equal(marked, []string{"2"}) {
		t.Errorf("MarkDone = %q, %v\nwant %q, [2]", got, marked, want)
	}
	for _, r := range plan.Tasks(got) {
		if r.ID == "2" && !r.Done() {
			t.Errorf("a row of task 2 reads %q for the plan workflow", r.Status)
		}
	}
}

// FuzzMarkDone marks arbitrary tasks of an arbitrary tasks.md done. The
// tasks marked are among those asked for, each once; read back as the plan
// workflow reads it, every marked task is done and every row keeps its id
// and its other cells; rows not marked keep their lines byte for byte; a
// second pass marks nothing.
func FuzzMarkDone(f *testing.F) {
	f.Add("# Tasks\n\n| Id | Status      | Description |\n|----|-------------|-------------|\n| 1  | done        | One.        |\n| 2  | in progress | Two.        |\n", "1,2,3")
	f.Add("| ID | Task | Status |\n| **x** | Do x. | open |\n| `y` | Do y. |todo|\n", "x")
	f.Add("| Id | Status | Description\r\n|---|---|---\r\n| a | todo | A.\r\n", "a")
	f.Add("| Id | Status |\n|| 1 | todo |\n", "1")
	f.Add("| Id | Status |\n  | 2 | todo\u00a0|\n", "2")
	f.Add("| 1 |\n| 2 | todo | x |\n", "1,2")
	f.Fuzz(func(t *testing.T, md, idList string) {
		ids := strings.Split(idList, ",")
		out, marked := MarkDone(md, ids)
		seen := map[string]bool{}
		for _, id := range marked {
			if !slices.Contains(ids, id) || seen[id] {
				t.Fatalf("marked %q: not asked for, or twice (marked %q, asked %q)", id, marked, ids)
			}
			seen[id] = true
		}
		inLines, outLines := strings.Split(md, "\n"), strings.Split(out, "\n")
		if len(inLines) != len(outLines) {
			t.Fatalf("MarkDone changed the number of lines:\n%q\n%q", md, out)
		}
		header, rows := plan.Table(md)
		outHeader, outRows := plan.Table(out)
		if !slices.Equal(header, outHeader) || len(rows) != len(outRows) {
			t.Fatalf("MarkDone changed the table's header or rows:\n%q\n%q", md, out)
		}
		statusCol := 1
		for i, h := range header {
			if strings.EqualFold(h, "status") {
				statusCol = i
			}
		}
		for i, r := range rows {
			o := outRows[i]
			id := cellID(r.Cells[0])
			if !seen[id] || r.Line != o.Line {
				if r.Line == o.Line && inLines[r.Line-1] != outLines[o.Line-1] && !seen[cellID(o.Cells[0])] {
					t.Fatalf("row %q was changed to %q, though not marked", inLines[r.Line-1], outLines[o.Line-1])
				}
				continue
			}
			if len(o.Cells) != len(r.Cells) {
				t.Fatalf("marking %q changed the cells %q to %q", id, r.Cells, o.Cells)
			}
			for c := range r.Cells {
				switch {
				case c == statusCol && !(plan.TaskRow{ID: id, Status: o.Cells[c]}).Done():
					t.Fatalf("task %q was marked, but its status reads %q in %q", id, o.Cells[c], outLines[o.Line-1])
				case c != statusCol && o.Cells[c] != r.Cells[c]:
					t.Fatalf("marking %q changed cell %d from %q to %q: %q", id, c, r.Cells[c], o.Cells[c], outLines[o.Line-1])
				}
			}
		}
		if again, more := MarkDone(out, ids); len(more) > 0 || again != out {
			t.Fatalf("a second pass marked %q again:\n%q\n%q", more, out, again)
		}
	})
}
