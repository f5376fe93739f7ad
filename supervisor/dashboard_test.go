package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// dashboardFixture gives a's project a loop session with three measured
// iterations, a plan session with two reviews (their files written), and
// a two-wave run in the store, the way the supervisor leaves them.
func dashboardFixture(t *testing.T, a *apiServer) {
	t.Helper()
	var ls api.LoopStatus
	a.decode(http.MethodPost, api.WorkflowPath("s-loop", "loop", "start"), api.LoopStartArgs{Prompt: "make the tests pass", MaxUSD: 2}, &ls)
	var lines []byte
	for i, rate := range []float64{0.25, 0.5, 1} {
		b, err := json.Marshal(session.IterationMetrics{Iteration: i + 1, LoopStartedAt: ls.StartedAt, TestPassRate: rate, LintIssues: 3 - i, Status: "progressing", Role: "developer", CostUSD: 0.1 * float64(i+1), Active: true})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(a.paths.SessionsDir, "s-loop", actors.MetricsFile), lines, 0o644); err != nil {
		t.Fatal(err)
	}

	var ps api.PlanStatus
	a.decode(http.MethodPost, api.WorkflowPath("s-plan", "plan", "new"), api.PlanArgs{PlanID: "demo", BudgetUSD: 0.5}, &ps)
	dir := filepath.Join(a.paths.Root, filepath.FromSlash(plan.PlansDir), "demo")
	var runs []byte
	for i, verdict := range []string{"fail", "pass"} {
		b, err := json.Marshal(api.PlanReviewRun{Session: "s-plan", Plan: "demo", Kind: "plan", Iteration: i + 1, Model: "opus", Outcome: "answered", Verdict: verdict, Findings: 2 - 2*i, Blocking: 1 - i, CostUSD: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(append(runs, b...), '\n')
		name := plan.ReviewFile(plan.KindPlan, "", i+1)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("# review "+verdict+"\n<b>not html</b>\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, plan.RunsFile), runs, 0o644); err != nil {
		t.Fatal(err)
	}

	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := api.Run{ID: "r-1", Target: "main", State: api.RunDone, Waves: 2, Merged: 2, CreatedAt: t0, UpdatedAt: t0.Add(time.Hour),
		Suite: &api.TestResult{Command: "go test", Passed: true, At: t0},
		Tasks: []api.RunTask{
			{ID: "a", Wave: 1, State: api.TaskDone, Iteration: 1, Role: "developer", StartedAt: t0, EndedAt: t0.Add(time.Minute)},
			{ID: "b", Wave: 2, State: api.TaskDone, Iteration: 2, Role: "debugger", StartedAt: t0.Add(2 * time.Minute), EndedAt: t0.Add(4 * time.Minute)},
		}}
	if err := a.srv.store.SaveRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
}

// TestStatusSaysTheBudget: GET /v1/status (drover status --json) has
// the budget each loop or plan session spends against and what it spent,
// so the dashboard's sessions page asks each session's actor once.
func TestStatusSaysTheBudget(t *testing.T) {
	a := newAPIServer(t)
	dashboardFixture(t, a)
	r := a.do(http.MethodGet, api.PathStatus, nil)
	var st struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("GET %s = %d %s: %v", api.PathStatus, r.status, r.body, err)
	}
	got := map[string][2]any{}
	for _, s := range st.Sessions {
		got[s["id"].(string)] = [2]any{s["budget_usd"], s["spent_usd"]}
	}
	for _, tc := range []struct {
		id            string
		budget, spent any
	}{
		{"s-loop", 2.0, nil},
		// The two reviews of the fixture cost $0.05 each.
		{"s-plan", 0.5, 0.1},
	} {
		if g, want := got[tc.id], [2]any{tc.budget, tc.spent}; g != want {
			t.Errorf("session %s: budget_usd, spent_usd = %v, want %v", tc.id, g, want)
		}
	}
}

// TestDashboardPages reads each page of the dashboard listener from a
// real supervisor over fixture state: the token refused, the pages'
// selectors (internal/dashboard's doc) holding what the state says.
func TestDashboardPages(t *testing.T) {
	cfg := config.Defaults()
	cfg.UI.Enabled = true
	a := newAPIServerConfig(t, cfg)
	dashboardFixture(t, a)
	addr, tok := startMetricsUI(t, a)
	bearer := "Bearer " + tok
	for _, tc := range []struct {
		name, path, auth string
		code             int
		want, not        []string
	}{
		{"no token", "/", "", http.StatusUnauthorized, []string{"401 unauthorized"}, []string{"s-loop", "<table"}},
		{"a wrong token", "/loop/s-loop", "Bearer nope", http.StatusUnauthorized, nil, []string{"loop-chart"}},
		{"a wrong token in the query", "/run/r-1?token=nope", "", http.StatusUnauthorized, nil, []string{"run-waves"}},
		{"the event stream without the token", "/events?follow=false", "", http.StatusUnauthorized, nil, []string{"event:", "s-loop"}},
		{"the script without the token", "/static/app.js", "", http.StatusUnauthorized, nil, []string{"EventSource"}},
		{"a review file without the token", "/plan/s-plan/review/1", "", http.StatusUnauthorized, nil, []string{"# review"}},
		{"a path no route serves, without the token", "/nothing-here", "", http.StatusUnauthorized, nil, nil},
		{"sessions", "/", bearer, http.StatusOK, []string{
			`<tr data-session="s-loop" data-workflow="loop" data-state="on" data-health="working">`,
			`<a class="session-link" href="/loop/s-loop">`, `<a class="session-link" href="/plan/s-plan">`,
			`<td class="cost">$0.00 / $2.00</td>`, `<td class="cost">$0.10 / $0.50</td>`,
			`<tr data-run="r-1" data-state="done">`, `src="/static/app.js"`,
		}, nil},
		{"loop", "/loop/s-loop", bearer, http.StatusOK, []string{
			`<svg id="loop-chart"`, `<circle class="pass" data-iteration="1"`, `<circle class="pass" data-iteration="3" data-status="progressing" data-role="developer" data-pass-rate="1.00"`,
			`<rect class="lint" data-iteration="2" data-lint="2"`, `<tr data-iteration="3"`,
		}, []string{`data-iteration="4"`}},
		{"plan", "/plan/s-plan", bearer, http.StatusOK, []string{
			`<ol id="plan-timeline"`, `<li data-cycle="1" data-verdict="fail" data-kind="plan" data-model="opus" data-blocking="1" data-minor="1">`,
			`<li data-cycle="2" data-verdict="pass"`, `<a class="review-link" href="/plan/s-plan/review/2">plan-review-2.md</a>`,
		}, nil},
		{"a review file", "/plan/s-plan/review/1", bearer, http.StatusOK, []string{"# review fail\n<b>not html</b>"}, nil},
		{"a review that is not there", "/plan/s-plan/review/3", bearer, http.StatusNotFound, nil, nil},
		{"run", "/run/r-1", bearer, http.StatusOK, []string{
			`<svg id="run-waves"`, `<g class="task" data-task="a" data-wave="1" data-state="done">`, `<g class="task" data-task="b" data-wave="2" data-state="done">`,
			`<tr data-task="b" data-wave="2" data-state="done">`, `<span id="run-suite" data-passed="true">pass</span>`, `2 of 2 waves merged`,
		}, nil},
		{"runs", "/runs", bearer, http.StatusOK, []string{`<a class="run-link" href="/run/r-1">`}, nil},
		{"a run that is not there", "/run/r-9", bearer, http.StatusNotFound, nil, nil},
		{"a session that is not there", "/loop/nobody", bearer, http.StatusNotFound, nil, nil},
		{"the script", "/static/app.js", bearer, http.StatusOK, []string{"new EventSource(\"/events"}, nil},
		{"the style sheet", "/static/style.css", bearer, http.StatusOK, []string{"font-family"}, nil},
		{"a page template", "/static/sessions.html", bearer, http.StatusNotFound, nil, []string{"{{"}},
		{"the assets folder", "/static/", bearer, http.StatusOK, []string{"app.js"}, []string{".html"}},
		{"the event history", "/events?follow=false", bearer, http.StatusOK, []string{"event: session.started"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := uiGet(t, addr, tc.path, tc.auth)
			if code != tc.code {
				t.Fatalf("GET %s = %d, want %d\n%s", tc.path, code, tc.code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q\n%s", tc.path, w, body)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("GET %s has %q\n%s", tc.path, n, body)
				}
			}
		})
	}
	// A review file is served from the file as it is, not read whole
	// first: a Range request gets its part, as from any file server.
	t.Run("part of a review file", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/plan/s-plan/review/1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", bearer)
		req.Header.Set("Range", "bytes=2-7")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusPartialContent || string(body) != "review" || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET review 1, bytes 2-7 = %d %q (%s), want 206 %q as text/plain", res.StatusCode, body, res.Header.Get("Content-Type"), "review")
		}
	})
}

