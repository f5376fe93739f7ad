package natsexec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLostClassifiesTheErrorsOfAReconnect: on a connection that is up
// again, the errors of the outage that just ended are still NATS lost
// (waited for), and the errors of a real failure are not.
func TestLostClassifiesTheErrorsOfAReconnect(t *testing.T) {
	s := startServer(t)
	nc, _ := connect(t, s, 0)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"timeout", fmt.Errorf("publishing: %w", nats.ErrTimeout), true},
		{"no responders", fmt.Errorf("x: %w", nats.ErrNoResponders), true},
		{"reconnecting", fmt.Errorf("x: %w", nats.ErrConnectionReconnecting), true},
		{"disconnected", nats.ErrDisconnected, true},
		{"stale connection", nats.ErrStaleConnection, true},
		{"jetstream connection closed", fmt.Errorf("x: %w", jetstream.ErrConnectionClosed), true},
		{"jetstream not enabled yet", fmt.Errorf("x: %w", jetstream.ErrJetStreamNotEnabled), true},
		{"jetstream unavailable", fmt.Errorf("x: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{"network", fmt.Errorf("x: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"deadline", context.DeadlineExceeded, true},
		{"stream not found", fmt.Errorf("x: %w", jetstream.ErrStreamNotFound), false},
		{"bad request", &jetstream.APIError{Code: 400, ErrorCode: 10003, Description: "bad request"}, false},
		{"other", errors.New("git fetch: exit status 128"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lost(nc, tc.err); got != tc.want {
				t.Fatalf("lost(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
