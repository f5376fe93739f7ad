package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

// dashIterations are the loop iterations of the dashboard's fixture: what
// go test -v printed (a parser's two tests: none passes, one does, one
// does with another failure, both do), the lint issues golangci-lint
// counted, and the input tokens the iteration used.
var dashIterations = []struct {
	goTest string
	lint   int
	tokens int
}{
	{"=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:7: no parser\n=== RUN   TestLex\n--- FAIL: TestLex (0.00s)\n    lex_test.go:9: no lexer\nFAIL\nFAIL\texample.com/parser\t0.01s", 7, 40000},
	{"=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- FAIL: TestLex (0.00s)\n    lex_test.go:9: runes split\nFAIL\nFAIL\texample.com/parser\t0.01s", 4, 60000},
	{"=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- FAIL: TestLex (0.00s)\n    lex_test.go:12: tabs lost\nFAIL\nFAIL\texample.com/parser\t0.01s", 2, 30000},
	{"=== RUN   TestParse\n--- PASS: TestParse (0.00s)\n=== RUN   TestLex\n--- PASS: TestLex (0.00s)\nPASS\nok  \texample.com/parser\t0.01s", 0, 50000},
}

// appendIteration appends loop iteration n to the session's transcript at
// path, as Claude Code writes it: the agent ran go test -v and
// golangci-lint with the outputs of dashIterations[n-1], then said msg.
func appendIteration(t *testing.T, path string, n int, msg string) {
	t.Helper()
	it := dashIterations[n-1]
	now := time.Now().UTC().Format(time.RFC3339Nano)
	assistant := func(id string, content ...any) map[string]any {
		return map[string]any{"type": "assistant", "timestamp": now, "message": map[string]any{
			"id": fmt.Sprintf("msg-%d-%s", n, id), "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
			"usage": map[string]any{"input_tokens": it.tokens / 2, "output_tokens": 500}}}
	}
	bash := func(id, command string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": command}}
	}
	result := func(id, output string) map[string]any {
		return map[string]any{"type": "user", "timestamp": now, "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": output}}}}
	}
	var b []byte
	for _, line := range []map[string]any{
		assistant("a", bash(fmt.Sprintf("t%d-test", n), "go test -v ./...")),
		result(fmt.Sprintf("t%d-test", n), it.goTest),
		assistant("b", bash(fmt.Sprintf("t%d-lint", n), "golangci-lint run ./...")),
		result(fmt.Sprintf("t%d-lint", n), fmt.Sprintf("%d issues:", it.lint)),
		assistant("c", map[string]any{"type": "text", "text": msg}),
	} {
		j, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, j...), '\n')
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// dashTwoWaves is the dashboard fixture's run: a and b, then c.
const dashTwoWaves = `tasks:
  - id: a
    description: Write a.txt.
    tests: [a.txt]
  - id: b
    description: Write b.txt.
    tests: [b.txt]
  - id: c
    description: Write c.txt.
    tests: [c.txt]
    depends-on: [a, b]
`

// dashboardFixture is a project, served by the real daemon with its
// dashboard on, where a loop ran its iterations to its promise, a plan
// went through one review cycle (a failing review, then two clean ones),
// and a run of two waves was merged.
type dashboardFixture struct {
	*runFixture
	loopID, planID, runID string
	loopIterations        int
	planReviews           int
	waves                 map[string]int // the run's tasks and their waves
}

