package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/dashboard"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// The dashboard's pages (internal/dashboard renders them; its package doc
// lists the routes and the selectors a browser test reads). Each handler
// gathers a view from what the API serves (the sessions' actors, the
// store, the event history, the loop's metrics history, the plan's run
// log) and renders it; the listener's token check is in front of them.

// dashboardRoutes mounts the pages on mux.
func (s *Server) dashboardRoutes(mux *http.ServeMux, r *dashboard.Renderer) {
	mux.HandleFunc("GET /{$}", s.page(func(w *bytes.Buffer, req *http.Request) error {
		v, err := s.sessionsView(req.Context())
		if err != nil {
			return err
		}
		return r.Sessions(w, v)
	}))
	mux.HandleFunc("GET /runs", s.page(func(w *bytes.Buffer, req *http.Request) error {
		runs, err := s.runs(req.Context())
		if err != nil {
			return err
		}
		return r.Runs(w, dashboard.RunsView{Runs: runs})
	}))
	mux.HandleFunc("GET /loop/{session}", s.page(func(w *bytes.Buffer, req *http.Request) error {
		v, err := s.loopView(req.Context(), req.PathValue("session"))
		if err != nil {
			return err
		}
		return r.Loop(w, v)
	}))
	mux.HandleFunc("GET /plan/{session}", s.page(func(w *bytes.Buffer, req *http.Request) error {
		v, _, err := s.planView(req.Context(), req.PathValue("session"))
		if err != nil {
			return err
		}
		return r.Plan(w, v)
	}))
	mux.HandleFunc("GET /plan/{session}/review/{n}", s.serveReviewFile)
	mux.HandleFunc("GET /run/{id}", s.page(func(w *bytes.Buffer, req *http.Request) error {
		id := req.PathValue("id")
		if err := hook.CheckSessionID(id); err != nil {
			return fmt.Errorf("%w: %w", actors.ErrBadRequest, err)
		}
		run, found, err := s.loadRun(req.Context(), id)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: no run %s", errNotFound, id)
		}
		return r.Run(w, dashboard.RunView{Run: run, Now: time.Now()})
	}))
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(dashboard.Assets())))
}

// errNotFound marks a page whose session, plan, run or review is not there.
var errNotFound = errors.New("not found")

// pageStatus is the HTTP status of a page's error: 404 for errNotFound,
// else the API's.
func pageStatus(err error) int {
	if errors.Is(err, errNotFound) {
		return http.StatusNotFound
	}
	return statusFor(err)
}

