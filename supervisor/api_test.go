package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/project"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testVersion = "1.2.3-test"

// apiServer is the supervisor's API served by httptest over a fresh
// project (a git repository in a temporary directory): the store and the
// actor tree are real, the socket and the lock are not there.
type apiServer struct {
	t      testing.TB
	srv    *Server
	paths  project.Paths
	url    string
	client *http.Client
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	return newAPIServerConfig(t, config.Defaults())
}

// newAPIServerConfig is newAPIServer with the configuration cfg.
func newAPIServerConfig(t *testing.T, cfg config.Config) *apiServer {
	t.Helper()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := proc.Git(ctx, root, "init", "-q"); err != nil {
		t.Fatalf("git init: %v", err)
	}
	p, err := project.PathsFor(root, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s, closeServer, err := newServer(ctx, Options{Paths: p, Config: cfg, Version: testVersion}, "")
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ts := httptest.NewServer(s.routes())
	t.Cleanup(func() {
		ts.Close()
		if err := closeServer(); err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
	return &apiServer{t: t, srv: s, paths: p, url: ts.URL, client: ts.Client()}
}

// response is one answer of the API.
type response struct {
	status int
	header http.Header
	body   []byte
}

// errorText is the message of an api.Error body ("" when it is none).
func (r response) errorText() string {
	var e api.Error
	_ = json.Unmarshal(r.body, &e)
	return e.Error
}

// do sends body (raw when it is a string, else as JSON; none when nil) to
// path. path is sent as written: escapes such as %2F reach the server.
func (a *apiServer) do(method, path string, body any) response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	res, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// decode sends a request that must succeed and decodes its answer into out.
func (a *apiServer) decode(method, path string, body, out any) {
	a.t.Helper()
	r := a.do(method, path, body)
	if r.status != http.StatusOK {
		a.t.Fatalf("%s %s = %d %s, want 200", method, path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		a.t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
	}
}

func (a *apiServer) hook(e hook.Event, reqID, sessionID string) api.HookResponse {
	a.t.Helper()
	var out api.HookResponse
	a.decode(http.MethodPost, api.HookPath(e), api.HookRequest{RequestID: reqID, Input: hook.Input{SessionID: sessionID, HookEventName: e.ClaudeName()}}, &out)
	return out
}

func (a *apiServer) status() api.StatusResponse {
	a.t.Helper()
	var out api.StatusResponse
	a.decode(http.MethodGet, api.PathStatus, nil, &out)
	return out
}

func (a *apiServer) sessionState(id string) api.SessionStatus {
	a.t.Helper()
	for _, s := range a.status().Sessions {
		if s.ID == id {
			return s
		}
	}
	a.t.Fatalf("status lists no session %s", id)
	return api.SessionStatus{}
}

func TestHealthAndVersionHeader(t *testing.T) {
	a := newAPIServer(t)
	r := a.do(http.MethodGet, api.PathHealth, nil)
	if r.status != http.StatusOK {
		t.Fatalf("health = %d %s", r.status, r.body)
	}
	var h api.HealthResponse
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatal(err)
	}
	if h.Version != testVersion || h.Project != a.paths.Root || h.PID != os.Getpid() || h.Started.IsZero() {
		t.Errorf("health = %+v, want version %s, project %s, this pid and a start time", h, testVersion, a.paths.Root)
	}
	// Every answer carries the version, refusals and unknown routes too:
	// the client compares it with its own whatever the status.
	for _, path := range []string{api.PathHealth, api.PathStatus, "/v1/nothing-here", api.RunPath("nope")} {
		if got := a.do(http.MethodGet, path, nil).header.Get(api.VersionHeader); got != testVersion {
			t.Errorf("GET %s: %s header = %q, want %q", path, api.VersionHeader, got, testVersion)
		}
	}
}

// TestRequestsAnsweredWithoutASession: refusals and answers that need no
// session set up first, each with the status and a message that names
// what was wrong.
func TestRequestsAnsweredWithoutASession(t *testing.T) {
	a := newAPIServer(t)
	// Larger than the cap: a JSON string that never ends within it.
	oversize := `{"request_id":"r","input":{"session_id":"s1","prompt":"` + strings.Repeat("a", maxRequestBytes) + `"}}`
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		want   string // in the error message, or in the body of a 200
	}{
		{"config", "GET", api.PathConfig, nil, 200, "yaml"},
		{"no runs yet", "GET", api.PathRuns, nil, 200, `{"runs":[]}`},
		{"unknown route", "GET", "/v1/nothing-here", nil, 404, ""},
		{"unknown hook event", "POST", "/v1/hook/nap", api.HookRequest{Input: hook.Input{SessionID: "s1"}}, 404, `unknown hook event "nap"`},

		{"hook body not JSON", "POST", api.HookPath(hook.Stop), "{", 400, "decoding request body"},
		{"hook body of the wrong shape", "POST", api.HookPath(hook.Stop), `{"input":{"session_id":7}}`, 400, "session_id"},
		{"task body not JSON", "POST", api.SessionPath("s1", "tasks"), "prompt: x", 400, "decoding request body"},
		{"cleanup body not JSON", "POST", api.PathCleanup, "", 400, "decoding request body"},
		{"workflow body not JSON", "POST", api.WorkflowPath("s1", "loop", "start"), "{", 400, "decoding request body"},
		{"run body not JSON", "POST", api.PathRuns, "[", 400, "decoding request body"},
		{"task body with more after its JSON", "POST", api.SessionPath("s1", "tasks"), `{"prompt":"x"} {"prompt":"y"}`, 400, "more data after the JSON value"},
		{"cleanup body with more after its JSON", "POST", api.PathCleanup, `{"days":0,"force":true}]`, 400, "more data after the JSON value"},
		{"oversize hook body", "POST", api.HookPath(hook.Stop), oversize, 400, "request body is larger than"},
		{"negative cleanup age", "POST", api.PathCleanup, api.CleanupRequest{Days: -1}, 400, "days must be 0 or more, got -1"},

		{"hook without a session id", "POST", api.HookPath(hook.Stop), api.HookRequest{RequestID: "r"}, 400, "session_id is missing"},
		{"hook session id that climbs out", "POST", api.HookPath(hook.Stop), api.HookRequest{RequestID: "r", Input: hook.Input{SessionID: "../../escape"}}, 400, "not a valid session id"},
		{"hook session id that is a path", "POST", api.HookPath(hook.SessionStart), api.HookRequest{RequestID: "r", Input: hook.Input{SessionID: "/tmp/escape"}}, 400, "not a valid session id"},
		{"task for an escaped session id", "POST", "/v1/sessions/..%2F..%2Fescape/tasks", api.AddRequest{Prompt: "x"}, 400, "not a valid session id"},
		{"task for a dotted session id", "POST", "/v1/sessions/.hidden/tasks", api.AddRequest{Prompt: "x"}, 400, "not a valid session id"},
		{"command for an escaped session id", "POST", "/v1/sessions/..%2Fescape/start", nil, 400, "not a valid session id"},
		{"workflow for an escaped session id", "POST", "/v1/sessions/%2E%2E/plan/new", api.PlanArgs{PlanID: "p"}, 400, "not a valid session id"},
		{"run with an escaped id", "GET", "/v1/runs/..%2Fescape", nil, 400, "not a valid session id"},
		{"resume of an escaped run id", "POST", "/v1/runs/..%2Fescape/resume", nil, 400, "not a valid session id"},

		{"unknown session command", "POST", api.SessionPath("s1", "dance"), nil, 404, `unknown session command "dance"`},
		{"unknown workflow", "POST", api.WorkflowPath("s1", "dance", "start"), "{}", 400, `unknown workflow "dance"`},
		{"unknown loop command", "POST", api.WorkflowPath("s1", "loop", "pause"), "{}", 400, `unknown loop command "pause"`},
		{"unknown plan command", "POST", api.WorkflowPath("s1", "plan", "frobnicate"), "{}", 400, `unknown plan command "frobnicate"`},
		{"a known verb reaches its workflow", "POST", api.WorkflowPath("s1", "loop", "status"), "{}", 200, `"active":false`},
		{"a known verb the session's state refuses", "POST", api.WorkflowPath("s1", "loop", "cancel"), "{}", 409, "no loop is running in session s1"},

		{"unknown run", "GET", api.RunPath("nope"), nil, 404, "no run nope"},
		{"resume of an unknown run", "POST", api.RunPath("nope", "resume"), nil, 404, "no run nope"},
		{"cancel of an unknown run", "POST", api.RunPath("nope", "cancel"), nil, 404, "no run nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.do(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, r.status, r.body, tt.status)
			}
			if got := r.header.Get(api.VersionHeader); got != testVersion {
				t.Errorf("%s header = %q, want %q", api.VersionHeader, got, testVersion)
			}
			switch {
			case tt.status == http.StatusOK:
				if !strings.Contains(string(r.body), tt.want) {
					t.Errorf("body %s does not contain %s", r.body, tt.want)
				}
			case tt.want != "":
				// A refusal is an api.Error whose message says why.
				if msg := r.errorText(); !strings.Contains(msg, tt.want) {
					t.Errorf("error %q (body %.200s) does not contain %q", msg, r.body, tt.want)
				}
			}
		})
	}

	// Nothing the refused requests named was created, in .drover/ or out
	// of it: the project holds only what git init and the supervisor made.
	ents, err := os.ReadDir(a.paths.Root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".drover", ".git"}) {
		t.Errorf("the project holds %v, want only .drover and .git", names)
	}
	if sessions := a.status().Sessions; len(sessions) > 1 || len(sessions) == 1 && sessions[0].ID != "s1" {
		t.Errorf("status lists %+v; no refused session id may become a session", sessions)
	}
	err = filepath.WalkDir(a.paths.SessionsDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("a refused request wrote %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHookForAnUnknownSessionIsAllowed: a session the supervisor has never
// heard of is never blocked, whatever the event.
func TestHookForAnUnknownSessionIsAllowed(t *testing.T) {
	a := newAPIServer(t)
	for _, e := range hook.Events {
		t.Run(string(e), func(t *testing.T) {
			out := a.hook(e, "req-"+string(e), "stranger-"+string(e))
			if out.Output.IsBlock() || out.Output.Kind() == "block" {
				t.Errorf("%s for an unknown session = %+v, want it allowed", e, out)
			}
			if out.Replayed {
				t.Errorf("%s: a first request was answered as replayed", e)
			}
		})
	}
}

// TestQueueStartedThroughTheAPIBlocksAStop: a queue session set up over
// the API holds the agent at Stop; a retried request id gets the recorded
// decision, not a second increment; a new request id is a new stop.
func TestQueueStartedThroughTheAPIBlocksAStop(t *testing.T) {
	a := newAPIServer(t)
	var added api.AddResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "tasks"), api.AddRequest{Prompt: "write the parser"}, &added)
	if added.Pending != 1 || !strings.HasPrefix(added.Path, a.paths.SessionsDir+string(filepath.Separator)+"s1"+string(filepath.Separator)) {
		t.Fatalf("add = %+v, want one pending task under %s/s1", added, a.paths.SessionsDir)
	}
	var started api.CommandResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "start"), nil, &started)
	if started.State != "on" {
		t.Fatalf("start = %+v, want state on", started)
	}
	if it := a.sessionState("s1").Iteration; it != 0 {
		t.Fatalf("iteration before any stop = %d, want 0", it)
	}

	first := a.hook(hook.Stop, "req-1", "s1")
	if !first.Output.IsBlock() || first.Replayed {
		t.Fatalf("stop of an active queue = %+v, want a fresh block", first)
	}
	if !strings.Contains(first.Output.Reason, filepath.Base(added.Path)) {
		t.Errorf("the block does not name the pending task %s:\n%s", filepath.Base(added.Path), first.Output.Reason)
	}
	if it := a.sessionState("s1").Iteration; it != 1 {
		t.Fatalf("iteration after a stop = %d, want 1", it)
	}

	again := a.hook(hook.Stop, "req-1", "s1")
	if !again.Replayed || again.Output != first.Output {
		t.Errorf("the retried req-1 = %+v, want the recorded %+v, replayed", again, first)
	}
	if it := a.sessionState("s1").Iteration; it != 1 {
		t.Errorf("iteration after a retried request = %d, want still 1", it)
	}

	next := a.hook(hook.Stop, "req-2", "s1")
	if next.Replayed || !next.Output.IsBlock() {
		t.Errorf("a new request id = %+v, want a fresh block", next)
	}
	if it := a.sessionState("s1").Iteration; it != 2 {
		t.Errorf("iteration after a second stop = %d, want 2", it)
	}

	var stopped api.CommandResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "stop"), nil, &stopped)
	if out := a.hook(hook.Stop, "req-3", "s1"); out.Output.IsBlock() {
		t.Errorf("stop after drover stop = %+v, want it allowed", out)
	}
}

