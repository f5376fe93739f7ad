package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/session"
	"github.com/drover-dev/drover/internal/workflow/plan"
	"github.com/drover-dev/drover/templates"
)

// The plan workflow in the session actor: a shell around the rules of
// internal/workflow/plan, on the engine (engine.go). Each hook and each
// `drover plan` command gathers its facts (the plan folder, git), calls the
// core, commits the new state through the actor's one save site, answers,
// and then performs the core's effects (plan_review.go, plan_files.go):
//
//   - A review runs in a work child of the engine, so the session's mailbox
//     stays free: status, stop and other hooks are answered while a review
//     takes minutes. The child is stopped with the session actor (shutdown,
//     passivation, restart after a failure), and stopping it kills the
//     reviewer's process group.
//   - The reviewer's answer comes back as a message and is committed before
//     its review file is written; how the write went comes back as a second
//     message, whose decision applies the answer and saves the hook answer
//     the rules gave for the next Stop, which gives it as it is.
//   - The review in flight is part of the committed state. When the actor
//     starts (after a crash, a restart or a passivation) the engine's resume
//     re-derives what the state waits for (plan.Pending): a review with no
//     process runs again with the same iteration and model, an answered
//     one has its file written again and is not run again.

// planRuntime is the plan workflow's in-memory state of one session actor:
// what cannot be saved (a child actor) or need not be.
type planRuntime struct {
	seq uint64
	// run is the reviewer running now, nil when none.
	run *reviewRun
	// held is the Stop whose answer waits for the review in flight, nil
	// when none (plan_hold.go); holdSeq numbers the holds.
	held    *heldStop
	holdSeq uint64
}