func newDashboardFixture(t *testing.T) *dashboardFixture {
	t.Helper()
	f := &dashboardFixture{
		runFixture:     newRunFixture(t),
		loopID:         "dash-loop",
		planID:         "dddddddd-2222-3333-4444-555555555555",
		loopIterations: len(dashIterations),
		planReviews:    3,
		waves:          map[string]int{"a": 1, "b": 1, "c": 2},
	}

	// The plan's reviewer answers FAIL with findings, then PASS twice.
	fake := t.TempDir()
	for name, content := range map[string]string{
		"fake-reviewer": planScriptedReviewer,
		"answer-1":      `{"verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":3,"summary":"the error path is not planned"},{"severity":"minor","file":"plan.md","summary":"name the constant"}]}`,
		"answer-2":      `{"verdict":"PASS","findings":[{"severity":"minor","file":"plan.md","summary":"name the constant"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.useReviewer(filepath.Join(fake, "fake-reviewer"))
	cfg := filepath.Join(f.root, ".drover", "config.yaml")
	c, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Port 0: the system picks a free one; the daemon writes it down.
	if _, err := c.WriteString("ui:\n  enabled: true\n  port: 0\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// The loop: each iteration's metrics come from what its transcript
	// shows (go test, golangci-lint, tokens); the last keeps its promise.
	f.must("", "loop", "start", "--session", f.loopID, "--max-iterations", "10", "--completion-promise", "DONE", "Build the parser")
	transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
	for n := 1; n <= f.loopIterations; n++ {
		last := n == f.loopIterations
		msg := "Still failing."
		if last {
			msg = "All tests pass.\n<promise>DONE</promise>"
		}
		appendIteration(t, transcript, n, msg)
		h := f.hook(hook.Stop, map[string]any{"session_id": f.loopID, "hook_event_name": "Stop", "transcript_path": transcript})
		if h.IsBlock() == last {
			t.Fatalf("loop stop %d: %+v", n, h)
		}
	}
	metrics := filepath.Join(f.root, ".drover", "sessions", f.loopID, "metrics.jsonl")
	if !eventually.Holds(30*time.Second, func() bool {
		data, _ := os.ReadFile(metrics)
		return strings.Count(string(data), "\n") == f.loopIterations
	}) {
		t.Fatalf("the loop's metrics history has not %d lines", f.loopIterations)
	}

	// The plan: one review cycle of the plan, held at each stop.
	f.must("", "plan", "new", "--session", f.planID, "parser")
	if err := os.WriteFile(filepath.Join(f.root, ".drover", "plans", "parser", "plan.md"), []byte("# Parser\n\n## Overview\n\nParse and lex.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= f.planReviews; n++ {
		h := f.hook(hook.Stop, stopInput(f.planID))
		if n < f.planReviews {
			if !h.IsBlock() {
				t.Fatalf("stop after review %d: %+v", n, h)
			}
			f.must("", "plan", "post-review-done", "--session", f.planID)
		} else if h.IsBlock() || !strings.Contains(h.SystemMessage, "passed") {
			t.Fatalf("stop after review %d: %+v", n, h)
		}
	}

	// The run: two waves, merged.
	out := f.must("", f.withGraph(f.args, "two-waves.yaml", dashTwoWaves)...)
	f.runID = runIDFrom(t, out)
	if r := f.runStatus(f.runID); r.Waves != 2 || len(r.Tasks) != len(f.waves) {
		t.Fatalf("run status: %d waves, %d tasks", r.Waves, len(r.Tasks))
	}
	return f
}

// screenshotDir is where the dashboard test saves its screenshots:
// $DROVER_SCREENSHOT_DIR when set (make screenshots sets docs/img), else
// the test's artifact directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("DROVER_SCREENSHOT_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// dashboardURL is the URL `drover ui` prints, token included.
var dashboardURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*`)

// TestDashboardInABrowser loads each page of the dashboard in headless
// Chromium, for a project where a loop, a plan review cycle and a
// two-wave run happened through the real daemon: the sessions with the
// words drover status uses, the loop's iterations as chart marks, the
// plan's review cycle with its verdicts and review files, the run's tasks
// by wave with its merge and suite results, the list of runs. It saves a
// full-page screenshot of each, and a request without the token gets
// nothing.
func TestDashboardInABrowser(t *testing.T) {
	f := newDashboardFixture(t)

	out := f.must("", "ui")
	link := dashboardURL.FindString(out)
	if link == "" || !strings.Contains(link, "token=") {
		t.Fatalf("drover ui printed no URL with a token:\n%s", out)
	}
	addr, errA := os.ReadFile(filepath.Join(f.root, ".drover", "state", "ui-addr"))
	token, errT := os.ReadFile(filepath.Join(f.root, ".drover", "state", "ui-token"))
	if errA != nil || errT != nil {
		t.Fatalf("the dashboard's address and token: %v, %v", errA, errT)
	}
	base := "http://" + strings.TrimSpace(string(addr))
	if !strings.HasPrefix(link, base+"/") || !strings.Contains(link, "token="+strings.TrimSpace(string(token))) {
		t.Errorf("drover ui printed %s; the dashboard is at %s", link, base)
	}

	// No token, a wrong one: nothing, on every page; the right one as a
	// Bearer header: the page.
	tok := strings.TrimSpace(string(token))
	pages := map[string]string{
		"sessions": "/",
		"loop":     "/loop/" + f.loopID,
		"plan":     "/plan/" + f.planID,
		"review":   "/plan/" + f.planID + "/review/1",
		"run":      "/run/" + f.runID,
		"runs":     "/runs",
	}
	for _, path := range pages {
		for _, tc := range []struct {
			name, query, bearer string
			want                int
		}{
			{"no token", "", "", http.StatusUnauthorized},
			{"a wrong token", "?token=x" + tok, "", http.StatusUnauthorized},
			{"a wrong bearer", "", "Bearer nope", http.StatusUnauthorized},
			{"the token as a bearer", "", "Bearer " + tok, http.StatusOK},
		} {
			req, _ := http.NewRequest(http.MethodGet, base+path+tc.query, nil)
			if tc.bearer != "" {
				req.Header.Set("Authorization", tc.bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET %s with %s: %v", path, tc.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s with %s: %s, want %d", path, tc.name, resp.Status, tc.want)
			}
			if tc.want == http.StatusUnauthorized && (strings.Contains(string(body), f.loopID) || strings.Contains(string(body), f.planID)) {
				t.Errorf("GET %s with %s told of a session:\n%s", path, tc.name, body)
			}
		}
	}

	ctx := newBrowser(t)
	dir := screenshotDir(t)
	// open loads path; the URL drover ui printed comes first, and its
	// token's cookie lets every later page in. The token stays out of the
	// address bar: the printed URL is sent on to the page without it.
	open := func(t *testing.T, name, path string) {
		t.Helper()
		target := base + path
		if name == "sessions" {
			target = link
		}
		resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(target))
		if err != nil {
			t.Fatalf("loading the %s page: %v", name, err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("the %s page: status %d", name, resp.Status)
		}
		if at := evaluate[string](ctx, t, `location.href`); at != base+path {
			t.Errorf("the %s page is at %s, want %s (no token in the address bar)", name, strings.ReplaceAll(at, tok, "TOKEN"), base+path)
		}
	}
	shot := func(t *testing.T, name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot of the %s page: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("sessions", func(t *testing.T) {
		open(t, "sessions", pages["sessions"])
		rows := evaluate[map[string]string](ctx, t, `Object.fromEntries(Array.from(document.querySelectorAll('table#sessions tr[data-session]'), r => [r.dataset.session, r.innerText]))`)
		want := map[string]api.SessionStatus{}
		for _, s := range f.status().Sessions {
			want[s.ID] = s
		}
		for _, id := range []string{f.loopID, f.planID} {
			st, ok := want[id]
			if !ok {
				t.Fatalf("drover status --json has no session %s: %v", id, want)
			}
			row, ok := rows[id]
			if !ok {
				t.Errorf("no row for session %s; rows %v", id, rows)
				continue
			}
			// The words of drover status --json: state and health.
			for _, word := range []string{st.State, st.Health} {
				if !slices.Contains(strings.Fields(row), word) {
					t.Errorf("the row of %s does not say %q (drover status --json: state %q, health %q): %q", id, word, st.State, st.Health, row)
				}
			}
		}
		shot(t, "sessions")

		// Live: the page follows the event stream, so a session started
		// after it was rendered comes into its table without a reload by
		// hand.
		f.must("", "do", "--session", "dash-live", "write the lexer")
		if !eventually.Holds(30*time.Second, func() bool {
			return evaluate[bool](ctx, t, `!!document.querySelector('table#sessions tr[data-session="dash-live"]')`)
		}) {
			t.Errorf("the open sessions page has no row for a session started after it was rendered (%q)",
				evaluate[string](ctx, t, `document.getElementById('live')?.textContent || ""`))
		}
	})

	t.Run("loop", func(t *testing.T) {
		open(t, "loop", pages["loop"])
		// Each series of the chart (pass rate, lint, ...) has one mark
		// per iteration.
		series := evaluate[map[string][]string](ctx, t, `Array.from(document.querySelectorAll('svg#loop-chart [data-iteration]')).reduce((m, e) => {
			const k = e.tagName + '.' + e.getAttribute('class');
			(m[k] = m[k] || []).push(e.getAttribute('data-iteration'));
			return m;
		}, {})`)
		var want []string
		for i := 1; i <= f.loopIterations; i++ {
			want = append(want, strconv.Itoa(i))
		}
		if len(series) == 0 {
			t.Errorf("the loop's chart has no marks, want one per iteration %v", want)
		}
		for name, marks := range series {
			if !slices.Equal(marks, want) {
				t.Errorf("the loop's chart, series %s, has marks for iterations %v, want one per iteration %v", name, marks, want)
			}
		}
		shot(t, "loop")
	})

	t.Run("plan", func(t *testing.T) {
		open(t, "plan", pages["plan"])
		type review struct {
			Cycle   string `json:"cycle"`
			Verdict string `json:"verdict"`
			Link    string `json:"link"`
		}
		timeline := evaluate[[]review](ctx, t, `Array.from(document.querySelectorAll('ol#plan-timeline li[data-cycle]'), li => {
			const a = li.querySelector('a[href*="/review/"]');
			return {cycle: li.dataset.cycle, verdict: (li.dataset.verdict || '').toLowerCase(), link: a ? new URL(a.href).pathname : ''};
		})`)
		// The cycle's reviews, in order: FAIL, then two clean ones.
		var verdicts, links []string
		for _, r := range timeline {
			if r.Cycle == "" {
				t.Errorf("a timeline entry without its cycle: %+v", r)
			}
			verdicts = append(verdicts, r.Verdict)
			links = append(links, r.Link)
		}
		wantLinks := []string{}
		for n := 1; n <= f.planReviews; n++ {
			wantLinks = append(wantLinks, fmt.Sprintf("/plan/%s/review/%d", f.planID, n))
		}
		if !slices.Equal(verdicts, []string{"fail", "pass", "pass"}) || !slices.Equal(links, wantLinks) {
			t.Fatalf("the plan's timeline: %+v, want the verdicts fail, pass, pass linking %v", timeline, wantLinks)
		}
		shot(t, "plan")
		// A review file is one click away, and it is the reviewer's.
		open(t, "review", links[0])
		if text := evaluate[string](ctx, t, `document.body.innerText`); !strings.Contains(text, "the error path is not planned") {
			t.Errorf("review file %s does not show the first review's finding:\n%s", links[0], text)
		}
	})

	t.Run("run", func(t *testing.T) {
		open(t, "run", pages["run"])
		got := evaluate[map[string]string](ctx, t, `Object.fromEntries(Array.from(document.querySelectorAll('#run-waves [data-task][data-wave]'), e => [e.dataset.task, e.dataset.wave]))`)
		want := map[string]string{}
		for task, wave := range f.waves {
			want[task] = strconv.Itoa(wave)
		}
		if !maps.Equal(got, want) {
			t.Errorf("the run's tasks by wave: %v, want %v", got, want)
		}
		// The merge and the suite, as drover run status --json has them.
		r := f.runStatus(f.runID)
		results := evaluate[map[string]string](ctx, t, `({state: document.querySelector('#run-state')?.dataset.state, merged: document.querySelector('#run-merge')?.dataset.merged,
			waves: document.querySelector('#run-merge')?.dataset.waves, suite: document.querySelector('#run-suite')?.dataset.passed})`)
		wantResults := map[string]string{"state": string(r.State), "merged": strconv.Itoa(r.Merged), "waves": strconv.Itoa(r.Waves), "suite": "true"}
		if !maps.Equal(results, wantResults) {
			t.Errorf("the run's results: %v, want %v", results, wantResults)
		}
		shot(t, "run")
	})

	t.Run("runs", func(t *testing.T) {
		open(t, "runs", pages["runs"])
		rows := evaluate[map[string]string](ctx, t, `Object.fromEntries(Array.from(document.querySelectorAll('table#runs tr[data-run]'), r => [r.dataset.run, r.dataset.state]))`)
		if want := map[string]string{f.runID: string(f.runStatus(f.runID).State)}; !maps.Equal(rows, want) {
			t.Errorf("the runs page: %v, want %v", rows, want)
		}
		shot(t, "runs")
	})
}

// evaluate runs the JavaScript expression in the browser's page and
// decodes its value.
func evaluate[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}
