package actors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/argsplit"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/tasks"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/reviewer"
)

// The plan workflow in the session actor. The rules are in
// internal/workflow/plan; this file gathers their facts, persists their
// state, and performs their effects:
//
//   - A review runs in a child actor (reviewActor) whose goroutine runs the
//     reviewer process, so the session's mailbox stays free: status, stop
//     and other hooks are answered while a review takes minutes. The child
//     is stopped with the session actor (shutdown, passivation, restart after
//     a failure), and stopping it kills the reviewer's process group.
//   - The reviewer's answer comes back as a reviewDone message. It is applied
//     at once (plan.Stop with the answer as a fact), the new state is saved,
//     the review file written, and the hook answer the rules gave is kept in
//     memory for the next Stop, which gets it as it is.
//   - The review in flight is part of the saved state. After a crash or a
//     restart it is run again, with the same iteration and model, by the
//     next Stop hook or `drover plan wait`, whichever comes first.

// RunsFile is the name of the reviewer run log in a plan folder.
const RunsFile = "reviews.jsonl"

// Bounds on what the actor reads from a plan folder and from git.
const (
	maxPlanFiles    = 2000
	maxPlanFileRead = 1 << 20
	maxRunsRead     = 4 << 20
	maxDiffBytes    = 256 << 10
)

// planRuntime is the plan workflow's in-memory state of one session actor:
// what cannot be saved (a process, a cancel func) or need not be.
type planRuntime struct {
	seq uint64
	// run is the reviewer running now, nil when none.
	run *reviewRun
	// last is the last finished run, for status.
	last *api.PlanReviewRun
	// idleOff is true while the receive timeout is off for a review.
	idleOff bool
}

// reviewRun is a reviewer child at work.
type reviewRun struct {
	id        uint64
	planID    string
	kind      plan.Kind
	iteration int
	model     string
	task      string
	logPath   string
	started   time.Time
	cancel    context.CancelFunc
}

// planEffects carries the effects of a Stop decision to the session actor
// itself, so that they run after handleHook saved the decision's state.
type planEffects struct {
	effects []plan.Effect
}

// reviewDone is what a review child sends its parent when the reviewer is
// done (or was cancelled).
type reviewDone struct {
	id    uint64
	child *actor.PID
	res   reviewer.Result
	// reviewers is how many reviewers ran at once (0 or 1: one), and
	// passVotes how many said PASS.
	reviewers, passVotes int
	// runs are the results of each reviewer of a parallel review, in the
	// order of the job's specs; res combines them. A single review has
	// none: res is its one run.
	runs []reviewer.Result
}

// reviewJob is what a review child runs: one spec, or several at once under
// a quorum (review.strategy parallel).
type reviewJob struct {
	id     uint64
	specs  []reviewer.Spec
	quorum reviewer.Quorum
}

// reviewActor runs one review outside its parent's mailbox. Stopping it
// cancels the run and waits until the reviewer's process group is gone.
type reviewActor struct {
	job    reviewJob
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// Receive implements actor.Actor.
func (r *reviewActor) Receive(actx actor.Context) {
	switch actx.Message().(type) {
	case *actor.Started:
		if r.done != nil {
			return
		}
		r.done = make(chan struct{})
		system, self, parent := actx.ActorSystem(), actx.Self(), actx.Parent()
		job, ctx, done := r.job, r.ctx, r.done
		go func() {
			defer close(done)
			answer := runJob(ctx, job)
			answer.child = self
			system.Root.Send(parent, answer)
		}()
	case *actor.Stopping:
		r.cancel()
		if r.done != nil {
			<-r.done
		}
	}
}

// runJob runs job and returns its answer, with the votes of a parallel
// review.
func runJob(ctx context.Context, job reviewJob) *reviewDone {
	if len(job.specs) == 1 {
		return &reviewDone{id: job.id, res: reviewer.Run(ctx, job.specs[0])}
	}
	c, runs := reviewer.RunParallel(ctx, job.specs, len(job.specs), job.quorum)
	return &reviewDone{id: job.id, res: c.Result, reviewers: len(job.specs), passVotes: c.PassVotes, runs: runs}
}

// planMessage handles the plan workflow's background results; it reports
// whether msg was one. *actor.Stopping is handled and still reported as
// not handled, so that the loop workflow sees it too.
func (a *sessionActor) planMessage(actx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case *planEffects:
		a.applyPlanEffects(actx, m.effects)
		return true
	case *reviewDone:
		a.reviewDone(actx, m)
		return true
	case *actor.Stopping:
		// The child is stopped with this actor, which kills the
		// reviewer; cancelling first makes that quick.
		a.cancelReview()
	}
	return false
}

// decidePlan applies the plan workflow to one hook event.
func (a *sessionActor) decidePlan(actx actor.Context, ctx context.Context, m *HandleHook) (decision, bool, error) {
	d := decision{rec: a.rec}
	s := a.rec.Plan
	if !s.Active() {
		return d, false, nil
	}
	switch m.Event {
	case hook.Stop:
		tmpl, err := a.env.Templates()
		if err != nil {
			return d, false, fmt.Errorf("loading templates: %w", err)
		}
		running := a.reviewRunning(s)
		// git matters only to a review that may start now.
		f, err := a.planFacts(ctx, s, s.PlanID, !running)
		if err != nil {
			return d, false, err
		}
		f.StopHookActive = m.Input.StopHookActive
		f.ReviewInFlight = running
		next, out, effects, err := plan.Stop(s, f, tmpl)
		if err != nil {
			return d, false, err
		}
		d.rec.Plan, d.Output = next, out
		d.effects = asEffects(effects)
		return d, true, nil
	case hook.SessionStart, hook.PreCompact:
		if m.Event == hook.SessionStart && m.Input.Source != "compact" && m.Input.Source != "resume" {
			return d, false, nil
		}
		text, err := a.planRouteText(ctx, s)
		if err != nil || text == "" {
			return d, false, err
		}
		if m.Event == hook.PreCompact {
			d.Text = text
		} else {
			d.Output = hook.Context(hook.SessionStart, text)
		}
		return d, false, nil
	}
	return d, false, nil
}

