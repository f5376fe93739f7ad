// Package supervisor is drover's daemon: one per project, it owns the
// project's store and actor tree and serves the local API over an
// owner-only unix socket. It knows no workflow: it hands each request to
// the session's or the run's actor, which decides, and maps the actor's
// errors to HTTP statuses.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/gitstatus"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/notify"
	"github.com/drover-dev/drover/internal/project"
	"github.com/drover-dev/drover/internal/sockets"
	"github.com/drover-dev/drover/internal/store"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/reviewer"
	"github.com/drover-dev/drover/templates"
)

// ErrAlreadyRunning is returned by Run when another supervisor holds the
// project's lock.
var ErrAlreadyRunning = errors.New("supervisor: another supervisor is already running for this project")

// Options configures a supervisor.
type Options struct {
	Paths project.Paths
	// Config is the configuration at start; Sources, when set, is watched
	// and reloaded on change.
	Config  config.Config
	Sources *config.Sources
	Log     *logging.Logger
	// Version is reported by the health endpoint and response headers.
	Version string
	// Ready, when set, is called once the socket accepts connections.
	Ready func()
	// DirtyCheck overrides the git check (tests); nil means gitstatus.
	DirtyCheck func(ctx context.Context, dir string) (bool, []string, error)
	// Watchdog, when set, starts the supervisor's watchdog once Run holds
	// the project's lock (a supervisor that loses the race to start starts
	// none). It returns the "KEY=VALUE" tag put in the environment of
	// every process the supervisor starts that may outlive it (reviewers,
	// a run's agents and test commands, a loop's checks), for the watchdog
	// to end them and what they started if the supervisor dies without
	// doing so (internal/watchdog), and the function that ends the
	// watchdog.
	Watchdog func() (tag string, stop func(), err error)
	// LockWait, when positive, is how long Run waits for the project's lock
	// while its holder does not answer on the socket: a supervisor started
	// on demand by a hook that arrived while the previous one was still
	// stopping (its listener closed, requests in flight being answered)
	// must take over once the lock is free, not leave the hook with no
	// supervisor at all. A holder that answers is a running supervisor,
	// and Run returns ErrAlreadyRunning at once, as it does with no wait.
	LockWait time.Duration
	// EventBuffer is how many events a stream client may fall behind by
	// before it is dropped (events.DefaultBuffer when 0; tests lower it).
	EventBuffer int
	// Fault, when set, is called at named points of a hook's handling
	// (actors.Env.Fault); only the crash soak sets it.
	Fault func(point string)
}

// Server is a running supervisor.
type Server struct {
	opts    Options
	log     *zap.Logger
	cfg     atomic.Pointer[config.Config]
	store   *store.Store
	system  *actor.ActorSystem
	root    *actor.PID
	started time.Time
	// reviewers caps reviewer processes across all sessions and runs; a
	// config reload resizes it to review.max_parallel.
	reviewers *reviewer.Limiter
	// draining is closed when the supervisor starts to stop: a Stop held
	// for a review is then answered at once (askHook) instead of holding
	// up the shutdown.
	draining     chan struct{}
	drainingOnce sync.Once
	// events is the project's event stream (GET /v1/events).
	events *events.Hub
	// heartbeat is how often an idle event stream sends a comment, so
	// that a client sees the connection is alive (sseHeartbeat when 0).
	heartbeat time.Duration
	// metrics is what GET /metrics serves on the dashboard listener; nil
	// unless metrics.enabled.
	metrics *metrics
	// ui is the dashboard listener, while it runs.
	ui uiListener
}

// drain marks the supervisor as stopping (see draining).
func (s *Server) drain() { s.drainingOnce.Do(func() { close(s.draining) }) }

