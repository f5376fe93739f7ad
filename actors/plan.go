package actors

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// decidePlan applies the plan workflow to one hook event.
func (a *sessionActor) decidePlan(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	return decision{rec: a.rec}, false, nil
}

// planCommand runs a `drover plan` command.
func (a *sessionActor) planCommand(actx actor.Context, m *WorkflowCommand) *WorkflowResult {
	return &WorkflowResult{Err: fmt.Errorf("%w: the plan workflow is not available yet", ErrBadRequest)}
}

// planMessage handles the plan workflow's background results; it reports
// whether msg was one.
func (a *sessionActor) planMessage(actx actor.Context, msg any) bool { return false }
