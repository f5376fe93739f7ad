package dashboard

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// The charts are SVG written on the server: no script and no charting
// library, so a page shows its charts with no network and no build step.
// Numbers are printed with fixed precision, so the same view gives the
// same bytes (the golden files rely on it).

const (
	chartW   = 720
	chartH   = 240
	chartPad = 40
)

// statusColor is the fill of a loop iteration's point by its convergence
// status; unknown statuses are grey.
func statusColor(status string) string {
	switch status {
	case "converged_success":
		return "#2a9d3f"
	case "progressing":
		return "#3b7dd8"
	case "exploring":
		return "#8a8a8a"
	case "stuck_plateau", "thrashing":
		return "#d8731f"
	case "budget_exhausted":
		return "#c62828"
	}
	return "#999999"
}

// stateColor is the fill of a run task's bar by its state.
func stateColor(state string) string {
	switch state {
	case "done", "merged":
		return "#2a9d3f"
	case "running", "reviewing", "testing":
		return "#3b7dd8"
	case "failed", "stuck", "conflict":
		return "#c62828"
	case "needs-review":
		return "#d8731f"
	case "cancelled":
		return "#8a8a8a"
	}
	return "#bbbbbb"
}

// LoopChart renders a loop's iterations as an SVG chart (svg#loop-chart):
// the test pass rate as a line of points coloured by convergence status
// (0 to 100% on the left axis), the lint issues as bars (scaled to the
// most issues), and the cost so far as a dashed line (scaled to the
// highest cost). Each iteration has one circle.pass and one rect.lint
// carrying data-iteration.
func LoopChart(points []LoopPoint) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="loop-chart" data-testid="loop-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="loop iterations">`+"\n", chartW, chartH, chartW, chartH)
	plotW, plotH := float64(chartW-2*chartPad), float64(chartH-2*chartPad)
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`+"\n", chartPad, chartPad, plotW, plotH)
	fmt.Fprintf(&b, `<text x="4" y="%d" font-size="10">100%%</text><text x="4" y="%d" font-size="10">0%%</text>`+"\n", chartPad+4, chartH-chartPad)
	if len(points) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d">no iteration measured yet</text>`+"\n", chartW/2-70, chartH/2)
		b.WriteString("</svg>")
		return template.HTML(b.String())
	}
	maxLint, maxCost := 0, 0.0
	for _, p := range points {
		maxLint = max(maxLint, p.LintIssues)
		maxCost = max(maxCost, p.CostUSD)
	}
	step := plotW / float64(len(points))
	x := func(i int) float64 { return float64(chartPad) + step*(float64(i)+0.5) }
	y := func(frac float64) float64 { return float64(chartPad) + plotH*(1-frac) }
	// Lint bars first, under the lines.
	for i, p := range points {
		h := 0.0
		if maxLint > 0 {
			h = plotH * 0.5 * float64(p.LintIssues) / float64(maxLint)
		}
		fmt.Fprintf(&b, `<rect class="lint" data-iteration="%d" data-lint="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e0c36c" opacity="0.6"><title>iteration %d: %d lint issues</title></rect>`+"\n",
			p.Iteration, p.LintIssues, x(i)-step*0.3, y(0)-h, step*0.6, h, p.Iteration, p.LintIssues)
	}
	var pass, cost []string
	for i, p := range points {
		pass = append(pass, fmt.Sprintf("%.1f,%.1f", x(i), y(p.TestPassRate)))
		c := 0.0
		if maxCost > 0 {
			c = p.CostUSD / maxCost
		}
		cost = append(cost, fmt.Sprintf("%.1f,%.1f", x(i), y(c)))
	}
	fmt.Fprintf(&b, `<polyline class="cost" points="%s" fill="none" stroke="#7b4fb8" stroke-dasharray="4 3"/>`+"\n", strings.Join(cost, " "))
	fmt.Fprintf(&b, `<polyline class="pass-line" points="%s" fill="none" stroke="#3b7dd8"/>`+"\n", strings.Join(pass, " "))
	for i, p := range points {
		fmt.Fprintf(&b, `<circle class="pass" data-iteration="%d" data-status="%s" data-role="%s" data-pass-rate="%.2f" cx="%.1f" cy="%.1f" r="5" fill="%s"><title>iteration %d: %.0f%% tests pass, %s, %s, $%.2f</title></circle>`+"\n",
			p.Iteration, template.HTMLEscapeString(p.Status), template.HTMLEscapeString(p.Role), p.TestPassRate, x(i), y(p.TestPassRate), statusColor(p.Status),
			p.Iteration, 100*p.TestPassRate, template.HTMLEscapeString(orDash(p.Status)), template.HTMLEscapeString(orDash(p.Role)), p.CostUSD)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%d</text>`+"\n", x(i), chartH-chartPad+14, p.Iteration)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// RunWaves renders a run's tasks as bars over time (svg#run-waves), one
// row per task, ordered by wave then id: a bar spans from the task's
// start to its end (now, for a task still worked); a task not started
// has a thin mark at the left. Each row is a g[data-task][data-wave]
// carrying data-state.
func RunWaves(run api.Run, now time.Time) template.HTML {
	tasks := append([]api.RunTask(nil), run.Tasks...)
	sort.SliceStable(tasks, func(i, j int) bool {
		if tasks[i].Wave != tasks[j].Wave {
			return tasks[i].Wave < tasks[j].Wave
		}
		return tasks[i].ID < tasks[j].ID
	})
	const rowH, labelW = 24, 160
	h := chartPad + rowH*max(1, len(tasks)) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="run-waves" data-testid="run-waves" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="run waves">`+"\n", chartW, h, chartW, h)
	start, end := run.CreatedAt, run.CreatedAt
	for _, t := range tasks {
		if !t.StartedAt.IsZero() && (start.IsZero() || t.StartedAt.Before(start)) {
			start = t.StartedAt
		}
		e := t.EndedAt
		if e.IsZero() && !t.StartedAt.IsZero() {
			e = now
		}
		if e.After(end) {
			end = e
		}
	}
	span := end.Sub(start).Seconds()
	plotW := float64(chartW - labelW - chartPad)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(labelW)
		}
		return float64(labelW) + plotW*t.Sub(start).Seconds()/span
	}
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="11">0s</text><text x="%d" y="16" font-size="11" text-anchor="end">%s</text>`+"\n", labelW, labelW+int(plotW), spanLabel(end.Sub(start)))
	for i, t := range tasks {
		top := chartPad + rowH*i
		fmt.Fprintf(&b, `<g class="task" data-task="%s" data-wave="%d" data-state="%s">`, template.HTMLEscapeString(t.ID), t.Wave, template.HTMLEscapeString(string(t.State)))
		fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11">w%d %s</text>`, top+15, t.Wave, template.HTMLEscapeString(t.ID))
		x0, x1 := float64(labelW), float64(labelW)+2
		if !t.StartedAt.IsZero() {
			e := t.EndedAt
			if e.IsZero() {
				e = now
			}
			x0, x1 = x(t.StartedAt), max(x(e), x(t.StartedAt)+2)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s, iteration %d, %s, $%.2f</title></rect>`,
			x0, top+3, x1-x0, rowH-6, stateColor(string(t.State)),
			template.HTMLEscapeString(t.ID), template.HTMLEscapeString(string(t.State)), t.Iteration, template.HTMLEscapeString(orDash(t.Role)), t.CostUSD)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// spanLabel is a run's length on its time axis: to the second, but to the
// tenth of a second under ten seconds, so a short run's axis does not read
// "0s".
func spanLabel(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
