package natsexec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The names drover uses on NATS. One jobs subject per run of a repository
// (drover.jobs.<root>.<run>, keyed by Identity.Subjects), one results subject per job, progress on
// plain (not stored) subjects.
const (
	JobsStream    = "DROVER_JOBS"
	ResultsStream = "DROVER_RESULTS"
	BundleBucket  = "drover-bundles"
	jobsPrefix    = "drover.jobs."
	resultsPrefix = "drover.results."
	progressPref  = "drover.progress."
	// InlineMax is the size of a result's bundle up to which it travels
	// in the result message (Result.Inline), well under NATS's smallest
	// usual message limit (1 MiB).
	InlineMax = 64 << 10
	// bundleTTL is how long a bundle is kept: a job's and a result's are
	// deleted when used, a base's stays for the jobs of later runs.
	bundleTTL = 24 * time.Hour
	// DefaultAckWait is how long a job stays with a worker that stopped
	// saying it works on it, before it goes to another.
	DefaultAckWait = 30 * time.Second
)

// Streams are the JetStream handles drover uses.
type Streams struct {
	JS      jetstream.JetStream
	Bundles jetstream.ObjectStore
	// AckWait is the jobs consumers' ack wait.
	AckWait time.Duration
	// jobs and results are the streams' handles, kept from Setup (nil:
	// looked up at each use), so that a look-up in them is one request,
	// not two.
	jobs, results jetstream.Stream
}

// stream returns the handle of the stream name.
func (s Streams) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	switch {
	case name == JobsStream && s.jobs != nil:
		return s.jobs, nil
	case name == ResultsStream && s.results != nil:
		return s.results, nil
	}
	return s.JS.Stream(ctx, name)
}

// Setup creates (or updates) the jobs work-queue stream, the results
// stream and the bundle bucket, of one replica or the more they have.
// ackWait zero means DefaultAckWait.
func Setup(ctx context.Context, js jetstream.JetStream, ackWait time.Duration) (Streams, error) {
	return SetupReplicas(ctx, js, ackWait, 1)
}

// SetupReplicas is Setup with replicas copies (run.nats.replicas, 0 is 1)
// of the streams and the bucket on a NATS cluster. A stream or bucket that
// has more already keeps them: a supervisor or worker configured with
// fewer does not take the redundancy away.
func SetupReplicas(ctx context.Context, js jetstream.JetStream, ackWait time.Duration, replicas int) (Streams, error) {
	if ackWait <= 0 {
		ackWait = DefaultAckWait
	}
	replicas = max(replicas, 1)
	streamReplicas := func(name string) int {
		if st, err := js.Stream(ctx, name); err == nil {
			return max(replicas, st.CachedInfo().Config.Replicas)
		}
		return replicas
	}
	jobs, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "drover iterations waiting for a worker",
		Subjects:    []string{jobsPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Replicas:    streamReplicas(JobsStream),
		// A supervisor that publishes a job again (a retry, a restart)
		// within the window is not a second job.
		Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return Streams{}, fmt.Errorf("creating the NATS stream %s: %w", JobsStream, err)
	}
	results, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        ResultsStream,
		Description: "drover iterations' results",
		Subjects:    []string{resultsPrefix + ">"},
		MaxAge:      24 * time.Hour,
		Replicas:    streamReplicas(ResultsStream),
		// A job run twice (redelivered while its first worker still
		// finished) has one result.
		Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return Streams{}, fmt.Errorf("creating the NATS stream %s: %w", ResultsStream, err)
	}
	bucketReplicas := replicas
	if obs, err := js.ObjectStore(ctx, BundleBucket); err == nil {
		if status, err := obs.Status(ctx); err == nil {
			bucketReplicas = max(replicas, status.Replicas())
		}
	}
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      BundleBucket,
		Description: "git bundles of drover jobs and their results",
		TTL:         bundleTTL,
		Replicas:    bucketReplicas,
	})
	if err != nil {
		return Streams{}, fmt.Errorf("creating the NATS object store %s: %w", BundleBucket, err)
	}
	return Streams{JS: js, Bundles: obs, AckWait: ackWait, jobs: jobs, results: results}, nil
}

// workers returns the durable pull consumer the workers of repo share.
func (s Streams) workers(ctx context.Context, repo Identity) (jetstream.Consumer, error) {
	key := repo.Subjects()
	c, err := s.JS.CreateOrUpdateConsumer(ctx, JobsStream, jetstream.ConsumerConfig{
		Durable:       "workers-" + key,
		Description:   "drover workers of the repositories of root " + repo.Root,
		FilterSubject: jobsPrefix + key + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxDeliver:    -1,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the NATS consumer of %s: %w", repo, err)
	}
	return c, nil
}

// hasResult says whether the job of id, of repository repo, has a result.
// An error is an unknown answer, never "no result": a job is not run on it.
func (s Streams) hasResult(ctx context.Context, repo Identity, id string) (bool, error) {
	return s.hasMsg(ctx, ResultsStream, resultSubject(repo, id))
}

// hasMsg says whether stream holds a message on subject; an error is an
// unknown answer (the stream is not found, NATS is away).
func (s Streams) hasMsg(ctx context.Context, stream, subject string) (bool, error) {
	st, err := s.stream(ctx, stream)
	if err != nil {
		return false, fmt.Errorf("looking up the NATS stream %s: %w", stream, err)
	}
	_, err = st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up %s in the NATS stream %s: %w", subject, stream, err)
	}
	return true, nil
}

func jobSubject(repo Identity, runID string) string {
	return jobsPrefix + repo.Subjects() + "." + token(runID)
}

// jobOf is the subject of the job of id: one of its run's, its own so that
// a supervisor can tell the job is still queued or at work (the work
// queue holds it until it is acknowledged).
func jobOf(repo Identity, runID, id string) string {
	return jobSubject(repo, runID) + "." + token(id)
}

// hasJob says whether the jobs stream still holds the job of id (queued
// or at work); an error is an unknown answer.
func (s Streams) hasJob(ctx context.Context, repo Identity, runID, id string) (bool, error) {
	return s.hasMsg(ctx, JobsStream, jobOf(repo, runID, id))
}

func resultSubject(repo Identity, jobID string) string {
	return resultsPrefix + repo.Subjects() + "." + token(jobID)
}

func progressSubject(repo Identity, jobID string) string {
	return progressPref + repo.Subjects() + "." + token(jobID)
}

var plainToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// token is s as one subject token: itself when it is plain, else a hash.
func token(s string) string {
	if plainToken.MatchString(s) {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(h[:12])
}