// planRouteText is what `drover plan continue` would say, without acting
// on it: the reminder given after a compaction or on resume.
func (a *sessionActor) planRouteText(ctx context.Context, s plan.State) (string, error) {
	tmpl, err := a.env.Templates()
	if err != nil {
		return "", fmt.Errorf("loading templates: %w", err)
	}
	f, err := a.nextFacts(ctx, s)
	if err != nil {
		return "", err
	}
	_, route, _, err := plan.Next(s, f, tmpl)
	if err != nil {
		return "", err
	}
	return route.Text, nil
}

// planCommand runs a `drover plan` command.
func (a *sessionActor) planCommand(actx actor.Context, m *WorkflowCommand) *WorkflowResult {
	var args api.PlanArgs
	if len(m.Args) > 0 && string(m.Args) != "null" {
		if err := json.Unmarshal(m.Args, &args); err != nil {
			return &WorkflowResult{Err: fmt.Errorf("%w: decoding plan %s arguments: %w", ErrBadRequest, m.Verb, err)}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	st, err := a.planVerb(actx, ctx, m.Verb, args)
	if err != nil {
		return &WorkflowResult{Err: err}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return &WorkflowResult{Err: fmt.Errorf("encoding plan status: %w", err)}
	}
	return &WorkflowResult{Response: b}
}

// planVerbs lists the plan commands the session actor knows.
var planVerbs = []string{"new", "advance", "set", "status", "findings", "continue", "wait", "stop-reviews", "add-task", "review", "action"}

func (a *sessionActor) planVerb(actx actor.Context, ctx context.Context, verb string, args api.PlanArgs) (api.PlanStatus, error) {
	switch verb {
	case "status", "findings":
		if err := a.samePlan(args.PlanID); err != nil {
			return api.PlanStatus{}, err
		}
		st := a.planStatus("")
		if verb == "findings" {
			st.Findings = planFindings(a.rec.Plan)
		}
		return st, nil
	case "wait":
		// The persisted review in flight runs again here after a
		// restart: the agent was told to wait for it.
		a.ensureReview(actx, ctx)
		return a.planStatus(""), nil
	case "new":
		return a.newPlan(ctx, args)
	case "advance":
		return a.advancePlan(actx, ctx, args)
	case "set":
		return a.setPlan(actx, ctx, args)
	case "continue", "next":
		return a.continuePlan(actx, ctx, args)
	case "stop-reviews", "stop", "cancel":
		return a.stopReviews(actx, ctx)
	case "review":
		return a.standaloneReview(actx, ctx, args)
	case "action":
		return a.actionPrompt(ctx, args)
	case "add-task":
		return a.planChange(actx, ctx, "add-task", func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			return plan.AddTask(s, f, args.Task)
		}, func(n plan.State) string {
			return fmt.Sprintf("[drover] Task %s is part of plan %s; the current task is %s.", args.Task, n.PlanID, orNone(n.CurrentTask))
		})
	}
	return api.PlanStatus{}, fmt.Errorf("%w: unknown plan command %q (known: %s)", ErrBadRequest, verb, strings.Join(planVerbs, ", "))
}

// samePlan checks that a plan id given with a command names the session's
// plan.
func (a *sessionActor) samePlan(id string) error {
	s := a.rec.Plan
	switch {
	case id == "":
		return nil
	case !s.Active():
		return fmt.Errorf("%w: session %s has no plan (plan %s is not this session's; drover plan continue %s takes it over)", ErrBadRequest, a.id, id, id)
	case s.PlanID != id:
		return fmt.Errorf("%w: the plan of session %s is %s, not %s", ErrBadRequest, a.id, s.PlanID, id)
	}
	return nil
}

// otherWorkflow refuses to start a plan in a session whose queue or loop
// is running: one workflow owns a session's stops at a time.
func (a *sessionActor) otherWorkflow() error {
	switch {
	case a.rec.Workflow == session.Queue && a.rec.Queue.Active():
		return fmt.Errorf("%w: session %s is working through a task queue (state %s); end it with drover stop before starting a plan", ErrBadRequest, a.id, a.rec.Queue.State)
	case a.rec.Workflow == session.Loop && a.rec.Loop.Active:
		return fmt.Errorf("%w: session %s is running a loop (iteration %d); end it with drover loop cancel before starting a plan", ErrBadRequest, a.id, a.rec.Loop.Iteration)
	}
	return nil
}

func (a *sessionActor) newPlan(ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	id := args.PlanID
	if !plan.ValidPlanID(id) {
		return api.PlanStatus{}, fmt.Errorf("%w: %q is not a valid plan id (letters, digits, '-', '_' and '.', starting with a letter or digit)", ErrBadRequest, id)
	}
	if err := a.otherWorkflow(); err != nil {
		return api.PlanStatus{}, err
	}
	cfg := a.env.Config()
	maxReviews := cfg.Review.MaxReviews
	if args.MaxReviews != nil {
		maxReviews = *args.MaxReviews
	}
	if maxReviews < 0 {
		return api.PlanStatus{}, fmt.Errorf("%w: max reviews %d is negative", ErrBadRequest, maxReviews)
	}
	if err := checkBudget(args.BudgetUSD); err != nil {
		return api.PlanStatus{}, err
	}
	s := a.rec.Plan
	if s.Review != nil {
		return api.PlanStatus{}, fmt.Errorf("%w: plan new: %w", ErrBadRequest, plan.ErrReviewRunning)
	}
	if _, err := tasks.EnsureDroverDir(a.env.Root); err != nil {
		return api.PlanStatus{}, err
	}
	dir := a.planDir(id)
	if s.PlanID != id {
		// A state.json says the plan was started, maybe by a session
		// that still drives it: starting it over here would reset it
		// under that session. Only its own session may start it over.
		view := filepath.Join(dir, plan.ViewFile)
		if _, err := os.Stat(view); err == nil {
			return api.PlanStatus{}, fmt.Errorf("%w: plan %s already exists (%s); take it up with drover plan continue %s, or remove %s to start it over", ErrBadRequest, id, view, id, dir)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return api.PlanStatus{}, fmt.Errorf("checking plan view %q: %w", view, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return api.PlanStatus{}, fmt.Errorf("creating plan folder %q: %w", dir, err)
	}
	f, err := a.planFacts(ctx, s, id, false)
	if err != nil {
		return api.PlanStatus{}, err
	}
	var next plan.State
	if slices.Contains(f.Files, "plan.md") {
		if next, _, err = plan.NewPlan(s, f, maxReviews); err != nil {
			return api.PlanStatus{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
	} else {
		// plan.NewPlan wants plan.md written; a plan started from the
		// slash command has none yet. Its state is the same: the first
		// Stop finds plan.md missing, and the folder rules tell the
		// agent to write it.
		next = plan.State{PlanID: id, Phase: plan.PhaseNewPlan, NextPhase: plan.PhasePlanReview, MaxReviews: maxReviews}
		next.Ledger.Cycle = 1
	}
	next.TDD = args.TDD
	next.BudgetUSD = args.BudgetUSD
	rec := a.rec
	rec.Workflow = session.Plan
	rec.Plan = next
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = a.env.now()
	}
	if err := a.commitEvent(ctx, rec); err != nil {
		return api.PlanStatus{}, err
	}
	a.cancelReview()
	a.writePlanView()

	var b strings.Builder
	if s.Active() && s.PlanID != id && s.Phase != plan.PhaseComplete {
		fmt.Fprintf(&b, "[drover] Set aside plan %s (phase %s); `drover plan continue %s` takes it up again.\n", s.PlanID, s.Phase, s.PlanID)
	}
	fmt.Fprintf(&b, "[drover] Started plan %s in %s (at most %d review(s) per review cycle%s%s).\n", id, dir, maxReviews, tddNote(next.TDD), budgetNote(next.BudgetUSD))
	// The rest is the new-plan action's prompt: what to write, then stop.
	if tmpl, err := a.env.Templates(); err != nil {
		a.log.Error("loading templates", zap.Error(err))
		fmt.Fprintf(&b, "Write the plan to %s, then stop.", filepath.Join(dir, "plan.md"))
	} else if text, err := plan.ActionPrompt(next, f, tmpl, plan.ActionNewPlan, ""); err != nil {
		a.log.Error("rendering the new-plan prompt", zap.Error(err))
		fmt.Fprintf(&b, "Write the plan to %s, then stop.", filepath.Join(dir, "plan.md"))
	} else {
		b.WriteString(text)
	}
	return a.planStatus(b.String()), nil
}

// standaloneReview is `drover plan code-review [ID]` and the other
// standalone reviews: a review cycle of that kind starts at the next stop
// and leaves next_phase null when it ends.
func (a *sessionActor) standaloneReview(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	kind, ok := plan.Phase(args.Phase).ReviewKind()
	if !ok {
		return api.PlanStatus{}, fmt.Errorf("%w: plan review: unknown review %q (known: plan-review, tasks-review, code-review, all-code-review)", ErrBadRequest, args.Phase)
	}
	return a.planChange(actx, ctx, args.Phase, func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
		return plan.StandaloneReview(s, f, kind, args.Task)
	}, func(n plan.State) string {
		what := string(kind) + " review"
		if kind == plan.KindCode {
			what = "code review of task " + n.CurrentTask
		}
		if n.MaxReviews == 0 {
			return fmt.Sprintf("[drover] Plan %s: reviews are off (max_reviews 0), so the standalone %s is skipped when you stop.", n.PlanID, what)
		}
		cfg := a.env.Config()
		return fmt.Sprintf("[drover] Plan %s: a standalone %s starts when you stop (%s first; at most %d review(s), %d clean in a row end it). It is standalone: when it ends, the plan stays where it is (next_phase null). Stop now.", n.PlanID, what, reviewer.NextModel(cfg.ReviewModels(), 0), n.MaxReviews, cleanStreak(cfg))
	})
}

// actionPrompt renders the prompt of /drover:plan ACTION for the session's
// plan, from the project's templates; it changes nothing.
func (a *sessionActor) actionPrompt(ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	s := a.rec.Plan
	if !s.Active() {
		return api.PlanStatus{}, fmt.Errorf("%w: plan %s: session %s has no plan; start one with /drover:plan new <plan-id>", ErrBadRequest, args.Phase, a.id)
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		return api.PlanStatus{}, fmt.Errorf("loading templates: %w", err)
	}
	f, err := a.planFacts(ctx, s, s.PlanID, false)
	if err != nil {
		return api.PlanStatus{}, err
	}
	text, err := plan.ActionPrompt(s, f, tmpl, args.Phase, args.Task)
	if err != nil {
		return api.PlanStatus{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return a.planStatus(text), nil
}

func budgetNote(usd float64) string {
	if usd > 0 {
		return fmt.Sprintf(", reviewer budget $%.2f", usd)
	}
	return ""
}

// checkBudget refuses a plan budget that is negative or not a number.
func checkBudget(usd float64) error {
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("%w: budget_usd must be a dollar amount of 0 or more, got %v", ErrBadRequest, usd)
	}
	return nil
}

func tddNote(tdd bool) string {
	if tdd {
		return ", test-first"
	}
	return ""
}

// AdvancePhases returns the phases `drover plan advance` accepts: those
// issue 6 names, next-task-tdd, post-review (whichever post-review is
// waited for) and complete.
func AdvancePhases() []string {
	return []string{"new-plan", "create-tasks", "complete-task", "complete-task-tdd", "next-task", "next-task-tdd", "continue-task", "post-review", "post-plan-review", "post-tasks-review", "post-code-review", "post-all-code-review", "complete"}
}

func (a *sessionActor) advancePlan(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	phase := plan.Phase(args.Phase)
	var change func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error)
	switch phase {
	case plan.PhaseNewPlan:
		change = func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			n, e, err := plan.NewPlan(s, f, s.MaxReviews)
			n.TDD = s.TDD
			return n, e, err
		}
	case plan.PhaseCreateTasks:
		change = plan.CreateTasks
	case plan.PhaseCompleteTask, plan.PhaseCompleteTaskTDD:
		change = func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			return plan.CompleteTask(s, f, args.Task, phase == plan.PhaseCompleteTaskTDD)
		}
	case plan.PhaseNextTask, plan.PhaseNextTaskTDD:
		change = func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			return plan.NextTask(s, f, args.Task, phase == plan.PhaseNextTaskTDD)
		}
	case plan.PhaseContinueTask:
		change = plan.ContinueTask
	case plan.PhaseComplete:
		change = plan.MarkComplete
	case "post-review", plan.PhasePostPlanReview, plan.PhasePostTasksReview, plan.PhasePostCodeReview, plan.PhasePostAllCodeReview:
		change = func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			if phase != "post-review" && s.NextPhase != phase && s.Review == nil {
				return s, nil, fmt.Errorf("plan advance %s: the plan waits for %s, not %s", phase, orNone(string(s.NextPhase)), phase)
			}
			return plan.PostReviewDone(s, f)
		}
	default:
		return api.PlanStatus{}, fmt.Errorf("%w: plan advance: unknown phase %q (known: %s)", ErrBadRequest, phase, strings.Join(AdvancePhases(), ", "))
	}
	return a.planChange(actx, ctx, "advance "+string(phase), change, a.advanceMessage)
}

