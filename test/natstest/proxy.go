package natstest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback address of a test's own in front of a NATS server,
// so that the server can go away and come back (restarted on any port,
// with its store) while its clients keep the one URL: a server restarted
// on its old port could find it taken, on a busy machine, by another
// process's connection.
type Proxy struct {
	l net.Listener

	mu sync.Mutex
	// to is the server's address; empty while NATS is down, when the
	// proxy closes what it accepts at once.
	to    string
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy forwards a loopback port to the server at to until tb ends.
func NewProxy(tb testing.TB, to string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{l: l, to: to, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	tb.Cleanup(func() {
		l.Close()
		p.Down()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.l.Addr().String() }

// HostPort is the proxy's address.
func (p *Proxy) HostPort() string { return p.l.Addr().String() }

// Down cuts every connection and refuses new ones: NATS is lost.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.to = ""
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Up forwards new connections to the server at to: NATS is back.
func (p *Proxy) Up(to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.to = to
}

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		to := p.to
		p.mu.Unlock()
		var s net.Conn
		if to != "" {
			s, _ = net.Dial("tcp", to)
		}
		if s == nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.to != to {
			// Went down while dialling.
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, s}, {s, c}} {
			p.wg.Go(func() {
				_, _ = io.Copy(pair[0], pair[1])
				// One side ended: so does the other.
				pair[0].Close()
				pair[1].Close()
				p.mu.Lock()
				delete(p.conns, pair[0])
				delete(p.conns, pair[1])
				p.mu.Unlock()
			})
		}
	}
}
