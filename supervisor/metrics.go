package supervisor

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/reviewer"
)

// metrics is what GET /metrics serves (metrics.enabled). Its counters are
// fed from the event stream (follow), the hooks' by serveHook (a decision
// that changes nothing commits nothing, so has no event), and its gauges are computed from the store when scraped. No label carries a
// prompt, a task's or a plan's name, or a path of the user's files: only
// hook event names, decisions, workflows and their state words,
// convergence statuses, roles, the reviewer CLI and model, and verdicts.
type metrics struct {
	reg *prometheus.Registry
	// cli returns the reviewer CLI (review.cli) that a review event is
	// counted under: the events do not carry it.
	cli func() string

	hookDecisions *prometheus.CounterVec
	hookLatency   *prometheus.HistogramVec
	loopIters     *prometheus.CounterVec
	loopEnded     *prometheus.CounterVec
	reviews       *prometheus.CounterVec
	reviewCost    *prometheus.CounterVec
	budgets       *prometheus.CounterVec
	kills         *prometheus.CounterVec
}

// newMetrics registers drover's metrics, and the collector of the gauges
// that scan computes at scrape time, in a registry of their own.
func newMetrics(cli func() string, scan func(context.Context) (gauges, error)) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		cli: cli,
		hookDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_hook_decisions_total",
			Help: "Hook decisions, by hook event and answer (block, allow, context, or error); a retried request answered with its recorded decision is not counted again.",
		}, []string{"event", "decision"}),
		hookLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "drover_hook_decision_seconds",
			Help:    "Time from a hook request's arrival to its answer (a replayed one too), by hook event and answer (block, allow, context, or error).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20},
		}, []string{"event", "decision"}),
		loopIters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_loop_iterations_total",
			Help: "Loop iterations, by the convergence status and routed role they ended with.",
		}, []string{"status", "role"}),
		loopEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_loops_ended_total",
			Help: "Loops ended, by outcome (done, converged, stuck, a budget spent).",
		}, []string{"outcome"}),
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_reviews_total",
			Help: "Reviewer runs finished, by reviewer CLI, model and verdict (pass, fail, or failed when the run gave none).",
		}, []string{"cli", "model", "verdict"}),
		reviewCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_reviewer_cost_usd_total",
			Help: "What finished reviewer runs cost, in US dollars, by reviewer CLI and model.",
		}, []string{"cli", "model"}),
		budgets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_budgets_reached_total",
			Help: "Budgets reached, by workflow (loop or run).",
		}, []string{"workflow"}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_process_kills_total",
			Help: "Processes killed (with their process group) for running past their timeout, by the work that ran them: review, checkpoint, checks, metrics (a loop's), iteration, wave (a run's).",
		}, []string{"work"}),
	}
	m.reg.MustRegister(m.hookDecisions, m.hookLatency, m.loopIters, m.loopEnded, m.reviews, m.reviewCost, m.budgets, m.kills, &gaugeCollector{scan: scan})
	return m
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// observeHook records one hook's answer and how long it took; replayed
// is set for a retried request given its recorded decision.
func (m *metrics) observeHook(event, decision string, replayed bool, took time.Duration) {
	if m == nil {
		return
	}
	if !replayed {
		m.hookDecisions.WithLabelValues(event, decision).Inc()
	}
	m.hookLatency.WithLabelValues(event, decision).Observe(took.Seconds())
}

// killed counts a process killed at its timeout by work (actors.Env.Killed).
func (m *metrics) killed(work string) { m.kills.WithLabelValues(work).Inc() }