// advanceMessage tells the agent what follows the phase it reported.
func (a *sessionActor) advanceMessage(n plan.State) string {
	if kind, ok := n.NextPhase.ReviewKind(); ok {
		if n.MaxReviews == 0 {
			return fmt.Sprintf("[drover] Plan %s: %s recorded. Reviews are off (max_reviews 0): the %s review is skipped when you stop.", n.PlanID, n.Phase, kind)
		}
		if n.Iteration >= n.MaxReviews {
			// The stop will be the hard stop, not another review.
			return fmt.Sprintf("[drover] Plan %s: %s recorded. The %s review cycle has reached its limit of %d review(s), so no review starts: stop now, and drover leaves the next step to the user.", n.PlanID, n.Phase, kind, n.MaxReviews)
		}
		return fmt.Sprintf("[drover] Plan %s: %s recorded. Stop now: drover starts the %s review (iteration %d of at most %d) and tells you what it found.", n.PlanID, n.Phase, kind, n.Iteration+1, n.MaxReviews)
	}
	if n.Phase == plan.PhaseComplete {
		return fmt.Sprintf("[drover] Plan %s is complete.", n.PlanID)
	}
	return fmt.Sprintf("[drover] Plan %s: %s recorded; no review follows (next_phase null). Stop when the work is done; `drover plan continue` says what comes next.", n.PlanID, n.Phase)
}

