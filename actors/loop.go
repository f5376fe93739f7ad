package actors

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
)

// decideLoop applies the loop workflow to one hook event.
func (a *sessionActor) decideLoop(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	return decision{rec: a.rec}, false, nil
}

func (a *sessionActor) loopCommand(actx actor.Context, m *WorkflowCommand) *WorkflowResult {
	return &WorkflowResult{}
}

func (a *sessionActor) loopMessage(actx actor.Context, msg any) bool { return false }
