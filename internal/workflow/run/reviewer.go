package run

import (
	"strings"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/reviewconf"
	"github.com/drover-dev/drover/reviewer"
)

// Reviewer is the reviewer of every task of a run with options o in a
// project configured as cfg, without its prompt, model, limiter and owner
// tag (the shell's); nil when tasks are not reviewed (--no-review). It is
// the configured one (reviewconf.Spec: review.cli, review.command,
// review.timeout, review.budget_usd) unless --reviewer names another,
// which replaces review.cli and review.command, so that a configured
// command it replaces need not parse.
func Reviewer(cfg config.Config, o api.RunOptions) (*reviewer.Spec, error) {
	if o.NoReview {
		return nil, nil
	}
	argv, err := ReviewerCommand(o.Reviewer)
	if err != nil {
		return nil, err
	}
	conf := cfg.Review
	if argv != nil || strings.TrimSpace(o.Reviewer) == reviewer.CLIClaude {
		conf.CLI, conf.Command = reviewer.CLIClaude, ""
	}
	spec, err := reviewconf.Spec(conf)
	if err != nil {
		return nil, err
	}
	if argv != nil {
		spec.CLI, spec.Command = reviewer.CLICustom, argv
	}
	return &spec, nil
}

// DescribeReviewer says who reviews the run's tasks, for its status:
// spec's CLI (or its command) and the models, in turn when more than one,
// each that runs on another CLI with its CLI ("gpt-5-codex on codex");
// empty when spec is nil (no review).
func DescribeReviewer(spec *reviewer.Spec, models []string) string {
	if spec == nil {
		return ""
	}
	who := spec.CLI
	switch who {
	case "":
		who = reviewer.CLIClaude
	case reviewer.CLICustom:
		who = strings.Join(spec.Command, " ")
	}
	// A model that runs on another CLI (reviewer.ModelCLI) says which.
	named := make([]string, len(models))
	for i, m := range models {
		named[i] = m
		if cli, _, err := reviewer.ModelCLI(m, spec.CLI); err == nil && spec.CLI != reviewer.CLICustom && cli != who {
			named[i] = m + " on " + cli
		}
	}
	list := strings.Join(named, ", ")
	if len(models) > 1 {
		list += " in turn"
	}
	return who + " (" + list + ")"
}
