package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/cmdline"
)

// TestConvergeHelpNamesRealFields: the metrics and state fields that
// drover converge --help lists are the JSON keys it reads; a name it does
// not read would be ignored without a word in a user's script.
func TestConvergeHelpNamesRealFields(t *testing.T) {
	long := (&app{}).convergeCmd(&cmdline.Globals{}).Long
	keys := func(v any) map[string]bool {
		m := map[string]bool{}
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			m[name] = true
		}
		return m
	}
	for _, tc := range []struct {
		after string
		known map[string]bool
	}{
		{"metrics (", keys(convergence.Metrics{})},
		{"loop state (", keys(componentState{})},
	} {
		_, rest, ok := strings.Cut(long, tc.after)
		if !ok {
			t.Fatalf("the help has no %q list:\n%s", tc.after, long)
		}
		list, _, _ := strings.Cut(rest, ")")
		for _, f := range strings.Split(list, ",") {
			f = strings.TrimSpace(f)
			if f == "..." {
				continue
			}
			if !tc.known[f] {
				t.Errorf("the help names %q after %q, which converge does not read", f, tc.after)
			}
		}
	}
}
