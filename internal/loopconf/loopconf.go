// Package loopconf builds what the loop.* config keys describe for the
// engine, in one place, so that loops and runs judge iterations alike: the
// convergence thresholds (loop.success_pass_rate, loop.min_improvement,
// loop.plateau_window, ...) and the routing rules (loop.routes).
//
// It is apart from package config so that config stays a leaf of plain
// values that knows neither convergence nor router; the supervisor and
// the commands that validate a config call Check beside Config.Validate.
package loopconf

import (
	"fmt"
	"strings"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/router"
)

// Thresholds returns the convergence thresholds that l sets.
func Thresholds(l config.Loop) convergence.Thresholds {
	return convergence.Thresholds{
		SuccessPassRate:  l.SuccessPassRate,
		RequireLintClean: l.RequireLintClean,
		PlateauWindow:    l.PlateauWindow,
		MinImprovement:   l.MinImprovement,
		ThrashRepeats:    l.ThrashRepeats,
		MinToolCalls:     l.MinToolCalls,
	}
}

// Routes returns the routing rules of loop.routes, or router.DefaultRules
// when it is blank. Rules that do not parse, or that router.Validate
// refuses, are an error.
func Routes(l config.Loop) ([]router.Rule, error) {
	if strings.TrimSpace(l.Routes) == "" {
		return router.DefaultRules(), nil
	}
	rules, err := router.ParseRules(l.Routes)
	if err != nil {
		return nil, err
	}
	if err := router.Validate(rules); err != nil {
		return nil, err
	}
	return rules, nil
}

// Check reports what config.Validate cannot see, because config does not
// know the router: loop.routes that Routes refuses. The error names the
// key as config.Validate's do.
func Check(l config.Loop) error {
	if _, err := Routes(l); err != nil {
		return fmt.Errorf("config key %q: %w", "loop.routes", err)
	}
	return nil
}

// RoutesOrDefault is Routes for a loop that is already running: rules that
// Routes refuses (Check refused them when the config was loaded, so only a
// config changed under a running supervisor gets here) give way to
// router.DefaultRules, since a typo in the config is no reason to stop
// routing a loop's iterations.
func RoutesOrDefault(l config.Loop) []router.Rule {
	rules, err := Routes(l)
	if err != nil {
		return router.DefaultRules()
	}
	return rules
}
