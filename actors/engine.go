package actors

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/internal/session"
)

// commit saves rec as the session's state and adopts it. It is the session
// actor's one save site: every change of the record goes through it, before
// the answer that depends on it and before any effect it asks for, so a
// crash can lose an answer but never commit to one it did not save.
func (a *sessionActor) commit(ctx context.Context, rec session.Record) error {
	// The store names what failed; callers that say which session do so
	// (the save-failed text already names it).
	if err := a.env.Store.Save(ctx, rec); err != nil {
		return err
	}
	a.rec, a.found = rec, true
	return nil
}

// commitEvent counts one applied event on rec and commits it.
func (a *sessionActor) commitEvent(ctx context.Context, rec session.Record) error {
	rec.UpdatedAt = a.env.now()
	rec.Events++
	if err := a.commit(ctx, rec); err != nil {
		return fmt.Errorf("saving session %s: %w", a.id, err)
	}
	return nil
}