// TestDashboardTokenCookie: a GET with ?token= gets the token back as an
// HttpOnly, SameSite=Strict cookie of this listener and is sent on (303)
// to its URL without the token, so that the token stays out of the
// address bar and the history; the cookie alone then opens the pages, a
// wrong cookie does not, and a browser that follows the redirect lands
// on the page.
func TestDashboardTokenCookie(t *testing.T) {
	a := newAPIServer(t)
	addr, tok := startMetricsUI(t, a)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ path, location string }{
		{"/runs?token=" + tok, "/runs"},
		{"/?token=" + tok, "/"},
		{"/runs?since=3&token=" + tok + "&follow=false", "/runs?since=3&follow=false"},
		{"/plan/s%2Fx/review/1?token=" + tok, "/plan/s%2Fx/review/1"},
		{"//elsewhere.example/?token=" + tok, "/elsewhere.example/"},
	} {
		res, err := noFollow.Get("http://" + addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != tc.location {
			t.Errorf("GET %s = %d to %q, want 303 to %q", tc.path, res.StatusCode, loc, tc.location)
		}
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	res, err := browser.Get("http://" + addr + "/runs?token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.String() != "http://"+addr+"/runs" {
		t.Errorf("following GET /runs?token= = %d at %s, want 200 at /runs", res.StatusCode, res.Request.URL)
	}
	if res.Request.Response == nil {
		t.Fatal("GET /runs?token= was not redirected")
	}
	var c *http.Cookie
	for _, ck := range res.Request.Response.Cookies() {
		if strings.HasPrefix(ck.Name, uiCookiePrefix) {
			c = ck
		}
	}
	if c == nil || c.Value != tok || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Fatalf("cookie = %+v, want the token, HttpOnly, SameSite=Strict, Path=/", c)
	}
	for _, tc := range []struct {
		name  string
		value string
		code  int
	}{
		{"the cookie", tok, http.StatusOK},
		{"a wrong cookie", "nope", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/runs", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.AddCookie(&http.Cookie{Name: c.Name, Value: tc.value})
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.code {
				t.Errorf("GET /runs with %s = %d, want %d", tc.name, res.StatusCode, tc.code)
			}
		})
	}
}

