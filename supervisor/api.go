package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/tasks"
)

// maxRequestBytes caps a request body: a hook payload may carry a large
// prompt, but the hook client caps its stdin below this.
const maxRequestBytes = hook.MaxInputBytes + 1<<20

// askTimeout bounds how long a handler waits for a session actor. The hook
// client's own budget is shorter; this only keeps a wedged actor from
// holding handlers forever.
const askTimeout = 60 * time.Second

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathHealth, s.serveHealth)
	mux.HandleFunc("GET "+api.PathStatus, s.serveStatus)
	mux.HandleFunc("GET "+api.PathConfig, s.serveConfig)
	mux.HandleFunc("POST "+api.PathCleanup, s.serveCleanup)
	mux.HandleFunc("GET "+api.PathEvents, s.serveEvents)
	mux.HandleFunc("POST "+api.PathUI, s.serveUI)
	mux.HandleFunc("POST /v1/hook/{event}", s.serveHook)
	mux.HandleFunc("POST /v1/sessions/{id}/tasks", s.serveAdd)
	mux.HandleFunc("POST /v1/sessions/{id}/{verb}", s.serveCommand)
	mux.HandleFunc("POST /v1/sessions/{id}/{workflow}/{verb}", s.serveWorkflow)
	mux.HandleFunc("POST "+api.PathRuns, s.serveRunStart)
	mux.HandleFunc("GET "+api.PathRuns, s.serveRunList)
	mux.HandleFunc("GET "+api.PathRuns+"/{id}", s.serveRunGet)
	mux.HandleFunc("POST "+api.PathRuns+"/{id}/resume", s.serveRunResume)
	mux.HandleFunc("POST "+api.PathRuns+"/{id}/cancel", s.serveRunCancel)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.VersionHeader, s.opts.Version)
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	msg := err.Error()
	if errors.Is(err, actors.ErrBadRequest) {
		// ErrBadRequest chooses the status (statusFor); its own text is
		// not for the user, who reads the message as it is.
		msg = strings.TrimPrefix(msg, actors.ErrBadRequest.Error()+": ")
	}
	writeJSON(w, status, api.Error{Error: msg})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err := dec.Decode(v); err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			return fmt.Errorf("request body is larger than %d bytes", tooBig.Limit)
		}
		return fmt.Errorf("decoding request body: %w", err)
	}
	// One JSON value is the whole body: what follows it would otherwise
	// be dropped unread, and a body cut or joined by mistake pass.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			return fmt.Errorf("request body is larger than %d bytes", tooBig.Limit)
		}
		return errors.New("decoding request body: more data after the JSON value")
	}
	return nil
}

// ask sends msg to the session's actor and waits for its reply. A reply
// that cannot be delivered because the actor was stopping is retried once:
// every request is safe to repeat (hooks carry a request id).
func (s *Server) ask(id string, msg any) (any, error) {
	return s.askFor(id, msg, askTimeout)
}

// askFor is ask with its own bound on the wait.
func (s *Server) askFor(id string, msg any, timeout time.Duration) (any, error) {
	var res any
	var err error
	for try := 0; try < 2; try++ {
		res, err = s.system.Root.RequestFuture(s.root, &actors.ToSession{SessionID: id, Msg: msg}, timeout).Result()
		if !errors.Is(err, actor.ErrDeadLetter) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("asking session %s: %w", id, err)
	}
	return res, nil
}

func statusFor(err error) int {
	if errors.Is(err, actors.ErrUnknownCommand) {
		return http.StatusBadRequest
	}
	if errors.Is(err, actors.ErrBadRequest) {
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.HealthResponse{PID: os.Getpid(), Project: s.opts.Paths.Root, Version: s.opts.Version, Started: s.started})
}

func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e, err := hook.ParseEvent(r.PathValue("event"))
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	var req api.HookRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	id := req.Input.SessionID
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	// A Stop may be held while a plan reviewer runs, as long as the hook
	// client said it waits (review.hold), which cannot exceed the Stop
	// timeout in hooks.json. Only a Stop is held: hold_ms on another
	// event would put the Stop budget on its decision (askHook).
	var hold time.Duration
	if e == hook.Stop {
		hold = time.Duration(min(max(req.HoldMS, 0), config.HookTimeout(hook.Stop).Milliseconds())) * time.Millisecond
	}
	res, err := s.askHook(r.Context(), id, &actors.HandleHook{RequestID: req.RequestID, Event: e, Input: req.Input, Hold: hold}, askTimeout+hold)
	var out *actors.HookResult
	if err == nil {
		var ok bool
		if out, ok = res.(*actors.HookResult); !ok {
			err = fmt.Errorf("unexpected reply %T", res)
		} else {
			err = out.Err
		}
	}
	if err != nil {
		s.metrics.observeHook(string(e), "error", false, time.Since(start))
		s.log.Error("hook decision failed", zap.String("session", id), zap.String("event", string(e)), zap.Error(err), zap.Duration("latency", time.Since(start)))
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	resp := api.HookResponse{Output: out.Output, Text: out.Text, Replayed: out.Replayed}
	s.metrics.observeHook(string(e), resp.Kind(), out.Replayed, time.Since(start))
	s.log.Info("hook decision",
		zap.String("session", id),
		zap.String("event", string(e)),
		zap.String("decision", resp.Kind()),
		zap.Bool("replayed", out.Replayed),
		zap.String("request", req.RequestID),
		zap.Duration("latency", time.Since(start)))
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) serveAdd(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var req api.AddRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.ask(id, &actors.AddTask{Prompt: req.Prompt})
	if err == nil {
		if ar, ok := res.(*actors.AddResult); ok {
			if ar.Err != nil {
				writeError(w, statusFor(ar.Err), ar.Err)
				return
			}
			s.log.Info("task added", zap.String("session", id), zap.String("path", ar.Response.Path))
			writeJSON(w, http.StatusOK, ar.Response)
			return
		}
		err = fmt.Errorf("unexpected reply %T", res)
	}
	writeError(w, http.StatusInternalServerError, err)
}

