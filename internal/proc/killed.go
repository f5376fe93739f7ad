package proc

import "context"

// killedKey is the context key of OnTimeoutKill.
type killedKey struct{}

// OnTimeoutKill returns ctx with f, which Run calls each time it kills a
// process started under ctx (its process group) for running past its
// timeout. It counts the kills of the work a supervisor starts several
// layers down (a reviewer, an agent, a check) without each layer passing
// it on, as WithTags does for tags. f must not block.
func OnTimeoutKill(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, killedKey{}, f)
}

// timeoutKilled calls the function OnTimeoutKill put on ctx, if any.
func timeoutKilled(ctx context.Context) {
	if f, _ := ctx.Value(killedKey{}).(func()); f != nil {
		f()
	}
}