// TestPostUIStartsTheListener: POST /v1/ui starts the dashboard listener
// of a supervisor whose ui.enabled is off, answers its URL with the
// token, and a second call finds the same listener.
func TestPostUIStartsTheListener(t *testing.T) {
	a := newAPIServer(t)
	t.Cleanup(func() { a.srv.closeUI(context.Background()) })
	var first, second api.UIResponse
	a.decode(http.MethodPost, api.PathUI, nil, &first)
	a.decode(http.MethodPost, api.PathUI, nil, &second)
	if first.URL == "" || first != second {
		t.Fatalf("POST /v1/ui = %+v then %+v, want the same listener", first, second)
	}
	if !strings.HasPrefix(first.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q is not on 127.0.0.1", first.URL)
	}
	tok, err := os.ReadFile(filepath.Join(a.paths.StateDir, uiTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + first.Addr + "/?token=" + strings.TrimSpace(string(tok)); first.URL != want {
		t.Errorf("URL = %q, want %q", first.URL, want)
	}
	if code, _ := uiGet(t, first.Addr, "/", ""); code != http.StatusUnauthorized {
		t.Errorf("GET / without the token = %d, want 401", code)
	}
	if code, body := uiGet(t, first.Addr, strings.TrimPrefix(first.URL, "http://"+first.Addr), ""); code != http.StatusOK {
		t.Errorf("GET the URL = %d, want 200\n%s", code, body)
	}
	// The listener drover ui started stops with the supervisor, and its
	// address file goes with it.
	a.srv.closeUI(context.Background())
	if _, err := os.Stat(filepath.Join(a.paths.StateDir, uiAddrFile)); !os.IsNotExist(err) {
		t.Errorf("ui-addr after the listener stopped: %v, want it removed", err)
	}
}

// TestUIURLHoldsTheListenersToken: the token file removed while the
// dashboard listener runs (a user rotating it by hand), a later POST
// /v1/ui still answers a URL that the running listener lets in, not one
// with a token made anew that only a restarted listener would check.
func TestUIURLHoldsTheListenersToken(t *testing.T) {
	a := newAPIServer(t)
	t.Cleanup(func() { a.srv.closeUI(context.Background()) })
	var first, second api.UIResponse
	a.decode(http.MethodPost, api.PathUI, nil, &first)
	if err := os.Remove(filepath.Join(a.paths.StateDir, uiTokenFile)); err != nil {
		t.Fatal(err)
	}
	a.decode(http.MethodPost, api.PathUI, nil, &second)
	if second != first {
		t.Errorf("POST /v1/ui = %+v after the token file went, want %+v (the running listener's)", second, first)
	}
	if code, body := uiGet(t, second.Addr, strings.TrimPrefix(second.URL, "http://"+second.Addr), ""); code != http.StatusOK {
		t.Errorf("GET the URL = %d, want 200\n%s", code, body)
	}
}
