package cmdline

import (
	"fmt"
	"os"

	"github.com/drover-dev/drover/internal/project"
)

// Getenv returns the value of k in environ ("KEY=VALUE" entries), the last
// one winning as in exec; "" when k is not set. The binaries read their
// environment through it so that tests can hand them one.
func Getenv(environ []string, k string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		kv := environ[i]
		if len(kv) > len(k) && kv[len(k)] == '=' && kv[:len(k)] == k {
			return kv[len(k)+1:]
		}
	}
	return ""
}

// Paths finds the project that g, the environment (getenv) and the
// working directory name, and its paths.
func Paths(g *Globals, getenv func(string) string) (project.Paths, error) {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	root, err := project.FromEnv(g.Project, wd, getenv)
	if err != nil {
		return project.Paths{}, fmt.Errorf("finding the project: %w", err)
	}
	return project.PathsFor(root, getenv)
}
