package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/convergence"
	summary "github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/templates"
)

func TestUsageCost(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	s := State{Active: true, StartedAt: start}
	u := summary.Usage{Model: "claude-sonnet-4-5", InputTokens: 1_000_000, OutputTokens: 100_000}
	full := convergence.DefaultPrices().Cost(u)
	if full <= 0 {
		t.Fatalf("the default prices give %v for %+v; the test needs a priced usage", full, u)
	}
	cases := []struct {
		name string
		at   time.Time
		want float64
	}{
		{"before the loop started", start.Add(-time.Second), 0},
		{"at the start", start, full},
		{"during the loop", start.Add(time.Hour), full},
		{"without a time", time.Time{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := u
			u.Timestamp = c.at
			if got := UsageCost(s, u); got != c.want {
				t.Errorf("UsageCost() = %v, want %v", got, c.want)
			}
		})
	}
}

func TestStartWith(t *testing.T) {
	tmpl := templates.Defaults()
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		opts    StartOptions
		cfg     StartConfig
		wantMax int
		wantErr string
	}{
		{"the project's budget when none is given", StartOptions{Prompt: "p"}, StartConfig{MaxIterations: 25}, 25, ""},
		{"the flag wins", StartOptions{Prompt: "p", MaxIterations: 3}, StartConfig{MaxIterations: 25}, 3, ""},
		{"no budget anywhere", StartOptions{Prompt: "p"}, StartConfig{}, 0, "--max-iterations is 0"},
		{"checks required without a command", StartOptions{Prompt: "p", RequireChecks: true}, StartConfig{MaxIterations: 5}, 0, "loop.check_command is not set"},
		{"a blank command is no command", StartOptions{Prompt: "p", RequireChecks: true}, StartConfig{MaxIterations: 5, CheckCommand: " \t"}, 0, "loop.check_command is not set"},
		{"checks required with a command", StartOptions{Prompt: "p", RequireChecks: true}, StartConfig{MaxIterations: 5, CheckCommand: "go test ./..."}, 5, ""},
		{"a command without the flag", StartOptions{Prompt: "p"}, StartConfig{MaxIterations: 5, CheckCommand: "go test ./..."}, 5, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := StartWith(c.opts, c.cfg, now, tmpl)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("StartWith() = %+v, %v; want an error saying %q", st, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !st.Active || st.MaxIterations != c.wantMax || st.RequireChecks != c.opts.RequireChecks || !st.StartedAt.Equal(now) {
				t.Errorf("StartWith() = %+v, want an active loop with %d iterations", st, c.wantMax)
			}
		})
	}
}
