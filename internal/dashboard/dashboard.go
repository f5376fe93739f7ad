// Package dashboard renders the pages of drover's web dashboard (the
// listener of `drover ui`): pure functions from view structs, made of the
// API's types, to HTML with inline SVG charts. It does no I/O beyond
// writing to the writer it is given; the supervisor gathers the views and
// serves the pages behind the dashboard token. The page's one script and
// its style sheet are embedded (Assets), so a page needs no network.
//
// Routes (served by the supervisor's dashboard listener):
//
//	GET /                          sessions page (and the runs list)
//	GET /loop/{session}            a loop's iterations chart
//	GET /plan/{session}            a plan's review timeline
//	GET /plan/{session}/review/{n} review n's file, as text/plain
//	GET /run/{id}                  a run's waves over time
//	GET /runs                      every run
//	GET /events                    the event stream (as /v1/events)
//	GET /static/{file}             embedded assets (app.js, style.css)
//
// Stable selectors, for tests that drive a browser:
//
//	table#sessions tr[data-session=ID]       one per session, with
//	    data-workflow, data-state, data-health; cells td.workflow,
//	    td.state, td.health, td.iteration, td.cost, td.last-event
//	    (data-event-id), and a.session-link to its loop or plan page
//	table#runs tr[data-run=ID]               one per run (data-state),
//	    a.run-link to /run/ID
//	svg#loop-chart                           the loop chart: per
//	    iteration one circle.pass[data-iteration=N] (data-status,
//	    data-role, data-pass-rate) and one rect.lint[data-iteration=N]
//	    (data-lint); polyline.cost is the cost so far
//	table#loop-iterations tr[data-iteration=N]  the same numbers as text
//	#loop-status                             the loop's status word
//	ol#plan-timeline li[data-cycle=N]        review N of the plan (1 is
//	    the first), with data-verdict, data-kind, data-model,
//	    data-blocking, data-minor; a.review-link to its review file
//	svg#run-waves g[data-task=ID][data-wave=N]  a task's bar over
//	    time (data-state)
//	table#run-tasks tr[data-task=ID]         the task's state,
//	    iteration, role, tests, review and cost (data-state)
//	#run-state, #run-merge, #run-suite       the run's state, the waves
//	    merged, and the suite's result (data-passed)
//	body[data-page=sessions|loop|plan|run|runs]  which page it is
package dashboard

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

//go:embed assets
var assets embed.FS

// Assets returns the page's embedded script and style sheet, at their
// file names (app.js, style.css), for GET /static/{file}: the files of
// assets/static only, not the page templates beside them.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		// The folder is embedded above: a missing one is a build error.
		return assets
	}
	return sub
}

// SessionsView is the sessions page: every session of the project and
// every run.
type SessionsView struct {
	Project  string
	Sessions []SessionRow
	Runs     []api.Run
	// LastEventID is the newest event the page shows: its live script
	// follows the stream after it.
	LastEventID uint64
}

// SessionRow is one session: its status as `drover status` shows it
// (with what it spent against which budget), and the last event it had.
type SessionRow struct {
	api.SessionStatus
	LastEvent *api.Event
}

// LoopView is a loop session's page.
type LoopView struct {
	Session string
	Status  api.LoopStatus
	Points  []LoopPoint
}

// LoopPoint is one iteration of a loop's metrics history.
type LoopPoint struct {
	Iteration    int
	TestPassRate float64
	TestsPassed  int
	TestsFailed  int
	LintIssues   int
	Status       string
	Role         string
	CostUSD      float64
	Outcome      string
}

// PlanView is a plan session's page.
type PlanView struct {
	Session string
	Status  api.PlanStatus
	// Reviews are the plan's reviewer runs in the order they finished;
	// review n (1-based) is Reviews[n-1].
	Reviews []PlanReviewItem
}

// PlanReviewItem is one reviewer run with whether its file can be shown.
type PlanReviewItem struct {
	api.PlanReviewRun
	// File is the review file's name in the plan folder ("" when none).
	File string
}

// RunView is a run's page; Now is the end of the time axis of tasks that
// still run.
type RunView struct {
	Run api.Run
	Now time.Time
}

// RunsView is the runs list.
type RunsView struct {
	Runs []api.Run
}

// Renderer holds the parsed page templates; the parse is of embedded
// text, done once per Renderer.
type Renderer struct {
	t *template.Template
}

// NewRenderer parses the embedded page templates.
func NewRenderer() (*Renderer, error) {
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the dashboard templates: %w", err)
	}
	return &Renderer{t: t}, nil
}

// Sessions writes the sessions page.
func (r *Renderer) Sessions(w io.Writer, v SessionsView) error {
	return r.exec(w, "sessions.html", v)
}

// Loop writes a loop's page.
func (r *Renderer) Loop(w io.Writer, v LoopView) error { return r.exec(w, "loop.html", v) }

// Plan writes a plan's page.
func (r *Renderer) Plan(w io.Writer, v PlanView) error { return r.exec(w, "plan.html", v) }

// Run writes a run's page.
func (r *Renderer) Run(w io.Writer, v RunView) error { return r.exec(w, "run.html", v) }

// Runs writes the runs list.
func (r *Renderer) Runs(w io.Writer, v RunsView) error { return r.exec(w, "runs.html", v) }

func (r *Renderer) exec(w io.Writer, name string, v any) error {
	if err := r.t.ExecuteTemplate(w, name, v); err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	return nil
}

var funcs = template.FuncMap{
	"usd":       func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	"pct":       func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"loopChart": LoopChart,
	"runWaves":  func(v RunView) template.HTML { return RunWaves(v.Run, v.Now) },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.DateTime)
	},
	"minor": func(r api.PlanReviewRun) int { return max(0, r.Findings-r.Blocking) },
	"inc":   func(i int) int { return i + 1 },
	"eventText": func(e *api.Event) string {
		if e == nil {
			return "-"
		}
		return string(e.Kind)
	},
	"reviewText": func(r *api.TaskReview) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%s (%d blocking, %d minor)", r.Outcome, r.Blocking, r.Minor)
	},
	"testText": func(t *api.TestResult) string {
		switch {
		case t == nil:
			return "-"
		case t.Passed:
			return "pass"
		}
		return "fail"
	},
	"workflowPage": func(wf string) string {
		switch wf {
		case "loop", "plan":
			return wf
		}
		return ""
	},
}
