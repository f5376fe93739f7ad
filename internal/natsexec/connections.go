package natsexec

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/executor"
)

// ConfigOf is the NATS configuration of run.nats.*.
func ConfigOf(n config.RunNATS) Config {
	return Config{
		URL: n.URL, User: n.User, Password: n.Password, Token: n.Token, NKeySeed: n.NKey, Creds: n.Creds,
		CA: n.TLS.CA, Cert: n.TLS.Cert, Key: n.TLS.Key, Replicas: n.Replicas,
	}
}

// Connections makes the nats executors of a supervisor's runs (for
// actors.RunsEnv.Executors): one NATS connection per configuration, kept
// until Close.
type Connections struct {
	root  string
	mu    sync.Mutex
	conns map[Config]Dispatcher
	// cleanups are the dispatchers' deletions of used bundles, waited for
	// before the connections close.
	cleanups cleanups
}

// NewConnections returns the Connections of the project whose main work
// tree is root.
func NewConnections(root string) *Connections {
	return &Connections{root: root, conns: map[Config]Dispatcher{}}
}

// Executor returns the nats executor of a run with options o under cfg.
// NATS that does not answer is an error naming its URL.
func (c *Connections) Executor(cfg config.Config, o api.RunOptions) (executor.Executor, error) {
	nc := ConfigOf(cfg.Run.NATS)
	if o.NATS != "" {
		nc.URL = o.NATS
	}
	nc.Name = "drover " + RepoName(c.root)
	// The run's actor waits for this, once per configuration (under
	// c.mu, so a second run with the same one waits too): a refused
	// connection answers at once, a server that does not answer at all
	// within ConnectTimeout. Set before the look-up: it is part of the
	// key, and a key that never matches opens (and leaks) a connection
	// per run.
	nc.ConnectTimeout = 2 * time.Second
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.conns[nc]; ok && !d.NC.IsClosed() {
		return Executor{D: d}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := RepoIdentity(ctx, c.root, RepoName(c.root))
	if err != nil {
		return nil, err
	}
	conn, err := Connect(ctx, nc)
	if err != nil {
		return nil, err
	}
	st, err := setup(ctx, conn, nc.Replicas)
	if err != nil {
		conn.Close()
		return nil, err
	}
	d := Dispatcher{NC: conn, Streams: st, Repo: c.root, Identity: id, bases: &keyedMutex{}, local: openLocal(ctx, c.root), log: &baseLog{}, cleanups: &c.cleanups}
	c.conns[nc] = d
	return Executor{D: d}, nil
}

func setup(ctx context.Context, conn *nats.Conn, replicas int) (Streams, error) {
	js, err := jetstream.New(conn)
	if err != nil {
		return Streams{}, fmt.Errorf("JetStream at %s: %w", conn.ConnectedUrlRedacted(), err)
	}
	return SetupReplicas(ctx, js, 0, replicas)
}

// Close closes the connections.
func (c *Connections) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups.close()
	for k, d := range c.conns {
		d.NC.Close()
		delete(c.conns, k)
	}
}
