package natsexec

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/gitobj"
)

// Runner runs a job's iteration in repo, the worker's own repository of
// the job's identity, where the job's base commit is present and its
// branch is where the supervisor had it (absent when it is new). report
// sends progress to the supervisor without waiting.
type Runner interface {
	Run(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error)
}

// RunnerFunc is a function as a Runner.
type RunnerFunc func(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, repo string, job Job, report func(json.RawMessage)) (json.RawMessage, error) {
	return f(ctx, repo, job, report)
}

// Worker pulls the jobs of one repository and runs them.
type Worker struct {
	NC       *nats.Conn
	Streams  Streams
	Identity Identity
	// Name names the worker in results and progress (default host-pid).
	Name string
	// Dir holds the worker's repository (Dir/<identity key>).
	Dir string
	// Concurrency is how many jobs run at once (default 1).
	Concurrency int
	Runner      Runner
	Log         *zap.Logger

	// branches serializes the changes to one task branch in the
	// worker's repository (a job delivered again while its first run
	// ends): jobs of different branches fetch, set their branch and
	// bundle their result at once, git locking each ref it writes.
	branches keyedMutex
	// author is the git identity the worker's repository commits under,
	// set by setAuthor.
	authorMu sync.Mutex
	author   Author
	// home is the machine's git identity (homeRead: read), under authorMu.
	home     Author
	homeRead bool
	// bases serializes the fetching of one base commit.
	bases keyedMutex
	// running has the jobs at work here, each with a channel closed once
	// it is done: a job delivered again to this worker while it runs it
	// (its heartbeat was late) waits for it rather than running twice.
	mu      sync.Mutex
	running map[string]chan struct{}
	// haveBase has the base commits the worker's repository keeps
	// (fetchBase), under mu.
	haveBase map[string]bool
	// local is the worker's repository, opened by initRepo.
	local *localRepo
}

// Repo is the worker's repository.
func (w *Worker) Repo() string { return filepath.Join(w.Dir, w.Identity.Key()) }

// Run pulls and runs jobs until ctx ends. A job at work when ctx ends is
// handed back (nak) for another worker.
func (w *Worker) Run(ctx context.Context) error {
	if w.Log == nil {
		w.Log = zap.NewNop()
	}
	if w.Name == "" {
		host, _ := os.Hostname()
		w.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if err := w.initRepo(ctx); err != nil {
		return err
	}
	cons, err := w.Streams.workers(ctx, w.Identity)
	if err != nil {
		return err
	}
	n := max(w.Concurrency, 1)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { w.loop(ctx, cons) })
	}
	wg.Wait()
	return nil
}

func (w *Worker) initRepo(ctx context.Context) error {
	repo := w.Repo()
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		if err := os.MkdirAll(repo, 0o700); err != nil {
			return fmt.Errorf("creating the worker repository %q: %w", repo, err)
		}
		if _, err := gitOut(ctx, repo, "init", "--quiet"); err != nil {
			return fmt.Errorf("creating the worker repository %q: %w", repo, err)
		}
	}
	w.local = openLocal(ctx, repo)
	return nil
}

func (w *Worker) loop(ctx context.Context, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, nats.ErrTimeout) {
				w.Log.Warn("pulling a job", zap.Error(err))
				// Not a busy loop while NATS is away.
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		w.handle(ctx, msg)
	}
}