func (a *sessionActor) setPlan(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	if err := a.samePlan(args.PlanID); err != nil {
		return api.PlanStatus{}, err
	}
	key, value := args.Key, strings.TrimSpace(args.Value)
	switch key {
	case "max_reviews":
		n, err := strconv.Atoi(value)
		if err != nil {
			return api.PlanStatus{}, fmt.Errorf("%w: max_reviews must be a whole number, got %q", ErrBadRequest, value)
		}
		return a.planChange(actx, ctx, "set max_reviews", func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			return plan.SetMaxReviews(s, f, n)
		}, func(n plan.State) string {
			return fmt.Sprintf("[drover] Plan %s: at most %d review(s) per review cycle from now on.", n.PlanID, n.MaxReviews)
		})
	case "next_phase":
		if value != "null" && value != "none" && value != "" {
			return api.PlanStatus{}, fmt.Errorf("%w: next_phase can only be set to null (which ends the review loop); use drover plan advance to move the plan on", ErrBadRequest)
		}
		return a.stopReviews(actx, ctx)
	case "review_model":
		models := a.env.Config().ReviewModels()
		i := slices.Index(models, value)
		if i < 0 {
			return api.PlanStatus{}, fmt.Errorf("%w: review_model must be one of review.models (%s), got %q", ErrBadRequest, strings.Join(models, ", "), value)
		}
		return a.planChange(actx, ctx, "set review_model", func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			if !s.Active() {
				return s, nil, errors.New("plan set: this session has no plan")
			}
			s.ModelIndex = i
			return s, nil, nil
		}, func(n plan.State) string {
			return fmt.Sprintf("[drover] Plan %s: the next review uses %s.", n.PlanID, value)
		})
	case "budget_usd":
		usd, err := strconv.ParseFloat(strings.TrimPrefix(value, "$"), 64)
		if err != nil {
			return api.PlanStatus{}, fmt.Errorf("%w: budget_usd must be a dollar amount, got %q", ErrBadRequest, value)
		}
		if err := checkBudget(usd); err != nil {
			return api.PlanStatus{}, err
		}
		return a.planChange(actx, ctx, "set budget_usd", func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			if !s.Active() {
				return s, nil, errors.New("plan set: this session has no plan")
			}
			s.BudgetUSD = usd
			return s, nil, nil
		}, func(n plan.State) string {
			if n.BudgetUSD == 0 {
				return fmt.Sprintf("[drover] Plan %s: no reviewer budget.", n.PlanID)
			}
			return fmt.Sprintf("[drover] Plan %s: reviewer budget $%.2f (spent so far: $%.2f).", n.PlanID, n.BudgetUSD, ReadPlanTotals(a.planDir(n.PlanID), a.id).CostUSD)
		})
	case "tdd":
		tdd, err := strconv.ParseBool(value)
		if err != nil {
			return api.PlanStatus{}, fmt.Errorf("%w: tdd must be true or false, got %q", ErrBadRequest, value)
		}
		return a.planChange(actx, ctx, "set tdd", func(s plan.State, f plan.Facts) (plan.State, []plan.Effect, error) {
			if !s.Active() {
				return s, nil, errors.New("plan set: this session has no plan")
			}
			s.TDD = tdd
			return s, nil, nil
		}, func(n plan.State) string {
			return fmt.Sprintf("[drover] Plan %s: tdd is %t.", n.PlanID, n.TDD)
		})
	}
	return api.PlanStatus{}, fmt.Errorf("%w: plan set: unknown key %q (known: max_reviews, next_phase, review_model, tdd, budget_usd)", ErrBadRequest, key)
}

func (a *sessionActor) stopReviews(actx actor.Context, ctx context.Context) (api.PlanStatus, error) {
	if !a.rec.Plan.Active() {
		return api.PlanStatus{}, fmt.Errorf("%w: session %s has no plan", ErrBadRequest, a.id)
	}
	return a.planChange(actx, ctx, "stop-reviews", plan.StopReviews, func(n plan.State) string {
		return fmt.Sprintf("[drover] Stopped the review loop of plan %s (next_phase is null; any review in flight was cancelled). You may stop now; `drover plan continue` or `drover plan advance` moves the plan on.", n.PlanID)
	})
}

// planStopCommand is `drover stop` for a session that runs a plan: the
// review loop ends, and a review in flight is cancelled (its process group
// killed).
func (a *sessionActor) planStopCommand() *CommandResult {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	st, err := a.stopReviews(nil, ctx)
	if err != nil {
		return &CommandResult{Err: err}
	}
	return &CommandResult{Response: api.CommandResponse{State: st.Phase, Iteration: st.PhaseIteration, Message: st.Message}}
}