// TestUnstickNameClashIsAConflict: a stuck task whose pending name is
// taken is the user's to sort out: a 409 whose message names both files,
// as the user reads it, not a 500 (issue 12, item 22).
func TestUnstickNameClashIsAConflict(t *testing.T) {
	a := newAPIServer(t)
	var added api.AddResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "tasks"), api.AddRequest{Prompt: "write the parser"}, &added)
	stuck := strings.TrimSuffix(added.Path, ".md") + ".stuck.md"
	if err := os.Rename(added.Path, stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(added.Path, []byte("another task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := a.do(http.MethodPost, api.SessionPath("s1", "unstick"), nil)
	if r.status != http.StatusConflict {
		t.Fatalf("unstick with a name clash = %d %s, want 409", r.status, r.body)
	}
	msg := r.errorText()
	if !strings.Contains(msg, stuck) || !strings.Contains(msg, added.Path+" already exists") {
		t.Errorf("error %q does not name %s and %s", msg, stuck, added.Path)
	}
	if strings.HasPrefix(msg, "bad request") {
		t.Errorf("error %q starts with drover's status tag", msg)
	}
}

// TestUnstickLeavesANameThatWouldReadAsDone: a stuck task named
// X.done.stuck.md is not renamed to X.done.md, which the queue would read
// as a finished task: unstick refuses it by name, and the queue keeps it.
func TestUnstickLeavesANameThatWouldReadAsDone(t *testing.T) {
	a := newAPIServer(t)
	var added api.AddResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "tasks"), api.AddRequest{Prompt: "write the parser"}, &added)
	stuck := strings.TrimSuffix(added.Path, ".md") + ".done.stuck.md"
	if err := os.Rename(added.Path, stuck); err != nil {
		t.Fatal(err)
	}
	r := a.do(http.MethodPost, api.SessionPath("s1", "unstick"), nil)
	if r.status != http.StatusConflict {
		t.Fatalf("unstick of %s = %d %s, want 409", filepath.Base(stuck), r.status, r.body)
	}
	if msg := r.errorText(); !strings.Contains(msg, stuck) || !strings.Contains(msg, "would not read as a pending task") {
		t.Errorf("error %q does not name %s and why it stays stuck", msg, stuck)
	}
	if _, err := os.Stat(stuck); err != nil {
		t.Errorf("the stuck task was moved: %v", err)
	}
	if s := a.sessionState("s1"); s.Done != 0 || s.Stuck != 1 {
		t.Errorf("after unstick the session has %d done and %d stuck, want 0 and 1", s.Done, s.Stuck)
	}
}

