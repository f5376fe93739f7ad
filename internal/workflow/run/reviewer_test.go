package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/reviewer"
)

func TestReviewer(t *testing.T) {
	custom := config.Defaults()
	custom.Review.CLI, custom.Review.Command = reviewer.CLICustom, "my-rev --model {{model}} {{prompt}}"
	broken := config.Defaults()
	broken.Review.CLI, broken.Review.Command = reviewer.CLICustom, "my-rev 'x"
	models := []string{"opus", "sonnet"}
	cases := []struct {
		name    string
		cfg     config.Config
		opts    api.RunOptions
		none    bool
		cli     string
		command []string
		desc    string
		wantErr string
	}{
		{name: "the configured reviewer", cfg: config.Defaults(), cli: reviewer.CLIClaude, desc: "claude (opus, sonnet in turn)"},
		{name: "--no-review", cfg: custom, opts: api.RunOptions{NoReview: true}, none: true},
		{name: "a custom review.cli", cfg: custom, cli: reviewer.CLICustom, command: []string{"my-rev", "--model", "{{model}}", "{{prompt}}"}, desc: "my-rev --model {{model}} {{prompt}} (opus, sonnet in turn)"},
		{name: "--reviewer claude over a custom review.cli", cfg: custom, opts: api.RunOptions{Reviewer: "claude"}, cli: reviewer.CLIClaude, desc: "claude (opus, sonnet in turn)"},
		{name: "--reviewer replaces a broken review.command", cfg: broken, opts: api.RunOptions{Reviewer: "rev {{prompt}}"}, cli: reviewer.CLICustom, command: []string{"rev", "{{prompt}}"}, desc: "rev {{prompt}} (opus, sonnet in turn)"},
		{name: "a broken --reviewer", cfg: config.Defaults(), opts: api.RunOptions{Reviewer: "rev 'x"}, wantErr: "quote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := Reviewer(c.cfg, c.opts)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Reviewer() error %v, want one with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.none {
				if spec != nil || DescribeReviewer(spec, models) != "" {
					t.Errorf("Reviewer() = %+v, want none", spec)
				}
				return
			}
			if spec == nil || spec.CLI != c.cli || !slices.Equal(spec.Command, c.command) {
				t.Fatalf("Reviewer() = %+v, want CLI %s command %q", spec, c.cli, c.command)
			}
			if got := DescribeReviewer(spec, models); got != c.desc {
				t.Errorf("DescribeReviewer() = %q, want %q", got, c.desc)
			}
		})
	}
	if got := DescribeReviewer(&reviewer.Spec{}, []string{"haiku"}); got != "claude (haiku)" {
		t.Errorf("one model, no CLI: %q", got)
	}
	if got := DescribeReviewer(&reviewer.Spec{CLI: reviewer.CLIClaude}, []string{"opus", "gpt-5-codex", "gemini:my-model"}); got != "claude (opus, gpt-5-codex on codex, gemini:my-model on gemini in turn)" {
		t.Errorf("mixed CLIs: %q", got)
	}
}