// planChange runs a plan command that changes the state: it gathers the
// facts, applies change, saves, performs the effects and answers with
// message(new state).
func (a *sessionActor) planChange(actx actor.Context, ctx context.Context, what string, change func(plan.State, plan.Facts) (plan.State, []plan.Effect, error), message func(plan.State) string) (api.PlanStatus, error) {
	s := a.rec.Plan
	if !s.Active() {
		return api.PlanStatus{}, fmt.Errorf("%w: plan %s: session %s has no plan; start one with drover plan new", ErrBadRequest, what, a.id)
	}
	f, err := a.planFacts(ctx, s, s.PlanID, false)
	if err != nil {
		return api.PlanStatus{}, err
	}
	next, effects, err := change(s, f)
	if err != nil {
		return api.PlanStatus{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	rec := a.rec
	rec.Plan = plan.DropAnswer(s, next)
	if err := a.commitEvent(ctx, rec); err != nil {
		return api.PlanStatus{}, err
	}
	a.applyPlanEffects(actx, effects)
	a.writePlanView()
	return a.planStatus(message(next)), nil
}

func (a *sessionActor) continuePlan(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	var note string
	if s := a.rec.Plan; !s.Active() || (args.PlanID != "" && args.PlanID != s.PlanID) {
		id, err := a.adoptPlan(ctx, args.PlanID)
		if err != nil {
			return api.PlanStatus{}, err
		}
		note = fmt.Sprintf("[drover] Session %s now drives plan %s, picked up from its state.json.\n", a.id, id)
	}
	s := a.rec.Plan
	tmpl, err := a.env.Templates()
	if err != nil {
		return api.PlanStatus{}, fmt.Errorf("loading templates: %w", err)
	}
	f, err := a.nextFacts(ctx, s)
	if err != nil {
		return api.PlanStatus{}, err
	}
	next, route, effects, err := plan.Next(s, f, tmpl)
	if err != nil {
		return api.PlanStatus{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if !reflect.DeepEqual(next, s) {
		rec := a.rec
		rec.Plan = plan.DropAnswer(s, next)
		if err := a.commitEvent(ctx, rec); err != nil {
			return api.PlanStatus{}, err
		}
	}
	a.applyPlanEffects(actx, effects)
	a.writePlanView()
	st := a.planStatus(note + route.Text)
	st.Action, st.Task, st.File = route.Action, route.Task, route.File
	return st, nil
}

// adoptPlan makes the session drive plan id (the newest plan folder with a
// state.json when id is empty), rebuilding its state from state.json: how a
// new session picks up a plan another one left. The review ledger is not in
// the view; the next review starts with an empty one.
func (a *sessionActor) adoptPlan(ctx context.Context, id string) (string, error) {
	if err := a.otherWorkflow(); err != nil {
		return "", err
	}
	if a.rec.Plan.Review != nil {
		return "", fmt.Errorf("%w: plan continue: %w", ErrBadRequest, plan.ErrReviewRunning)
	}
	if id == "" {
		newest, err := newestPlan(a.plansDir())
		if err != nil {
			return "", err
		}
		if newest == "" {
			return "", fmt.Errorf("%w: session %s has no plan and %s holds none; start one with drover plan new <plan-id>", ErrBadRequest, a.id, a.plansDir())
		}
		id = newest
	}
	if !plan.ValidPlanID(id) {
		return "", fmt.Errorf("%w: %q is not a valid plan id", ErrBadRequest, id)
	}
	view, ok, err := readCapped(filepath.Join(a.planDir(id), plan.ViewFile), maxPlanFileRead)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: plan %s has no state.json in %s; start it with drover plan new %s", ErrBadRequest, id, a.planDir(id), id)
	}
	cfg := a.env.Config()
	s, err := stateFromView(id, view, cfg.ReviewModels(), cfg.Review.MaxReviews)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	rec := a.rec
	rec.Workflow = session.Plan
	rec.Plan = s
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = a.env.now()
	}
	if err := a.commitEvent(ctx, rec); err != nil {
		return "", err
	}
	a.cancelReview()
	return id, nil
}

// knownPhases are the phases a state.json may name.
var knownPhases = []plan.Phase{
	plan.PhaseNewPlan, plan.PhasePlanReview, plan.PhasePostPlanReview, plan.PhaseCreateTasks,
	plan.PhaseTasksReview, plan.PhasePostTasksReview, plan.PhaseNextTask, plan.PhaseNextTaskTDD,
	plan.PhaseCompleteTask, plan.PhaseCompleteTaskTDD, plan.PhaseContinueTask, plan.PhaseCodeReview,
	plan.PhasePostCodeReview, plan.PhaseAllCodeReview, plan.PhasePostAllCodeReview, plan.PhaseComplete,
}

// stateFromView rebuilds a plan's state from its state.json view. A review
// that was running is not: the next stop starts it again at the same
// iteration.
func stateFromView(id string, view []byte, models []string, defaultMax int) (plan.State, error) {
	var v struct {
		Phase            plan.Phase  `json:"phase"`
		NextPhase        *plan.Phase `json:"next_phase"`
		CurrentTask      *string     `json:"current_task"`
		PhaseIteration   *int        `json:"phase_iteration"`
		MaxReviews       *int        `json:"max_reviews"`
		ReviewModel      string      `json:"review_model"`
		ConsecutiveClean int         `json:"consecutive_clean"`
		TDD              bool        `json:"tdd"`
		BudgetUSD        float64     `json:"budget_usd"`
		Standalone       bool        `json:"standalone"`
	}
	if err := json.Unmarshal(view, &v); err != nil {
		return plan.State{}, fmt.Errorf("reading the state.json of plan %s: %w", id, err)
	}
	if !slices.Contains(knownPhases, v.Phase) {
		return plan.State{}, fmt.Errorf("the state.json of plan %s has no known phase (%q)", id, v.Phase)
	}
	s := plan.State{PlanID: id, Phase: v.Phase, MaxReviews: defaultMax, ConsecutiveClean: max(v.ConsecutiveClean, 0), TDD: v.TDD}
	if v.NextPhase != nil {
		if !slices.Contains(knownPhases, *v.NextPhase) {
			return plan.State{}, fmt.Errorf("the state.json of plan %s has an unknown next_phase %q", id, *v.NextPhase)
		}
		s.NextPhase = *v.NextPhase
	}
	if v.Standalone {
		// Only a cycle under way can be standalone.
		_, review := s.NextPhase.ReviewKind()
		_, post := s.NextPhase.PostReviewKind()
		s.Standalone = review || post
	}
	if v.CurrentTask != nil {
		if *v.CurrentTask != "" && !plan.ValidTaskID(*v.CurrentTask) {
			return plan.State{}, fmt.Errorf("the state.json of plan %s has an invalid current_task %q", id, *v.CurrentTask)
		}
		s.CurrentTask = *v.CurrentTask
	}
	if v.PhaseIteration != nil {
		s.Iteration = max(*v.PhaseIteration, 0)
	}
	if v.MaxReviews != nil && *v.MaxReviews >= 0 {
		s.MaxReviews = *v.MaxReviews
	}
	if i := slices.Index(models, v.ReviewModel); i >= 0 {
		s.ModelIndex = i
	}
	if checkBudget(v.BudgetUSD) == nil {
		s.BudgetUSD = v.BudgetUSD
	}
	s.Ledger.Cycle = 1
	return s, nil
}

// newestPlan returns the plan folder whose state.json changed last, or "".
func newestPlan(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading plans folder %q: %w", dir, err)
	}
	var (
		best string
		when time.Time
	)
	for _, e := range ents {
		if !e.IsDir() || !plan.ValidPlanID(e.Name()) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name(), plan.ViewFile))
		if err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(when) {
			best, when = e.Name(), fi.ModTime()
		}
	}
	return best, nil
}

