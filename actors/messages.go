// Package actors is drover's imperative shell around the pure workflow
// cores: the sessions actor (the root of the tree, one-for-one supervisor
// and registry of session actors), the session actor (one per agent
// session, running its queue, loop or plan), the runs actor with one run
// actor per `drover run`, and the children that do their long work: plan
// reviews, loop checks, metric commands and checkpoints, a run's
// iterations and wave checkpoints. Messages are
// plain structs; replies carry their error so nothing panics across the
// actor boundary. The rules are not here: the queue, loop, plan and run
// decisions are in internal/workflow/{queue,loop,plan,run}, the session's
// persisted record is internal/session, processes run through
// internal/proc, and reviewers are built by internal/reviewconf.
//
// Every event, of a session or of a run, is handled by one engine: gather
// the facts (files, git, transcripts, the config, a finished job's
// result), call the workflow's pure decision, commit the state it returns
// through the actor's one save site, answer, and only then execute the
// decision's effects, which are data. engine.go holds the session actor's
// steps and run_actor.go the run actor's, in the same order. Effects are
// idempotent, and when an actor starts (first use, recovery, a restart
// after a failure, a resumed run) it executes again the effects its stored
// state still waits for, so a crash between a commit and its effects loses
// nothing and does nothing twice.
//
// Background work has one mechanism, the engine's work child (workActor in
// engine.go), for sessions and runs alike: a session's loop checks, metric
// commands, checkpoint and plan reviews, and a run's iterations (agent,
// tests, review) and wave checkpoints (merge, suite) each run in a child
// actor of their actor, one job each, never in the mailbox; a job's result
// comes back as a message and is the event of the workflow's next
// decision (an agent's progress comes to the run actor as messages while
// it works). Stopping a child, or its parent, cancels its job and waits
// until the job's process groups are killed; a run's budgets and its
// cancel end its agents early and still take their results in.
package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
)

// ToSession routes Msg to the actor of one session, spawning or recovering
// it on first use. The session actor replies to the original sender.
type ToSession struct {
	SessionID string
	Msg       any
}

// HandleHook asks a session actor for the decision on one hook event.
// It is answered with a *HookResult.
type HandleHook struct {
	RequestID string
	Event     hook.Event
	Input     hook.Input
	// Hold is how long the asker waits for a Stop held while a plan
	// reviewer runs (the hook client's review.hold); the session holds it
	// no longer than this nor than its own review.hold. 0: never held.
	Hold time.Duration
	// OnHold, when set, is called (on the session's goroutine; it must
	// not block) when the session holds the Stop: the decision is taken
	// and committed, and only its answer waits for the review.
	OnHold func()
}

// ReleaseHold tells a session actor that the asker of its held Stop
// RequestID went away (the hook was killed, the user interrupted): the
// Stop is answered at once with its committed answer, and the review's
// answer waits for the next Stop instead of going to nobody. No reply.
type ReleaseHold struct {
	RequestID string
}

// HookResult is the answer to HandleHook.
type HookResult struct {
	Output hook.Output
	// Text, when set, is printed by the hook as plain text instead of the
	// JSON Output (PreCompact, where JSON output is not accepted).
	Text     string
	Replayed bool
	Err      error
}

// AddTask adds a task file to the session's queue; answered with *AddResult.
type AddTask struct {
	Prompt string
}

// AddResult is the answer to AddTask.
type AddResult struct {
	Response api.AddResponse
	Err      error
}

// Command runs a queue command: one of "start", "stop", "unstick".
// It is answered with *CommandResult.
type Command struct {
	Verb string
}

// CommandResult is the answer to Command.
type CommandResult struct {
	Response api.CommandResponse
	Err      error
}

// WorkflowCommand runs a command of the loop or plan workflow ("start",
// "cancel", "status" for loop; "new", "advance", ... for plan). Args holds
// the verb's JSON arguments. It is answered with *WorkflowResult.
type WorkflowCommand struct {
	Workflow string
	Verb     string
	Args     json.RawMessage
}

// WorkflowResult is the answer to WorkflowCommand: Response is the verb's
// JSON answer, passed through to the client as it is.
type WorkflowResult struct {
	Response json.RawMessage
	Err      error
}

// Forget stops the actor of a session whose files were removed, so that a
// later message recovers it afresh. Sent to the sessions actor; no reply.
type Forget struct {
	SessionID string
}

// passivate is sent by an idle session actor to its parent.
type passivate struct {
	sessionID string
}

// ErrBadRequest marks errors caused by what the caller asked (no pending
// task to start, an empty prompt), as opposed to drover's own failures.
var ErrBadRequest = errors.New("bad request")

// ErrUnknownCommand marks a request for a workflow or command that does
// not exist, as opposed to one the session's state refuses (ErrBadRequest).
var ErrUnknownCommand = errors.New("unknown command")

// unknownCommand is a request's ErrBadRequest and ErrUnknownCommand, with
// its own text.
type unknownCommand string

func unknownf(format string, args ...any) error { return unknownCommand(fmt.Sprintf(format, args...)) }

func (u unknownCommand) Error() string { return ErrBadRequest.Error() + ": " + string(u) }

func (u unknownCommand) Is(target error) bool {
	return target == ErrUnknownCommand || target == ErrBadRequest
}

// ErrSessionFailed is the error an in-flight request gets when its session
// actor failed and was restarted from its stored state.
var ErrSessionFailed = errors.New("session actor failed and was restarted from its stored state")
