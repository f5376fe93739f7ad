// Package api holds the wire types of drover's local API: HTTP with JSON
// bodies over the supervisor's unix socket. Both the server (supervisor) and
// the client (internal/client) import it, so the two sides cannot drift.
// The plan, loop and run types are the workflows' answers as the CLI shows
// them; Run is also a run's stored record and the state of the run core
// (internal/workflow/run), so that what is saved is what is shown.
package api

import (
	"time"

	"github.com/drover-dev/drover/internal/hook"
)

// Version is the API version; it is the first path element of every route
// and is sent in the VersionHeader of every response.
const Version = "v1"

// VersionHeader carries the supervisor's build version on every response.
const VersionHeader = "Drover-Version"

// Host is the placeholder host name in URLs sent over the unix socket.
const Host = "drover"

// The routes, relative to /v1.
const (
	PathHealth  = "/v1/health"
	PathStatus  = "/v1/status"
	PathCleanup = "/v1/cleanup"
	PathConfig  = "/v1/config"
	// PathUI starts the dashboard listener if it is not on (drover ui).
	PathUI = "/v1/ui"
)

// HookPath returns the route for a hook event.
func HookPath(e hook.Event) string { return "/v1/hook/" + string(e) }

// SessionPath returns the route of a session command such as "tasks",
// "start", "stop" or "unstick".
func SessionPath(id, verb string) string { return "/v1/sessions/" + id + "/" + verb }

// WorkflowPath returns the route of a loop or plan command.
func WorkflowPath(id, workflow, verb string) string {
	return "/v1/sessions/" + id + "/" + workflow + "/" + verb
}

// Error is the body of every non-2xx response.
type Error struct {
	Error string `json:"error"`
}

// HookRequest is one hook event forwarded by `drover hook`.
type HookRequest struct {
	// RequestID is chosen by the hook client once per invocation and reused
	// on retries, so a retried request gets the recorded decision.
	RequestID string     `json:"request_id"`
	Input     hook.Input `json:"input"`
	// HoldMS is how long, in milliseconds, the client waits beyond its
	// budget for a Stop held while a plan reviewer runs (review.hold): the
	// supervisor holds the answer no longer than this, nor than its own
	// review.hold. 0 (an older client) is never held.
	HoldMS int64 `json:"hold_ms,omitempty"`
}

// HookResponse is the decision for a hook event.
type HookResponse struct {
	Output hook.Output `json:"output"`
	// Text, when set, is printed as plain text instead of Output: PreCompact
	// accepts no JSON decision, only text.
	Text string `json:"text,omitempty"`
	// Replayed is true when the decision was recorded for an earlier try of
	// the same request id.
	Replayed bool `json:"replayed,omitempty"`
}

// Kind names the decision for the supervisor's log: "block", "context" or
// "allow" as Output.Kind says, except that PreCompact's plain Text, which
// Claude Code takes as compaction instructions, is "context" too, so the log
// shows whether the agent was told anything.
func (r HookResponse) Kind() string {
	if k := r.Output.Kind(); k != "allow" || r.Text == "" {
		return k
	}
	return "context"
}

// AddRequest adds a task to a session's queue.
type AddRequest struct {
	Prompt string `json:"prompt"`
}

// AddResponse names the task file written.
type AddResponse struct {
	Path    string `json:"path"`
	Pending int    `json:"pending"`
}

// CommandResponse is the answer to start, stop and unstick: what changed and
// the text to show the agent.
type CommandResponse struct {
	State     string   `json:"state"`
	Iteration int      `json:"iteration"`
	NextTask  string   `json:"next_task,omitempty"`
	Renamed   []string `json:"renamed,omitempty"`
	Message   string   `json:"message"`
}

// SessionStatus is one session in a StatusResponse.
type SessionStatus struct {
	ID        string `json:"id"`
	Workflow  string `json:"workflow"`
	State     string `json:"state"`
	Iteration int    `json:"iteration"`
	Pending   int    `json:"pending"`
	Done      int    `json:"done"`
	Stuck     int    `json:"stuck"`
	NextTask  string `json:"next_task,omitempty"`
	// CostUSD is what this session's reviewer runs have cost (plan
	// sessions), or a loop's spend as its transcript reports it (loop
	// sessions); 0 for the others.
	CostUSD float64 `json:"cost_usd"`
	// BudgetUSD is the dollar budget the session spends against: a loop's
	// max_usd, or its plan's reviewer budget (shared by every session of
	// the plan); 0 for none. SpentUSD is what counts against it: the
	// loop's spend, or what every session's reviews of the plan cost
	// (CostUSD is this session's part). Both are 0 for the other
	// workflows.
	BudgetUSD float64   `json:"budget_usd,omitempty"`
	SpentUSD  float64   `json:"spent_usd,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// Health is whether the session's agent is still there: idle,
	// working, stale or ended (the words of session.Health).
	Health string `json:"health"`
	// LastHookAt is when the session last sent a hook (zero: never,
	// since drover kept it).
	LastHookAt time.Time `json:"last_hook_at,omitzero"`
}

// StatusResponse lists the sessions the supervisor knows.
type StatusResponse struct {
	Project     string          `json:"project"`
	PID         int             `json:"pid"`
	Sessions    []SessionStatus `json:"sessions"`
	Quarantined int             `json:"quarantined,omitempty"`
}

// CleanupRequest removes old session directories.
type CleanupRequest struct {
	Days  int  `json:"days"`
	Force bool `json:"force"`
}

// CleanupResponse lists what was removed and what was kept.
type CleanupResponse struct {
	Deleted []string `json:"deleted"`
	Kept    []string `json:"kept"`
}

// HealthResponse identifies a live supervisor.
type HealthResponse struct {
	PID     int       `json:"pid"`
	Project string    `json:"project"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
}

// UIResponse is the answer to POST /v1/ui: the dashboard listener's
// address (127.0.0.1:PORT) and the URL of its sessions page with the
// token.
type UIResponse struct {
	Addr string `json:"addr"`
	URL  string `json:"url"`
}
