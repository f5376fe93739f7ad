package supervisor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/reviewer"
)

// TestReloadResizesTheReviewerLimiter: review.max_parallel takes effect on
// a config reload; a reload that fails leaves the limiter as it was.
func TestReloadResizesTheReviewerLimiter(t *testing.T) {
	lg := logging.Nop()
	start := config.Defaults()
	s := &Server{opts: Options{Log: lg}, log: lg.Zap(), reviewers: reviewer.NewLimiter(start.Review.MaxParallel)}
	s.cfg.Store(&start)

	bigger := config.Defaults()
	bigger.Review.MaxParallel = 5
	invalid := config.Defaults()
	invalid.Review.MaxParallel = 0
	badRoutes := config.Defaults()
	badRoutes.Review.MaxParallel = 7
	badRoutes.Loop.Routes = "status=thrashing -> architect"
	tests := []struct {
		name string
		cfg  config.Config
		err  error
		want int
	}{
		{"grow", bigger, nil, 5},
		{"invalid value is refused", invalid, nil, 5},
		{"routes that do not parse are refused", badRoutes, nil, 5},
		{"a reload error changes nothing", start, errors.New("bad yaml"), 5},
		{"shrink", start, nil, start.Review.MaxParallel},
	}

	for _, tt := range tests {
		s.reload(tt.cfg, tt.err)
		if got := s.reviewers.Size(); got != tt.want {
			t.Errorf("%s: the limiter has %d slots, want %d", tt.name, got, tt.want)
		}
		if got := s.cfg.Load().Review.MaxParallel; got != tt.want {
			t.Errorf("%s: review.max_parallel is %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestReloadWithoutLogger: a supervisor started with no logger (tests,
// embedders) survives a config reload.
func TestReloadWithoutLogger(t *testing.T) {
	start := config.Defaults()
	s := &Server{log: logging.Nop().Zap(), reviewers: reviewer.NewLimiter(start.Review.MaxParallel)}
	s.cfg.Store(&start)
	next := config.Defaults()
	next.Log.Level = "debug"
	s.reload(next, nil)
	if got := s.cfg.Load().Log.Level; got != "debug" {
		t.Errorf("log.level after reload is %q, want debug", got)
	}
}

// TestRunRefusesRoutesThatDoNotParse: loop.routes is checked by the engine
// side (config cannot parse it), and a supervisor does not start on a
// config whose routes it refuses; the error names the key.
func TestRunRefusesRoutesThatDoNotParse(t *testing.T) {
	opts := lockTestOptions(t, 0, nil)
	opts.Config.Loop.Routes = "stats=thrashing -> architect; anything -> developer"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Run(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), `"loop.routes"`) {
		t.Fatalf("Run() = %v, want an error naming \"loop.routes\"", err)
	}
	if _, serr := os.Stat(opts.Paths.DB); !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("the store %s exists (%v): a refused config must not get that far", opts.Paths.DB, serr)
	}
}
