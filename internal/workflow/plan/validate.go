package plan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/templates"
)

// validName matches the file names allowed directly in a plan folder (rule
// 2). Only Markdown files are checked: state.json and other files are
// drover's or the user's business.
var validName = regexp.MustCompile(`^(?:` +
	`(?:plan|design|tasks)\.md` +
	`|task-[A-Za-z0-9_-]+\.md` +
	`|(?:plan|design|tasks|all-code)-(?:post-)?review-[0-9]+\.md` +
	`)$`)

// reviewFileName matches a review file and captures its base (rule 4).
var reviewFileName = regexp.MustCompile(`^(plan|design|tasks)-review-[0-9]+\.md$`)

// taskFile matches a task file name and captures its id; isReviewSuffix
// tells the task files from their reviews (rule 6).
var taskFile = regexp.MustCompile(`^task-([A-Za-z0-9_-]+)\.md$`)

// Validate checks the plan folder against the folder rules 1 to 7 of seed
// 001 and returns every violation, in rule order; none means valid.
//
//  1. plan.md exists.
//  2. Every Markdown file has a conventional name.
//  3. No Markdown file is in a subfolder.
//  4. A plan, design or tasks review file has its base file.
//  5. A post-review file has its review file.
//  6. Task files need tasks.md.
//  7. tasks.md holds only a Markdown table, with at least one task row.
//
// Rule 8 (state.json is a valid view) is CheckView: it warns, never blocks.
// The violations are worded by t; only a template that does not render is
// an error.
func Validate(f Facts, t templates.Set) ([]string, error) {
	top := map[string]bool{}
	var md, nested []string
	for _, p := range f.Files {
		if !strings.HasSuffix(p, ".md") {
			continue
		}
		if strings.Contains(p, "/") {
			nested = append(nested, p)
			continue
		}
		top[p] = true
		md = append(md, p)
	}
	slices.Sort(md)
	slices.Sort(nested)

	w := words{t: t}
	var v []string
	if !top["plan.md"] {
		v = append(v, w.say(templates.PlanRuleNoPlan, nil))
	}
	for _, name := range md {
		if !validName.MatchString(name) {
			v = append(v, w.say(templates.PlanRuleFileName, map[string]string{"file": name}))
		}
	}
	if len(nested) > 0 {
		v = append(v, w.say(templates.PlanRuleNested, map[string]string{"files": strings.Join(capList(&w, nested, 5), ", ")}))
	}
	for _, name := range md {
		if m := reviewFileName.FindStringSubmatch(name); m != nil && !top[m[1]+".md"] {
			v = append(v, w.say(templates.PlanRuleReviewOrphan, map[string]string{"file": name, "base": m[1] + ".md"}))
		}
	}
	for _, name := range md {
		if before, after, ok := strings.Cut(name, "-post-review-"); ok {
			review := before + "-review-" + after
			if !top[review] {
				v = append(v, w.say(templates.PlanRulePostReviewOrphan, map[string]string{"file": name, "review": review}))
			}
		}
	}
	if len(taskIDs(md)) > 0 && !top["tasks.md"] {
		v = append(v, w.say(templates.PlanRuleNoTasksMD, nil))
	}
	if top["tasks.md"] {
		if problem := tableProblem(f.TasksMD); problem != "" {
			v = append(v, w.say(problem, nil))
		}
	}
	if w.err != nil {
		return nil, fmt.Errorf("plan folder rules: %w", w.err)
	}
	return v, nil
}

// taskIDs returns the ids of the task files (task-ID.md, not their reviews)
// among names.
func taskIDs(names []string) []string {
	var ids []string
	for _, n := range names {
		if m := taskFile.FindStringSubmatch(n); m != nil && !isReviewSuffix(m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// isReviewSuffix reports whether a task-X.md id is really a review name such
// as "1-review-2" or "1-post-review-2".
func isReviewSuffix(id string) bool {
	i := strings.LastIndex(id, "-review-")
	if i < 0 {
		return false
	}
	rest := id[i+len("-review-"):]
	return rest != "" && strings.Trim(rest, "0123456789") == ""
}

// checkTable returns what is wrong with tasks.md as a task table, worded
// by t, or "".
func checkTable(content string, t templates.Set) (string, error) {
	name := tableProblem(content)
	if name == "" {
		return "", nil
	}
	return t.Render(name, nil)
}

// tableProblem returns the name of the template that says what is wrong
// with tasks.md as a task table, or "".
func tableProblem(content string) string {
	rows := 0
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
			return templates.PlanRuleTasksNotTable
		}
		rows++
	}
	switch {
	case rows == 0:
		return templates.PlanRuleTasksNoRows
	case rows < 3:
		return templates.PlanRuleTasksHeaderOnly
	}
	return ""
}

// TaskRow is one row of tasks.md.
type TaskRow struct {
	ID     string
	Status string
}

// TableRow is one body row of a Markdown table and its 1-based line.
type TableRow struct {
	Line  int
	Cells []string
}

// Table reads the first Markdown table of md: the first line that starts
// with '|' is the header, a separator line right after it is skipped, and
// every other such line is a row of trimmed cells.
func Table(md string) (header []string, rows []TableRow) {
	seen := 0
	for i, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		seen++
		switch {
		case seen == 1:
			header = cells
			continue
		case seen == 2 && isSeparator(cells):
			continue
		}
		rows = append(rows, TableRow{Line: i + 1, Cells: cells})
	}
	return header, rows
}