// Run starts the supervisor and serves until ctx ends, then stops
// gracefully: requests in flight are answered, the actor tree is stopped,
// the store is closed and the socket removed.
func Run(ctx context.Context, opts Options) (err error) {
	if err := validate(opts.Config); err != nil {
		return fmt.Errorf("supervisor config: %w", err)
	}
	lg := opts.Log
	if lg == nil {
		lg = logging.Nop()
	}
	p := opts.Paths
	if err := project.EnsureRuntimeDir(p.RuntimeDir); err != nil {
		return err
	}
	unlock, err := lock(ctx, p, opts.LockWait)
	if err != nil {
		if errors.Is(err, sockets.ErrLocked) {
			return fmt.Errorf("%w (%s)", ErrAlreadyRunning, p.Root)
		}
		return fmt.Errorf("locking %q: %w", p.Lock, err)
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("unlocking %q: %w", p.Lock, uerr)
		}
	}()
	var childTag string
	if opts.Watchdog != nil {
		tag, stop, werr := opts.Watchdog()
		if werr != nil {
			// Without a watchdog a kill -9 leaves the children of
			// reviewers and agents, and test and check commands, behind;
			// the supervisor still works.
			lg.Zap().Warn("no watchdog: a supervisor that dies may leave reviewer, agent and test processes behind", zap.Error(werr))
		} else {
			childTag = tag
			defer stop()
		}
	}
	s, closeServer, err := newServer(ctx, opts, childTag)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeServer(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	if opts.Sources != nil {
		stop, werr := config.Watch(ctx, *opts.Sources, s.reload)
		if werr != nil {
			s.log.Warn("config changes will not be picked up", zap.Error(werr))
		} else {
			defer stop()
		}
	}

	ln, err := sockets.Listen(ctx, p.Socket)
	if err != nil {
		return fmt.Errorf("listening on %q: %w", p.Socket, err)
	}
	ln = sockets.OwnerOnly(ln, func(format string, args ...any) { s.log.Warn(fmt.Sprintf(format, args...)) })
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	srv.RegisterOnShutdown(s.drain)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	// The dashboard listener, started now or later by drover ui, stops
	// with the supervisor.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), opts.Config.Supervisor.ShutdownTimeout)
		defer cancel()
		s.closeUI(sctx)
	}()
	if c := s.cfg.Load(); c.UI.Enabled || c.Metrics.Enabled {
		// A dashboard that cannot listen (ui.port taken) is said in the
		// log; the supervisor still answers hooks, which matter more.
		if _, _, uerr := s.openUI(); uerr != nil {
			s.log.Warn("no dashboard listener", zap.Error(uerr))
		}
	} else if err := os.Remove(filepath.Join(p.StateDir, uiAddrFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The address a supervisor that died left is no listener of ours.
		s.log.Warn("removing the dashboard address", zap.Error(err))
	}
	s.log.Info("supervisor started", zap.String("project", p.Root), zap.String("socket", p.Socket), zap.Int("pid", os.Getpid()), zap.String("version", opts.Version))
	if opts.Ready != nil {
		opts.Ready()
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serving on %q: %w", p.Socket, err)
	}
	s.log.Info("supervisor stopping")
	sctx, cancel := context.WithTimeout(context.Background(), opts.Config.Supervisor.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown", zap.Error(err))
		_ = srv.Close()
	}
	<-serveErr
	s.log.Info("supervisor stopped")
	return nil
}

