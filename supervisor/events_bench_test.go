package supervisor

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/project"
)

// BenchmarkStopsWithEventClients measures hook decisions per second
// (Stops of 4 sessions at once, through the API) with no event stream
// client, then with 10 clients following the stream, in the same run and
// on the same server, and reports both and their ratio (issue 14: the
// stream must not slow decisions by more than 5%, a ratio of 0.95).
func BenchmarkStopsWithEventClients(b *testing.B) {
	const sessions = 4
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
	from := 0
	rate := func() float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := a.stops(fmt.Sprintf("s%d", i), from, b.N); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		from += b.N
		return float64(sessions*b.N) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	none := rate()
	var clients []*stream
	for range 10 {
		s := a.follow(a.srv.events.LastID())
		clients = append(clients, s)
		go func() {
			for range s.events {
			}
		}()
	}
	with := rate()
	b.StopTimer()
	for _, s := range clients {
		s.close()
	}
	b.ReportMetric(none, "stops/s-0-clients")
	b.ReportMetric(with, "stops/s-10-clients")
	b.ReportMetric(with/none, "ratio")
}