// reviewRunning reports whether the review in flight in s is running here.
func (a *sessionActor) reviewRunning(s plan.State) bool {
	r := a.plan.run
	return r != nil && s.Review != nil && r.planID == s.PlanID && r.kind == s.Review.Kind && r.iteration == s.Review.Iteration
}

// ensureReview starts the saved review in flight when nothing runs it (the
// supervisor or the actor restarted since it was started).
func (a *sessionActor) ensureReview(actx actor.Context, ctx context.Context) {
	s := a.rec.Plan
	if actx == nil || s.Review == nil || a.reviewRunning(s) {
		return
	}
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates", zap.Error(err))
		return
	}
	f, err := a.planFacts(ctx, s, s.PlanID, true)
	if err != nil {
		a.log.Error("gathering plan facts", zap.Error(err))
		return
	}
	// With no answer and nothing running, the rules restart the review
	// and leave the state as it is.
	_, _, effects, err := plan.Stop(s, f, tmpl)
	if err != nil {
		a.log.Error("restarting a review", zap.Error(err))
		return
	}
	a.applyPlanEffects(actx, effects)
}

// applyPlanEffects performs the effects of a decision whose state is saved.
// Each checks the saved state first: a decision whose save failed must not
// start its review or write its files.
func (a *sessionActor) applyPlanEffects(actx actor.Context, effects []plan.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case plan.StartReview:
			s := a.rec.Plan
			if actx == nil || s.Review == nil || s.Review.Kind != e.Kind || s.Review.Iteration != e.Iteration || a.reviewRunning(s) {
				continue
			}
			a.startReview(actx, s, e)
		case plan.WriteReview:
			if err := writeFileAtomic(e.Path, e.Data); err != nil {
				a.log.Error("writing review file", zap.String("path", e.Path), zap.Error(err))
			}
		case plan.WriteView:
			a.writePlanView()
		case plan.CancelReview:
			a.cancelReview()
		}
	}
}

// startReview starts the reviewer of the review in flight in s.
func (a *sessionActor) startReview(actx actor.Context, s plan.State, e plan.StartReview) {
	a.cancelReview()
	a.plan.seq++
	run := &reviewRun{id: a.plan.seq, planID: s.PlanID, kind: e.Kind, iteration: e.Iteration, model: e.Model, task: e.Task, started: a.env.now()}
	a.plan.run = run
	if !a.plan.idleOff {
		// An idle passivation would kill the review.
		actx.CancelReceiveTimeout()
		a.plan.idleOff = true
	}
	job, err := a.reviewJob(a.env.Config(), run.id, e)
	run.logPath = strings.TrimSuffix(e.ReviewFile, ".md") + ".log"
	if err != nil {
		// A configuration that cannot run is a failed run: the rules
		// report it and do not count it.
		run.cancel = func() {}
		actx.Send(actx.Self(), &reviewDone{id: run.id, res: reviewer.Result{Model: e.Model, Outcome: reviewer.Failed, ExitCode: -1, Err: err}})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	actx.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor {
		return &reviewActor{job: job, ctx: ctx, cancel: cancel}
	}), "review")
	a.log.Info("review started", zap.String("plan", s.PlanID), zap.String("kind", string(e.Kind)), zap.Int("iteration", e.Iteration), zap.String("model", e.Model))
}

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

// cancelReview cancels the reviewer running now, if any; its child actor
// is stopped when its (cancelled) answer arrives.
func (a *sessionActor) cancelReview() {
	if r := a.plan.run; r != nil {
		if r.cancel != nil {
			r.cancel()
		}
		a.plan.run = nil
	}
}