// TestStatusListsSessions: status lists every session the store knows and
// every session folder it does not, sorted, each as its actor shows it.
func TestStatusListsSessions(t *testing.T) {
	a := newAPIServer(t)
	if got := a.status(); len(got.Sessions) != 0 || got.Project != a.paths.Root || got.PID != os.Getpid() {
		t.Fatalf("status of a new project = %+v, want no session, this project and pid", got)
	}
	for _, id := range []string{"s-b", "s-a"} {
		a.decode(http.MethodPost, api.SessionPath(id, "tasks"), api.AddRequest{Prompt: "task of " + id}, &api.AddResponse{})
	}
	a.decode(http.MethodPost, api.SessionPath("s-b", "tasks"), api.AddRequest{Prompt: "second task of s-b"}, &api.AddResponse{})
	a.decode(http.MethodPost, api.SessionPath("s-a", "start"), nil, &api.CommandResponse{})
	// A session folder that the store does not know (its record was
	// removed by hand) shows as a stopped queue.
	orphan := filepath.Join(a.paths.SessionsDir, "s-c")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan, "20260101T000000.md"), []byte("left behind\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	got := a.status().Sessions
	type row struct {
		ID, Workflow, State string
		Pending             int
	}
	var rows []row
	for _, s := range got {
		rows = append(rows, row{s.ID, s.Workflow, s.State, s.Pending})
	}
	want := []row{{"s-a", "queue", "on", 1}, {"s-b", "queue", "off", 2}, {"s-c", "queue", "off", 1}}
	if !slices.Equal(rows, want) {
		t.Errorf("status sessions = %+v, want %+v", rows, want)
	}
}