// handle runs one job and acknowledges it once its result is out.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil {
		w.Log.Warn("a job that does not decode", zap.Error(err))
		_ = msg.TermWithReason("undecodable job")
		return
	}
	log := w.Log.With(zap.String("job", job.ID), zap.String("task", job.Task), zap.Int("iteration", job.Iteration))
	if job.Repo != w.Identity {
		err := fmt.Sprintf("refused: job of repository %s, this worker serves %s", job.Repo, w.Identity)
		log.Warn("job refused", zap.String("repo", job.Repo.String()))
		// The supervisor hears it rather than waiting for ever.
		_ = w.publish(ctx, job, Result{JobID: job.ID, Worker: w.Name, Err: err, Refused: true})
		_ = msg.TermWithReason("repository identity")
		return
	}
	done, dup := w.start(job.ID)
	if dup {
		w.await(ctx, msg, job, done)
		return
	}
	defer w.finish(job.ID)
	// Any result of the job ends it here: its supervisor's cancellation,
	// or another worker's run of it. Subscribed before the result is
	// looked for, so that none is missed.
	jobCtx, endJob := context.WithCancel(ctx)
	defer endJob()
	sub, err := w.NC.Subscribe(resultSubject(w.Identity, job.ID), func(*nats.Msg) { endJob() })
	if err != nil {
		log.Warn("watching the job's results", zap.Error(err))
		_ = msg.Nak()
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	has, err := w.hasResult(ctx, job)
	if err != nil {
		// Not knowing whether it ran is not a reason to run it again:
		// it comes back for a later look.
		log.Warn("looking for the job's result", zap.Error(err))
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if has {
		// Cancelled before it began, or run before by a worker that
		// died between its result and its ack: counted once.
		_ = msg.DoubleAck(ctx)
		return
	}
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Go(func() { w.heartbeat(hbCtx, msg) })
	res := w.work(jobCtx, job)
	stopHB()
	hb.Wait()
	if ctx.Err() == nil && jobCtx.Err() != nil {
		log.Info("job ended: it has a result (cancelled by its supervisor, or run elsewhere)")
		_ = msg.DoubleAck(ctx)
		return
	}
	if ctx.Err() != nil {
		// Stopping: another worker takes it now, not after the ack wait.
		log.Info("job handed back")
		_ = msg.Nak()
		return
	}
	if err := w.publish(ctx, job, res); err != nil {
		log.Warn("publishing a result", zap.Error(err))
		_ = msg.Nak()
		return
	}
	if err := msg.DoubleAck(ctx); err != nil {
		log.Warn("acknowledging a job", zap.Error(err))
	}
	log.Info("job done", zap.String("head", res.Head), zap.String("err", res.Err))
}

// start marks the job of id at work here; when it is already, it returns
// the channel closed once that run is done, and true.
func (w *Worker) start(id string) (chan struct{}, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if done, ok := w.running[id]; ok {
		return done, true
	}
	if w.running == nil {
		w.running = map[string]chan struct{}{}
	}
	w.running[id] = make(chan struct{})
	return nil, false
}

// finish marks the job of id done here.
func (w *Worker) finish(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.running[id])
	delete(w.running, id)
}

// await holds msg, a second delivery of job that this worker runs, until
// that run is done: acknowledged when it left a result, handed back when
// it did not.
func (w *Worker) await(ctx context.Context, msg jetstream.Msg, job Job, done <-chan struct{}) {
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Go(func() { w.heartbeat(hbCtx, msg) })
	select {
	case <-done:
	case <-ctx.Done():
	}
	stopHB()
	hb.Wait()
	if ctx.Err() == nil {
		if has, err := w.hasResult(ctx, job); err == nil && has {
			_ = msg.DoubleAck(ctx)
			return
		}
	}
	_ = msg.Nak()
}

// heartbeat tells NATS the job is at work, three times per ack wait: a
// worker that dies stops, and the job goes to another after the ack wait.
func (w *Worker) heartbeat(ctx context.Context, msg jetstream.Msg) {
	t := time.NewTicker(w.Streams.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := msg.InProgress(); err != nil {
				w.Log.Warn("job heartbeat", zap.Error(err))
			}
		}
	}
}

