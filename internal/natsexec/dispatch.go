package natsexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dispatcher is the supervisor's side: it publishes a project's jobs and
// applies their results to the project's repository.
type Dispatcher struct {
	NC      *nats.Conn
	Streams Streams
	// Repo is the project's repository and Identity its identity.
	Repo     string
	Identity Identity
}

// Do runs job on a worker: it bundles the job's base and branch, publishes
// the job, relays its progress to report, waits for its result and fetches
// the branch's new commits into the project's task branch. The job's Base,
// Branch, ID, RunID and Task are the caller's; Do fills in the rest.
//
// A job of the same ID that an earlier supervisor published (it was
// killed, the run resumed) is adopted: its bundle and job stay as they
// are, and Do waits for the result of the job in flight, or takes the one
// it already has, so that the iteration runs once.
func (d Dispatcher) Do(ctx context.Context, job Job, report func(Progress)) (Result, error) {
	job.Repo = d.Identity
	job.Bundle = "job/" + job.ID
	if err := job.check(); err != nil {
		return Result{}, err
	}
	head, err := refHead(ctx, d.Repo, "refs/heads/"+job.Branch)
	if err != nil {
		return Result{}, fmt.Errorf("the branch of job %s: %w", job.ID, err)
	}
	job.Head = head
	done := d.hasResult(ctx, job.ID)
	if !done && !d.hasBundle(ctx, job.Bundle) {
		if err := d.putJobBundle(ctx, &job); err != nil {
			return Result{}, err
		}
	}
	defer func() { _ = d.Streams.Bundles.Delete(context.WithoutCancel(ctx), job.Bundle) }()

	// Subscribed before the job is out, so no progress is missed.
	if report != nil {
		sub, err := d.NC.Subscribe(progressSubject(d.Identity, job.ID), func(m *nats.Msg) {
			var p Progress
			if json.Unmarshal(m.Data, &p) == nil {
				report(p)
			}
		})
		if err != nil {
			return Result{}, fmt.Errorf("subscribing to the progress of job %s: %w", job.ID, err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	if !done {
		data, err := json.Marshal(job)
		if err != nil {
			return Result{}, fmt.Errorf("encoding job %s: %w", job.ID, err)
		}
		// Published already (an adopted job): the stream's duplicate
		// window drops it, and a worker that gets it anyway after the
		// window finds its result and does not run it again.
		if _, err := d.Streams.JS.Publish(ctx, jobSubject(d.Identity, job.RunID), data, jetstream.WithMsgID(job.ID)); err != nil {
			return Result{}, fmt.Errorf("publishing job %s: %w", job.ID, err)
		}
	}
	res, err := d.Wait(ctx, job)
	if err != nil {
		return res, err
	}
	return res, d.apply(ctx, job, res)
}

// putJobBundle bundles job's base and branch and stores the bundle.
func (d Dispatcher) putJobBundle(ctx context.Context, job *Job) error {
	tmp, err := os.MkdirTemp("", "drover-bundle-")
	if err != nil {
		return fmt.Errorf("a directory for the bundle of job %s: %w", job.ID, err)
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "job.bundle")
	job.Head, err = bundleJob(ctx, d.Repo, file, "refs/drover/nats/base-"+token(job.ID), job.Base, job.Branch)
	if err != nil {
		return fmt.Errorf("the bundle of job %s: %w", job.ID, err)
	}
	return putBundle(ctx, d.Streams.Bundles, file, job.Bundle)
}

// hasBundle says whether the object store has the bundle name.
func (d Dispatcher) hasBundle(ctx context.Context, name string) bool {
	_, err := d.Streams.Bundles.GetInfo(ctx, name)
	return err == nil
}

// hasResult says whether the job of id has a result.
func (d Dispatcher) hasResult(ctx context.Context, id string) bool {
	return d.Streams.hasResult(ctx, d.Identity, id)
}

// Wait returns the first result of job: a job delivered twice has one.
func (d Dispatcher) Wait(ctx context.Context, job Job) (Result, error) {
	cons, err := d.Streams.JS.OrderedConsumer(ctx, ResultsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{resultSubject(d.Identity, job.ID)},
	})
	if err != nil {
		return Result{}, fmt.Errorf("waiting for the result of job %s: %w", job.ID, err)
	}
	for {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			continue
		}
		if err != nil {
			return Result{}, fmt.Errorf("waiting for the result of job %s: %w", job.ID, err)
		}
		var res Result
		if err := json.Unmarshal(msg.Data(), &res); err != nil {
			return Result{}, fmt.Errorf("decoding the result of job %s: %w", job.ID, err)
		}
		return res, nil
	}
}

// apply fetches a result's commits into the project's task branch, if it
// is where the job left it. A result the branch has already (an adopted
// job's, applied before a crash) is not fetched again.
func (d Dispatcher) apply(ctx context.Context, job Job, res Result) error {
	if res.Bundle == "" || (res.Head == job.Head && res.Err == "") {
		if res.Err != "" {
			return fmt.Errorf("job %s on worker %s: %s", job.ID, res.Worker, res.Err)
		}
		return nil
	}
	defer func() { _ = d.Streams.Bundles.Delete(context.WithoutCancel(ctx), res.Bundle) }()
	tmp, err := os.MkdirTemp("", "drover-bundle-")
	if err != nil {
		return fmt.Errorf("a directory for the result bundle of job %s: %w", job.ID, err)
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "result.bundle")
	if err := d.Streams.Bundles.GetFile(ctx, res.Bundle, file); err != nil {
		return fmt.Errorf("fetching the result bundle of job %s: %w", job.ID, err)
	}
	ref := "refs/drover/nats/result-" + token(job.ID)
	head, err := fetchBranch(ctx, d.Repo, file, job.Branch, ref)
	defer func() { _, _ = gitOut(context.WithoutCancel(ctx), d.Repo, "update-ref", "-d", ref) }()
	if err != nil {
		return fmt.Errorf("the result of job %s: %w", job.ID, err)
	}
	if head != res.Head {
		return fmt.Errorf("the result of job %s: its bundle has %s, its result says %s", job.ID, head, res.Head)
	}
	return setBranch(ctx, d.Repo, job.Branch, head, job.Head)
}
