package natsexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Dispatcher is the supervisor's side: it publishes a project's jobs and
// applies their results to the project's repository.
type Dispatcher struct {
	NC      *nats.Conn
	Streams Streams
	// Repo is the project's repository and Identity its identity.
	Repo     string
	Identity Identity
	// bases serializes the storing of one base's bundle among this
	// supervisor's jobs (nil: not serialized), so that it is stored once.
	bases *keyedMutex
	// local is Repo opened once (nil: opened by each job).
	local *localRepo
	// log has the bases this supervisor stored (nil: each base is
	// stored whole and looked up at each job).
	log *baseLog
	// cleanups, when set, runs the deletions of used bundles after the
	// job rather than before its result is returned.
	cleanups *cleanups
}

// repo is d's repository, opened once when d was made by Connections.
func (d Dispatcher) repo(ctx context.Context) *localRepo {
	if d.local != nil {
		return d.local
	}
	return openLocal(ctx, d.Repo)
}

// deleteBundle deletes a used bundle: after d.Do returns when d has
// cleanups, else at once. A deletion that fails leaves the bundle to the
// bucket's TTL.
func (d Dispatcher) deleteBundle(ctx context.Context, name string) {
	ctx = context.WithoutCancel(ctx)
	del := func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = d.Streams.Bundles.Delete(ctx, name)
	}
	if d.cleanups == nil {
		del()
		return
	}
	d.cleanups.do(del)
}

// cleanups runs work that no one waits for (the deletion of used
// bundles) in goroutines of its own, until close, which waits for them;
// after it, work runs at once.
type cleanups struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (c *cleanups) do(f func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		f()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		f()
	}()
}

func (c *cleanups) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// Do runs job on a worker: it stores the job's base once per base commit
// (baseObject) and bundles the branch's commits beyond it, publishes
// the job, relays its progress to report, waits for its result and fetches
// the branch's new commits into the project's task branch. The job's Base,
// Branch, ID, RunID and Task are the caller's; Do fills in the rest.
//
// A job of the same ID that an earlier supervisor published (it was
// killed, the run resumed) is adopted: its bundle and job stay as they
// are, and Do waits for the result of the job in flight, or takes the one
// it already has, so that the iteration runs once. A job whose Do ends
// with ctx is cancelled (Result.Cancelled); the same job asked for again
// goes under a new id.
func (d Dispatcher) Do(ctx context.Context, job Job, report func(Progress)) (Result, error) {
	job.Repo = d.Identity
	if err := job.check(); err != nil {
		return Result{}, err
	}
	repo := d.repo(ctx)
	job.Author = repo.jobAuthor(ctx)
	var done bool
	var err error
	job.ID, done, err = d.liveID(ctx, job.ID)
	if err != nil {
		return Result{}, err
	}
	// The branch's head is read once: by the job's bundle when one is
	// made, else here.
	bundled := false
	if !done {
		if err := d.putBase(ctx, job); err != nil {
			return Result{}, err
		}
		adopted, err := d.hasBundle(ctx, "job/"+job.ID)
		if err != nil {
			return Result{}, fmt.Errorf("job %s: %w", job.ID, err)
		}
		if adopted {
			// Adopted: the bundle of the job in flight stays.
			job.Bundle = "job/" + job.ID
		} else if err := d.putJobBundle(ctx, repo, &job); err != nil {
			return Result{}, err
		} else {
			bundled = true
		}
	}
	if !bundled {
		if job.Head, err = repo.refHead(ctx, "refs/heads/"+job.Branch); err != nil {
			return Result{}, fmt.Errorf("the branch of job %s: %w", job.ID, err)
		}
	}
	if job.Bundle != "" || done {
		defer d.deleteBundle(ctx, "job/"+job.ID)
	}

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
	// A job still queued or at work (adopted after the stream's
	// duplicate window) is not published twice.
	queued := false
	if !done {
		if err := d.retry(ctx, func() error {
			var err error
			queued, err = d.Streams.hasJob(ctx, d.Identity, job.RunID, job.ID)
			return err
		}); err != nil {
			return Result{}, fmt.Errorf("looking for job %s in flight: %w", job.ID, err)
		}
	}
	if !done && !queued {
		data, err := json.Marshal(job)
		if err != nil {
			return Result{}, fmt.Errorf("encoding job %s: %w", job.ID, err)
		}
		// Acknowledged since the checks: the stream's duplicate window
		// drops it, and a worker that gets it anyway finds its result
		// and does not run it again.
		if err := d.retry(ctx, func() error {
			_, err := d.Streams.JS.Publish(ctx, jobOf(d.Identity, job.RunID, job.ID), data, jetstream.WithMsgID(job.ID))
			return err
		}); err != nil {
			return Result{}, fmt.Errorf("publishing job %s: %w", job.ID, err)
		}
	}
	res, err := d.Wait(ctx, job)
	if err != nil {
		if ctx.Err() != nil {
			d.cancel(context.WithoutCancel(ctx), job)
		}
		return res, err
	}
	return res, d.apply(ctx, job, res)
}

