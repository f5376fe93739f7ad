package natsexec

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkJobTransport splits what the nats executor adds to an
// iteration into its steps, in a repository of 1 MB and of 50 MB of
// incompressible data (packed, as a clone's history is), each step as Dispatcher.Do and Worker do it:
// bundle (the supervisor bundles the job's base and branch), put (into
// the object store), get (the worker fetches it), unpack (the worker
// fetches the bundle into its repository, where earlier jobs left their
// objects), result (the worker bundles one new commit and stores it) and
// apply (the supervisor fetches the result bundle and sets the branch).
// job-ns/op is a whole Dispatcher.Do of a job whose iteration commits one
// file and takes no time: the steps plus the messages. One op is one job.
func BenchmarkJobTransport(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int64
	}{{"1MB", 1 << 20}, {"50MB", 50 << 20}} {
		b.Run("repo="+size.name, func(b *testing.B) {
			ctx := context.Background()
			s := startServer(b)
			repo := b.TempDir()
			mustGit(b, repo, "init", "--quiet", "-b", "main")
			f, err := os.Create(filepath.Join(repo, "blob.bin"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyN(f, rand.Reader, size.bytes); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			mustGit(b, repo, "add", "blob.bin")
			mustGit(b, repo, "commit", "--quiet", "-m", "blob")
			// Packed, as a cloned repository's history is.
			mustGit(b, repo, "repack", "-adq")
			base := mustGit(b, repo, "rev-parse", "HEAD")
			id, err := RepoIdentity(ctx, repo, "bench")
			if err != nil {
				b.Fatal(err)
			}
			nc, st := connect(b, s, 0)
			local := openLocal(ctx, repo)
			d := Dispatcher{NC: nc, Streams: st, Repo: repo, Identity: id, local: local}

			// The worker of the steps, and the worker of the whole jobs.
			steps := &Worker{Streams: st, Identity: id, Dir: b.TempDir()}
			if err := steps.initRepo(ctx); err != nil {
				b.Fatal(err)
			}
			wnc, wst := connect(b, s, 0)
			w := &Worker{NC: wnc, Streams: wst, Identity: id, Name: "w", Dir: b.TempDir(), Runner: RunnerFunc(commitOne)}
			wctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = w.Run(wctx) })
			b.Cleanup(func() {
				cancel()
				wg.Wait()
			})

			var bundle, put, get, unpack, result, apply, job time.Duration
			var bundleBytes int64
			tmp := b.TempDir()
			// The steps' worker has the base, as every worker has after
			// its first job from it: each step is per job.
			if err := d.putBase(ctx, Job{ID: "bench-base", Base: base}); err != nil {
				b.Fatal(err)
			}
			if err := steps.fetchBase(ctx, Job{ID: "bench-base", Base: base}, filepath.Join(tmp, "base.bundle")); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				branch := fmt.Sprintf("drover/bench/t%d", i)
				name := fmt.Sprintf("job/bench-%d", i)
				// The branch has a commit of an earlier iteration (a
				// first iteration's has none, and no job bundle).
				b.StopTimer()
				if _, err := commitOne(ctx, repo, Job{ID: fmt.Sprintf("bench-pre-%d", i), Base: base, Branch: branch}, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				lap := time.Now()
				since := func(d *time.Duration) {
					now := time.Now()
					*d += now.Sub(lap)
					lap = now
				}
				data, head, err := local.bundleJob(ctx, base, branch)
				if err != nil {
					b.Fatal(err)
				}
				since(&bundle)
				if err := putBytes(ctx, st.Bundles, data, name); err != nil {
					b.Fatal(err)
				}
				since(&put)
				got := filepath.Join(tmp, "got.bundle")
				if err := st.Bundles.GetFile(ctx, name, got); err != nil {
					b.Fatal(err)
				}
				since(&get)
				if _, err := steps.local.unbundle(ctx, got); err != nil {
					b.Fatal(err)
				}
				since(&unpack)
				j := Job{ID: fmt.Sprintf("bench-%d", i), Base: base, Branch: branch, Head: head}
				if _, err := commitOne(ctx, steps.Repo(), j, nil); err != nil {
					b.Fatal(err)
				}
				lap = time.Now()
				var res Result
				if err := steps.bundleResult(ctx, j, &res); err != nil {
					b.Fatal(err)
				}
				since(&result)
				if err := d.apply(ctx, j, res); err != nil {
					b.Fatal(err)
				}
				since(&apply)
				bundleBytes += int64(len(data))
				_ = st.Bundles.Delete(ctx, name)

				j = Job{ID: fmt.Sprintf("bench-job-%d", i), RunID: "bench", Task: "t", Iteration: 1, Base: base, Branch: branch + "-job"}
				lap = time.Now()
				if _, err := d.Do(ctx, j, nil); err != nil {
					b.Fatal(err)
				}
				since(&job)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(bundle), "bundle-ns/op")
			b.ReportMetric(per(put), "put-ns/op")
			b.ReportMetric(per(get), "get-ns/op")
			b.ReportMetric(per(unpack), "unpack-ns/op")
			b.ReportMetric(per(result), "result-ns/op")
			b.ReportMetric(per(apply), "apply-ns/op")
			b.ReportMetric(per(job), "job-ns/op")
			b.ReportMetric(float64(bundleBytes)/float64(b.N), "bundle-B/op")
		})
	}
}

// commitOne is a scripted iteration that takes no time: one commit of a
// file on the job's branch, without a work tree.
func commitOne(ctx context.Context, repo string, job Job, _ func(json.RawMessage)) (json.RawMessage, error) {
	parent := job.Base
	if job.Head != "" {
		parent = job.Head
	}
	blob, err := gitIn(ctx, repo, job.ID+"\n", "hash-object", "-w", "--stdin")
	if err != nil {
		return nil, err
	}
	tree, err := gitIn(ctx, repo, "100644 blob "+blob+"\t"+job.ID+"\n", "mktree")
	if err != nil {
		return nil, err
	}
	commit, err := gitOut(ctx, repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit-tree", tree, "-p", parent, "-m", job.ID)
	if err != nil {
		return nil, err
	}
	if _, err := gitOut(ctx, repo, "update-ref", "refs/heads/"+job.Branch, commit); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

// gitIn is gitOut with stdin.
func gitIn(ctx context.Context, dir, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
