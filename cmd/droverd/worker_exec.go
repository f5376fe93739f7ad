package main

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/natsexec"
)

// natsConfig is how the project's configuration reaches NATS.
func natsConfig(config.Config) natsexec.Config { return natsexec.Config{} }

// workerRunner runs a worker's jobs.
func workerRunner(string, *zap.Logger) natsexec.Runner {
	return natsexec.RunnerFunc(func(context.Context, string, natsexec.Job, func(json.RawMessage)) (json.RawMessage, error) {
		return nil, errors.New("this droverd has no executor for jobs")
	})
}
