// Package natsexec moves drover's iterations across machines on NATS
// JetStream: the run's supervisor publishes each iteration as a job on a
// work-queue stream and ships the repository state it needs as a git
// bundle in the JetStream object store; a worker (drover worker) pulls the
// job, unpacks the bundle into a repository of its own, runs the iteration,
// and sends back a bundle of the task branch's new commits with its result.
// NATS only moves the work: runs, their state and resume stay in drover's
// store.
package natsexec

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Config is how to reach NATS. Credentials come from drover's
// configuration or the environment, never from a task's text.
type Config struct {
	// URL is the server list (nats://host:4222[,nats://...]).
	URL string
	// Name names the connection in the server's monitoring.
	Name string
	// User and Password authenticate with a user/password.
	User, Password string
	// Token authenticates with a token.
	Token string
	// NKeySeed is the file of an NKey seed (nsc's user.nk).
	NKeySeed string
	// Creds is a JWT credentials file (user JWT and seed).
	Creds string
	// CA is the PEM file of the CAs that sign the server's certificate;
	// Cert and Key are the client certificate for mutual TLS.
	CA, Cert, Key string
	// Replicas is how many copies the streams and the object store keep
	// (run.nats.replicas; 0 is 1).
	Replicas int
	// ConnectTimeout bounds the first connection (default 5s).
	ConnectTimeout time.Duration
}

// Connect connects to NATS. A server that does not answer at start is an
// error that names the URL (with any password in it hidden).
func Connect(ctx context.Context, c Config) (*nats.Conn, error) {
	if c.URL == "" {
		return nil, errors.New("connecting to NATS: no URL (--nats or run.nats.url)")
	}
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	type res struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		nc, err := nats.Connect(c.URL, opts...)
		ch <- res{nc, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("connecting to NATS at %s: %w", redact(c.URL), r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		// The dial ends by its own timeout; its connection, if any, is
		// closed then.
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("connecting to NATS at %s: %w", redact(c.URL), ctx.Err())
	}
}

func (c Config) options() ([]nats.Option, error) {
	timeout := c.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	opts := []nats.Option{nats.Timeout(timeout), nats.MaxReconnects(-1)}
	if c.Name != "" {
		opts = append(opts, nats.Name(c.Name))
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.NKeySeed != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("reading NATS NKey seed %q: %w", c.NKeySeed, err)
		}
		opts = append(opts, o)
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(c.CA))
	}
	if c.Cert != "" || c.Key != "" {
		opts = append(opts, nats.ClientCert(c.Cert, c.Key))
	}
	return opts, nil
}

// redact hides the secrets of each URL of a server list: its password,
// or its token (a user with no password, as NATS reads it).
func redact(list string) string {
	urls := strings.Split(list, ",")
	for i, raw := range urls {
		urls[i] = redactURL(strings.TrimSpace(raw))
	}
	return strings.Join(urls, ",")
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: whatever stands before an @ may be a secret.
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "xxxxx" + raw[at:]
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	u.User = url.User("xxxxx")
	return u.String()
}
