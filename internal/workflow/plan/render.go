// What the plan workflow says: the template of each message, the review
// and post-review file names, and the placeholder values they are filled
// with.

package plan

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

func promptTemplate(k Kind) string {
	switch k {
	case KindPlan:
		return templates.PlanReviewPlan
	case KindTasks:
		return templates.PlanReviewTasks
	case KindCode:
		return templates.PlanReviewCode
	}
	return templates.PlanReviewAllCode
}

func postReviewTemplate(k Kind) string {
	switch k {
	case KindPlan:
		return templates.PlanPostReviewPlan
	case KindTasks:
		return templates.PlanPostReviewTasks
	case KindCode:
		return templates.PlanPostReviewCode
	}
	return templates.PlanPostReviewAllCode
}

// ReviewFile returns the name of review iteration n of kind (task for code
// reviews), as seed 001 names them.
func ReviewFile(k Kind, task string, n int) string {
	if k == KindCode {
		return fmt.Sprintf("task-%s-review-%d.md", task, n)
	}
	return fmt.Sprintf("%s-review-%d.md", k, n)
}

// PostReviewFile returns the name of the agent's post-review file for
// review iteration n of kind.
func PostReviewFile(k Kind, task string, n int) string {
	if k == KindCode {
		return fmt.Sprintf("task-%s-post-review-%d.md", task, n)
	}
	return fmt.Sprintf("%s-post-review-%d.md", k, n)
}

// reviewName names a review in messages, as t words it.
func reviewName(t templates.Set, k Kind, task string) string {
	var name string
	switch k {
	case KindPlan:
		name = templates.PlanNamePlanReview
	case KindTasks:
		name = templates.PlanNameTasksReview
	case KindCode:
		name = templates.PlanNameCodeReview
	case KindAllCode:
		name = templates.PlanNameAllCodeReview
	default:
		// Not a kind of review: its phase name says what it is.
		return string(k) + " review"
	}
	return say(t, name, map[string]string{"task": task})
}

func hasFile(f Facts, name string) bool {
	for _, p := range f.Files {
		if p == name {
			return true
		}
	}
	return false
}

// taskFiles lists, as paths in the plan folder, the task files of the tasks
// in tasks.md that exist. Review files are never included, which keeps a
// reviewer's reading list short.
func taskFiles(f Facts) []string {
	var files []string
	for _, r := range Tasks(f.TasksMD) {
		name := "task-" + r.ID + ".md"
		if hasFile(f, name) {
			files = append(files, path.Join(f.PlanDir, name))
		}
	}
	return files
}

// vars returns the placeholders every plan template may use:
//
//	plan_id, plan_dir, phase, next_phase, task, tdd, iteration,
//	max_reviews, consecutive_clean, clean_streak (how many clean reviews
//	in a row end a cycle), model (of the next review), review_name (of
//	kind, when given), task_files.
func vars(s State, f Facts, t templates.Set, kind Kind) map[string]string {
	v := map[string]string{
		"plan_id":           s.PlanID,
		"plan_dir":          f.PlanDir,
		"phase":             orNone(string(s.Phase)),
		"next_phase":        orNone(string(s.NextPhase)),
		"task":              orNone(s.CurrentTask),
		"tdd":               strconv.FormatBool(s.TDD),
		"iteration":         strconv.Itoa(s.Iteration),
		"max_reviews":       strconv.Itoa(s.MaxReviews),
		"consecutive_clean": strconv.Itoa(s.ConsecutiveClean),
		"model":             reviewer.NextModel(f.Models, s.ModelIndex),
		"task_files":        strings.Join(taskFiles(f), ", "),
		"clean_streak":      strconv.Itoa(f.cleanStreak()),
	}
	if kind != "" {
		v["review_name"] = reviewName(t, kind, orNone(s.CurrentTask))
	}
	return v
}

// reviewVars adds the placeholders of review r: review_name, review_phase
// (code-review, ...), iteration, model, review_file, post_review_file
// (paths in the plan folder),
// review_title, and log_note (empty).
func reviewVars(s State, f Facts, t templates.Set, r InFlight) map[string]string {
	v := vars(s, f, t, r.Kind)
	task := r.Task
	if task == "" {
		task = orNone(s.CurrentTask)
	}
	v["task"] = task
	v["review_name"] = reviewName(t, r.Kind, task)
	title := v["review_name"]
	v["review_title"] = strings.ToUpper(title[:1]) + title[1:]
	v["iteration"] = strconv.Itoa(r.Iteration)
	v["model"] = r.Model
	if f.Parallel {
		v["model"] = strings.Join(f.Models, ",")
	}
	v["review_phase"] = string(r.Kind.ReviewPhase())
	v["review_file"] = path.Join(f.PlanDir, ReviewFile(r.Kind, task, r.Iteration))
	v["post_review_file"] = path.Join(f.PlanDir, PostReviewFile(r.Kind, task, r.Iteration))
	v["log_note"] = ""
	return v
}

// answerVars is reviewVars for the answer o to review r: its model is the
// one (or, for a parallel review, the ones) that answered.
func answerVars(s State, f Facts, t templates.Set, r InFlight, o ReviewOutcome) map[string]string {
	v := reviewVars(s, f, t, r)
	if o.Model != "" {
		v["model"] = o.Model
	}
	return v
}

// addVerdictVars adds verdict, blocking_count, minor_count and findings (a
// Markdown list by severity) for an answer.
func addVerdictVars(v map[string]string, t templates.Set, o ReviewOutcome) {
	var blocking, minor []reviewer.Finding
	for _, fd := range o.Findings {
		if fd.Blocking() {
			blocking = append(blocking, fd)
		} else {
			minor = append(minor, fd)
		}
	}
	v["verdict"] = o.Verdict
	v["blocking_count"] = strconv.Itoa(len(blocking))
	v["minor_count"] = strconv.Itoa(len(minor))
	var b strings.Builder
	section := func(title string, fs []reviewer.Finding) {
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(&b, "## %s\n\n", title)
		for i, fd := range fs {
			fmt.Fprintf(&b, "%d. ", i+1)
			switch {
			case fd.File != "" && fd.Line > 0:
				fmt.Fprintf(&b, "`%s:%d`: ", fd.File, fd.Line)
			case fd.File != "":
				fmt.Fprintf(&b, "`%s`: ", fd.File)
			}
			b.WriteString(strings.Join(strings.Fields(fd.Summary), " "))
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	section(say(t, templates.PlanFindingsBlocking, nil), blocking)
	section(say(t, templates.PlanFindingsMinor, nil), minor)
	if b.Len() == 0 {
		b.WriteString(say(t, templates.PlanFindingsNone, nil))
	}
	v["findings"] = strings.TrimRight(b.String(), "\n")
}

// dollars formats an amount of dollars for a message, without the sign.
func dollars(usd float64) string { return strconv.FormatFloat(usd, 'f', 2, 64) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
