package actors

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/store"
)

// SessionsOptions configures the sessions actor.
type SessionsOptions struct {
	// IdleTimeout passivates a session actor after this long without a
	// message; 0 keeps session actors alive until shutdown.
	IdleTimeout time.Duration
	// RestartMax session-actor failures within RestartWindow are restarted
	// from the stored state; one more stops the actor, and the next message
	// for that session recovers it afresh from the store.
	RestartMax    int
	RestartWindow time.Duration
}

type queued struct {
	msg    any
	sender *actor.PID
}

// sessionsActor is the root of the tree: it spawns one session actor per
// session id on first use, routes messages to it, and passivates idle ones.
type sessionsActor struct {
	env  Env
	opts SessionsOptions
	log  *zap.Logger

	children map[string]*actor.PID
	byPID    map[string]string // child PID id -> session id
	// stopping holds messages for sessions whose actor is stopping, to be
	// delivered to a fresh actor once the old one has terminated. Two
	// actors never run for one session at once.
	stopping map[string][]queued
}

// NewSessionsProps returns the props of the sessions actor, with the
// one-for-one strategy that restarts a failed session actor.
func NewSessionsProps(env Env, opts SessionsOptions) *actor.Props {
	log := env.Log
	if log == nil {
		log = zap.NewNop()
	}
	window := opts.RestartWindow
	if window <= 0 {
		window = time.Minute
	}
	decider := func(reason any) actor.Directive {
		log.Error("session actor failed; restarting from stored state", zap.Any("reason", reason))
		return actor.RestartDirective
	}
	strategy := actor.NewOneForOneStrategy(opts.RestartMax, window, decider)
	return actor.PropsFromProducer(func() actor.Actor {
		return &sessionsActor{
			env:      env,
			opts:     opts,
			log:      log,
			children: map[string]*actor.PID{},
			byPID:    map[string]string{},
			stopping: map[string][]queued{},
		}
	}, actor.WithSupervisor(strategy))
}

// Receive implements actor.Actor.
func (s *sessionsActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *ToSession:
		if q, ok := s.stopping[msg.SessionID]; ok {
			s.stopping[msg.SessionID] = append(q, queued{msg: msg.Msg, sender: ctx.Sender()})
			return
		}
		if _, ok := msg.Msg.(*StatusQuery); ok && s.children[msg.SessionID] == nil {
			// Status reads; it must not wake a session: a started actor
			// resumes the work its record waits for (reviews, checks),
			// which a glance at status must not start for a session no
			// agent uses any more.
			ctx.Respond(s.peek(msg.SessionID))
			return
		}
		pid, err := s.child(ctx, msg.SessionID)
		if err != nil {
			s.log.Error("spawning session actor", zap.String("session", msg.SessionID), zap.Error(err))
			if ctx.Sender() != nil {
				ctx.Respond(failedReply(ctx, msg.Msg))
			}
			return
		}
		ctx.RequestWithCustomSender(pid, msg.Msg, ctx.Sender())
	case *passivate:
		s.retire(ctx, msg.sessionID, "idle")
	case *Forget:
		s.retire(ctx, msg.SessionID, "forgotten")
	case *actor.Terminated:
		id, ok := s.byPID[msg.Who.Id]
		if !ok {
			return
		}
		delete(s.byPID, msg.Who.Id)
		if cur, ok := s.children[id]; ok && cur.Equal(msg.Who) {
			delete(s.children, id)
		}
		if q, ok := s.stopping[id]; ok {
			delete(s.stopping, id)
			if len(q) == 0 {
				return
			}
			pid, err := s.child(ctx, id)
			if err != nil {
				s.log.Error("respawning session actor", zap.String("session", id), zap.Error(err))
				for _, m := range q {
					if m.sender != nil {
						ctx.Send(m.sender, failedReply(ctx, m.msg))
					}
				}
				return
			}
			for _, m := range q {
				ctx.RequestWithCustomSender(pid, m.msg, m.sender)
			}
		}
	}
}

// peek answers a StatusQuery for a session without a live actor from its
// stored record, as the actor would from the same record.
func (s *sessionsActor) peek(id string) *StatusResult {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	rec, st, err := s.env.Store.Load(ctx, id)
	if err != nil {
		return &StatusResult{Err: fmt.Errorf("loading session %s: %w", id, err)}
	}
	rec.ID = id
	if st != store.Found {
		rec = session.Record{ID: id, Workflow: session.Queue}
	}
	return &StatusResult{Status: sessionStatus(rec, s.env, filepath.Join(s.env.SessionsDir, id))}
}

// retire stops a session actor after the messages already in its mailbox.
func (s *sessionsActor) retire(ctx actor.Context, id, why string) {
	pid, ok := s.children[id]
	if !ok {
		return
	}
	delete(s.children, id)
	s.stopping[id] = nil
	s.log.Debug("stopping session actor", zap.String("session", id), zap.String("why", why))
	ctx.Poison(pid)
}

func (s *sessionsActor) child(ctx actor.Context, id string) (*actor.PID, error) {
	if pid, ok := s.children[id]; ok {
		return pid, nil
	}
	env, idle := s.env, s.opts.IdleTimeout
	props := actor.PropsFromProducer(func() actor.Actor { return newSessionActor(id, env, idle) })
	pid, err := ctx.SpawnNamed(props, "session-"+id)
	if err != nil {
		return nil, fmt.Errorf("spawning actor for session %s: %w", id, err)
	}
	s.children[id] = pid
	s.byPID[pid.Id] = id
	return pid, nil
}
