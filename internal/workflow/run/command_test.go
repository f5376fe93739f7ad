package run

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover/templates"
)

func TestCommandOutput(t *testing.T) {
	cases := []struct {
		name     string
		tmpl     templates.Set
		timedOut bool
		err      error
		want     string
	}{
		{"passed", tmpl, false, nil, "ok\n"},
		{"failed", tmpl, false, errors.New("exit status 3"), "exit status 3\nok\n"},
		{"timed out", tmpl, true, errors.New("signal: killed"), "timed out after 30m0s\nok\n"},
		{"timed out, no templates", templates.Set{}, true, nil, "timed out after 30m0s\nok\n"},
	}
	for _, c := range cases {
		if got := CommandOutput(c.tmpl, c.timedOut, c.err, 30*time.Minute, "ok\n"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