// Tasks parses the task table of tasks.md: the first column is the task id,
// and the status is the column headed "Status" (the second column when no
// header says so). Rows whose id is not a valid task id are skipped.
func Tasks(tasksMD string) []TaskRow {
	header, table := Table(tasksMD)
	statusCol := StatusColumn(header)
	var rows []TaskRow
	for _, r := range table {
		id := strings.Trim(r.Cells[0], "`*")
		if !ValidTaskID(id) {
			continue
		}
		row := TaskRow{ID: id}
		if statusCol < len(r.Cells) {
			row.Status = r.Cells[statusCol]
		}
		rows = append(rows, row)
	}
	return rows
}

// StatusColumn is the index of the status column of a task table with
// header (Table): the column headed "Status", else the second.
func StatusColumn(header []string) int {
	col := 1
	for i, c := range header {
		if strings.EqualFold(c, "status") {
			col = i
		}
	}
	return col
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":- ") != "" {
			return false
		}
	}
	return true
}

// Done reports whether a task's status says it is finished.
func (r TaskRow) Done() bool { return statusDone(r.Status) }

// statusDone reports whether a status (of a task or a subtask) says it is
// finished.
func statusDone(status string) bool {
	s := strings.ToLower(status)
	for _, w := range []string{"done", "complete", "finished", "skipped", "cancelled", "canceled", "✅"} {
		if strings.Contains(s, w) {
			return !strings.Contains(s, "incomplete") && !strings.Contains(s, "not done")
		}
	}
	return false
}

// Remaining returns the ids of tasks in tasksMD that are not done, other
// than current.
func Remaining(tasksMD, current string) []string {
	var ids []string
	for _, r := range Tasks(tasksMD) {
		if r.ID != current && !r.Done() {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// ValidTaskID reports whether id is safe in a file name (task-ID.md):
// letters, digits, '_' and inner '-', at most 64 bytes, and not a review
// suffix.
func ValidTaskID(id string) bool {
	if id == "" || len(id) > 64 || strings.HasPrefix(id, "-") || strings.HasSuffix(id, "-") || isReviewSuffix(id) {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidPlanID reports whether id is safe as a folder name under
// .drover/plans: letters, digits, '-', '_' and '.', at most 128 bytes,
// starting with a letter or digit (so never "." or "..").
func ValidPlanID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

// CheckView is rule 8: state.json, when present, is a JSON object with every
// field of the seed's schema. Unknown fields are fine. A nil view (no file)
// is fine too: drover writes it. It returns what is wrong, worded by t, or
// "" when nothing is; only a template that does not render is an error.
func CheckView(view []byte, t templates.Set) (string, error) {
	if view == nil {
		return "", nil
	}
	var name string
	vars := map[string]string{}
	var m map[string]json.RawMessage
	switch {
	case !json.Valid(view):
		name = templates.PlanViewNotJSON
	case json.Unmarshal(view, &m) != nil || m == nil:
		name = templates.PlanViewNotObject
	default:
		var missing []string
		for _, k := range viewFields {
			if _, ok := m[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			return "", nil
		}
		name, vars["fields"] = templates.PlanViewMissingFields, strings.Join(missing, ", ")
	}
	problem, err := t.Render(name, vars)
	if err != nil {
		return "", fmt.Errorf("checking state.json: %w", err)
	}
	return problem, nil
}

func capList(w *words, list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(slices.Clone(list[:n]), w.say(templates.PlanRuleMore, map[string]string{"count": strconv.Itoa(len(list) - n)}))
}
