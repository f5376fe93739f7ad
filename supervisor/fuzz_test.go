package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/proc"
	"github.com/drover-dev/drover/internal/project"
)

// fuzzRoutes are the requests whose bodies FuzzRequestBody sends: every
// hook event and every session command that decodes a body and acts only
// on drover's own state. A run start is left out (it starts agents); its
// graph and options have targets of their own (rungraph, workflow/run).
var fuzzRoutes = func() []string {
	var r []string
	for _, e := range hook.Events {
		r = append(r, api.HookPath(e))
	}
	return append(r,
		"/v1/sessions/{id}/tasks",
		api.PathCleanup,
		api.WorkflowPath("{id}", "loop", "start"),
		api.WorkflowPath("{id}", "loop", "status"),
		api.WorkflowPath("{id}", api.NotesWorkflow, "set"),
		api.WorkflowPath("{id}", "plan", "status"),
		api.WorkflowPath("{id}", "plan", "new"),
	)
}()

// fuzzSessions are the sessions the fuzzed requests go to: a few, so that
// the requests build up state in each (a queue, a loop, notes, a plan) and
// later ones meet it.
var fuzzSessions = []string{"fuzz-a", "fuzz-b", "fuzz-c"}

// FuzzRequestBody sends arbitrary bytes as the body of each API request
// that has one, to a real supervisor (store, actors, workflows; no socket).
// Whatever the body, the answer is never a server error, is JSON, and a
// refusal names what was wrong with the request; a hook event's answer is
// a decision Claude Code can read.
func FuzzRequestBody(f *testing.F) {
	for i := range fuzzRoutes {
		r := uint8(i)
		f.Add(r, uint8(0), []byte(`{}`))
		f.Add(r, uint8(1), []byte(`not json`))
		f.Add(r, uint8(2), []byte(`{"input":{"session_id":"fuzz-a"}}`))
	}
	for _, e := range hook.Events {
		i := uint8(slices.Index(fuzzRoutes, api.HookPath(e)))
		body, _ := json.Marshal(api.HookRequest{RequestID: "r-" + string(e), Input: hook.Input{
			SessionID: "fuzz-a", HookEventName: e.ClaudeName(), Cwd: "/", TranscriptPath: "/nonexistent/t.jsonl",
			Prompt: "/drover:add x", Source: "compact", Trigger: "auto", Reason: "clear", StopHookActive: true,
		}})
		f.Add(i, uint8(0), body)
	}
	f.Add(uint8(6), uint8(0), []byte(`{"prompt":"write the tests"}`))
	f.Add(uint8(7), uint8(0), []byte(`{"days":-1}`))
	f.Add(uint8(8), uint8(1), []byte(`{"prompt":"go","max_iterations":3,"completion_promise":"DONE","max_usd":1.5}`))
	f.Add(uint8(10), uint8(1), []byte(`{"question":"why?","decision":"keep it"}`))
	f.Add(uint8(12), uint8(2), []byte(`{"plan_id":"p1","max_reviews":-1,"budget_usd":-2}`))

	h, dir := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route, session uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		id := fuzzSessions[int(session)%len(fuzzSessions)]
		path = strings.ReplaceAll(path, "{id}", id)
		if strings.HasPrefix(path, "/v1/hook/") {
			// Hooks carry their session in the body: keep it to the
			// fuzzed sessions, so that the store does not grow with
			// every input (an odd id is the hook package's to check).
			body = withSession(body, id)
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		out := rec.Body.Bytes()
		if res.StatusCode >= 500 {
			t.Fatalf("POST %s %q = %d %s, want no server error (project %s)", path, body, res.StatusCode, out, dir)
		}
		if !json.Valid(out) {
			t.Fatalf("POST %s %q answered %d with a body that is not JSON: %q", path, body, res.StatusCode, out)
		}
		if res.StatusCode != http.StatusOK {
			var e api.Error
			if err := json.Unmarshal(out, &e); err != nil || strings.TrimSpace(e.Error) == "" {
				t.Fatalf("POST %s %q = %d with no error text: %s", path, body, res.StatusCode, out)
			}
			if !json.Valid(body) && res.StatusCode == http.StatusBadRequest && !strings.Contains(e.Error, "request body") {
				t.Fatalf("POST %s %q: the refusal %q does not say the body is at fault", path, body, e.Error)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("POST %s accepted a body that is not JSON: %q", path, body)
		}
		if strings.HasPrefix(path, "/v1/hook/") {
			var hr api.HookResponse
			if err := json.Unmarshal(out, &hr); err != nil {
				t.Fatalf("POST %s: answer %s is no hook decision: %v", path, out, err)
			}
			if hr.Output.IsBlock() && strings.TrimSpace(hr.Output.Reason) == "" {
				t.Fatalf("POST %s %q: a block with no reason: %s", path, body, out)
			}
		}
	})
}

// withSession sets the session id of a hook request body that is a JSON
// object with an object "input"; any other body is sent as it is.
func withSession(body []byte, id string) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || req == nil {
		return body
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(req["input"], &in) != nil || in == nil {
		return body
	}
	in["session_id"], _ = json.Marshal(id)
	req["input"], _ = json.Marshal(in)
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}

// fuzzServer is newAPIServer for a fuzz target: one supervisor for all the
// inputs of a fuzz worker, served without a listener.
func fuzzServer(f *testing.F) (http.Handler, string) {
	f.Helper()
	root := f.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := proc.Git(ctx, root, "init", "-q"); err != nil {
		f.Fatalf("git init: %v", err)
	}
	p, err := project.PathsFor(root, func(string) string { return "" })
	if err != nil {
		f.Fatal(err)
	}
	s, closeServer, err := newServer(ctx, Options{Paths: p, Config: config.Defaults(), Version: testVersion}, "")
	if err != nil {
		f.Fatalf("newServer: %v", err)
	}
	f.Cleanup(func() {
		if err := closeServer(); err != nil {
			f.Errorf("closing the server: %v", err)
		}
	})
	return s.routes(), root
}
