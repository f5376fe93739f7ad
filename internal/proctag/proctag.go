// Package proctag finds the processes a child process left behind where a
// kill of its process group does not reach them. Claude Code runs each
// Bash tool call in a session of its own (setsid), so neither a kill of
// the agent's process group nor the parent-death signal ends it; but every
// descendant inherits the environment, so an entry unique to one child
// process marks all that it started.
package proctag

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// The keys of drover's tags. Each process drover starts carries one or
// more of them, and so does everything it starts in turn.
const (
	// SupervisorKey tags what one supervisor started, for its watchdog.
	SupervisorKey = "DROVER_SUPERVISOR_RUN"
	// AgentKey tags one headless agent process of `drover run`.
	AgentKey = "DROVER_AGENT_RUN"
	// ReviewKey tags one reviewer process.
	ReviewKey = "DROVER_REVIEW_RUN"
)

// IsKey reports whether name is the key of one of drover's tags.
func IsKey(name string) bool {
	return name == SupervisorKey || name == AgentKey || name == ReviewKey
}

// Strip returns env without drover's tags: for a process that must not die
// with the one whose environment it was started from, such as a supervisor
// a hook starts from inside an agent.
func Strip(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !IsKey(k) {
			out = append(out, kv)
		}
	}
	return out
}

// New returns a tag "KEY=VALUE" with a random value, to add to one child
// process's environment and later pass to Kill.
func New(key string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a process tag: %w", err)
	}
	return key + "=" + hex.EncodeToString(b[:]), nil
}
