package main

import (
	"net"
	"strings"
	"testing"
)

// TestWorkerUnreachableNATSNamesTheURL: drover worker, handed to droverd,
// fails at once when NATS does not answer, naming the URL it tried; a
// URL with credentials in it (seen by every user in ps, and shown in
// errors) is refused without them printed: they go in run.nats.*.
func TestWorkerUnreachableNATSNamesTheURL(t *testing.T) {
	p := newProj(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, tc := range []struct{ url, want string }{
		{"nats://" + addr, "connecting to NATS at nats://" + addr},
		{"nats://w:s3cret@" + addr, "--nats: nats URL of host " + addr + ": holds credentials"},
		{"nats://127.0.0.1:4222,nats://s3cret@" + addr, "--nats: nats URL of host " + addr + ": holds credentials"},
	} {
		r := p.drover("", "worker", "--nats", tc.url, "--dir", t.TempDir())
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("drover worker --nats %s exited %d\nstderr: %s\nwant a failure saying %q, without the secret", tc.url, r.code, r.stderr, tc.want)
		}
	}
}
