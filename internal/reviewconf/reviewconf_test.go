package reviewconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/reviewer"
)

func TestSpec(t *testing.T) {
	tests := []struct {
		name    string
		r       config.Review
		want    reviewer.Spec
		wantErr string
	}{
		{
			name: "claude with a budget and a timeout",
			r:    config.Review{CLI: "claude", BudgetUSD: "0.50", Timeout: time.Minute},
			want: reviewer.Spec{CLI: "claude", BudgetUSD: 0.5, Timeout: time.Minute},
		},
		{
			name: "codex without a budget",
			r:    config.Review{CLI: "codex", Command: "ignored unless custom"},
			want: reviewer.Spec{CLI: "codex"},
		},
		{
			name: "custom command split like a shell, not run by one",
			r:    config.Review{CLI: "custom", Command: `mycli --model {{model}} "--note=a b" {{prompt}}; rm -rf x`},
			want: reviewer.Spec{CLI: "custom", Command: []string{"mycli", "--model", "{{model}}", "--note=a b", "{{prompt}};", "rm", "-rf", "x"}},
		},
		{name: "custom without a command", r: config.Review{CLI: "custom", Command: "  "}, wantErr: "review.command is empty"},
		{name: "custom with an open quote", r: config.Review{CLI: "custom", Command: `mycli "oops`}, wantErr: "review.command"},
		{name: "budget not a number", r: config.Review{CLI: "claude", BudgetUSD: "ten"}, wantErr: "review.budget_usd"},
		{name: "negative budget", r: config.Review{CLI: "claude", BudgetUSD: "-1"}, wantErr: "review.budget_usd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Spec(tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Spec = %+v, %v; want an error about %s", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Spec = %+v, %v\nwant   %+v", got, err, tt.want)
			}
		})
	}
}

func TestQuorum(t *testing.T) {
	for in, want := range map[string]reviewer.Quorum{"majority": reviewer.Majority, "all": reviewer.All, "": reviewer.All} {
		if got := Quorum(config.Review{Quorum: in}); got != want {
			t.Errorf("Quorum(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestPerModel(t *testing.T) {
	base := reviewer.Spec{CLI: "claude", Prompt: "p", LogPath: "/plans/p1/task-1-review-2.log"}
	got := PerModel(base, []string{"opus", "sonnet"})
	if len(got) != 2 || got[0].Model != "opus" || got[1].Model != "sonnet" ||
		got[0].LogPath != "/plans/p1/task-1-review-2-opus.log" || got[1].LogPath != "/plans/p1/task-1-review-2-sonnet.log" ||
		got[0].Prompt != "p" || got[1].CLI != "claude" {
		t.Errorf("PerModel = %+v", got)
	}
	if got := PerModel(reviewer.Spec{}, []string{"opus"}); got[0].LogPath != "" {
		t.Errorf("PerModel gave a log to a spec without one: %q", got[0].LogPath)
	}
	if got := PerModel(base, nil); len(got) != 0 {
		t.Errorf("PerModel(no models) = %+v", got)
	}
}

// TestMissing: a reviewer CLI is found as a run would start it, and one
// that cannot start is named with its config key.
func TestMissing(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"claude", "gemini", "myreviewer"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "notexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "tools", "rev"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	tests := []struct {
		name                 string
		r                    config.Review
		command, key, reason string
	}{
		{"claude on PATH", config.Review{CLI: "claude"}, "claude", "review.cli", ""},
		{"empty CLI is claude", config.Review{}, "claude", "review.cli", ""},
		{"gemini on PATH", config.Review{CLI: "gemini"}, "gemini", "review.cli", ""},
		{"codex not installed", config.Review{CLI: "codex"}, "codex", "review.cli", "executable file not found in $PATH"},
		{"claude and gemini models", config.Review{CLI: "claude", Models: "opus, gemini-2.5-pro"}, "claude", "review.cli", ""},
		{"a codex model without codex", config.Review{CLI: "claude", Models: "opus,gpt-5-codex"}, "codex", "review.models", "executable file not found in $PATH"},
		{"an explicit codex model without codex", config.Review{CLI: "gemini", Models: "codex:my-model"}, "codex", "review.models", "executable file not found in $PATH"},
		{"custom on PATH", config.Review{CLI: "custom", Command: "myreviewer --model {{model}} {{prompt}}"}, "myreviewer", "review.command", ""},
		{"custom relative to the project", config.Review{CLI: "custom", Command: "./tools/rev {{prompt}}"}, "./tools/rev", "review.command", ""},
		{"custom path missing", config.Review{CLI: "custom", Command: "'/no/such dir/rev' {{prompt}}"}, "/no/such dir/rev", "review.command", "no such file or directory"},
		{"custom not executable", config.Review{CLI: "custom", Command: filepath.Join(bin, "notexec") + " {{prompt}}"}, filepath.Join(bin, "notexec"), "review.command", "permission denied"},
		{"custom not on PATH", config.Review{CLI: "custom", Command: "nosuchreviewer {{prompt}}"}, "nosuchreviewer", "review.command", "executable file not found in $PATH"},
		{"custom that does not parse", config.Review{CLI: "custom", Command: `rev "oops`}, `rev "oops`, "review.command", "unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command, key, reason := Missing(tt.r, project)
			if command != tt.command || key != tt.key {
				t.Errorf("Missing = %q, %q; want %q, %q", command, key, tt.command, tt.key)
			}
			if (tt.reason == "") != (reason == "") || !strings.Contains(reason, tt.reason) {
				t.Errorf("reason = %q, want one containing %q", reason, tt.reason)
			}
		})
	}
}