// liveID returns the id the job of id goes under, and whether it has a
// result already: id itself, unless a supervisor cancelled the job of id,
// when it is the id after the cancellation's. It is the same for every
// supervisor of the run (the results stream keeps the cancellations). A
// look-up that fails is an error (after NATS lost is waited for), never
// "no result".
func (d Dispatcher) liveID(ctx context.Context, id string) (string, bool, error) {
	for {
		var m *jetstream.RawStreamMsg
		err := d.retry(ctx, func() error {
			st, err := d.Streams.stream(ctx, ResultsStream)
			if err != nil {
				return err
			}
			m, err = st.GetLastMsgForSubject(ctx, resultSubject(d.Identity, id))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return id, false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("looking for the result of job %s: %w", id, err)
		}
		var res Result
		if json.Unmarshal(m.Data, &res) != nil || !res.Cancelled {
			return id, true, nil
		}
		id = fmt.Sprintf("%s-c%d", id, m.Sequence)
	}
}

// cancel tells the workers that the supervisor gave up on job: the worker
// running it ends it, and no worker starts it. A result already out stays
// the job's (one result per job id).
func (d Dispatcher) cancel(ctx context.Context, job Job) {
	if d.NC.IsClosed() {
		// No one to tell (and jetstream would leave a publisher's
		// goroutine behind on a closed connection).
		return
	}
	ctx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	data, err := json.Marshal(Result{JobID: job.ID, Err: "cancelled by its supervisor", Cancelled: true})
	if err == nil {
		_, _ = d.Streams.JS.Publish(ctx, resultSubject(d.Identity, job.ID), data, jetstream.WithMsgID(job.ID))
	}
}

// putBase stores the bundle of job's base, unless the object store has it
// already: one bundle per base commit, shared by every job from it, put
// only when absent so that no worker reads it while it is replaced. A
// base is stored as its commits beyond the last base this supervisor
// stored (baseLog), up to maxBaseChain bundles in a row: a run's base is
// the last run's merged, and the workers have the older one already.
func (d Dispatcher) putBase(ctx context.Context, job Job) error {
	name := baseObject(job.Base)
	if d.bases != nil {
		defer d.bases.lock(job.Base)()
	}
	has, err := d.hasBase(ctx, job.Base)
	if err != nil {
		return fmt.Errorf("the base bundle of job %s: %w", job.ID, err)
	}
	if has {
		return nil
	}
	meta := jetstream.ObjectMeta{Name: name}
	from := d.deltaFrom(ctx, job.Base)
	if from != "" {
		// A few commits: packed in memory.
		data, _, err := d.repo(ctx).makeBundle(ctx, "refs/drover/base", job.Base, []string{from})
		if err != nil {
			return fmt.Errorf("the base bundle of job %s: %w", job.ID, err)
		}
		meta.Metadata = map[string]string{basePrerequisite: from}
		if err := d.retry(ctx, func() error { return putBytesMeta(ctx, d.Streams.Bundles, data, meta) }); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "drover-bundle-")
		if err != nil {
			return fmt.Errorf("a directory for the bundle of base %s: %w", job.Base, err)
		}
		defer os.RemoveAll(tmp)
		file := filepath.Join(tmp, "base.bundle")
		if err := bundleBase(ctx, d.Repo, file, "refs/drover/nats/base-"+nuid.Next(), job.Base); err != nil {
			return fmt.Errorf("the base bundle of job %s: %w", job.ID, err)
		}
		if err := d.retry(ctx, func() error { return putBundleMeta(ctx, d.Streams.Bundles, file, meta) }); err != nil {
			return err
		}
	}
	if d.log != nil {
		d.log.stored(job.Base, from, time.Now())
	}
	return nil
}

