// Package reviewconf builds reviewer invocations from drover's review
// config, in one place, so that the plan's reviews, the loop's checkpoints
// and the run's task reviews start from the same reviewer.Spec and read
// review.cli, review.command, review.budget_usd, review.timeout and
// review.quorum alike.
//
// It is apart from package reviewer because the thin CLI links reviewer
// (for its types) and must not link the config loader.
package reviewconf

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/reviewer"
)

// Spec returns the base of every reviewer run that r describes: the CLI;
// for review.cli custom, the argv template split from review.command
// (split into words as a shell would, but run without one, so that the
// prompt that fills {{prompt}} is never parsed by a shell); the budget
// and the timeout. The caller sets what differs per run: Model, Prompt,
// Dir, LogPath, Limiter and OwnerTag.
func Spec(r config.Review) (reviewer.Spec, error) {
	s := reviewer.Spec{CLI: r.CLI, Timeout: r.Timeout}
	if r.CLI == reviewer.CLICustom {
		argv, err := argsplit.Split(r.Command)
		if err != nil {
			return reviewer.Spec{}, fmt.Errorf("review.command %q: %w", r.Command, err)
		}
		if len(argv) == 0 {
			return reviewer.Spec{}, errors.New("review.command is empty while review.cli is custom")
		}
		s.Command = argv
	}
	budget, err := r.Budget()
	if err != nil {
		return reviewer.Spec{}, fmt.Errorf("review.budget_usd: %w", err)
	}
	s.BudgetUSD = budget
	return s, nil
}

// Quorum returns the quorum review.quorum names for parallel reviews:
// reviewer.Majority for "majority", else reviewer.All.
func Quorum(r config.Review) reviewer.Quorum {
	if r.Quorum == "majority" {
		return reviewer.Majority
	}
	return reviewer.All
}

// PerModel returns one copy of base per model, for reviews run by several
// models at once: each has its Model, and its own log beside base's
// ("review-2.log" becomes "review-2-opus.log"; no log stays no log).
func PerModel(base reviewer.Spec, models []string) []reviewer.Spec {
	specs := make([]reviewer.Spec, 0, len(models))
	for _, m := range models {
		s := base
		s.Model = m
		if base.LogPath != "" {
			s.LogPath = strings.TrimSuffix(base.LogPath, ".log") + "-" + m + ".log"
		}
		specs = append(specs, s)
	}
	return specs
}

// Missing says whether the executable of the reviewer CLI that r configures
// can be started by a reviewer run in dir: the CLI's name (claude, codex,
// gemini) looked up in PATH, or review.command's first word, which, when it
// holds a slash but is relative, is taken from dir as the run would take
// it. When it cannot, command is that executable, key the config key that
// names it (review.cli, or review.command for a custom CLI), and reason why
// (not found, not executable, or review.command that does not parse);
// reason is empty when it can. A model of review.models that runs on
// another CLI than review.cli (reviewer.ModelCLI) needs that CLI on PATH
// too; when it is missing, key is review.models. A reviewer that cannot start would fail every
// review at once, so callers say so instead of waiting for one.
func Missing(r config.Review, dir string) (command, key, reason string) {
	command, key = r.CLI, "review.cli"
	switch r.CLI {
	case "":
		command = reviewer.CLIClaude
	case reviewer.CLICustom:
		key = "review.command"
		argv, err := argsplit.Split(r.Command)
		if err != nil {
			return r.Command, key, err.Error()
		}
		if len(argv) == 0 {
			return r.Command, key, "review.command is empty"
		}
		command = argv[0]
	case reviewer.CLIClaude, reviewer.CLICodex, reviewer.CLIGemini:
	default:
		// The config loader refuses an unknown CLI; one that got past
		// it fails in reviewer.BuildCommand, which names the CLIs.
		return command, key, ""
	}
	path := command
	if strings.Contains(path, "/") && !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	if _, err := exec.LookPath(path); err != nil {
		return command, key, lookupCause(err)
	}
	if r.CLI == reviewer.CLICustom {
		return command, key, ""
	}
	// Models of other CLIs run on those (reviewer.ModelCLI): each must
	// start too.
	for _, m := range strings.Split(r.Models, ",") {
		m = strings.TrimSpace(m)
		cli, _, err := reviewer.ModelCLI(m, command)
		if m == "" || err != nil || cli == command {
			continue
		}
		if _, err := exec.LookPath(cli); err != nil {
			return cli, "review.models", lookupCause(err)
		}
	}
	return command, key, ""
}

// lookupCause is why exec.LookPath failed: exec.Error and fs.PathError
// repeat the name; the cause alone reads better after it.
func lookupCause(err error) string {
	var (
		ee *exec.Error
		pe *fs.PathError
	)
	if errors.As(err, &ee) {
		err = ee.Err
	}
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}
