package natsexec

import (
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
)

// TestConnectionsKeepsOneConnectionPerConfiguration: the runs of one
// configuration share a connection; one per run would be left open.
func TestConnectionsKeepsOneConnectionPerConfiguration(t *testing.T) {
	s := startServer(t)
	repo, _, _ := project(t)
	c := NewConnections(repo)
	t.Cleanup(c.Close)
	var first Executor
	for i := range 3 {
		x, err := c.Executor(config.Defaults(), api.RunOptions{NATS: s.ClientURL()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = x.(Executor)
		} else if got := x.(Executor).D.NC; got != first.D.NC {
			t.Fatalf("run %d got a connection of its own", i+1)
		}
	}
	if n := s.NumClients(); n != 1 {
		t.Fatalf("%d connections to NATS, want 1", n)
	}
}