func (s *Server) serveCommand(w http.ResponseWriter, r *http.Request) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	switch verb {
	case "start", "stop", "unstick":
	default:
		writeError(w, http.StatusNotFound, fmt.Errorf("unknown session command %q", verb))
		return
	}
	res, err := s.ask(id, &actors.Command{Verb: verb})
	if err == nil {
		if cr, ok := res.(*actors.CommandResult); ok {
			if cr.Err != nil {
				writeError(w, statusFor(cr.Err), cr.Err)
				return
			}
			s.log.Info("session command", zap.String("session", id), zap.String("command", verb), zap.String("state", cr.Response.State))
			writeJSON(w, http.StatusOK, cr.Response)
			return
		}
		err = fmt.Errorf("unexpected reply %T", res)
	}
	writeError(w, http.StatusInternalServerError, err)
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	resp, err := s.statusResponse(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// statusResponse is what GET /v1/status answers (and the dashboard's
// sessions page shows): every session the store or the sessions folder
// knows, as its actor says.
func (s *Server) statusResponse(ctx context.Context) (api.StatusResponse, error) {
	recs, err := s.store.List(ctx)
	if err != nil {
		return api.StatusResponse{}, err
	}
	ids := make([]string, 0, len(recs))
	seen := map[string]bool{}
	for _, rec := range recs {
		ids = append(ids, rec.ID)
		seen[rec.ID] = true
	}
	// Task files can exist for a session the store does not know (the store
	// was removed by hand): its actor shows them too, as a stopped queue.
	if ents, err := os.ReadDir(s.opts.Paths.SessionsDir); err == nil {
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] && hook.ValidSessionID(e.Name()) {
				ids = append(ids, e.Name())
			}
		}
	}
	sort.Strings(ids)
	resp := api.StatusResponse{Project: s.opts.Paths.Root, PID: os.Getpid(), Sessions: []api.SessionStatus{}}
	// What a session shows is its actor's to say; the supervisor only asks.
	for _, id := range ids {
		res, err := s.ask(id, &actors.StatusQuery{})
		var out *actors.StatusResult
		if err == nil {
			var ok bool
			if out, ok = res.(*actors.StatusResult); !ok {
				err = fmt.Errorf("unexpected reply %T", res)
			} else {
				err = out.Err
			}
		}
		if err != nil {
			s.log.Error("session status failed", zap.String("session", id), zap.Error(err))
			resp.Sessions = append(resp.Sessions, api.SessionStatus{ID: id, State: "unavailable"})
			continue
		}
		resp.Sessions = append(resp.Sessions, out.Status)
	}
	if q, err := s.store.Quarantined(ctx); err == nil {
		resp.Quarantined = len(q)
	}
	return resp, nil
}

func (s *Server) serveCleanup(w http.ResponseWriter, r *http.Request) {
	var req api.CleanupRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if req.Days < 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("days must be 0 or more, got %d", req.Days))
		return
	}
	recs, err := s.store.List(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	active := map[string]bool{}
	for _, rec := range recs {
		active[rec.ID] = rec.Active()
	}
	deleted, kept, cerr := tasks.Cleanup(s.opts.Paths.SessionsDir, time.Duration(req.Days)*24*time.Hour, req.Force, time.Now(), func(id string) bool { return active[id] })
	// Folders removed before an error are gone: forget their records too.
	for _, path := range deleted {
		id := filepath.Base(path)
		if err := s.store.Delete(r.Context(), id); err != nil {
			s.log.Warn("deleting session record", zap.String("session", id), zap.Error(err))
		}
		s.system.Root.Send(s.root, &actors.Forget{SessionID: id})
	}
	if cerr != nil {
		writeError(w, http.StatusInternalServerError, cerr)
		return
	}
	s.log.Info("cleanup", zap.Int("deleted", len(deleted)), zap.Int("kept", len(kept)), zap.Bool("force", req.Force), zap.Int("days", req.Days))
	if deleted == nil {
		deleted = []string{}
	}
	if kept == nil {
		kept = []string{}
	}
	writeJSON(w, http.StatusOK, api.CleanupResponse{Deleted: deleted, Kept: kept})
}

func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	y, err := s.cfg.Load().YAML()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"yaml": string(y)})
}

func (s *Server) serveWorkflow(w http.ResponseWriter, r *http.Request) {
	id, wf, verb := r.PathValue("id"), r.PathValue("workflow"), r.PathValue("verb")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var args json.RawMessage
	if err := decodeBody(w, r, &args); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.ask(id, &actors.WorkflowCommand{Workflow: wf, Verb: verb, Args: args})
	if err == nil {
		if wr, ok := res.(*actors.WorkflowResult); ok {
			if wr.Err != nil {
				writeError(w, statusFor(wr.Err), wr.Err)
				return
			}
			s.log.Info("workflow command", zap.String("session", id), zap.String("workflow", wf), zap.String("command", verb))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(wr.Response)
			return
		}
		err = fmt.Errorf("unexpected reply %T", res)
	}
	writeError(w, http.StatusInternalServerError, err)
}
