package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/drover-dev/drover/internal/proc"
)

// workParent spawns one work child whose job waits for its context to
// end, and hands the child and whatever comes back to the test.
type workParent struct {
	child    chan *actor.PID
	results  chan any
	returned *atomic.Bool
}

func (p *workParent) Receive(actx actor.Context) {
	switch m := actx.Message().(type) {
	case *actor.Started:
		p.child <- spawnWork(actx, nil, nil, "job", func(ctx context.Context) any {
			<-ctx.Done()
			// Slow to return, as a killed process group is to be reaped.
			time.Sleep(20 * time.Millisecond)
			p.returned.Store(true)
			return ctx.Err()
		}, func(err error) any { return err })
	case *workDone:
		p.results <- m.result
		actx.Stop(m.child)
	}
}

// panicParent spawns one work child whose job panics, and hands whatever
// comes back to the test.
type panicParent struct {
	results chan any
}

func (p *panicParent) Receive(actx actor.Context) {
	switch m := actx.Message().(type) {
	case *actor.Started:
		spawnWork(actx, nil, nil, "job", func(context.Context) any {
			var findings []string
			return findings[len(findings)] // a parser's bug: index out of range
		}, func(err error) any { return fmt.Errorf("failed: %w", err) })
	case *workDone:
		p.results <- m.result
		actx.Stop(m.child)
	}
}

// TestWorkChildPanic checks that a job that panics does not take the
// actor system down: the parent gets the job's failed result, and the
// system still runs actors after.
func TestWorkChildPanic(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	for range 2 {
		p := &panicParent{results: make(chan any, 1)}
		parent := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
		select {
		case r := <-p.results:
			err, ok := r.(error)
			if !ok || !strings.Contains(err.Error(), "failed: the job panicked: runtime error: index out of range") {
				t.Fatalf("result %v, want the job's failure with the panic", r)
			}
		case <-time.After(testTimeout):
			t.Fatal("a panicked job's failure did not come back")
		}
		if err := system.Root.StopFuture(parent).Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkChild checks the two ways a job ends early: endWork cancels the
// job and its result still comes back to the parent (a run's agent ended
// by a budget), while stopping the child (or its parent) waits until the
// job returned and drops its result.
func TestWorkChild(t *testing.T) {
	for _, tc := range []struct {
		name       string
		end        func(t *testing.T, system *actor.ActorSystem, parent, child *actor.PID)
		wantResult bool
	}{
		{"ended", func(_ *testing.T, system *actor.ActorSystem, _, child *actor.PID) {
			system.Root.Send(child, &endWork{})
		}, true},
		{"stopped", func(t *testing.T, system *actor.ActorSystem, _, child *actor.PID) {
			if err := system.Root.StopFuture(child).Wait(); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"parent stopped", func(t *testing.T, system *actor.ActorSystem, parent, _ *actor.PID) {
			if err := system.Root.StopFuture(parent).Wait(); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			system := actor.NewActorSystem()
			defer system.Shutdown()
			p := &workParent{child: make(chan *actor.PID, 1), results: make(chan any, 1), returned: &atomic.Bool{}}
			parent := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
			child := <-p.child
			tc.end(t, system, parent, child)
			if !tc.wantResult {
				if !p.returned.Load() {
					t.Fatal("the stop did not wait for the job to return")
				}
				select {
				case r := <-p.results:
					t.Fatalf("a stopped child's result came back: %v", r)
				case <-time.After(100 * time.Millisecond):
				}
				return
			}
			select {
			case r := <-p.results:
				if r != context.Canceled {
					t.Fatalf("result %v, want the job's context cancelled", r)
				}
			case <-time.After(testTimeout):
				t.Fatal("an ended job's result did not come back")
			}
			if err := system.Root.StopFuture(parent).Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// killParent spawns one work child named checks whose job runs a command
// past its timeout, telling killed of each kill.
type killParent struct {
	killed  chan string
	results chan any
}

func (p *killParent) Receive(actx actor.Context) {
	switch m := actx.Message().(type) {
	case *actor.Started:
		spawnWork(actx, nil, func(work string) { p.killed <- work }, "checks", func(ctx context.Context) any {
			_, err := proc.Shell(ctx, "sleep 30", proc.Cmd{Timeout: 50 * time.Millisecond})
			return err
		}, func(err error) any { return err })
	case *workDone:
		p.results <- m.result
		actx.Stop(m.child)
	}
}

// TestWorkChildReportsTimeoutKills: a process that a work child's job
// kills for its timeout is reported with the work's name (the
// supervisor's /metrics counts these kills).
func TestWorkChildReportsTimeoutKills(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	p := &killParent{killed: make(chan string, 2), results: make(chan any, 1)}
	parent := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	defer func() { _ = system.Root.StopFuture(parent).Wait() }()
	select {
	case r := <-p.results:
		if err, _ := r.(error); !errors.Is(err, proc.ErrTimeout) {
			t.Fatalf("the job's result = %v, want a timeout", r)
		}
	case <-time.After(testTimeout):
		t.Fatal("the job's result did not come back")
	}
	if len(p.killed) != 1 {
		t.Fatalf("%d kills reported, want 1", len(p.killed))
	}
	if work := <-p.killed; work != "checks" {
		t.Errorf("the kill was reported for %q, want checks", work)
	}
}
