package session

import "time"

// Health is the one word drover status (and anything else that shows a
// session) uses for whether its agent is still there.
type Health string

// The health words; these are the only ones shown.
const (
	// Idle is a session that runs no workflow: nothing is expected of it.
	Idle Health = "idle"
	// Working is a session whose workflow runs and that sent a hook (or
	// was changed) within the stale limit.
	Working Health = "working"
	// Stale is a session whose workflow runs but that has been silent
	// for longer than the stale limit: its agent may have died without
	// a Stop.
	Stale Health = "stale"
	// Ended is a session whose SessionEnd came and that sent no hook
	// since.
	Ended Health = "ended"
)

// Health returns r's health at now: Ended once its SessionEnd came,
// Idle when no workflow runs, Stale when a workflow runs and nothing was
// heard of the session (a hook, or a change of its record such as a
// drover command) for longer than staleAfter, Working otherwise.
// staleAfter 0 never makes a session stale.
func (r Record) Health(now time.Time, staleAfter time.Duration) Health {
	switch {
	case !r.EndedAt.IsZero():
		return Ended
	case !r.Active():
		return Idle
	case staleAfter > 0 && now.Sub(r.LastSeen()) > staleAfter:
		return Stale
	}
	return Working
}

// LastSeen is the last sign of life of the session: its last hook, or
// the last change of its record (a workflow started by a command counts
// from its start, not from a hook sent before it).
func (r Record) LastSeen() time.Time {
	if r.LastHookAt.After(r.UpdatedAt) {
		return r.LastHookAt
	}
	return r.UpdatedAt
}
