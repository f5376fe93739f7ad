package run

import (
	"strconv"
	"strings"

	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/router"
	"github.com/drover-dev/drover/templates"
)

// say renders text name from t, or from the built-in texts when t lacks
// it (the zero Set): a report or a feedback is never lost to a template.
func say(t templates.Set, name string, vars map[string]string) string {
	s, err := t.Render(name, vars)
	if err != nil {
		// Every name passed here is a built-in one.
		s, _ = templates.Defaults().Render(name, vars)
	}
	return s
}

// TaskPrompt is what the agent is asked in one iteration of a task: the
// run_task template, with the instructions of the iteration's role. checks
// are how the task is tested after the iteration (TestsOf): the agent is
// told the command to run while it works and not to run the full suite,
// which the wave's checkpoint runs, as seed 003's implementer prompt does.
func TaskPrompt(tmpl templates.Set, t rungraph.Task, branch string, checks TaskTests, iteration, maxIterations int, role router.Role, feedback string) (string, error) {
	vars := map[string]string{
		"task_id": strconv.Quote(t.ID), "branch": branch, "description": t.Description,
		"files": strings.Join(t.Files, ", "), "tests": strings.Join(checks.Tests, " "), "test_command": checks.Command,
		"iteration": strconv.Itoa(iteration), "max_iterations": strconv.Itoa(maxIterations), "feedback": feedback,
		"role": string(role), "agent_name": "drover:" + string(role),
	}
	tests := templates.RunTaskTests
	switch {
	case checks.Command == "":
		tests = templates.RunTaskNoTests
	case checks.Suite:
		tests = templates.RunTaskSuite
	}
	sections := []struct {
		key, name string
		want      bool
	}{
		{"files_section", templates.RunTaskFiles, len(t.Files) > 0},
		{"tests_section", tests, true},
		{"retry_section", templates.RunTaskRetry, iteration > 1},
	}
	for _, sec := range sections {
		vars[sec.key] = ""
		if !sec.want {
			continue
		}
		text, err := tmpl.Render(sec.name, vars)
		if err != nil {
			return "", err
		}
		vars[sec.key] = text
	}
	// A run's own role texts: the loop's speak of its tracker.
	rolePrompt, err := tmpl.Render(templates.RunRolePrefix+string(role), vars)
	if err != nil {
		// A role without a template: its name alone.
		rolePrompt = ""
	}
	vars["role_prompt"] = rolePrompt
	text, err := tmpl.Render(templates.RunTask, vars)
	// Absent sections leave runs of blank lines.
	for strings.Contains(text, "\n\n\n") {
		text = strings.ReplaceAll(text, "\n\n\n", "\n\n")
	}
	return text, err
}

// ReviewPrompt is what the reviewer of a task's iteration is asked: the
// commits on branch since base.
func ReviewPrompt(tmpl templates.Set, t rungraph.Task, branch, base string) (string, error) {
	return tmpl.Render(templates.RunReview, map[string]string{
		"task_id": strconv.Quote(t.ID), "description": t.Description, "branch": branch, "base": base,
	})
}
