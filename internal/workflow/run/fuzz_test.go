package run

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/rungraph"
	"github.com/drover-dev/drover/templates"
)

// FuzzStartRequest reads arbitrary bytes as the body of a run start, as
// the supervisor does before any agent starts: the graph and the options.
// Options it accepts are complete (at least one agent and one iteration),
// bound by budgets that are amounts of 0 or more, encode for the API and
// the store, and are settled (taking them again changes nothing); a
// refusal names the option at fault.
func FuzzStartRequest(f *testing.F) {
	f.Add([]byte(`{"file":"g.yaml","graph":"tasks:\n  - id: a\n    description: A.\n","options":{"concurrency":2,"max_iterations":3,"test_command":"go test {{packages}}","max_usd":1.5}}`), 0.0)
	f.Add([]byte(`{"options":{"reviewer":"my-review {{prompt}}","no_review":true}}`), -1.0)
	f.Add([]byte(`{"options":{"agent":"x {{nope}}","task_max_minutes":-3}}`), math.NaN())
	f.Add([]byte(`{"options":{"suite_command":"make {{packages}}","iteration_timeout":-5}}`), 2.0)
	f.Add([]byte(`{}`), math.Inf(1))
	tmpl := templates.Defaults()
	cfg := config.Defaults().Run
	f.Fuzz(func(t *testing.T, body []byte, maxUSD float64) {
		var req api.StartRunRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		if req.Graph != "" && len(req.Graph) <= rungraph.MaxFileSize {
			_, _ = rungraph.Parse([]byte(req.Graph), req.File)
		}
		if maxUSD != 0 {
			// A budget from the command line, where a float is any
			// float ParseFloat reads ("inf", "nan").
			req.Options.MaxUSD = maxUSD
		}
		o, err := Options(req.Options, cfg, tmpl)
		if err != nil {
			msg := err.Error()
			named := false
			for _, w := range []string{"agent", "test command", "suite command", "reviewer", "review", "max minutes", "max usd", "run.task_max_usd", "placeholder"} {
				named = named || strings.Contains(msg, w)
			}
			if !named {
				t.Fatalf("the refusal %q names no option", msg)
			}
			return
		}
		if o.Concurrency < 1 || o.MaxIterations < 1 {
			t.Fatalf("options with concurrency %d and max iterations %d", o.Concurrency, o.MaxIterations)
		}
		for _, v := range []float64{o.TaskMaxMinutes, o.TaskMaxUSD, o.MaxMinutes, o.MaxUSD} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("options accepted with the budget %v: %+v", v, o)
			}
		}
		if _, err := json.Marshal(o); err != nil {
			t.Fatalf("accepted options do not encode: %v", err)
		}
		again, err := Options(o, cfg, tmpl)
		if err != nil || !reflect.DeepEqual(again, o) {
			t.Fatalf("taking the options again gave %+v, %v; want %+v", again, err, o)
		}
	})
}