// TestCleanup: cleanup removes old finished sessions and their records,
// keeps young, unfinished and active ones unless forced.
func TestCleanup(t *testing.T) {
	a := newAPIServer(t)
	old := time.Now().Add(-30 * 24 * time.Hour)
	// session writes a task file named name in session id's folder, and
	// dates the folder back when it is to be old.
	session := func(id, name string, aged bool) string {
		t.Helper()
		dir := filepath.Join(a.paths.SessionsDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if name != "" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("task\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if aged {
			age(t, dir, old)
		}
		return dir
	}
	// An active queue whose files are old: active wins over age.
	a.decode(http.MethodPost, api.SessionPath("active", "tasks"), api.AddRequest{Prompt: "still going"}, &api.AddResponse{})
	a.decode(http.MethodPost, api.SessionPath("active", "start"), nil, &api.CommandResponse{})
	active := session("active", "", true)
	done := session("done", "20260101T000000.done.md", true)
	pending := session("pending", "20260101T000000.md", true)
	young := session("young", "20260101T000000.done.md", false)

	var got api.CleanupResponse
	a.decode(http.MethodPost, api.PathCleanup, api.CleanupRequest{Days: 7}, &got)
	if !slices.Equal(got.Deleted, []string{done}) {
		t.Errorf("deleted %v, want only %s", got.Deleted, done)
	}
	if want := []string{active, pending, young}; !slices.Equal(got.Kept, want) {
		t.Errorf("kept %v, want %v", got.Kept, want)
	}
	if _, err := os.Stat(done); !os.IsNotExist(err) {
		t.Errorf("%s still exists (%v)", done, err)
	}
	var ids []string
	for _, s := range a.status().Sessions {
		ids = append(ids, s.ID)
	}
	if want := []string{"active", "pending", "young"}; !slices.Equal(ids, want) {
		t.Errorf("status after cleanup lists %v, want %v", ids, want)
	}

	// Forced, with no age limit: everything goes, records too.
	got = api.CleanupResponse{}
	a.decode(http.MethodPost, api.PathCleanup, api.CleanupRequest{Days: 0, Force: true}, &got)
	if want := []string{active, pending, young}; !slices.Equal(got.Deleted, want) || len(got.Kept) != 0 {
		t.Errorf("forced cleanup deleted %v and kept %v, want %v deleted", got.Deleted, got.Kept, want)
	}
	if s := a.status().Sessions; len(s) != 0 {
		t.Errorf("status after a forced cleanup lists %+v, want none", s)
	}
}

// age sets the times of dir and everything in it to t.
func age(tb testing.TB, dir string, t time.Time) {
	tb.Helper()
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, t, t)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
