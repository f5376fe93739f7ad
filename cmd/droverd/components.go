package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/convergence"
	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/loopconf"
	"github.com/drover-dev/drover/internal/transcript"
	"github.com/drover-dev/drover/router"
)

// The loop's three components as commands, so they can be scripted and
// tested alone. They read and write files only; no supervisor is involved.
// They are droverd's because they read the project's loop.* configuration;
// drover hands them over with the same arguments.

// componentState is the --state file the components share: the loop's
// iteration and budget.
type componentState struct {
	Iteration     int     `json:"iteration"`
	MaxIterations int     `json:"max_iterations"`
	MaxMinutes    float64 `json:"max_minutes"`
	MaxUSD        float64 `json:"max_usd"`
	ElapsedSec    float64 `json:"elapsed_seconds"`
	CostUSD       float64 `json:"cost_usd"`
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parsing %q: %w", path, err)
	}
	return nil
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %q: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	return nil
}

func (a *app) reflectCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Reflect()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		transcriptPath, _ := cmd.Flags().GetString("transcript")
		statePath, _ := cmd.Flags().GetString("state")
		dir, _ := cmd.Flags().GetString("reflections-dir")
		var st componentState
		if err := readJSONFile(statePath, &st); err != nil {
			return err
		}
		// The iteration names the file: 0 (absent) or a negative one
		// would write iteration-0.json or iteration--3.json.
		if st.Iteration < 1 {
			return fmt.Errorf("reading state %q: iteration is %d, want 1 or more (it names the reflection file)", statePath, st.Iteration)
		}
		f, err := os.Open(transcriptPath)
		if err != nil {
			return fmt.Errorf("opening transcript: %w", err)
		}
		defer f.Close()
		it, err := transcript.Summarize(cmd.Context(), f, transcript.SinceIteration)
		if err != nil {
			return err
		}
		m := convergence.MetricsFrom(it)
		m.Iteration = st.Iteration
		var prior []convergence.Reflection
		for i := 1; i < st.Iteration; i++ {
			var r convergence.Reflection
			if err := readJSONFile(filepath.Join(dir, "iteration-"+strconv.Itoa(i)+".json"), &r); err == nil {
				prior = append(prior, r)
			}
		}
		cfg, err := a.componentConfig(g)
		if err != nil {
			return err
		}
		r, ok := convergence.Reflect(it, m, prior, loopconf.Thresholds(cfg.Loop))
		if !ok {
			fmt.Fprintf(a.stdout, "iteration %d is low-signal (%d tool calls): no reflection written\n", st.Iteration, it.ToolCalls)
			return nil
		}
		r.Iteration = st.Iteration
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating %q: %w", dir, err)
		}
		data, err := r.JSON()
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "iteration-"+strconv.Itoa(st.Iteration)+".json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing %q: %w", path, err)
		}
		fmt.Fprintln(a.stdout, path)
		return nil
	}
	return cmd
}

func (a *app) convergeCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Converge()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		metricsPath, _ := cmd.Flags().GetString("metrics")
		statePath, _ := cmd.Flags().GetString("state")
		outPath, _ := cmd.Flags().GetString("output")
		var history []convergence.Metrics
		if err := readJSONFile(metricsPath, &history); err != nil {
			return err
		}
		if err := checkHistory(history); err != nil {
			return fmt.Errorf("reading metrics %q: %w", metricsPath, err)
		}
		// Seed 004's runner passes a --state path that does not exist
		// when a case has no loop state: no iteration and no budgets.
		var st componentState
		if err := readJSONFile(statePath, &st); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		cfg, err := a.componentConfig(g)
		if err != nil {
			return err
		}
		status, reason := convergence.Classify(history, convergence.Budget{
			MaxIterations: st.MaxIterations, MaxMinutes: st.MaxMinutes, MaxUSD: st.MaxUSD,
			Iteration: st.Iteration, Elapsed: time.Duration(st.ElapsedSec * float64(time.Second)), CostUSD: st.CostUSD,
		}, loopconf.Thresholds(cfg.Loop))
		return writeJSONFile(outPath, map[string]string{"status": string(status), "reason": reason})
	}
	return cmd
}

func (a *app) routeCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Route()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		inPath, _ := cmd.Flags().GetString("input")
		outPath, _ := cmd.Flags().GetString("output")
		var raw struct {
			Phase       string `json:"phase"`
			LastOutcome string `json:"last_outcome"`
			Status      string `json:"convergence_status"`
		}
		if err := readJSONFile(inPath, &raw); err != nil {
			return err
		}
		in, err := router.ParseInput(raw.Phase, raw.LastOutcome, raw.Status)
		if err != nil {
			return fmt.Errorf("reading %q: %w", inPath, err)
		}
		cfg, err := a.componentConfig(g)
		if err != nil {
			return err
		}
		rules, err := loopconf.Routes(cfg.Loop)
		if err != nil {
			return fmt.Errorf("loop.routes: %w", err)
		}
		role, rule := router.Route(rules, in)
		if rule < 0 {
			return errors.New("no routing rule matches the input")
		}
		return writeJSONFile(outPath, map[string]any{"agent": "dev:" + string(role), "role": string(role), "rule": rule})
	}
	return cmd
}

// checkHistory refuses a metrics history no measurement could give: a
// pass rate is a fraction from 0 to 1 (or absent), and a history with 95
// for 95% would otherwise read as a converged success.
func checkHistory(history []convergence.Metrics) error {
	for i, m := range history {
		if m.TestPassRate != -1 && (math.IsNaN(m.TestPassRate) || m.TestPassRate < 0 || m.TestPassRate > 1) {
			return fmt.Errorf("entry %d (iteration %d): test_pass_rate %v is not a fraction from 0 to 1", i+1, m.Iteration, m.TestPassRate)
		}
		if m.TestsPassed < 0 || m.TestsFailed < 0 {
			return fmt.Errorf("entry %d (iteration %d): negative test counts (%d passed, %d failed)", i+1, m.Iteration, m.TestsPassed, m.TestsFailed)
		}
	}
	return nil
}

// componentConfig is the configuration the component commands use: the
// project's, as drover config prints it.
func (a *app) componentConfig(g *cmdline.Globals) (config.Config, error) {
	p, err := a.paths(g)
	if err != nil {
		return config.Config{}, err
	}
	return a.projectConfig(p.Root)
}
