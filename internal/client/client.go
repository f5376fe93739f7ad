// Package client is the Go client of drover's local API, spoken over the
// supervisor's unix socket. The hook client and every CLI command use it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/hook"
)

// maxResponseBytes caps a response body; decisions and status lists are far
// smaller, so anything larger is a broken peer.
const maxResponseBytes = 32 << 20

// Client talks to one supervisor, over a new connection to Socket for
// each request (see transport.go).
type Client struct {
	Socket string
}

// New returns a Client for the supervisor listening on socket.
func New(socket string) *Client { return &Client{Socket: socket} }

// The request methods.
const (
	methodGet  = "GET"
	methodPost = "POST"
)

// APIError is a non-2xx answer from the supervisor.
type APIError struct {
	Status  int
	Message string
}

// Error is the supervisor's message as it is for a refusal (4xx): it says
// what the user asked that cannot be done, and the status means nothing to
// them. A failure of the supervisor itself (5xx) says so.
func (e *APIError) Error() string {
	if e.Status >= 400 && e.Status < 500 && e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("the supervisor failed (HTTP %d): %s", e.Status, e.Message)
}

// ErrUnavailable wraps every failure to reach the supervisor at all (no
// socket, connection refused, connection reset before an answer).
var ErrUnavailable = errors.New("drover supervisor unavailable")

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s request: %w", path, err)
		}
		body = b
	}
	resp, err := roundTrip(ctx, c.Socket, method, path, body)
	if err != nil {
		return err
	}
	if resp.status/100 != 2 {
		return apiError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("decoding %s response: %w", path, err)
	}
	return nil
}

// apiError is the error of a non-2xx answer.
func apiError(resp response) *APIError {
	var e api.Error
	if json.Unmarshal(resp.body, &e) != nil || e.Error == "" {
		e.Error = resp.reason
	}
	return &APIError{Status: resp.status, Message: e.Error}
}

// Health asks the supervisor who it is.
func (c *Client) Health(ctx context.Context) (api.HealthResponse, error) {
	var r api.HealthResponse
	err := c.do(ctx, methodGet, api.PathHealth, nil, &r)
	return r, err
}

// Hook sends one hook event and returns the decision.
func (c *Client) Hook(ctx context.Context, e hook.Event, req api.HookRequest) (api.HookResponse, error) {
	var r api.HookResponse
	err := c.do(ctx, methodPost, api.HookPath(e), req, &r)
	return r, err
}

// Add adds a task to a session's queue.
func (c *Client) Add(ctx context.Context, sessionID, prompt string) (api.AddResponse, error) {
	var r api.AddResponse
	err := c.do(ctx, methodPost, api.SessionPath(sessionID, "tasks"), api.AddRequest{Prompt: prompt}, &r)
	return r, err
}

// Command runs a session command: "start", "stop" or "unstick".
func (c *Client) Command(ctx context.Context, sessionID, verb string) (api.CommandResponse, error) {
	var r api.CommandResponse
	err := c.do(ctx, methodPost, api.SessionPath(sessionID, verb), struct{}{}, &r)
	return r, err
}

// Workflow runs a loop or plan command with JSON arguments args (nil for
// none) and decodes its answer into out.
func (c *Client) Workflow(ctx context.Context, sessionID, workflow, verb string, args, out any) error {
	if args == nil {
		args = struct{}{}
	}
	return c.do(ctx, methodPost, api.WorkflowPath(sessionID, workflow, verb), args, out)
}

// Status lists the sessions.
func (c *Client) Status(ctx context.Context) (api.StatusResponse, error) {
	var r api.StatusResponse
	err := c.do(ctx, methodGet, api.PathStatus, nil, &r)
	return r, err
}

// Cleanup removes old session directories.
func (c *Client) Cleanup(ctx context.Context, req api.CleanupRequest) (api.CleanupResponse, error) {
	var r api.CleanupResponse
	err := c.do(ctx, methodPost, api.PathCleanup, req, &r)
	return r, err
}

// Config returns the supervisor's effective configuration as YAML.
func (c *Client) Config(ctx context.Context) (string, error) {
	var r struct {
		YAML string `json:"yaml"`
	}
	err := c.do(ctx, methodGet, api.PathConfig, nil, &r)
	return r.YAML, err
}

// IsUnavailable reports whether err means the supervisor could not be
// reached, as opposed to an answer it gave.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// StatusCode returns the HTTP status of an APIError, or 0.
func StatusCode(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// UI starts the dashboard listener if it is not on and returns its
// address and the URL of its sessions page with the token.
func (c *Client) UI(ctx context.Context) (api.UIResponse, error) {
	var r api.UIResponse
	err := c.do(ctx, methodPost, api.PathUI, struct{}{}, &r)
	return r, err
}
