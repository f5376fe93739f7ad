package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/natsexec"
	"github.com/drover-dev/drover/internal/rungraph"
)

// startRuns spawns the top-level actor of `drover run` and returns what
// stops it (and so every agent and test process of its runs). A failure
// to spawn is logged: the rest of the supervisor works without runs.
//
// Runs read what the sessions read, from the sessions' env: the project's
// templates (with its .drover/templates overrides), the configuration as
// last reloaded, and the one limiter of reviewer processes, so that run
// reviews and plan reviews together stay within review.max_parallel; and
// the tag of what the supervisor starts, for its watchdog.
func (s *Server) startRuns(env actors.Env) func() {
	// The nats executor's connections last as long as the runs actor.
	conns := natsexec.NewConnections(s.opts.Paths.Root)
	pid, err := s.system.Root.SpawnNamed(actors.NewRunsProps(actors.RunsEnv{
		Store:     s.store,
		Root:      s.opts.Paths.Root,
		Log:       s.log,
		Templates: env.Templates,
		Config:    env.Config,
		Reviewers: env.Reviewers,
		ChildTag:  env.ChildTag,
		Events:    env.Events,
		Killed:    env.Killed,
		Executors: map[string]func(config.Config, api.RunOptions) (executor.Executor, error){
			executor.NATS: conns.Executor,
		},
	}), actors.RunsActorName)
	if err != nil {
		s.log.Error("spawning the runs actor", zap.Error(err))
		conns.Close()
		return func() {}
	}
	return func() {
		if err := s.system.Root.StopFuture(pid).Wait(); err != nil {
			s.log.Warn("stopping the runs actor", zap.Error(err))
		}
		conns.Close()
	}
}

func (s *Server) runsPID() *actor.PID {
	return actor.NewPID(s.system.Address(), actors.RunsActorName)
}

func (s *Server) askRuns(msg any) (any, error) {
	res, err := s.system.Root.RequestFuture(s.runsPID(), msg, askTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("asking the runs actor: %w", err)
	}
	return res, nil
}

// liveRuns returns the ids of the runs being worked now; on trouble none.
func (s *Server) liveRuns() map[string]bool {
	res, err := s.askRuns(&actors.LiveRuns{})
	if lr, ok := res.(*actors.LiveRunsReply); err == nil && ok {
		return lr.IDs
	}
	return nil
}

func (s *Server) writeRunReply(w http.ResponseWriter, res any, err error, what string) {
	if err == nil {
		rr, ok := res.(*actors.RunReply)
		if !ok {
			err = fmt.Errorf("unexpected reply %T", res)
		} else if rr.Err != nil {
			writeError(w, statusFor(rr.Err), rr.Err)
			return
		} else {
			s.log.Info(what, zap.String("run", rr.Run.ID))
			writeJSON(w, http.StatusOK, rr.Run)
			return
		}
	}
	writeError(w, http.StatusInternalServerError, err)
}

func (s *Server) serveRunStart(w http.ResponseWriter, r *http.Request) {
	var req api.StartRunRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if len(req.Graph) > rungraph.MaxFileSize {
		writeError(w, http.StatusBadRequest, fmt.Errorf("task graph %s is %d bytes, more than %d", req.File, len(req.Graph), rungraph.MaxFileSize))
		return
	}
	res, err := s.askRuns(&actors.StartRun{Request: req})
	s.writeRunReply(w, res, err, "run started")
}

func (s *Server) serveRunResume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if !s.runExists(w, r, id) {
		return
	}
	res, err := s.askRuns(&actors.ResumeRun{ID: id})
	s.writeRunReply(w, res, err, "run resumed")
}

func (s *Server) serveRunCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if !s.runExists(w, r, id) {
		return
	}
	res, err := s.askRuns(&actors.CancelRun{ID: id})
	s.writeRunReply(w, res, err, "run cancelled")
}

// runs lists the stored runs, newest first, each marked active while a
// run actor works it (drover run list, and the dashboard's).
func (s *Server) runs(ctx context.Context) ([]api.Run, error) {
	runs, err := s.store.ListRuns(ctx)
	if err != nil {
		return nil, err
	}
	live := s.liveRuns()
	for i := range runs {
		runs[i].Active = live[runs[i].ID]
	}
	return runs, nil
}

// loadRun returns run id from the store, marked active while a run actor
// works it (drover run status, and the dashboard's run page).
func (s *Server) loadRun(ctx context.Context, id string) (run api.Run, found bool, err error) {
	run, found, err = s.store.LoadRun(ctx, id)
	if err != nil || !found {
		return run, found, err
	}
	run.Active = s.liveRuns()[id]
	return run, true, nil
}

func (s *Server) serveRunList(w http.ResponseWriter, r *http.Request) {
	runs, err := s.runs(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if runs == nil {
		runs = []api.Run{}
	}
	writeJSON(w, http.StatusOK, api.RunsResponse{Runs: runs})
}

func (s *Server) serveRunGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := hook.CheckSessionID(id); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	run, found, err := s.loadRun(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, errors.New("no run "+id))
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// runExists reports whether the store holds run id; when it does not, it
// has answered the request (404, or 500 when the store cannot tell).
func (s *Server) runExists(w http.ResponseWriter, r *http.Request, id string) bool {
	_, found, err := s.store.LoadRun(r.Context(), id)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	case !found:
		writeError(w, http.StatusNotFound, errors.New("no run "+id))
	}
	return err == nil && found
}
