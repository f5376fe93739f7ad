package client

import (
	"context"

	"github.com/drover-dev/drover/internal/api"
)

// StartRun starts a run of a task graph and returns it as first saved.
func (c *Client) StartRun(ctx context.Context, req api.StartRunRequest) (api.Run, error) {
	var r api.Run
	err := c.do(ctx, methodPost, api.PathRuns, req, &r)
	return r, err
}

// Runs lists the project's runs, newest first.
func (c *Client) Runs(ctx context.Context) ([]api.Run, error) {
	var r api.RunsResponse
	err := c.do(ctx, methodGet, api.PathRuns, nil, &r)
	return r.Runs, err
}

// Run returns one run.
func (c *Client) Run(ctx context.Context, id string) (api.Run, error) {
	var r api.Run
	err := c.do(ctx, methodGet, api.RunPath(id), nil, &r)
	return r, err
}

// ResumeRun goes on with a run that is not being worked.
func (c *Client) ResumeRun(ctx context.Context, id string) (api.Run, error) {
	var r api.Run
	err := c.do(ctx, methodPost, api.RunPath(id, "resume"), struct{}{}, &r)
	return r, err
}

// CancelRun stops a run being worked: its agents are killed and it ends
// failed. The run is returned as the cancel left it, maybe still active
// while a wave checkpoint finishes.
func (c *Client) CancelRun(ctx context.Context, id string) (api.Run, error) {
	var r api.Run
	err := c.do(ctx, methodPost, api.RunPath(id, "cancel"), struct{}{}, &r)
	return r, err
}
