package actors

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
)

// The plan workflow's own process plumbing, unchanged: the git runner and
// the reviewer invocations built from the configuration. They stay together
// in this file so that the shared runner and builder (internal/proc) can
// replace them in one place.

// reviewJob builds the reviewer invocations of e from the configuration.
func (a *sessionActor) reviewJob(cfg config.Config, id uint64, e plan.StartReview) (reviewJob, error) {
	base := reviewer.Spec{
		CLI:      cfg.Review.CLI,
		Model:    e.Model,
		Prompt:   e.Prompt,
		Timeout:  cfg.Review.Timeout,
		Dir:      a.env.Root,
		LogPath:  strings.TrimSuffix(e.ReviewFile, ".md") + ".log",
		Limiter:  a.env.Reviewers,
		OwnerTag: a.env.ChildTag,
	}
	if cfg.Review.BudgetUSD != "" {
		v, err := strconv.ParseFloat(cfg.Review.BudgetUSD, 64)
		if err != nil {
			return reviewJob{}, fmt.Errorf("review.budget_usd %q: %w", cfg.Review.BudgetUSD, err)
		}
		base.BudgetUSD = v
	}
	if cfg.Review.CLI == reviewer.CLICustom {
		argv, err := argsplit.Split(cfg.Review.Command)
		if err != nil {
			return reviewJob{}, fmt.Errorf("review.command: %w", err)
		}
		base.Command = argv
	}
	job := reviewJob{id: id, specs: []reviewer.Spec{base}}
	if cfg.ParallelReview() {
		job.specs = nil
		for _, m := range cfg.ReviewModels() {
			s := base
			s.Model = m
			s.LogPath = strings.TrimSuffix(e.ReviewFile, ".md") + "-" + m + ".log"
			job.specs = append(job.specs, s)
		}
		if cfg.Review.Quorum == "majority" {
			job.quorum = reviewer.Majority
		}
	}
	return job, nil
}

// gitOutput runs git in dir and returns at most limit bytes of its stdout.
func gitOutput(ctx context.Context, dir string, limit int, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		// A supervisor started from inside a git hook must not act on
		// that hook's repository.
		if k, _, _ := strings.Cut(kv, "="); k == "GIT_DIR" || k == "GIT_WORK_TREE" || k == "GIT_INDEX_FILE" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	out := &capBuffer{limit: limit}
	cmd.Stdout = out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// capBuffer keeps the first limit bytes written to it.
type capBuffer struct {
	limit int
	buf   bytes.Buffer
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capBuffer) String() string { return c.buf.String() }
