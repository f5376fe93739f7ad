package plan

import (
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	table := "| Id | Status |\n|---|---|\n| 1 | pending |\n"
	tests := []struct {
		name  string
		files []string
		tasks string
		want  []string
	}{
		{name: "every conventional name", tasks: table, files: []string{
			"plan.md", "design.md", "tasks.md", "task-1.md", "task-auth_2.md", "plan-review-1.md", "plan-post-review-1.md",
			"design-review-12.md", "tasks-review-2.md", "tasks-post-review-2.md", "task-1-review-3.md", "task-1-post-review-3.md",
			"all-code-review-1.md", "all-code-post-review-1.md", "state.json", ".review-1.log", "notes.txt",
		}},
		{name: "names that are not", files: []string{"plan.md", "Plan.md", "task-.md", "task-1-review-x.md", "review-1.md", "plan-review-.md", "2024-01-01-plan.md"}, want: []string{
			"Invalid filename: 2024-01-01-plan.md (not a plan file name)",
			"Invalid filename: Plan.md (not a plan file name)",
			"Invalid filename: plan-review-.md (not a plan file name)",
			"Invalid filename: review-1.md (not a plan file name)",
			"Invalid filename: task-.md (not a plan file name)",
			// task-1-review-x.md is a well-named task "1-review-x".
			"Task files exist but tasks.md is missing",
		}},
		{name: "every rule at once", tasks: "| only | header |\n|---|---|\n", files: []string{"tasks.md", "tasks-review-1.md", "design-post-review-2.md", "a/b.md", "a/c/d.md"}, want: []string{
			"Missing required file: plan.md",
			"Files found in nested directories (they must be directly in the plan folder): a/b.md, a/c/d.md",
			"Post-review file design-post-review-2.md exists but design-review-2.md does not",
			"tasks.md has no task rows (a header-only table)",
		}},
		{name: "a task review is not a task file", files: []string{"plan.md", "task-1-review-1.md"}},
		{name: "many nested files are listed briefly", files: []string{"plan.md", "a/1.md", "a/2.md", "a/3.md", "a/4.md", "a/5.md", "a/6.md", "a/7.md"}, want: []string{
			"Files found in nested directories (they must be directly in the plan folder): a/1.md, a/2.md, a/3.md, a/4.md, a/5.md, and 2 more",
		}},
		{name: "nested non-Markdown files are fine", files: []string{"plan.md", "assets/diagram.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(Facts{Files: tt.files, TasksMD: tt.tasks}, tm)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestCheckTable(t *testing.T) {
	tests := []struct{ content, want string }{
		{"| Id | Status |\n|---|---|\n| 1 | pending |\n", ""},
		{"\n\n| Id |\n|---|\n| 1 |\n\n", ""},
		{"", "no table rows"},
		{"   \n", "no table rows"},
		{"| Id |\n|---|\n", "no task rows"},
		{"# Tasks\n| Id |\n|---|\n| 1 |\n", "non-table"},
		{"| Id |\n|---|\n| 1 |\nnotes", "non-table"},
		{"|\n|\n|\n", "non-table"},
	}
	for _, tt := range tests {
		got, err := checkTable(tt.content, tm)
		if err != nil {
			t.Fatal(err)
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("checkTable(%q) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

func TestTasks(t *testing.T) {
	md := "| Id | Priority | Status | Description |\n" +
		"|:---|---|:---:|---|\n" +
		"| 1 | high | done | a |\n" +
		"| `2` | low | In progress | b |\n" +
		"| **3** | low | pending | c |\n" +
		"| ../4 | low | pending | d |\n" +
		"| 5 | low | not done | e |\n" +
		"| 6 | low | ✅ | f |\n" +
		"| 7 |\n"
	got := Tasks(md)
	want := []TaskRow{{"1", "done"}, {"2", "In progress"}, {"3", "pending"}, {"5", "not done"}, {"6", "✅"}, {"7", ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("Tasks =\n%v\nwant\n%v", got, want)
	}
	if rest := Remaining(md, "3"); !slices.Equal(rest, []string{"2", "5", "7"}) {
		t.Errorf("Remaining = %v", rest)
	}
	// Without a Status header the second column is the status.
	if got := Tasks("| Id | State |\n|--|--|\n| 9 | done |\n"); len(got) != 1 || !got[0].Done() {
		t.Errorf("default status column: %v", got)
	}
	if Tasks("no table") != nil {
		t.Error("rows from prose")
	}
}

func TestIDs(t *testing.T) {
	for _, id := range []string{"1", "auth_2", "a-b", strings.Repeat("x", 64)} {
		if !ValidTaskID(id) {
			t.Errorf("ValidTaskID(%q) = false", id)
		}
	}
	for _, id := range []string{"", "-1", "1-", "a/b", "..", "1 2", "1-review-2", "1-post-review-3", strings.Repeat("x", 65)} {
		if ValidTaskID(id) {
			t.Errorf("ValidTaskID(%q) = true", id)
		}
	}
	for _, id := range []string{"p1", "2026-02-03.auth", "A_b"} {
		if !ValidPlanID(id) {
			t.Errorf("ValidPlanID(%q) = false", id)
		}
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", ".hidden", "-x", "a b", strings.Repeat("x", 129)} {
		if ValidPlanID(id) {
			t.Errorf("ValidPlanID(%q) = true", id)
		}
	}
}

func TestCheckView(t *testing.T) {
	full := `{"phase":"x","next_phase":null,"current_task":null,"phase_iteration":null,"max_reviews":8,"review_model":"opus","consecutive_clean":0,"tdd":false}`
	tests := []struct {
		view string
		nil_ bool
		want string
	}{
		{nil_: true},
		{view: full},
		{view: strings.Replace(full, "{", `{"extra":[1,2],`, 1)},
		{view: "", want: "not valid JSON"},
		{view: "{", want: "not valid JSON"},
		{view: "null", want: "not a JSON object"},
		{view: "[1]", want: "not a JSON object"},
		{view: `{"phase":"x"}`, want: "missing field(s): next_phase, current_task, phase_iteration, max_reviews, review_model, consecutive_clean, tdd"},
	}
	for _, tt := range tests {
		var v []byte
		if !tt.nil_ {
			v = []byte(tt.view)
		}
		got, err := CheckView(v, tm)
		if err != nil || got != tt.want {
			t.Errorf("CheckView(%q) = %q, %v, want %q", tt.view, got, err, tt.want)
		}
	}
}

// FuzzTasks holds the tasks.md parser to its contract on any input: no
// panic, and every id it returns is safe in a file name.
func FuzzTasks(f *testing.F) {
	f.Add(tasksTable)
	f.Add("| Id | Status |\n|---|---|\n| `1` | done |\n|||\n| ../x | pending |\n")
	f.Fuzz(func(t *testing.T, md string) {
		for _, r := range Tasks(md) {
			if !ValidTaskID(r.ID) {
				t.Fatalf("unsafe id %q", r.ID)
			}
		}
		if _, err := checkTable(md, tm); err != nil {
			t.Fatal(err)
		}
		if _, err := Validate(Facts{Files: []string{"plan.md", "tasks.md"}, TasksMD: md}, tm); err != nil {
			t.Fatal(err)
		}
	})
}

// validView reports whether view passes CheckView with the built-in texts.
func validView(view []byte) bool {
	problem, err := CheckView(view, tm)
	return problem == "" && err == nil
}