// reviewDone applies a reviewer's answer to the review in flight.
func (a *sessionActor) reviewDone(actx actor.Context, m *reviewDone) {
	if m.child != nil {
		actx.Stop(m.child)
	}
	run := a.plan.run
	if run == nil || run.id != m.id {
		// Cancelled or replaced: nothing to apply.
		a.restoreIdle(actx)
		return
	}
	a.plan.run = nil
	a.restoreIdle(actx)
	if errors.Is(m.res.Err, context.Canceled) {
		return
	}
	// The runs are recorded however the answer is applied, after it: a
	// review file drover could not write makes them failed runs.
	res, runs := m.res, m.runs
	defer func() { a.recordRuns(run, res, runs) }()

	s := a.rec.Plan
	if s.Review == nil || s.PlanID != run.planID || s.Review.Kind != run.kind || s.Review.Iteration != run.iteration {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; the review runs again at the next stop", zap.Error(err))
		return
	}
	f, err := a.planFacts(ctx, s, s.PlanID, false)
	if err != nil {
		a.log.Error("gathering plan facts; the review runs again at the next stop", zap.Error(err))
		return
	}
	outcome := plan.OutcomeOf(*s.Review, m.res, run.logPath)
	outcome.Reviewers, outcome.PassVotes = m.reviewers, m.passVotes
	f.Review = &outcome
	next, out, effects, err := plan.Stop(s, f, tmpl)
	if err != nil {
		a.log.Error("applying a review; it runs again at the next stop", zap.Error(err))
		return
	}
	// The review file is written before the state that sends the agent
	// to it is saved. One that cannot be written makes the run a failed
	// one, as the seed handles a reviewer that wrote none: the user is
	// warned, the iteration is not counted, the review runs again.
	if effects, err = a.writeReviewFiles(effects); err != nil {
		a.log.Warn("writing a review file; the review counts as a failed run", zap.Error(err))
		res = failedRun(res, err)
		for i := range runs {
			runs[i] = failedRun(runs[i], err)
		}
		outcome.Outcome, outcome.Err, outcome.LogPath = reviewer.Failed, err.Error(), ""
		if next, out, effects, err = plan.Stop(s, f, tmpl); err != nil {
			a.log.Error("applying a failed review; it runs again at the next stop", zap.Error(err))
			return
		}
	}
	if out != (hook.Output{}) {
		// Saved, so that the next stop gives it even if this actor is
		// passivated or the supervisor restarts before then.
		next.Answer = &out
	}
	rec := a.rec
	rec.Plan = next
	if err := a.commitEvent(ctx, rec); err != nil {
		a.log.Error("saving a review's answer; the review runs again at the next stop", zap.Error(err))
		return
	}
	a.applyPlanEffects(actx, effects)
	a.writePlanView()
	a.log.Info("review applied", zap.String("plan", s.PlanID), zap.String("kind", string(run.kind)), zap.Int("iteration", run.iteration), zap.String("outcome", string(outcome.Outcome)), zap.String("next_phase", string(next.NextPhase)))
}

// writeReviewFiles performs the WriteReview effects of effects and returns
// the others; it stops at the first file it cannot write.
func (a *sessionActor) writeReviewFiles(effects []plan.Effect) ([]plan.Effect, error) {
	rest := effects[:0:0]
	for _, e := range effects {
		w, ok := e.(plan.WriteReview)
		if !ok {
			rest = append(rest, e)
			continue
		}
		if err := writeFileAtomic(w.Path, w.Data); err != nil {
			return nil, fmt.Errorf("writing review file: %w", err)
		}
	}
	return rest, nil
}

// failedRun is res made a failed run by err, keeping what the reviewer
// said for the record.
func failedRun(res reviewer.Result, err error) reviewer.Result {
	res.Outcome = reviewer.Failed
	res.Err = errors.Join(res.Err, err)
	return res
}

// restoreIdle turns the receive timeout back on once no review runs.
func (a *sessionActor) restoreIdle(actx actor.Context) {
	if a.plan.run != nil || !a.plan.idleOff {
		return
	}
	a.plan.idleOff = false
	if a.idle > 0 {
		actx.SetReceiveTimeout(a.idle)
	}
}

// recordRuns appends a finished review's reviewer runs to the plan's
// reviews.jsonl: each of runs when the review ran several reviewers at once
// (their models, times and costs would be lost in the combined result),
// else the one run res. The status's last review is res either way.
func (a *sessionActor) recordRuns(run *reviewRun, res reviewer.Result, runs []reviewer.Result) {
	last := a.runRecord(run, res)
	a.plan.last = &last
	records := []api.PlanReviewRun{last}
	if len(runs) > 0 {
		records = records[:0]
		for _, r := range runs {
			records = append(records, a.runRecord(run, r))
		}
	}
	var lines []byte
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			a.log.Warn("encoding a reviewer run", zap.Error(err))
			continue
		}
		lines = append(append(lines, line...), '\n')
	}
	if len(lines) == 0 {
		return
	}
	path := filepath.Join(a.planDir(run.planID), RunsFile)
	// One write for all the lines, so a reader never sees half a review.
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fh.Write(lines)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		a.log.Warn("recording reviewer runs", zap.String("path", path), zap.Error(err))
	}
}

// runRecord is the reviews.jsonl line of one reviewer run of run.
func (a *sessionActor) runRecord(run *reviewRun, res reviewer.Result) api.PlanReviewRun {
	r := api.PlanReviewRun{
		Time: a.env.now().UTC(), Session: a.id, Plan: run.planID, Kind: string(run.kind), Task: run.task,
		Iteration: run.iteration, Model: run.model, Outcome: string(res.Outcome), Verdict: res.Verdict,
		ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Findings: len(res.Findings), CostUSD: res.CostUSD,
	}
	if res.Model != "" {
		r.Model = res.Model
	}
	for _, f := range res.Findings {
		if f.Blocking() {
			r.Blocking++
		}
	}
	if res.Err != nil {
		r.Error = res.Err.Error()
	}
	return r
}

// ReadPlanTotals sums the reviewer runs recorded in planDir's RunsFile:
// all of them, and those of session sessionID. A missing or unreadable file
// sums to zero (nothing was recorded).
func ReadPlanTotals(planDir, sessionID string) api.PlanTotals {
	var t api.PlanTotals
	fh, err := os.Open(filepath.Join(planDir, RunsFile))
	if err != nil {
		return t
	}
	defer fh.Close()
	sc := bufio.NewScanner(io.LimitReader(fh, maxRunsRead))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var r api.PlanReviewRun
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		t.Runs++
		if r.Outcome == string(reviewer.Failed) {
			t.FailedRuns++
		}
		t.Seconds += float64(r.DurationMS) / 1000
		t.CostUSD += r.CostUSD
		if r.Session == sessionID {
			t.SessionRuns++
			t.SessionCostUSD += r.CostUSD
		}
	}
	return t
}

