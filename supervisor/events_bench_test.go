package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/project"
)

// BenchmarkStopsWithEventClients measures hook decisions per second
// (Stops of 4 sessions at once, through the API) with no event stream
// client, then with 10 clients following the stream, in the same run and
// on the same server, and reports both and their ratio (issue 14: the
// stream must not slow decisions by more than 5%, a ratio of 0.95). The
// phases alternate in 20 rounds, so that drift over the run (warm-up, the
// machine's other load) weighs on both alike, and the ratio is the median
// of the rounds'. The clients follow the
// socket API's /v1/events (api), or the dashboard's GET /events on its
// TCP listener with the token, as 10 open dashboard pages do
// (dashboard); each must read every event, in order. The clients run in
// the benchmark's process, on the cores of the decisions: they read each
// event's id and check it follows on, rather than decode its JSON (which
// the tests of the stream do), so that the figure is the server's cost.
func BenchmarkStopsWithEventClients(b *testing.B) {
	b.Run("api", func(b *testing.B) {
		benchStopsWithClients(b, func(a *apiServer) func(uint64, *atomic.Uint64) *stream {
			return func(since uint64, read *atomic.Uint64) *stream {
				return a.countAt(a.client, a.url+api.PathEvents, "", since, read)
			}
		})
	})
	b.Run("dashboard", func(b *testing.B) {
		benchStopsWithClients(b, func(a *apiServer) func(uint64, *atomic.Uint64) *stream {
			addr, tok := startMetricsUI(b, a)
			return func(since uint64, read *atomic.Uint64) *stream {
				return a.countAt(http.DefaultClient, "http://"+addr+"/events", "Bearer "+tok, since, read)
			}
		})
	})
}

// countAt follows the stream at url through client after since, with
// auth as the Authorization header when set, and stores in read the id of
// each event it reads; an event whose id does not follow on from the one
// before, or that has no data, is an error.
func (a *apiServer) countAt(client *http.Client, url, auth string, since uint64, read *atomic.Uint64) *stream {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	req.Header.Set("Last-Event-ID", strconv.FormatUint(since, 10))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := client.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		a.t.Fatalf("GET %s = %d, want 200", url, res.StatusCode)
	}
	s := &stream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		last, id := since, uint64(0)
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case bytes.HasPrefix(line, []byte("id: ")):
				var err error
				id, err = strconv.ParseUint(string(line[len("id: "):]), 10, 64)
				if err != nil || id != last+1 {
					a.t.Errorf("event id %q after %d (%v)", line, last, err)
					return
				}
			case bytes.HasPrefix(line, []byte("data: {")):
				if id != last+1 {
					a.t.Errorf("event data with no id after %d", last)
					return
				}
				last = id
				read.Store(id)
			}
		}
	}()
	return s
}

// benchStopsWithClients is BenchmarkStopsWithEventClients with the
// clients that follow returns for the server.
func benchStopsWithClients(b *testing.B, follow func(*apiServer) func(since uint64, read *atomic.Uint64) *stream) {
	const sessions, clientCount, warmUp, rounds = 4, 10, 20, 20
	root := b.TempDir()
	p, err := project.PathsFor(root, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	a, stop := newAPIServerWith(b, Options{Paths: p, Config: eventsConfig(), Version: testVersion})
	defer stop()
	for i := range sessions {
		a.startQueue(fmt.Sprintf("s%d", i))
	}
	open := follow(a)
	from := 0
	// stops sends n Stops of each session at once and returns how long
	// they took.
	stops := func(n int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := a.stops(fmt.Sprintf("s%d", i), from, n); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		from += n
		return time.Since(start)
	}
	// withClients is stops with clientCount clients following the stream
	// from now on; it checks that each of them read every event.
	withClients := func(n int) time.Duration {
		read := make([]atomic.Uint64, clientCount)
		clients := make([]*stream, clientCount)
		for c := range clients {
			since := a.srv.events.LastID()
			read[c].Store(since)
			clients[c] = open(since, &read[c])
		}
		took := stops(n)
		last := a.srv.events.LastID()
		for c := range read {
			if !eventually.Holds(time.Minute, func() bool { return read[c].Load() >= last }) {
				b.Errorf("client %d read up to event %d of %d", c, read[c].Load(), last)
			}
		}
		for _, s := range clients {
			s.close()
		}
		return took
	}
	// The first Stops of a server are slower (actors spawned, the store's
	// pages read): they would count against the phase without clients.
	stops(warmUp)
	// The phases alternate, so that warm-up or the machine's other load
	// drifting during the run weighs on both alike.
	var (
		none, with time.Duration
		ratios     []float64
	)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(max(1, b.N/rounds), b.N-done)
		d0, d10 := stops(n), withClients(n)
		none, with = none+d0, with+d10
		ratios = append(ratios, d0.Seconds()/d10.Seconds())
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(sessions*b.N)/none.Seconds(), "stops/s-0-clients")
	b.ReportMetric(float64(sessions*b.N)/with.Seconds(), "stops/s-10-clients")
	// The ratio is the median of the rounds' (rate with clients / rate
	// without): a burst of the machine's other load spoils a round or two,
	// not the figure.
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
}
