package loop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/templates"
)

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
				if c.opts.RequireChecks && !errors.Is(err, ErrRefused) {
					t.Errorf("StartWith() = %v, want a Refusal", err)
				}
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
