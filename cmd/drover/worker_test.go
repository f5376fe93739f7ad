package main

import (
	"net"
	"strings"
	"testing"
)

// TestWorkerUnreachableNATSNamesTheURL: drover worker, handed to droverd,
// fails at once when NATS does not answer, naming the URL it tried
// without the password in it.
func TestWorkerUnreachableNATSNamesTheURL(t *testing.T) {
	p := newProj(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := p.drover("", "worker", "--nats", "nats://w:s3cret@"+addr, "--dir", t.TempDir())
	if r.code == 0 || !strings.Contains(r.stderr, "connecting to NATS at nats://w:xxxxx@"+addr) || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("drover worker exited %d\nstderr: %s\nwant a failure naming %s without the password", r.code, r.stderr, addr)
	}
}
