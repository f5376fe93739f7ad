package natsexec

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/drover-dev/drover/internal/config"
)

// TestReplicasOnAThreeNodeCluster: run.nats.replicas 3 gives the streams
// and the bundle bucket three copies on a three-node cluster, and a
// supervisor or worker set up with the default (one) keeps them at three.
func TestReplicasOnAThreeNodeCluster(t *testing.T) {
	s := startCluster(t, 3)
	ctx := testCtx(t)
	cfg := config.Defaults().Run.NATS
	cfg.Replicas = 3
	nc, err := Connect(ctx, Config{URL: s.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster elects its JetStream leader first: set up once it has.
	var st Streams
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err = SetupReplicas(try, js, 0, ConfigOf(cfg).Replicas)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("setting up on the cluster: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	check := func(when string) {
		t.Helper()
		for _, name := range []string{JobsStream, ResultsStream} {
			stream, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if r := stream.CachedInfo().Config.Replicas; r != 3 {
				t.Fatalf("%s: stream %s has %d replicas, want 3", when, name, r)
			}
		}
		status, err := st.Bundles.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := status.Replicas(); r != 3 {
			t.Fatalf("%s: bucket %s has %d replicas, want 3", when, BundleBucket, r)
		}
	}
	check("run.nats.replicas 3")
	if st, err = Setup(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	check("set up again with one replica")
}

// startCluster runs a cluster of n NATS servers with JetStream on loopback
// until the test ends, and returns its first server.
func startCluster(t *testing.T, n int) *server.Server {
	t.Helper()
	// The cluster ports, known before the servers start: each routes to
	// all.
	ports := make([]int, n)
	var routes []*url.URL
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	var servers []*server.Server
	for i := range n {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "drover", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatal("a NATS server of the cluster did not start")
		}
	}
	return servers[0]
}