// planMessage handles the plan workflow's background results; it reports
// whether msg was one. *actor.Stopping is handled and still reported as
// not handled, so that the loop workflow sees it too.
func (a *sessionActor) planMessage(actx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case *workDone:
		r, ok := m.result.(*reviewResult)
		if !ok {
			return false
		}
		actx.Stop(m.child)
		a.reviewAnswered(actx, m.child, r)
		return true
	case *reviewFiled:
		a.reviewFiled(actx, m)
		return true
	case *planTakenOver:
		a.planTakenOver(actx, m)
		return true
	case *actor.Stopping:
		// The review child is stopped with this actor, which kills the
		// reviewer; a Stop held for it gets its committed answer.
		a.plan.run = nil
		a.answerHeld(actx)
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
		var need factsNeed
		if !running {
			need = needGit
		}
		f, err := a.planFacts(ctx, s, s.PlanID, need)
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
// on it: the reminder given after a compaction or on resume. A plan that
// another session took over has none.
func (a *sessionActor) planRouteText(ctx context.Context, s plan.State) (string, error) {
	tmpl, err := a.env.Templates()
	if err != nil {
		return "", fmt.Errorf("loading templates: %w", err)
	}
	f, err := a.planFacts(ctx, s, s.PlanID, needWork)
	if err != nil {
		return "", err
	}
	if plan.TakenBy(s, f) != "" {
		return "", nil
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

// planVerb runs one plan command: the read-only ones from the session's
// state, the others through plan.Command.
func (a *sessionActor) planVerb(actx actor.Context, ctx context.Context, verb string, args api.PlanArgs) (api.PlanStatus, error) {
	switch verb {
	case "status", "findings":
		if err := plan.SamePlan(a.verbTemplates(), a.rec.Plan, a.id, args.PlanID); err != nil {
			return api.PlanStatus{}, planErr(err)
		}
		st := a.planStatus("")
		if verb == "findings" {
			st.Findings = plan.Findings(a.rec.Plan)
		}
		return st, nil
	case "wait":
		// A review in flight that nothing runs (its start failed, or
		// was lost) runs again here, and an answered one whose
		// application failed is applied: the agent was told to wait.
		if s := a.rec.Plan; s.Review != nil && !a.reviewRunning(s) {
			a.resumePlan(actx)
		}
		return a.planStatus(""), nil
	case "new":
		return a.newPlan(actx, ctx, args)
	case "continue", "next":
		return a.continuePlan(actx, ctx, args)
	case "set":
		// What the reviews cost so far goes in the budget's message.
		return a.planDecide(actx, ctx, verb, args, a.rec.Plan.PlanID, needSpent)
	}
	return a.planDecide(actx, ctx, verb, args, a.rec.Plan.PlanID, 0)
}

// planDecide is one plan command through the engine's steps: gather the
// facts of plan id, decide with plan.Command, commit the new state when it
// changed, perform the effects, answer.
func (a *sessionActor) planDecide(actx actor.Context, ctx context.Context, verb string, args api.PlanArgs, id string, need factsNeed) (api.PlanStatus, error) {
	s := a.rec.Plan
	f, err := a.planFacts(ctx, s, id, need)
	if err != nil {
		return api.PlanStatus{}, err
	}
	tmpl := a.verbTemplates()
	var (
		note   string
		undone []plan.Effect
	)
	if id == s.PlanID {
		// A hand edit of state.json is taken (or undone) before the
		// command acts, as at a stop, so that the view the command
		// writes does not drop it unsaid.
		if s, note, undone, err = plan.TakeEdit(s, f, tmpl); err != nil {
			return api.PlanStatus{}, err
		}
	}
	next, d, effects, err := plan.Command(s, f, tmpl, verb, args)
	if err != nil {
		if note == "" {
			return api.PlanStatus{}, planErr(err)
		}
		// The command is refused, the edit is still taken (a refusal
		// is often the edit's doing: next_phase null leaves no
		// post-review to report).
		if cerr := a.commitThen(actx, ctx, a.planRecord(s, false), asEffects(append(undone, plan.WriteView{}))); cerr != nil {
			return api.PlanStatus{}, cerr
		}
		return api.PlanStatus{}, fmt.Errorf("%w\n%s", planErr(err), note)
	}
	if note != "" {
		d.Changed = true
		d.Message = joinLines(note, d.Message)
		effects = append(undone, effects...)
	}
	if d.Changed {
		if err := a.commitThen(actx, ctx, a.planRecord(next, verb == "new"), asEffects(effects)); err != nil {
			return api.PlanStatus{}, err
		}
	} else {
		a.execute(actx, asEffects(effects))
	}
	st := a.planStatus(d.Message)
	st.Action, st.Task, st.File = d.Route.Action, d.Route.Task, d.Route.File
	return st, nil
}

// planRecord is the session's record with plan state s. A plan started or
// taken up (take) makes the session a plan session; other changes leave
// its workflow alone.
func (a *sessionActor) planRecord(s plan.State, take bool) session.Record {
	rec := a.rec
	rec.Plan = s
	if take {
		rec = rec.Runs(session.Plan, a.env.now())
	}
	return rec
}

// newPlan is `drover plan new ID`.
func (a *sessionActor) newPlan(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	// The id names a folder: it is checked before anything is read.
	if err := plan.CheckPlanID(a.verbTemplates(), args.PlanID); err != nil {
		return api.PlanStatus{}, planErr(err)
	}
	if err := a.checkStart(session.Plan); err != nil {
		return api.PlanStatus{}, err
	}
	st, err := a.planDecide(actx, ctx, "new", args, args.PlanID, 0)
	if err != nil {
		return st, err
	}
	if fi, err := os.Stat(st.PlanDir); err != nil || !fi.IsDir() {
		return api.PlanStatus{}, fmt.Errorf("creating plan folder %q: the folder is missing after plan new (see the supervisor log)", st.PlanDir)
	}
	return st, nil
}

// continuePlan is `drover plan continue [ID]`: a session that does not
// drive plan ID (or no plan: the newest one) first takes it up from its
// state.json, then hears what to do next.
func (a *sessionActor) continuePlan(actx actor.Context, ctx context.Context, args api.PlanArgs) (api.PlanStatus, error) {
	var note string
	s := a.rec.Plan
	takeBack := false
	if s.Active() && (args.PlanID == "" || args.PlanID == s.PlanID) {
		// The session's own plan, unless another session took it over:
		// then continue takes it back, as it took it.
		f, err := a.planFacts(ctx, s, s.PlanID, 0)
		if err != nil {
			return api.PlanStatus{}, err
		}
		takeBack = plan.TakenBy(s, f) != ""
	}
	if !s.Active() || takeBack || (args.PlanID != "" && args.PlanID != s.PlanID) {
		if err := a.checkStart(session.Plan); err != nil {
			return api.PlanStatus{}, err
		}
		id := args.PlanID
		if id == "" && (takeBack || s.TakenBy != "") {
			id = s.PlanID
		}
		if id == "" {
			newest, err := newestPlan(a.plansDir())
			if err != nil {
				return api.PlanStatus{}, err
			}
			if newest == "" {
				text := a.text(templates.PlanNoneToContinue, map[string]string{"session_id": a.id, "plans_dir": a.plansDir()})
				return api.PlanStatus{}, fmt.Errorf("%w: %s", ErrBadRequest, text)
			}
			id = newest
		}
		f, err := a.planFacts(ctx, s, id, 0)
		if err != nil {
			return api.PlanStatus{}, err
		}
		next, d, effects, err := plan.Adopt(s, f, a.verbTemplates(), id, f.View)
		if err != nil {
			return api.PlanStatus{}, planErr(err)
		}
		if err := a.commitThen(actx, ctx, a.planRecord(next, true), asEffects(effects)); err != nil {
			return api.PlanStatus{}, err
		}
		note = d.Message + "\n"
		if prev := plan.ViewOwner(f.View); hook.ValidSessionID(prev) && prev != a.id && actx != nil {
			// The session that drove the plan lets go now rather than
			// at its next stop: its reviewer is stopped before it can
			// write a review file this session's reviewer writes too.
			// Should this message be lost, that session still finds
			// this one named in state.json.
			actx.Send(actx.Parent(), &ToSession{SessionID: prev, Msg: &planTakenOver{planID: id, by: a.id}})
		}
	}
	st, err := a.planDecide(actx, ctx, "continue", args, a.rec.Plan.PlanID, needWork)
	if err != nil {
		return st, err
	}
	st.Message = note + st.Message
	return st, nil
}

// planErr makes a refusal of the plan rules a bad request.
func planErr(err error) error {
	if _, ok := errors.AsType[*plan.Refusal](err); ok {
		if errors.Is(err, plan.ErrUnknownVerb) {
			return unknownCommand(err.Error())
		}
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return err
}

// verbTemplates are the templates of the plan commands' answers: the
// project's, or the built-ins when its overrides do not load, so that a
// broken override does not leave a command without an answer.
func (a *sessionActor) verbTemplates() templates.Set {
	tmpl, err := a.env.Templates()
	if err != nil {
		a.log.Error("loading templates; the plan commands answer with the built-ins", zap.Error(err))
		return templates.Defaults()
	}
	return tmpl
}

// planStatus describes the session's plan, with msg as its message.
func (a *sessionActor) planStatus(msg string) api.PlanStatus {
	s := a.rec.Plan
	st := plan.Status(s, a.configFacts(s.PlanID), msg)
	if st.Review != nil && a.reviewRunning(s) {
		st.Review.Running, st.Review.StartedAt = true, a.plan.run.started
	}
	if s.PlanID != "" {
		st.Totals = ReadPlanTotals(st.PlanDir, a.id)
	}
	return st
}

// planStopCommand is `drover stop` for a session that runs a plan: the
// review loop ends, and a review in flight is cancelled (its process group
// killed).
func (a *sessionActor) planStopCommand(actx actor.Context) *CommandResult {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	st, err := a.planDecide(actx, ctx, "stop-reviews", api.PlanArgs{}, a.rec.Plan.PlanID, 0)
	if err != nil {
		return &CommandResult{Err: err}
	}
	return &CommandResult{Response: api.CommandResponse{State: st.Phase, Iteration: st.PhaseIteration, Message: st.Message}}
}

// planTakenOver tells a session actor that session by took plan planID
// over (drover plan continue there).
type planTakenOver struct {
	planID, by string
}

// planTakenOver records that another session took the session's plan
// over: its reviewer is stopped, and its next stop says who drives the
// plan now (plan.TakenOver, then plan.Stop).
func (a *sessionActor) planTakenOver(actx actor.Context, m *planTakenOver) {
	s := a.rec.Plan
	if a.rec.Workflow != session.Plan || s.PlanID != m.planID || m.by == a.id {
		return
	}
	next, effects := plan.TakenOver(s, m.by)
	if next.TakenBy == s.TakenBy {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := a.commitThen(actx, ctx, a.planRecord(next, false), asEffects(effects)); err != nil {
		a.log.Error("saving a plan taken over; the next stop finds it in state.json", zap.Error(err))
		return
	}
	a.log.Info("plan taken over by another session", zap.String("plan", m.planID), zap.String("by", m.by))
}
