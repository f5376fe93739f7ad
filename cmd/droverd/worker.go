package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/drover-dev/drover/actors"
	"github.com/drover-dev/drover/internal/cmdline"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/logging"
	"github.com/drover-dev/drover/internal/natsexec"
	"github.com/drover-dev/drover/templates"
)

// workerCmd is `droverd worker` (drover worker hands it here): a worker of
// the nats executor for the project's repository.
func (a *app) workerCmd(g *cmdline.Globals) *cobra.Command {
	cmd := cmdline.Worker()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		f := cmd.Flags()
		url, _ := f.GetString("nats")
		concurrency, _ := f.GetInt("concurrency")
		agent, _ := f.GetString("agent")
		name, _ := f.GetString("name")
		repoName, _ := f.GetString("repo-name")
		dir, _ := f.GetString("dir")
		ackWait, _ := f.GetDuration("ack-wait")
		p, err := a.paths(g)
		if err != nil {
			return err
		}
		cfg, err := a.projectConfig(p.Root)
		if err != nil {
			return err
		}
		nc := natsexec.ConfigOf(cfg.Run.NATS)
		if url != "" {
			// As drover run --nats: the credentials are run.nats.*'s.
			if err := config.CheckNATSURL(url); err != nil {
				return fmt.Errorf("--nats: %w", err)
			}
			nc.URL = url
		}
		if repoName == "" {
			repoName = natsexec.RepoName(p.Root)
		}
		id, err := natsexec.RepoIdentity(ctx, p.Root, repoName)
		if err != nil {
			return err
		}
		if dir == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				return fmt.Errorf("the worker's directory (--dir): %w", err)
			}
			dir = filepath.Join(cache, "drover", "worker")
		}
		log, err := logging.New(logging.Options{Level: cfg.Log.Level, Console: a.stderr})
		if err != nil {
			return err
		}
		defer log.Close()
		nc.Name = "drover worker " + name
		conn, err := natsexec.Connect(ctx, nc)
		if err != nil {
			return err
		}
		defer conn.Close()
		js, err := jetstream.New(conn)
		if err != nil {
			return fmt.Errorf("JetStream at %s: %w", conn.ConnectedUrlRedacted(), err)
		}
		st, err := natsexec.SetupReplicas(ctx, js, ackWait, cfg.Run.NATS.Replicas)
		if err != nil {
			return err
		}
		// As a supervisor's: the agents and tests a worker killed -9
		// leaves behind are ended.
		tag, stopWatchdog, err := a.startWatchdog(log)
		if err != nil {
			log.Zap().Warn("no watchdog: a worker that dies may leave agent and test processes behind", zap.Error(err))
		}
		defer stopWatchdog()
		w := &natsexec.Worker{NC: conn, Streams: st, Identity: id, Name: name, Dir: dir, Concurrency: concurrency, Log: log.Zap()}
		tmpl := func() (templates.Set, error) { return templates.Load(p.TemplatesDir) }
		w.Runner = natsexec.ExecutorRunner(actors.NewLocalExecutor(w.Repo(), &sync.Mutex{}, tmpl, nil, tag), agent)
		log.Zap().Sugar().Infof("drover worker serving %s from %s", id, conn.ConnectedUrlRedacted())
		return w.Run(ctx)
	}
	return cmd
}
