package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/workflow/plan"
)

// What the plan commands print for a person: status, findings and the end
// of a wait. The supervisor answers in api.PlanStatus; these render it.

func (a *app) printPlanStatus(st api.PlanStatus) {
	w := a.stdout
	if st.PlanID == "" {
		fmt.Fprintf(w, "session %s has no plan; drover plan new <plan-id> starts one.\n", st.SessionID)
		return
	}
	if st.TakenBy != "" {
		fmt.Fprintf(w, "plan %s was taken over by session %s, which drives it now; drover plan continue %s takes it back.\n", st.PlanID, st.TakenBy, st.PlanID)
		if !st.Active {
			return
		}
	}
	fmt.Fprintf(w, "plan %s (session %s): phase %s, next %s, current task %s\n", st.PlanID, st.SessionID, st.Phase, deref(st.NextPhase), deref(st.CurrentTask))
	fmt.Fprintf(w, "reviews: iteration %d of at most %d, %d clean in a row (%d end a cycle), next model %s, cycle %d, %d open finding(s)", st.PhaseIteration, st.MaxReviews, st.ConsecutiveClean, st.CleanStreak, st.ReviewModel, st.Cycle, st.OpenFindings)
	if st.Standalone {
		fmt.Fprint(w, ", standalone review")
	}
	if st.TDD {
		fmt.Fprint(w, ", tdd")
	}
	if st.BudgetUSD > 0 {
		fmt.Fprintf(w, ", budget $%.2f", st.BudgetUSD)
	}
	fmt.Fprintln(w)
	if r := st.Review; r != nil {
		state := "waiting to be run again (run drover plan wait)"
		if r.Running {
			state = "running since " + r.StartedAt.Local().Format(time.TimeOnly)
		}
		fmt.Fprintf(w, "review in flight: %s review %d (%s), %s\n", r.Kind, r.Iteration, r.Model, state)
	}
	if r := st.LastReview; r != nil {
		fmt.Fprintf(w, "last run: %s review %d, %s, %s, %d finding(s) (%d blocking), %s, $%.2f\n", r.Kind, r.Iteration, r.Model, runResult(*r), r.Findings, r.Blocking, (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Second), r.CostUSD)
	}
	t := st.Totals
	fmt.Fprintf(w, "reviewer runs: %d (%d failed), %s, $%.2f; this session: %d, $%.2f\n", t.Runs, t.FailedRuns, (time.Duration(t.Seconds * float64(time.Second))).Round(time.Second), t.CostUSD, t.SessionRuns, t.SessionCostUSD)
	fmt.Fprintf(w, "folder: %s\n", st.PlanDir)
}

func runResult(r api.PlanReviewRun) string {
	if r.Verdict != "" {
		return r.Verdict
	}
	if r.Error != "" {
		return "failed: " + r.Error
	}
	return r.Outcome
}

func deref(s *string) string {
	if s == nil || *s == "" {
		return "none"
	}
	return *s
}

// planViews lists plans from their state.json files, for status outside
// a session.
func (a *app) planViews(g *globalFlags, only string, asJSON bool) error {
	p, err := a.paths(g)
	if err != nil {
		return err
	}
	dir := filepath.Join(p.Root, filepath.FromSlash(plan.PlansDir))
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	views := []map[string]any{}
	for _, e := range ents {
		if !e.IsDir() || !plan.ValidPlanID(e.Name()) || (only != "" && e.Name() != only) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), plan.ViewFile))
		if err != nil {
			continue
		}
		var v map[string]any
		if json.Unmarshal(data, &v) != nil {
			continue
		}
		v["plan_id"] = e.Name()
		v["plan_dir"] = filepath.Join(dir, e.Name())
		views = append(views, v)
	}
	if only != "" && len(views) == 0 {
		return fmt.Errorf("plan status: no readable %s in %s", plan.ViewFile, filepath.Join(dir, only))
	}
	if asJSON {
		return a.printJSON(views)
	}
	if len(views) == 0 {
		fmt.Fprintf(a.stdout, "No plans in %s. drover plan new <plan-id> (inside a Claude Code session) starts one.\n", dir)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLAN\tPHASE\tNEXT\tTASK\tITERATION\tMAX\tMODEL\tCLEAN\tREVIEWING\tSESSION")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", field(v, "plan_id"), field(v, "phase"), field(v, "next_phase"), field(v, "current_task"), field(v, "phase_iteration"), field(v, "max_reviews"), field(v, "review_model"), field(v, "consecutive_clean"), field(v, "review_running"), field(v, "session_id"))
	}
	return tw.Flush()
}

func field(v map[string]any, k string) string {
	switch x := v[k].(type) {
	case nil:
		return "-"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	}
	return fmt.Sprint(v[k])
}

// printFindings prints the findings of st one cycle at a time, as the
// actor lists them: the current cycle, then the earlier ones.
func (a *app) printFindings(st api.PlanStatus) error {
	var groups [][]api.PlanFinding
	for i, f := range st.Findings {
		if i == 0 || f.Cycle != st.Findings[i-1].Cycle || f.Current != st.Findings[i-1].Current {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], f)
	}
	if len(groups) == 0 || !groups[0][0].Current {
		fmt.Fprintf(a.stdout, "No findings in review cycle %d of plan %s.\n", st.Cycle, st.PlanID)
	}
	for i, g := range groups {
		if i > 0 || !g[0].Current {
			fmt.Fprintln(a.stdout)
		}
		label := cycleLabel(g[0].Kind, g[0].Task)
		switch {
		case g[0].Current && label != "":
			fmt.Fprintf(a.stdout, "Review cycle %d of plan %s (current: %s):\n", g[0].Cycle, st.PlanID, label)
		case g[0].Current:
			fmt.Fprintf(a.stdout, "Review cycle %d of plan %s (current):\n", g[0].Cycle, st.PlanID)
		default:
			fmt.Fprintf(a.stdout, "Review cycle %d (%s):\n", g[0].Cycle, cmp.Or(label, "review"))
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tSEVERITY\tWHERE\tREVIEWS\tSUMMARY")
		for _, f := range g {
			state := "resolved"
			if f.Open {
				state = "open"
			}
			where := f.File
			if f.Line > 0 {
				where += ":" + strconv.Itoa(f.Line)
			}
			if where == "" {
				where = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d-%d (%dx)\t%s\n", state, f.Severity, where, f.FirstReview, f.LastReview, f.Times, f.Summary)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("printing findings: %w", err)
		}
	}
	return nil
}

// cycleLabel names what a review cycle reviewed ("code review of task 2");
// empty when it is not known.
func cycleLabel(kind, task string) string {
	switch {
	case kind == "":
		return ""
	case task != "":
		return kind + " review of task " + task
	}
	return kind + " review"
}

func (a *app) printWaitDone(st api.PlanStatus) {
	if r := st.LastReview; r != nil && r.Plan == st.PlanID {
		fmt.Fprintf(a.stdout, "[drover] The %s review %d (%s) of plan %s is done: %s, %d finding(s) (%d blocking). Stop now: drover tells you what to do next.\n", r.Kind, r.Iteration, r.Model, st.PlanID, runResult(*r), r.Findings, r.Blocking)
		return
	}
	fmt.Fprintf(a.stdout, "[drover] No review of plan %s is running (phase %s, next %s). Stop now: drover tells you what to do next.\n", st.PlanID, st.Phase, deref(st.NextPhase))
}
