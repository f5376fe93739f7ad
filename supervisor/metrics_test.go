package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
)

// uiGet sends GET path to the dashboard listener at addr, with the
// Authorization header auth when it is not "", as a browser does: it
// keeps the cookies it is given and follows redirects (a ?token= is
// answered with the cookie and sent on to the URL without it).
func uiGet(t *testing.T, addr, path, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&http.Client{Jar: jar}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the answer: %v", path, err)
	}
	return res.StatusCode, string(body)
}

// startMetricsUI starts a's dashboard listener on a free port, stopped at
// the test's end, and returns its address and the token its file holds.
func startMetricsUI(t testing.TB, a *apiServer) (addr, tok string) {
	t.Helper()
	addr, _, stop, err := a.srv.startUI(0)
	if err != nil {
		t.Fatalf("startUI: %v", err)
	}
	t.Cleanup(func() { stop(context.Background()) })
	b, err := os.ReadFile(filepath.Join(a.paths.StateDir, uiTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return addr, strings.TrimSpace(string(b))
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, addr, tok string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := uiGet(t, addr, "/metrics", "Bearer "+tok)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics with the token = %d %s", code, body)
	}
	// A scraper that keeps no cookies and follows no redirects may bring
	// the token as ?token= too: /metrics is not sent on like a page.
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get("http://" + addr + "/metrics?token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics?token= by a scraper = %d, want 200", res.StatusCode)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v\n%s", err, body)
	}
	return fams
}

// sample returns the value of the sample of fams[name] whose labels are
// labels, and whether there is one (a histogram's value is its count).
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsCountWhatTheHooksDecided drives a queue through the real API
// (three Stops blocked, one of them retried, then one allowed) and reads
// /metrics from the dashboard listener: 127.0.0.1 only, behind the token
// of an owner-only file, parsed with the Prometheus text parser, its
// counters those of the hooks driven, and no label carrying the prompt or
// a path of the project (issue 14, item 4).
func TestMetricsCountWhatTheHooksDecided(t *testing.T) {
	cfg := config.Defaults()
	cfg.Metrics.Enabled = true
	a := newAPIServerConfig(t, cfg)
	addr, _, stop, err := a.srv.startUI(0)
	if err != nil {
		t.Fatalf("startUI: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop(context.Background())
		}
	})

	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("the dashboard listens on %q, want 127.0.0.1 only", addr)
	}
	if b, err := os.ReadFile(filepath.Join(a.paths.StateDir, uiAddrFile)); err != nil || strings.TrimSpace(string(b)) != addr {
		t.Errorf("%s = %q (%v), want %s", uiAddrFile, b, err, addr)
	}
	tokPath := filepath.Join(a.paths.StateDir, uiTokenFile)
	fi, err := os.Stat(tokPath)
	if err != nil {
		t.Fatalf("the token file: %v", err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("the token file's mode is %v, want 0600", mode)
	}
	b, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(b))

	const prompt = "write the parser for secret-project"
	var added api.AddResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "tasks"), api.AddRequest{Prompt: prompt}, &added)
	a.decode(http.MethodPost, api.SessionPath("s1", "start"), nil, &api.CommandResponse{})
	for _, req := range []string{"req-1", "req-2", "req-1", "req-3"} {
		if out := a.hook(hook.Stop, req, "s1"); !out.Output.IsBlock() {
			t.Fatalf("stop %s of an active queue = %+v, want a block", req, out)
		}
	}
	a.decode(http.MethodPost, api.SessionPath("s1", "stop"), nil, &api.CommandResponse{})
	if out := a.hook(hook.Stop, "req-4", "s1"); out.Output.IsBlock() {
		t.Fatalf("stop after drover stop = %+v, want it allowed", out)
	}

	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{"no token", "/metrics", "", http.StatusUnauthorized},
		{"a wrong token", "/metrics", "Bearer " + strings.Repeat("0", len(tok)), http.StatusUnauthorized},
		{"the token not as a bearer", "/metrics", tok, http.StatusUnauthorized},
		{"no token, another path", "/", "", http.StatusUnauthorized},
		{"the token in the query", "/metrics?token=" + tok, "", http.StatusOK},
		{"the token, a page that is not there", "/nothing", "Bearer " + tok, http.StatusNotFound},
	} {
		code, body := uiGet(t, addr, tc.path, tc.auth)
		if code != tc.want {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, tc.path, code, tc.want)
		}
		if code == http.StatusUnauthorized && strings.Contains(body, "drover_") {
			t.Errorf("%s: a refused request got metrics:\n%s", tc.name, body)
		}
	}

	fams := scrape(t, addr, tok)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		// The retried req-1 is answered (and timed) but not decided again.
		{"drover_hook_decisions_total", map[string]string{"event": "stop", "decision": "block"}, 3},
		{"drover_hook_decisions_total", map[string]string{"event": "stop", "decision": "allow"}, 1},
		{"drover_hook_decision_seconds", map[string]string{"event": "stop", "decision": "block"}, 4},
		{"drover_hook_decision_seconds", map[string]string{"event": "stop", "decision": "allow"}, 1},
		{"drover_sessions", map[string]string{"workflow": "queue", "state": "off"}, 1},
	} {
		if got, ok := sample(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.Contains(v, "secret-project") || strings.Contains(v, a.paths.Root) || strings.Contains(v, "/") {
					t.Errorf("%s has the label %s=%q: a prompt or a path", f.GetName(), l.GetName(), v)
				}
			}
		}
	}

	// The event stream feeds the workflow counters: a review finished
	// as the engine publishes it is counted once the follower reads it.
	a.srv.events.Publish(context.Background(), events.Draft{Kind: api.EventReviewFinished, Session: "s1", Data: api.ReviewData{Model: "opus", Verdict: "pass", CostUSD: 0.5}})
	eventually.True(t, 10*time.Second, "the review counted", func() bool {
		fams := scrape(t, addr, tok)
		n, _ := sample(fams, "drover_reviews_total", map[string]string{"cli": "claude", "model": "opus", "verdict": "pass"})
		usd, _ := sample(fams, "drover_reviewer_cost_usd_total", map[string]string{"cli": "claude", "model": "opus"})
		return n == 1 && usd == 0.5
	})

	stop(context.Background())
	stopped = true
	if _, err := os.Stat(filepath.Join(a.paths.StateDir, uiAddrFile)); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the listener stopped (%v)", uiAddrFile, err)
	}
}

