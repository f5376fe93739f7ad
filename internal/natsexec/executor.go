package natsexec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/drover-dev/drover/internal/executor"
)

// Executor is the nats executor (executor.NATS): it runs each iteration
// on a drover worker, through its Dispatcher.
type Executor struct {
	D Dispatcher
}

// Run publishes it as a job, relays the worker's progress to report and
// returns the worker's result, once the task branch's new commits are in
// the project's repository.
func (x Executor) Run(ctx context.Context, it executor.Iteration, report func(executor.Progress)) executor.Result {
	// The worker's repository has no HEAD of the project's: the base
	// travels as a commit.
	base := it.Base
	if base == "" {
		base = "HEAD"
	}
	commit, err := gitOut(ctx, x.D.Repo, "rev-parse", "--verify", "--quiet", "--end-of-options", base+"^{commit}")
	if err != nil {
		return executor.Failed(fmt.Errorf("the base %q of task %s: %w", base, it.Task.ID, err))
	}
	it.Base = commit
	data, err := json.Marshal(it)
	if err != nil {
		return executor.Failed(fmt.Errorf("encoding iteration %d of task %s: %w", it.Iteration, it.Task.ID, err))
	}
	job := Job{
		// One id per attempt, kept in the run's state: an iteration
		// worked again after a usage limit is a new job, and after a
		// crash of the supervisor the same job, adopted.
		ID:    fmt.Sprintf("%s-%s-%d-%d", it.RunID, it.Task.ID, it.Iteration, it.Attempt),
		RunID: it.RunID, Task: it.Task.ID, Iteration: it.Iteration, Base: commit, Branch: it.Branch, Iter: data,
	}
	var pr pauseReporter
	if report != nil {
		pr.report = report
		stop := pr.watch(x.D.NC)
		defer stop()
	}
	res, err := x.D.Do(ctx, job, func(p Progress) {
		var ep executor.Progress
		if report != nil && json.Unmarshal(p.Data, &ep) == nil {
			ep.Worker = p.Worker
			pr.progress(ep)
		}
	})
	out := executor.Result{}
	if len(res.Out) > 0 {
		if uerr := json.Unmarshal(res.Out, &out); uerr != nil && err == nil {
			err = fmt.Errorf("decoding the result of job %s: %w", job.ID, uerr)
		}
	}
	out.Worker = res.Worker
	if err != nil {
		out.Err = err.Error()
	}
	return out
}

// ExecutorRunner runs a worker's jobs with x, an executor of the worker's
// repository (the local executor, whose work trees are the worker's).
// agent, when set, is the agent command of this worker's iterations in
// place of the run's.
func ExecutorRunner(x executor.Executor, agent string) Runner {
	return RunnerFunc(func(ctx context.Context, _ string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
		var it executor.Iteration
		if err := json.Unmarshal(job.Iter, &it); err != nil {
			return nil, fmt.Errorf("decoding the iteration of job %s: %w", job.ID, err)
		}
		if it.RunID != job.RunID || it.Task.ID != job.Task || it.Branch != job.Branch || it.Base != job.Base {
			return nil, fmt.Errorf("job %s: its iteration names another task or branch", job.ID)
		}
		if agent != "" {
			it.Options.Agent = agent
		}
		res := x.Run(ctx, it, func(p executor.Progress) {
			if data, err := json.Marshal(p); err == nil {
				report(data)
			}
		})
		data, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("encoding the result of job %s: %w", job.ID, err)
		}
		return data, nil
	})
}

// pauseReporter relays an iteration's progress, and tells the run when
// NATS is lost (the iteration is paused: its job and result wait in
// JetStream) and back, with the last progress so that nothing is counted
// twice or lost.
type pauseReporter struct {
	report func(executor.Progress)
	mu     sync.Mutex
	last   executor.Progress
}

func (r *pauseReporter) progress(p executor.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = p
	r.report(p)
}

func (r *pauseReporter) paused(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.Paused == why {
		return
	}
	r.last.Paused = why
	r.report(r.last)
}

// watch reports the pauses of nc's connection until the function it
// returns is called.
func (r *pauseReporter) watch(nc *nats.Conn) func() {
	ch := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	why := fmt.Sprintf("NATS at %s is unreachable: the iteration goes on when it is back", serversOf(nc))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if !nc.IsConnected() {
			r.paused(why)
		}
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				if s == nats.CONNECTED {
					r.paused("")
				} else {
					r.paused(why)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		nc.RemoveStatusListener(ch)
	}
}

// serversOf is the server list nc was configured with, passwords hidden.
func serversOf(nc *nats.Conn) string {
	list := make([]string, 0, len(nc.Opts.Servers))
	for _, s := range nc.Opts.Servers {
		list = append(list, redact(s))
	}
	return strings.Join(list, ",")
}