// hasResult says whether job has a result, waiting while NATS is lost
// (lost): an error is an answer it could not get.
func (w *Worker) hasResult(ctx context.Context, job Job) (bool, error) {
	var has bool
	err := retryLost(ctx, w.NC, func() error {
		var err error
		has, err = w.Streams.hasResult(ctx, w.Identity, job.ID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("job %s: %w", job.ID, err)
	}
	return has, nil
}

func (w *Worker) publish(ctx context.Context, job Job, res Result) error {
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding the result of job %s: %w", job.ID, err)
	}
	// One result per job, whichever worker sends it first. NATS lost is
	// waited for: a job run is not thrown away for it.
	if err := retryLost(ctx, w.NC, func() error {
		_, err := w.Streams.JS.Publish(ctx, resultSubject(w.Identity, job.ID), data, jetstream.WithMsgID(job.ID))
		return err
	}); err != nil {
		return fmt.Errorf("publishing the result of job %s: %w", job.ID, err)
	}
	return nil
}

// work prepares the worker's repository for job, runs it and bundles the
// branch's new commits.
func (w *Worker) work(ctx context.Context, job Job) Result {
	res := Result{JobID: job.ID, Worker: w.Name}
	tmp, err := os.MkdirTemp("", "drover-worker-")
	if err != nil {
		res.Err = fmt.Sprintf("a directory for the bundles of job %s: %v", job.ID, err)
		return res
	}
	defer os.RemoveAll(tmp)
	if err := w.prepare(ctx, job, filepath.Join(tmp, "job.bundle")); err != nil {
		res.Err = err.Error()
		return res
	}
	report := func(data json.RawMessage) {
		p, err := json.Marshal(Progress{JobID: job.ID, Worker: w.Name, Data: data})
		if err == nil {
			// Progress is best effort: the result carries the totals.
			_ = w.NC.Publish(progressSubject(w.Identity, job.ID), p)
		}
	}
	res.Out, err = w.Runner.Run(ctx, w.Repo(), job, report)
	if err != nil {
		res.Err = err.Error()
	}
	if ctx.Err() != nil {
		return res
	}
	if err := w.bundleResult(ctx, job, &res); err != nil && res.Err == "" {
		res.Err = err.Error()
	}
	return res
}

// prepare fetches the job's bundle into the worker's repository and puts
// the task branch where the supervisor has it. A work tree of the branch
// from an earlier job on this worker stays when the branch has not moved
// since (its uncommitted changes with it, as on one machine), and goes
// when it has.
func (w *Worker) prepare(ctx context.Context, job Job, file string) error {
	if err := w.setAuthor(ctx, job); err != nil {
		return err
	}
	if err := w.fetchBase(ctx, job, file); err != nil {
		return err
	}
	if job.Bundle != "" {
		if err := retryLost(ctx, w.NC, func() error { return w.Streams.Bundles.GetFile(ctx, job.Bundle, file) }); err != nil {
			return fmt.Errorf("fetching the bundle of job %s: %w", job.ID, err)
		}
	}
	defer w.branches.lock(job.Branch)()
	repo := w.Repo()
	var refs map[string]string
	if job.Bundle != "" {
		var err error
		if refs, err = w.local.unbundle(ctx, file); err != nil {
			return fmt.Errorf("unpacking the bundle of job %s: %w", job.ID, err)
		}
	}
	inBundle := false
	for _, c := range refs {
		inBundle = inBundle || c == job.Head
	}
	if job.Head != "" && !inBundle && !w.local.hasCommit(ctx, job.Head) {
		return fmt.Errorf("job %s: its bundles lack the branch's commit %s", job.ID, job.Head)
	}
	ref := "refs/heads/" + job.Branch
	cur, err := w.local.refHead(ctx, ref)
	if err != nil {
		return fmt.Errorf("job %s: the branch %s: %w", job.ID, job.Branch, err)
	}
	if cur == job.Head {
		return nil
	}
	if err := removeWorktreeOf(ctx, repo, ref); err != nil {
		return fmt.Errorf("job %s: %w", job.ID, err)
	}
	if job.Head == "" {
		_, err = gitOut(ctx, repo, "update-ref", "-d", ref)
	} else {
		_, err = gitOut(ctx, repo, "update-ref", ref, job.Head)
	}
	if err != nil {
		return fmt.Errorf("job %s: setting branch %s: %w", job.ID, job.Branch, err)
	}
	return nil
}

// setAuthor gives the worker's repository the git identity of the job's
// project, or, when the project has none, the machine's, or else
// fallbackName: on a machine with no git identity an agent's commits
// would fail. The repository's work trees share it.
func (w *Worker) setAuthor(ctx context.Context, job Job) error {
	w.authorMu.Lock()
	defer w.authorMu.Unlock()
	want := job.Author
	if want.Name == "" || want.Email == "" {
		// The machine's (not the repository's, which an earlier job set),
		// read once per worker rather than per job.
		if !w.homeRead {
			w.home, w.homeRead = gitAuthor(ctx, w.Dir), true
		}
		home := w.home
		if want.Name == "" {
			want.Name = cmp.Or(home.Name, fallbackName)
		}
		if want.Email == "" {
			want.Email = cmp.Or(home.Email, fallbackEmail)
		}
	}
	if want == w.author {
		return nil
	}
	for _, kv := range [][2]string{{"user.name", want.Name}, {"user.email", want.Email}} {
		if _, err := gitOut(ctx, w.Repo(), "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("job %s: the git identity of the worker's repository: %w", job.ID, err)
		}
	}
	w.author = want
	return nil
}

// fetchBase fetches the bundle of the job's base into the worker's
// repository, unless it has the base already (from an earlier job): the
// base, the whole history, travels once per worker rather than per job.
// A base stored beyond an older one (Dispatcher.putBase) needs that one
// first, fetched the same way. It stays under refs/drover/base/, so that
// it is kept.
func (w *Worker) fetchBase(ctx context.Context, job Job, file string) error {
	return w.fetchBaseOf(ctx, job.ID, job.Base, file, 0)
}

func (w *Worker) fetchBaseOf(ctx context.Context, jobID, base, file string, depth int) error {
	repo := w.Repo()
	defer w.bases.lock(base)()
	w.mu.Lock()
	known := w.haveBase[base]
	w.mu.Unlock()
	if known {
		return nil
	}
	if w.local.hasCommit(ctx, base) {
		// Kept under a ref, so that it stays, and known from now on
		// without a git process per job.
		if _, err := gitOut(ctx, repo, "update-ref", "refs/drover/base/"+base+"/have", base); err != nil {
			return fmt.Errorf("job %s: keeping base %s: %w", jobID, base, err)
		}
		w.knowBase(base)
		return nil
	}
	if err := retryLost(ctx, w.NC, func() error { return w.Streams.Bundles.GetFile(ctx, baseObject(base), file) }); err != nil {
		return fmt.Errorf("fetching the base %s of job %s: %w", base, jobID, err)
	}
	defer os.Remove(file)
	prereqs, err := bundlePrerequisites(file)
	if err != nil {
		return fmt.Errorf("the base %s of job %s: %w", base, jobID, err)
	}
	for _, p := range prereqs {
		if p == base || depth >= maxBaseChain {
			return fmt.Errorf("the base %s of job %s: its bundle needs %s, beyond the bases it may need", base, jobID, p)
		}
		if err := w.fetchBaseOf(ctx, jobID, p, fmt.Sprintf("%s.%d", file, depth+1), depth+1); err != nil {
			return err
		}
	}
	if len(prereqs) > 0 {
		// A few commits beyond a base: unpacked in process (as a job's
		// bundle), and kept under a ref.
		if _, err := w.local.unbundle(ctx, file); err != nil {
			return fmt.Errorf("unpacking the base %s of job %s: %w", base, jobID, err)
		}
		if _, err := gitOut(ctx, repo, "update-ref", "refs/drover/base/"+base+"/have", base); err != nil {
			return fmt.Errorf("job %s: keeping base %s: %w", jobID, base, err)
		}
	} else if _, err := gitOut(ctx, repo, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", file, "+refs/*:refs/drover/base/"+base+"/*"); err != nil {
		return fmt.Errorf("unpacking the base %s of job %s: %w", base, jobID, err)
	}
	if !w.local.hasCommit(ctx, base) {
		return fmt.Errorf("job %s: the bundle of base %s lacks it", jobID, base)
	}
	w.knowBase(base)
	return nil
}

// bundlePrerequisites returns the commits the bundle file needs.
func bundlePrerequisites(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %q: %w", file, err)
	}
	defer f.Close()
	b, err := gitobj.ReadBundleHeader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("reading bundle %q: %w", file, err)
	}
	return b.Prerequisites, nil
}

// knowBase notes that the worker's repository has base under a ref of
// refs/drover/base/, which nothing deletes.
func (w *Worker) knowBase(base string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.haveBase == nil {
		w.haveBase = map[string]bool{}
	}
	w.haveBase[base] = true
}

// removeWorktreeOf removes the work tree that has ref checked out, if any.
func removeWorktreeOf(ctx context.Context, repo, ref string) error {
	out, err := gitOut(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return fmt.Errorf("listing the work trees: %w", err)
	}
	var path string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch "+ref && path != repo {
			if _, err := gitOut(ctx, repo, "worktree", "remove", "--force", path); err != nil {
				return fmt.Errorf("removing the stale work tree %q: %w", path, err)
			}
		}
	}
	return nil
}

// bundleResult bundles the task branch's commits the supervisor lacks,
// stores the bundle and names it in res.
func (w *Worker) bundleResult(ctx context.Context, job Job, res *Result) error {
	unlock := w.branches.lock(job.Branch)
	ref := "refs/heads/" + job.Branch
	head, err := w.local.refHead(ctx, ref)
	if err != nil || head == "" || head == job.Head {
		unlock()
		if err != nil {
			return fmt.Errorf("job %s: the branch %s: %w", job.ID, job.Branch, err)
		}
		return nil
	}
	// The supervisor has the branch's last commit and the base: what
	// they reach is left out. A branch moved back to one of them is a
	// bundle of no objects, which still moves the branch.
	have := []string{job.Base}
	if job.Head != "" {
		have = append(have, job.Head)
	}
	data, _, err := w.local.makeBundle(ctx, ref, head, have)
	// The bundle is the worker's own: it is stored without the lock.
	unlock()
	if err != nil {
		return fmt.Errorf("bundling the result of job %s: %w", job.ID, err)
	}
	if len(data) <= InlineMax {
		res.Head, res.Inline = head, data
		return nil
	}
	name := "result/" + token(job.ID) + "/" + nuid.Next()
	if err := retryLost(ctx, w.NC, func() error { return putBytes(ctx, w.Streams.Bundles, data, name) }); err != nil {
		return err
	}
	res.Head, res.Bundle = head, name
	return nil
}
