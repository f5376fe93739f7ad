// Package natstest runs an embedded NATS server with JetStream for the
// tests and benchmarks of the nats executor, one setup for all of them.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start runs a NATS server with JetStream on loopback at port (-1: any
// free one) with its store in dir, until tb ends or it is shut down.
func Start(tb testing.TB, port int, dir string) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("the NATS server did not start")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// URL runs a NATS server as Start does, on any port with a store of its
// own, and returns its URL.
func URL(tb testing.TB) string {
	tb.Helper()
	return Start(tb, -1, tb.TempDir()).ClientURL()
}