// basePrerequisite is the metadata key of a base bundle that holds the
// commits since another base: that base's commit.
const basePrerequisite = "drover-prerequisite"

// hasBase says whether the object store has the bundle of base and each
// bundle of the chain it is stored beyond, if any. A bundle this
// supervisor found whole lately is taken as there without a look.
func (d Dispatcher) hasBase(ctx context.Context, base string) (bool, error) {
	now := time.Now()
	if d.log != nil && d.log.fresh(base, now) {
		return true, nil
	}
	var root time.Time
	for b, n := base, 0; b != ""; n++ {
		if n > maxBaseChain {
			return false, nil
		}
		info, err := d.bundleInfo(ctx, baseObject(b))
		if err != nil || info == nil {
			// A chain with a bundle gone (the older expire first) is of
			// no use: the base is stored again, whole.
			return false, err
		}
		root, b = info.ModTime, info.Metadata[basePrerequisite]
	}
	if d.log != nil {
		d.log.seen(base, root, now)
	}
	return true, nil
}

// deltaFrom returns the base this supervisor stored last, when base may
// be stored beyond it (baseLog.chainFrom) and its bundle is still there;
// else "", and base is stored whole.
func (d Dispatcher) deltaFrom(ctx context.Context, base string) string {
	if d.log == nil {
		return ""
	}
	from := d.log.chainFrom(time.Now())
	if from == "" || from == base {
		return ""
	}
	if info, err := d.bundleInfo(ctx, baseObject(from)); err != nil || info == nil {
		return ""
	}
	// from need not be base's ancestor: the bundle holds what base
	// reaches and from does not, whatever their history.
	return from
}

// putJobBundle bundles the branch's commits beyond job's base and stores
// the bundle, named in job.Bundle; a branch with none has no bundle.
func (d Dispatcher) putJobBundle(ctx context.Context, repo *localRepo, job *Job) error {
	data, head, err := repo.bundleJob(ctx, job.Base, job.Branch)
	if err != nil {
		return fmt.Errorf("the bundle of job %s: %w", job.ID, err)
	}
	job.Head = head
	if data == nil {
		return nil
	}
	job.Bundle = "job/" + job.ID
	return d.retry(ctx, func() error { return putBytes(ctx, d.Streams.Bundles, data, job.Bundle) })
}

// hasBundle says whether the object store has the bundle name.
func (d Dispatcher) hasBundle(ctx context.Context, name string) (bool, error) {
	info, err := d.bundleInfo(ctx, name)
	return info != nil, err
}

// bundleInfo returns the object store's information of the bundle name,
// nil when there is none. NATS lost is waited for: any other error is an
// unknown answer, not an absent bundle (which would be stored again
// while a worker may read it).
func (d Dispatcher) bundleInfo(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	var info *jetstream.ObjectInfo
	err := d.retry(ctx, func() error {
		var err error
		info, err = d.Streams.Bundles.GetInfo(ctx, name)
		return err
	})
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up bundle %s: %w", name, err)
	}
	return info, nil
}