// planStatus describes the session's plan.
func (a *sessionActor) planStatus(msg string) api.PlanStatus {
	s := a.rec.Plan
	st := api.PlanStatus{SessionID: a.id, Message: msg, LastReview: a.plan.last}
	if s.PlanID == "" {
		return st
	}
	models := a.env.Config().ReviewModels()
	st.PlanID, st.PlanDir, st.Active = s.PlanID, a.planDir(s.PlanID), s.Active()
	st.Phase = string(s.Phase)
	if s.NextPhase != plan.PhaseNone {
		np := string(s.NextPhase)
		st.NextPhase = &np
	}
	if s.CurrentTask != "" {
		ct := s.CurrentTask
		st.CurrentTask = &ct
	}
	st.PhaseIteration, st.MaxReviews, st.ConsecutiveClean, st.TDD = s.Iteration, s.MaxReviews, s.ConsecutiveClean, s.TDD
	st.BudgetUSD, st.Standalone = s.BudgetUSD, s.Standalone
	st.CleanStreak = cleanStreak(a.env.Config())
	st.ReviewModel = reviewer.NextModel(models, s.ModelIndex)
	if r := s.Review; r != nil {
		st.ReviewRunning = true
		st.Review = &api.PlanReview{Kind: string(r.Kind), Iteration: r.Iteration, Model: r.Model, Task: r.Task, Running: a.reviewRunning(s)}
		if st.Review.Running {
			st.Review.StartedAt = a.plan.run.started
		}
	}
	st.Cycle = s.Ledger.Cycle
	st.OpenFindings = len(s.Ledger.Open())
	st.Totals = ReadPlanTotals(st.PlanDir, a.id)
	return st
}

// cleanStreak is review.clean_streak, or its default.
func cleanStreak(cfg config.Config) int {
	if cfg.Review.CleanStreak <= 0 {
		return plan.CleanToAdvance
	}
	return cfg.Review.CleanStreak
}

// planFindings lists the findings of s's current cycle, then of its past
// cycles, newest first.
func planFindings(s plan.State) []api.PlanFinding {
	out := findingsOf(plan.CycleLedger{Kind: s.LedgerKind, Task: s.LedgerTask, Ledger: s.Ledger}, true)
	for i := len(s.PastLedgers) - 1; i >= 0; i-- {
		out = append(out, findingsOf(s.PastLedgers[i], false)...)
	}
	return out
}

func findingsOf(c plan.CycleLedger, current bool) []api.PlanFinding {
	l := c.Ledger
	out := make([]api.PlanFinding, 0, len(l.Findings))
	for _, e := range l.Findings {
		out = append(out, api.PlanFinding{Severity: e.Severity, File: e.File, Line: e.Line, Summary: e.Summary, FirstReview: e.FirstReview, LastReview: e.LastReview, Times: e.Times, Open: e.LastReview == l.Latest, Cycle: l.Cycle, Kind: string(c.Kind), Task: c.Task, Current: current})
	}
	return out
}

func (a *sessionActor) plansDir() string { return filepath.Join(a.env.Root, ".drover", "plans") }

// planDir is the folder of plan id; id must be a valid plan id.
func (a *sessionActor) planDir(id string) string { return filepath.Join(a.plansDir(), id) }

// nextFacts are the facts plan.Next routes by: planFacts, plus plan.md
// and the current task's file, which only continue reads, so a stop does
// not read them.
func (a *sessionActor) nextFacts(ctx context.Context, s plan.State) (plan.Facts, error) {
	f, err := a.planFacts(ctx, s, s.PlanID, false)
	if err != nil {
		return f, err
	}
	planMD, _, err := readCapped(filepath.Join(f.PlanDir, "plan.md"), maxPlanFileRead)
	if err != nil {
		return f, err
	}
	f.PlanMD = string(planMD)
	if plan.ValidTaskID(s.CurrentTask) {
		taskMD, _, err := readCapped(filepath.Join(f.PlanDir, "task-"+s.CurrentTask+".md"), maxPlanFileRead)
		if err != nil {
			return f, err
		}
		f.TaskMD = string(taskMD)
	}
	return f, nil
}

// planFacts reads plan id's folder. With git, it also reads the git HEAD
// and the diff since the cycle's last review, when a review may start.
func (a *sessionActor) planFacts(ctx context.Context, s plan.State, id string, git bool) (plan.Facts, error) {
	dir := a.planDir(id)
	cfg := a.env.Config()
	f := plan.Facts{PlanID: id, PlanDir: dir, Models: cfg.ReviewModels(), CleanStreak: cfg.Review.CleanStreak, StrictReviews: cfg.Review.CountMinor, Parallel: cfg.ParallelReview()}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("reading plan folder %q: %w", dir, err)
	case !fi.IsDir():
		return f, nil
	}
	f.DirExists = true
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if len(f.Files) >= maxPlanFiles {
			return fs.SkipAll
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f.Files = append(f.Files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("listing plan folder %q: %w", dir, err)
	}
	tasksMD, _, err := readCapped(filepath.Join(dir, "tasks.md"), maxPlanFileRead)
	if err != nil {
		return f, err
	}
	f.TasksMD = string(tasksMD)
	view, ok, err := readCapped(filepath.Join(dir, plan.ViewFile), maxPlanFileRead)
	if err != nil {
		return f, err
	}
	if ok {
		f.View = view
	}
	if s.BudgetUSD > 0 {
		f.SpentUSD = ReadPlanTotals(dir, a.id).CostUSD
	}
	if _, review := s.NextPhase.ReviewKind(); git && (review || s.Review != nil) {
		// Outside git (or with git failing) both stay empty: the review
		// then reads the work as it is.
		f.Head, _ = gitOutput(ctx, a.env.Root, 256, "rev-parse", "--verify", "--quiet", "HEAD")
		f.Head = strings.TrimSpace(f.Head)
		if s.ReviewHead != "" && s.Iteration >= 1 {
			f.DiffSinceReview, _ = gitOutput(ctx, a.env.Root, maxDiffBytes, "diff", "--no-color", "--no-ext-diff", s.ReviewHead, "--")
		}
	}
	return f, nil
}

// readCapped reads at most limit bytes of path; ok is false when it does
// not exist.
func readCapped(path string, limit int64) ([]byte, bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening %q: %w", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit))
	if err != nil {
		return nil, false, fmt.Errorf("reading %q: %w", path, err)
	}
	return data, true, nil
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

// writePlanView writes state.json from the saved state, when the plan
// folder exists and the file differs.
func (a *sessionActor) writePlanView() {
	s := a.rec.Plan
	if s.PlanID == "" {
		return
	}
	dir := a.planDir(s.PlanID)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return
	}
	path := filepath.Join(dir, plan.ViewFile)
	data := plan.View(s, a.env.Config().ReviewModels())
	if old, ok, _ := readCapped(path, maxPlanFileRead); ok && bytes.Equal(old, data) {
		return
	}
	if err := writeFileAtomic(path, data); err != nil {
		a.log.Error("writing plan view", zap.String("path", path), zap.Error(err))
	}
}

// writeFileAtomic writes data to path through a temporary file in the same
// folder, synced and renamed over path, so that a reader sees the old file
// or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
