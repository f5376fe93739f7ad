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
)

// New returns a tag "KEY=VALUE" with a random value, to add to one child
// process's environment and later pass to Kill.
func New(key string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a process tag: %w", err)
	}
	return key + "=" + hex.EncodeToString(b[:]), nil
}
