// Package faultinject reads the crash soak's fault spec (test/soak): the
// points of a hook's handling at which droverd kills itself, each with a
// probability. It is off unless the variable Env is set, and costs a nil
// check where it is off.
package faultinject

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Env is the variable droverd reads the spec from, e.g.
// "receive=0.02,commit=0.02,effect=0.02". It does not start with DROVER_,
// so it is not mistaken for a config key.
const Env = "DROVERD_TEST_FAULTS"

// Parse reads spec, a comma-separated list of point=probability (0 to 1),
// into a map from point to probability. An empty spec is no faults.
func Parse(spec string) (map[string]float64, error) {
	out := map[string]float64{}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		point, p, ok := strings.Cut(item, "=")
		if !ok || point == "" {
			return nil, fmt.Errorf("fault %q: want point=probability", item)
		}
		prob, err := strconv.ParseFloat(p, 64)
		if err != nil || prob < 0 || prob > 1 {
			return nil, fmt.Errorf("fault %q: the probability must be a number from 0 to 1", item)
		}
		out[point] = prob
	}
	return out, nil
}

// Hook returns the function to call at each point: with the point's
// probability it calls crash(point), which is expected not to return. It
// returns nil when spec names no fault, so that callers skip it.
func Hook(spec string, crash func(point string)) (func(point string), error) {
	probs, err := Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Env, err)
	}
	if len(probs) == 0 {
		return nil, nil
	}
	return func(point string) {
		if p := probs[point]; p > 0 && rand.Float64() < p {
			crash(point)
		}
	}, nil
}