// Wait returns the first result of job: a job delivered twice has one.
// NATS lost while it waits is waited for: the result waits in its stream.
func (d Dispatcher) Wait(ctx context.Context, job Job) (Result, error) {
	var res Result
	err := d.retry(ctx, func() error {
		var err error
		res, err = d.waitOnce(ctx, job)
		return err
	})
	return res, err
}

func (d Dispatcher) retry(ctx context.Context, f func() error) error { return retryLost(ctx, d.NC, f) }

// lost says whether err may be NATS away for a while (a server restarting,
// a network down) rather than a failure: the connection is not up, or the
// error is one of a connection coming back (lostErr).
func lost(nc *nats.Conn, err error) bool {
	return err != nil && (!nc.IsConnected() || lostErr(err))
}

// lostErrs are the errors of NATS away or not ready yet: a connection
// down or coming back, a request that timed out or that no one answered
// (JetStream not up yet after a restart), a server going.
var lostErrs = []error{
	nats.ErrTimeout, context.DeadlineExceeded, os.ErrDeadlineExceeded,
	nats.ErrNoResponders, jetstream.ErrNoHeartbeat, jetstream.ErrServerShutdown,
	nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrStaleConnection,
	nats.ErrConnectionClosed, jetstream.ErrConnectionClosed, nats.ErrConnectionDraining,
	jetstream.ErrJetStreamNotEnabled, jetstream.ErrJetStreamNotEnabledForAccount,
	nats.ErrJetStreamNotEnabled, nats.ErrJetStreamNotEnabledForAccount,
	io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE,
}

// lostErr says whether err, whatever the connection's state when it is
// looked at, is one of NATS away (lostErrs), or a JetStream answer of
// "unavailable" (503: no leader yet, JetStream starting). A connection
// closed for good is retryLost's to tell.
func lostErr(err error) bool {
	for _, e := range lostErrs {
		if errors.Is(err, e) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// retryLost runs f until it succeeds, fails otherwise than by NATS lost
// (lost), or ctx ends: NATS away pauses the work rather than failing it. A
// closed connection does not come back: its error is returned.
func retryLost(ctx context.Context, nc *nats.Conn, f func() error) error {
	for {
		err := f()
		if err == nil || ctx.Err() != nil || nc.IsClosed() || !lost(nc, err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// waitOnce is Wait on one consumer.
func (d Dispatcher) waitOnce(ctx context.Context, job Job) (Result, error) {
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
	if (res.Bundle == "" && res.Inline == nil) || (res.Head == job.Head && res.Err == "") {
		if res.Err != "" {
			return fmt.Errorf("job %s on worker %s: %s", job.ID, res.Worker, res.Err)
		}
		return nil
	}
	var file string
	if res.Inline == nil {
		defer d.deleteBundle(ctx, res.Bundle)
		tmp, err := os.MkdirTemp("", "drover-bundle-")
		if err != nil {
			return fmt.Errorf("a directory for the result bundle of job %s: %w", job.ID, err)
		}
		defer os.RemoveAll(tmp)
		file = filepath.Join(tmp, "result.bundle")
		if err := d.retry(ctx, func() error { return d.Streams.Bundles.GetFile(ctx, res.Bundle, file) }); err != nil {
			return fmt.Errorf("fetching the result bundle of job %s: %w", job.ID, err)
		}
	}
	refs, err := d.repo(ctx).unbundleData(ctx, res.Inline, file)
	if err != nil {
		return fmt.Errorf("the result of job %s: unpacking its bundle: %w", job.ID, err)
	}
	head := refs["refs/heads/"+job.Branch]
	if head != res.Head {
		return fmt.Errorf("the result of job %s: its bundle has %q, its result says %s", job.ID, head, res.Head)
	}
	return setBranch(ctx, d.Repo, job.Branch, head, job.Head)
}
