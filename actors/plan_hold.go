package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
)

// A Stop held while a plan reviewer runs. Without it every review costs
// the agent a turn: the Stop is told to run `drover plan wait` and stop
// again, and only that second Stop hears what the review found. So a Stop
// whose committed answer is that wait instruction is not answered at
// once: the session keeps its sender and goes on with its mailbox (the
// review's answer comes back as a message like any other). When the
// review is no longer in flight (answered and applied, cancelled, or the
// plan gone), the Stop is decided again, as the agent's next Stop would
// be, committed, and that answer is sent: the findings, at once. A timer
// at the hold (review.hold, and no longer than the hook client said it
// waits) sends the committed wait instruction instead, as do the actor
// stopping or restarting and the asker going away (ReleaseHold), which
// leaves the review's answer for the next Stop. Each answer sent was
// committed first.

// heldStop is the Stop whose answer waits for the review in flight.
type heldStop struct {
	seq    uint64
	msg    *HandleHook
	sender *actor.PID
	// res is the Stop's committed answer: the wait instruction.
	res   *HookResult
	timer *time.Timer
}

// holdExpired is sent by the timer of held Stop seq at its hold.
type holdExpired struct{ seq uint64 }

// holdFor returns how long the answer res to hook m may be held: a Stop
// whose committed answer blocks while the plan's review is in flight,
// when both the asker and the configuration allow a hold. 0: answer now.
func (a *sessionActor) holdFor(actx actor.Context, m *HandleHook, res *HookResult) time.Duration {
	if m.Event != hook.Stop || m.Hold <= 0 || res.Err != nil || res.Replayed || !res.Output.IsBlock() || actx.Sender() == nil {
		return 0
	}
	if a.rec.Workflow != session.Plan || a.rec.Plan.Review == nil {
		return 0
	}
	return min(m.Hold, a.env.Config().Review.Hold)
}

// holdStop keeps the answer res to Stop m for up to d.
func (a *sessionActor) holdStop(actx actor.Context, m *HandleHook, res *HookResult, d time.Duration) {
	// A second Stop while one is held means the first one's asker gave
	// up (the hook was killed): it gets its committed answer, if it
	// still listens.
	a.answerHeld(actx)
	a.plan.holdSeq++
	seq := a.plan.holdSeq
	system, self := actx.ActorSystem(), actx.Self()
	a.plan.held = &heldStop{
		seq: seq, msg: m, sender: actx.Sender(), res: res,
		timer: time.AfterFunc(d, func() { system.Root.Send(self, &holdExpired{seq: seq}) }),
	}
	if m.OnHold != nil {
		m.OnHold()
	}
	a.log.Debug("stop held for the review", zap.String("request", m.RequestID), zap.Duration("hold", d))
}

// answerHeld answers the held Stop, if any, with its committed answer.
func (a *sessionActor) answerHeld(actx actor.Context) {
	h := a.plan.held
	if h == nil {
		return
	}
	a.plan.held = nil
	h.timer.Stop()
	actx.Send(h.sender, h.res)
}

// holdEnded is the timer of held Stop seq: the review outlasted the hold,
// and the Stop gets the wait instruction it was given.
func (a *sessionActor) holdEnded(actx actor.Context, seq uint64) {
	if h := a.plan.held; h != nil && h.seq == seq {
		a.log.Debug("hold ended before the review did", zap.String("request", h.msg.RequestID))
		a.answerHeld(actx)
	}
}

// settleHeld answers the held Stop once the review it waits for is no
// longer in flight: the Stop is decided again, as the agent's next Stop
// would be (it gives the review's answer), and that decision is committed
// before it is sent. Warnings of the first answer are kept. A decision
// that fails leaves the committed wait instruction as the answer.
func (a *sessionActor) settleHeld(actx actor.Context) {
	h := a.plan.held
	if h == nil || (a.rec.Workflow == session.Plan && a.rec.Plan.Review != nil) {
		return
	}
	h.timer.Stop()
	// Still held while it is decided again: should that decision fail
	// (a panic restarts the actor), Restarting gives it its committed
	// answer.
	res, effects := a.decideHook(actx, h.msg, h.res.Output.SystemMessage)
	a.plan.held = nil
	if res.Err != nil {
		a.log.Warn("deciding a held stop again; it gets the wait instruction", zap.Error(res.Err))
		res, effects = h.res, nil
	}
	actx.Send(h.sender, res)
	a.execute(actx, effects)
}