// page renders into a buffer first, so that a failure is a clean error
// page, not half a page.
func (s *Server) page(render func(*bytes.Buffer, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if err := render(&b, r); err != nil {
			code := pageStatus(err)
			if code == http.StatusInternalServerError {
				s.log.Warn("dashboard page", zap.String("path", r.URL.Path), zap.Error(err))
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b.Bytes())
	}
}

// sessionsView is the sessions page: the sessions as `drover status`
// shows them (with what each spent against its budget), each with its
// last event, and the runs.
func (s *Server) sessionsView(ctx context.Context) (dashboard.SessionsView, error) {
	// The events are read before the state: the page's script follows the
	// stream after the newest of them, so a change committed while the
	// state is gathered comes as an event and reloads the page. Read
	// after, its event would be counted as shown while the page shows the
	// state before it.
	var v dashboard.SessionsView
	last := map[string]*api.Event{}
	if s.events != nil {
		recent := s.events.Recent()
		for i := range recent {
			e := &recent[i]
			v.LastEventID = e.ID
			if e.Session != "" {
				last[e.Session] = e
			}
		}
	}
	st, err := s.statusResponse(ctx)
	if err != nil {
		return dashboard.SessionsView{}, err
	}
	if v.Runs, err = s.runs(ctx); err != nil {
		return dashboard.SessionsView{}, err
	}
	// The project's folder name, not its path: the page is shown and
	// screenshotted, and a path names the machine.
	v.Project = filepath.Base(st.Project)
	for _, ss := range st.Sessions {
		// The status has what each spent against its budget: one ask of
		// each session's actor per page.
		row := dashboard.SessionRow{SessionStatus: ss, LastEvent: last[ss.ID]}
		v.Sessions = append(v.Sessions, row)
	}
	return v, nil
}

// workflowStatus asks session id's actor for its workflow's status (the
// answer of `drover loop status` or `drover plan status`) into out.
func (s *Server) workflowStatus(id, workflow string, out any) error {
	if err := hook.CheckSessionID(id); err != nil {
		return fmt.Errorf("%w: %w", actors.ErrBadRequest, err)
	}
	res, err := s.ask(id, &actors.WorkflowCommand{Workflow: workflow, Verb: "status", Args: json.RawMessage("{}")})
	if err != nil {
		return err
	}
	wr, ok := res.(*actors.WorkflowResult)
	if !ok {
		return fmt.Errorf("unexpected reply %T", res)
	}
	if wr.Err != nil {
		return wr.Err
	}
	if err := json.Unmarshal(wr.Response, out); err != nil {
		return fmt.Errorf("decoding the %s status of session %s: %w", workflow, id, err)
	}
	return nil
}

// knownSession fails with errNotFound unless the store or the sessions
// folder has session id: a page must not wake an actor for any name.
func (s *Server) knownSession(ctx context.Context, id string) error {
	if err := hook.CheckSessionID(id); err != nil {
		return fmt.Errorf("%w: %w", actors.ErrBadRequest, err)
	}
	if _, st, err := s.store.Load(ctx, id); err == nil && st == store.Found {
		return nil
	}
	if _, err := os.Stat(filepath.Join(s.opts.Paths.SessionsDir, id)); err == nil {
		return nil
	}
	return fmt.Errorf("%w: no session %s", errNotFound, id)
}

// loopView is a loop session's page: its loop status and the iterations
// of its metrics history.
func (s *Server) loopView(ctx context.Context, id string) (dashboard.LoopView, error) {
	if err := s.knownSession(ctx, id); err != nil {
		return dashboard.LoopView{}, err
	}
	v := dashboard.LoopView{Session: id}
	if err := s.workflowStatus(id, "loop", &v.Status); err != nil {
		return v, err
	}
	pts, err := readLoopPoints(filepath.Join(s.opts.Paths.SessionsDir, id, actors.MetricsFile))
	if err != nil {
		return v, err
	}
	v.Points = pts
	return v, nil
}

// readLoopPoints reads a loop's metrics history (one JSON line per
// iteration; a line cut short by a crash is skipped). A missing file is
// a loop that measured nothing yet.
func readLoopPoints(path string) ([]dashboard.LoopPoint, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening metrics history %q: %w", path, err)
	}
	defer f.Close()
	var pts []dashboard.LoopPoint
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var m session.IterationMetrics
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Iteration <= 0 {
			continue
		}
		pts = append(pts, dashboard.LoopPoint{
			Iteration: m.Iteration, TestPassRate: m.TestPassRate, TestsPassed: m.TestsPassed, TestsFailed: m.TestsFailed,
			LintIssues: m.LintIssues, Status: m.Status, Role: m.Role, CostUSD: m.CostUSD, Outcome: m.Outcome,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics history %q: %w", path, err)
	}
	return pts, nil
}

// planView is a plan session's page: its plan status and the reviewer
// runs of its plan's run log, each with its review file's name when the
// file is there. It also returns the plan's folder.
func (s *Server) planView(ctx context.Context, id string) (dashboard.PlanView, string, error) {
	if err := s.knownSession(ctx, id); err != nil {
		return dashboard.PlanView{}, "", err
	}
	v := dashboard.PlanView{Session: id}
	if err := s.workflowStatus(id, "plan", &v.Status); err != nil {
		return v, "", err
	}
	if v.Status.PlanID == "" {
		return v, "", nil
	}
	dir := filepath.Join(s.opts.Paths.Root, filepath.FromSlash(plan.PlansDir), v.Status.PlanID)
	for _, run := range actors.PlanReviewRuns(dir) {
		item := dashboard.PlanReviewItem{PlanReviewRun: run}
		name := plan.ReviewFile(plan.Kind(run.Kind), run.Task, run.Iteration)
		if filepath.Base(name) != name {
			// A task name with a separator in the run log names no
			// file of this folder: none is served.
			v.Reviews = append(v.Reviews, item)
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			item.File = name
		}
		v.Reviews = append(v.Reviews, item)
	}
	return v, dir, nil
}

// serveReviewFile serves review n of a plan's timeline (1 is the first)
// as plain text: the file the reviewer's answer was written to. It is
// streamed from the file, not read whole: a file in the project's plan
// folder may be of any size.
func (s *Server) serveReviewFile(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		http.Error(w, "the review number must be 1 or more", http.StatusBadRequest)
		return
	}
	v, dir, err := s.planView(r.Context(), r.PathValue("session"))
	if err != nil {
		http.Error(w, err.Error(), pageStatus(err))
		return
	}
	if n > len(v.Reviews) || v.Reviews[n-1].File == "" {
		http.Error(w, fmt.Sprintf("no review file for review %d", n), http.StatusNotFound)
		return
	}
	f, err := os.Open(filepath.Join(dir, v.Reviews[n-1].File))
	if err != nil {
		http.Error(w, fmt.Sprintf("opening review %d: %v", n, err), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.Error(w, fmt.Sprintf("review %d is not a regular file", n), http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