// newServer opens the project's store and starts the actor tree: all of
// the supervisor but its lock, watchdog, config watch and listener, so that
// the API (routes) can be served and tested without a socket. childTag is
// the watchdog's tag for the processes the actors start ("" for none).
// The caller must call the returned close, which stops the actor tree and
// closes the store, once nothing is served any more.
func newServer(ctx context.Context, opts Options, childTag string) (_ *Server, closeServer func() error, err error) {
	lg := opts.Log
	if lg == nil {
		lg = logging.Nop()
	}
	cfg := opts.Config
	p := opts.Paths
	s := &Server{opts: opts, log: lg.Zap(), started: time.Now(), reviewers: reviewer.NewLimiter(cfg.Review.MaxParallel), draining: make(chan struct{})}
	s.cfg.Store(&cfg)

	if _, err := tasks.EnsureDroverDir(p.Root); err != nil {
		return nil, nil, err
	}
	// A short batch delay: a hook waits for its commit, and commits from many
	// sessions arriving within a millisecond still share one fsync.
	st, err := store.Open(ctx, p.DB, store.Options{Logger: s.log, MaxBatchDelay: time.Millisecond})
	if err != nil {
		return nil, nil, fmt.Errorf("opening store: %w", err)
	}
	s.store = st
	hub, err := events.Open(ctx, st, events.Options{
		History: cfg.Events.History,
		Buffer:  opts.EventBuffer,
		OnError: func(err error) { s.log.Warn("event history", zap.Error(err)) },
	})
	if err != nil {
		return nil, nil, errors.Join(err, st.Close())
	}
	s.events = hub
	followed := make(chan struct{})
	if cfg.Metrics.Enabled {
		s.metrics = newMetrics(func() string { return s.cfg.Load().Review.CLI }, s.scanGauges)
		go func() {
			defer close(followed)
			s.metrics.follow(hub)
		}()
	} else {
		close(followed)
	}
	closeStore := func() error {
		// The last events go to the store before it closes.
		hub.Publish(context.Background(), events.Draft{Kind: api.EventSupervisorStopped})
		hub.Close()
		<-followed
		if err := st.Close(); err != nil {
			return fmt.Errorf("closing store: %w", err)
		}
		return nil
	}

	s.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return lg.Slog("actor")
	}))
	dirty := opts.DirtyCheck
	if dirty == nil {
		dirty = func(ctx context.Context, dir string) (bool, []string, error) {
			return gitstatus.Dirty(ctx, dir, []string{".drover/"})
		}
	}
	env := actors.Env{
		Store:       st,
		Root:        p.Root,
		SessionsDir: p.SessionsDir,
		Config:      func() config.Config { return *s.cfg.Load() },
		Templates:   func() (templates.Set, error) { return templates.Load(p.TemplatesDir) },
		Dirty:       dirty,
		Log:         s.log,
		Reviewers:   s.reviewers,
		ChildTag:    childTag,
		Fault:       opts.Fault,
		Events:      hub.Publish,
	}
	if s.metrics != nil {
		env.Killed = s.metrics.killed
	}
	root, err := s.system.Root.SpawnNamed(actors.NewSessionsProps(env, actors.SessionsOptions{
		IdleTimeout:   cfg.Supervisor.IdleTimeout,
		RestartMax:    cfg.Supervisor.RestartMax,
		RestartWindow: cfg.Supervisor.RestartWindow,
	}), "sessions")
	if err != nil {
		s.system.Shutdown()
		return nil, nil, errors.Join(fmt.Errorf("spawning the sessions actor: %w", err), closeStore())
	}
	s.root = root
	stopRuns := s.startRuns(env)
	// Notifications follow the stream like any client: a slow webhook or
	// command holds up no decision. The notifier ends before the hub
	// closes, cutting short a retry rather than the shutdown.
	notifyCtx, stopNotify := context.WithCancel(context.Background())
	waitNotify := notify.Start(notifyCtx, notify.Options{
		Hub:      hub,
		Config:   func() config.Config { return *s.cfg.Load() },
		Project:  filepath.Base(p.Root),
		Dir:      p.Root,
		OwnerTag: childTag,
		Log:      s.log,
		// The store's last hook time lags the actor's by at most a tenth
		// of status.stale_after (a time-only save is skipped only while
		// hooks keep coming), so a session it shows stale is stale.
		Sessions: st.List,
	})
	hub.Publish(ctx, events.Draft{Kind: api.EventSupervisorStarted, Data: api.SupervisorData{Version: opts.Version, PID: os.Getpid()}})
	return s, func() error {
		stopRuns()
		if werr := s.system.Root.StopFuture(root).Wait(); werr != nil {
			s.log.Warn("stopping the actor tree", zap.Error(werr))
		}
		s.system.Shutdown()
		stopNotify()
		waitNotify()
		return closeStore()
	}, nil
}

// lockPoll is how often lock tries again for a supervisor that is stopping.
const lockPoll = 20 * time.Millisecond

// lock takes the project's lock, waiting up to wait while the holder does
// not answer on the socket (see Options.LockWait).
func lock(ctx context.Context, p project.Paths, wait time.Duration) (func() error, error) {
	deadline := time.Now().Add(wait)
	for {
		unlock, err := sockets.Lock(p.Lock)
		if err == nil || !errors.Is(err, sockets.ErrLocked) || !time.Now().Before(deadline) || answers(p.Socket) {
			return unlock, err
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// answers reports whether something accepts connections on socket.
func answers(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// validate checks c as a supervisor must before it uses it: config's own
// range checks, and loop.routes, which only the engine side can parse.
func validate(c config.Config) error {
	return errors.Join(c.Validate(), loopconf.Check(c.Loop))
}

func (s *Server) reload(c config.Config, err error) {
	if err == nil {
		err = validate(c)
	}
	if err != nil {
		s.log.Warn("config reload failed; keeping the previous configuration", zap.Error(err))
		return
	}
	prev := s.cfg.Swap(&c)
	s.reviewers.Resize(c.Review.MaxParallel)
	// A supervisor started without a logger has no level to set.
	if s.opts.Log != nil {
		if err := s.opts.Log.SetLevel(c.Log.Level); err != nil {
			s.log.Warn("setting log level", zap.Error(err))
		}
	}
	if keys := config.RestartChanges(*prev, c); len(keys) > 0 {
		s.log.Warn("config reloaded; these changes take effect at the next supervisor start", zap.Strings("keys", keys))
		return
	}
	s.log.Info("config reloaded")
}