// observe counts what e reports.
func (m *metrics) observe(e api.Event) {
	switch e.Kind {
	case api.EventLoopIteration:
		var d api.LoopIterationData
		if json.Unmarshal(e.Data, &d) == nil {
			m.loopIters.WithLabelValues(d.Status, d.Role).Inc()
		}
	case api.EventLoopEnded:
		var d api.LoopIterationData
		if json.Unmarshal(e.Data, &d) == nil {
			m.loopEnded.WithLabelValues(d.Outcome).Inc()
		}
	case api.EventReviewFinished:
		var d api.ReviewData
		if json.Unmarshal(e.Data, &d) == nil {
			// The model's own CLI, in a cycle that mixes them.
			cli, _, err := reviewer.ModelCLI(d.Model, m.cli())
			if err != nil {
				cli = m.cli()
			}
			m.reviews.WithLabelValues(cli, d.Model, d.Verdict).Inc()
			if d.CostUSD > 0 {
				m.reviewCost.WithLabelValues(cli, d.Model).Add(d.CostUSD)
			}
		}
	case api.EventBudgetReached:
		wf := "loop"
		if e.Run != "" {
			wf = "run"
		}
		m.budgets.WithLabelValues(wf).Inc()
	}
}

// follow counts the hub's events from those published after it is
// called until the hub closes. A subscription dropped for falling behind
// resumes after the last event counted, from the hub's history, so that
// no event is counted twice or, while the history holds it, missed.
func (m *metrics) follow(hub *events.Hub) {
	last := hub.LastID()
	for {
		backlog, sub, _ := hub.Subscribe(last)
		for _, e := range backlog {
			m.observe(e)
			last = e.ID
		}
		for e := range sub.C {
			m.observe(e)
			last = e.ID
		}
		sub.Close()
		if hub.Closed() {
			return
		}
	}
}

// gauges is what the store holds at a scrape: sessions by workflow, state
// and health, a run's tasks by state, and what agents have cost.
type gauges struct {
	sessions map[[3]string]int
	runTasks map[string]int
	// agentCost is by workflow: loop sessions' spend and runs'.
	agentCost map[string]float64
}

// scanGauges computes the gauges from the sessions' and runs' records
// (not by asking each session's actor, which would keep every actor from
// passivating under a scraper).
func (s *Server) scanGauges(ctx context.Context) (gauges, error) {
	g := gauges{sessions: map[[3]string]int{}, runTasks: map[string]int{}, agentCost: map[string]float64{}}
	recs, err := s.store.List(ctx)
	if err != nil {
		return g, err
	}
	now, stale := time.Now(), s.cfg.Load().Status.StaleAfter
	for _, rec := range recs {
		state, _ := actors.SessionState(rec)
		g.sessions[[3]string{string(rec.Workflow), state, string(rec.Health(now, stale))}]++
		if rec.Workflow == session.Loop {
			g.agentCost["loop"] += rec.Loop.CostUSD
		}
	}
	runs, err := s.store.ListRuns(ctx)
	if err != nil {
		return g, err
	}
	for _, r := range runs {
		for _, t := range r.Tasks {
			g.runTasks[string(t.State)]++
		}
		g.agentCost["run"] += r.CostUSD
	}
	return g, nil
}

var (
	sessionsDesc  = prometheus.NewDesc("drover_sessions", "Sessions in the store, by workflow, state (as drover status shows it) and health.", []string{"workflow", "state", "health"}, nil)
	runTasksDesc  = prometheus.NewDesc("drover_run_tasks", "Tasks of the runs in the store, by state.", []string{"state"}, nil)
	agentCostDesc = prometheus.NewDesc("drover_agent_cost_usd", "What agents have cost, in US dollars, by workflow: the loop sessions' spend and the runs' (as the store holds them).", []string{"workflow"}, nil)
)

// gaugeCollector computes the gauges at each scrape.
type gaugeCollector struct {
	scan func(context.Context) (gauges, error)
}

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- runTasksDesc
	ch <- agentCostDesc
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := c.scan(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(sessionsDesc, err)
		return
	}
	for k, n := range g.sessions {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	for state, n := range g.runTasks {
		ch <- prometheus.MustNewConstMetric(runTasksDesc, prometheus.GaugeValue, float64(n), state)
	}
	for wf, usd := range g.agentCost {
		ch <- prometheus.MustNewConstMetric(agentCostDesc, prometheus.GaugeValue, usd, wf)
	}
}