// TestUITokenIsMadeOnce: the token is made once per project, owner-only,
// and a later start reads the same one, restricting a file made looser.
func TestUITokenIsMadeOnce(t *testing.T) {
	dir := t.TempDir()
	first, err := uiToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, uiTokenFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := uiToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || len(first) != 2*uiTokenBytes {
		t.Errorf("tokens %q then %q, want one token of %d hex digits", first, again, 2*uiTokenBytes)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file after a second start: %v %v, want mode 0600", fi.Mode(), err)
	}
}

// TestMetricsObserveEvents: what each event kind adds to the counters.
func TestMetricsObserveEvents(t *testing.T) {
	ev := func(kind api.EventKind, run string, data any) api.Event {
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		return api.Event{Kind: kind, Run: run, Data: raw}
	}
	m := newMetrics(func() string { return "codex" }, nil)
	for _, e := range []api.Event{
		ev(api.EventLoopIteration, "", api.LoopIterationData{Iteration: 1, Status: "exploring", Role: "developer"}),
		ev(api.EventLoopIteration, "", api.LoopIterationData{Iteration: 2, Status: "stuck_plateau", Role: "debugger"}),
		ev(api.EventLoopIteration, "", api.LoopIterationData{Iteration: 3, Status: "stuck_plateau", Role: "debugger"}),
		ev(api.EventLoopEnded, "", api.LoopIterationData{Iteration: 3, Outcome: "stuck"}),
		ev(api.EventReviewFinished, "", api.ReviewData{Model: "o3", Verdict: "fail", CostUSD: 0.25}),
		ev(api.EventReviewFinished, "r1", api.ReviewData{Model: "o3", Verdict: "pass", CostUSD: 0.5}),
		// A claude model in the same cycle runs on claude.
		ev(api.EventReviewFinished, "r1", api.ReviewData{Model: "opus", Verdict: "pass", CostUSD: 1}),
		ev(api.EventBudgetReached, "r1", api.BudgetData{What: "run"}),
	} {
		m.observe(e)
	}
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"iterations exploring/developer", testutil.ToFloat64(m.loopIters.WithLabelValues("exploring", "developer")), 1},
		{"iterations stuck_plateau/debugger", testutil.ToFloat64(m.loopIters.WithLabelValues("stuck_plateau", "debugger")), 2},
		{"loops ended stuck", testutil.ToFloat64(m.loopEnded.WithLabelValues("stuck")), 1},
		{"reviews codex/o3/fail", testutil.ToFloat64(m.reviews.WithLabelValues("codex", "o3", "fail")), 1},
		{"reviews codex/o3/pass", testutil.ToFloat64(m.reviews.WithLabelValues("codex", "o3", "pass")), 1},
		{"reviewer cost codex/o3", testutil.ToFloat64(m.reviewCost.WithLabelValues("codex", "o3")), 0.75},
		{"reviews claude/opus/pass", testutil.ToFloat64(m.reviews.WithLabelValues("claude", "opus", "pass")), 1},
		{"reviews codex/opus/pass", testutil.ToFloat64(m.reviews.WithLabelValues("codex", "opus", "pass")), 0},
		{"budgets run", testutil.ToFloat64(m.budgets.WithLabelValues("run")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestRunServesTheDashboardListenerWithMetrics: a supervisor with
// metrics.enabled (and ui.enabled off) starts the listener, says where in
// ui-addr, answers /metrics only with the token, and takes the address
// back when it stops; with neither key set it starts none; with its
// port taken it starts none, but the supervisor runs; neither leaves the
// address of a supervisor that died for drover ui to find.
func TestRunServesTheDashboardListenerWithMetrics(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name     string
		metrics  bool
		ui       bool
		port     int
		listener bool
	}{
		{"metrics.enabled", true, false, 0, true},
		{"ui.enabled", false, true, 0, true},
		{"neither ui nor metrics", false, false, 0, false},
		{"ui.port taken", true, true, takenPort, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := make(chan struct{})
			opts := lockTestOptions(t, 0, func() { close(ready) })
			opts.Config.Metrics.Enabled = tc.metrics
			opts.Config.UI.Enabled, opts.Config.UI.Port = tc.ui, tc.port
			// What a supervisor that died left: no listener is there.
			addrFile := filepath.Join(opts.Paths.StateDir, uiAddrFile)
			if err := os.MkdirAll(opts.Paths.StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(addrFile, []byte("127.0.0.1:1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Run(ctx, opts) }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("Run: %v", err)
			}
			b, err := os.ReadFile(addrFile)
			if !tc.listener {
				if !os.IsNotExist(err) {
					t.Errorf("%s = %q (%v), want no listener", uiAddrFile, b, err)
				}
			} else {
				if err != nil {
					t.Fatalf("reading %s: %v", uiAddrFile, err)
				}
				addr := strings.TrimSpace(string(b))
				if code, _ := uiGet(t, addr, "/metrics", ""); code != http.StatusUnauthorized {
					t.Errorf("GET /metrics without the token = %d, want 401", code)
				}
				tok, err := os.ReadFile(filepath.Join(opts.Paths.StateDir, uiTokenFile))
				if err != nil {
					t.Fatal(err)
				}
				code, body := uiGet(t, addr, "/metrics", "Bearer "+strings.TrimSpace(string(tok)))
				if want := map[bool]int{true: http.StatusOK, false: http.StatusNotFound}[tc.metrics]; code != want {
					t.Errorf("GET /metrics with the token = %d %s, want %d", code, body, want)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if _, err := os.Stat(addrFile); !os.IsNotExist(err) {
				t.Errorf("%s is there after the supervisor stopped (%v)", uiAddrFile, err)
			}
		})
	}
}

// TestMetricsCountALoopAndItsKilledCommand drives a loop through the real
// API, its metric command past loop.check_timeout: /metrics counts the
// loop's iteration from the event stream and the metric command's process
// killed at its timeout.
func TestMetricsCountALoopAndItsKilledCommand(t *testing.T) {
	cfg := config.Defaults()
	cfg.Metrics.Enabled = true
	cfg.Loop.MetricCommands = "sleep 30"
	cfg.Loop.CheckTimeout = 100 * time.Millisecond
	a := newAPIServerConfig(t, cfg)
	addr, tok := startMetricsUI(t, a)

	a.decode(http.MethodPost, api.SessionPath("s1", "loop/start"), api.LoopStartArgs{Prompt: "build the parser", MaxIterations: 10}, &json.RawMessage{})
	msg := "working"
	var out api.HookResponse
	a.decode(http.MethodPost, api.HookPath(hook.Stop), api.HookRequest{RequestID: "r1", Input: hook.Input{SessionID: "s1", HookEventName: hook.Stop.ClaudeName(), LastAssistantMessage: &msg}}, &out)
	if !out.Output.IsBlock() {
		t.Fatalf("the loop's first stop = %+v, want a block", out)
	}
	eventually.True(t, 10*time.Second, "the iteration and the kill counted", func() bool {
		fams := scrape(t, addr, tok)
		iters, _ := sample(fams, "drover_loop_iterations_total", nil)
		kills, _ := sample(fams, "drover_process_kills_total", map[string]string{"work": "metrics"})
		on, _ := sample(fams, "drover_sessions", map[string]string{"workflow": "loop", "state": "on"})
		return iters == 1 && kills == 1 && on == 1
	})
	a.decode(http.MethodPost, api.SessionPath("s1", "loop/cancel"), map[string]any{}, &json.RawMessage{})
}

// TestMetricsGaugeTheStoredRuns: the run gauges are what the store holds
// when /metrics is read: a run's tasks by state and what it cost.
func TestMetricsGaugeTheStoredRuns(t *testing.T) {
	cfg := config.Defaults()
	cfg.Metrics.Enabled = true
	a := newAPIServerConfig(t, cfg)
	addr, tok := startMetricsUI(t, a)
	run := api.Run{ID: "r1", State: api.RunDone, CostUSD: 1.5, Tasks: []api.RunTask{
		{ID: "a", State: api.TaskDone}, {ID: "b", State: api.TaskDone}, {ID: "c", State: api.TaskFailed},
	}}
	if err := a.srv.store.SaveRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, addr, tok)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"drover_run_tasks", map[string]string{"state": "done"}, 2},
		{"drover_run_tasks", map[string]string{"state": "failed"}, 1},
		{"drover_agent_cost_usd", map[string]string{"workflow": "run"}, 1.5},
	} {
		if got, ok := sample(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
}
