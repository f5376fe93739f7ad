package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/eventually"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/reviewer"
)

// failingReviewer is a reviewer CLI (review.cli custom) that finds one
// blocking issue.
const failingReviewer = `#!/bin/sh
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":1,"summary":"no tests"}]}}\n'
`

// newPlanUnderReview starts a supervisor whose reviewer CLI (review.cli
// custom) is the shell script script, in a folder of its own, and plan
// demo in session s1, so that s1's next Stop starts a plan review. It
// returns the server and the script's folder.
func newPlanUnderReview(t *testing.T, script string) (*apiServer, string) {
	t.Helper()
	return newPlanUnderReviewConfig(t, script, config.Defaults())
}

// newPlanUnderReviewConfig is newPlanUnderReview with cfg for the rest of
// the supervisor's configuration.
func newPlanUnderReviewConfig(t *testing.T, script string, cfg config.Config) (*apiServer, string) {
	t.Helper()
	fake := t.TempDir()
	file := filepath.Join(fake, "reviewer")
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Review.CLI, cfg.Review.Command = reviewer.CLICustom, "'"+file+"' {{model}} {{prompt}}"
	a := newAPIServerConfig(t, cfg)
	dir := filepath.Join(a.paths.Root, ".drover", "plans", "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st api.PlanStatus
	a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "new"), api.PlanArgs{PlanID: "demo"}, &st)
	return a, fake
}

// A Stop that starts a plan review, from a hook client that waits
// review.hold for it (hold_ms), is answered with what the review found:
// no `drover plan wait` turn in between.
func TestStopHeldForAPlanReview(t *testing.T) {
	tests := []struct {
		name   string
		holdMS int64
		want   string
	}{
		{name: "held", holdMS: 60000, want: "plan-review-1.md"},
		{name: "not held", holdMS: 0, want: "drover plan wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newPlanUnderReview(t, failingReviewer)

			var out api.HookResponse
			a.decode(http.MethodPost, api.HookPath(hook.Stop), api.HookRequest{RequestID: "stop-1", HoldMS: tc.holdMS, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}}, &out)
			if !out.Output.IsBlock() || !strings.Contains(out.Output.Reason, tc.want) {
				t.Errorf("the stop that starts the review: %+v, want a block naming %q", out.Output, tc.want)
			}
		})
	}
}

// slowFailingReviewer is failingReviewer that says it started (a file
// "started" beside it) and then takes a second.
const slowFailingReviewer = `#!/bin/sh
: > "$(dirname "$0")/started"
sleep 1
printf '{"type":"result","subtype":"success","is_error":false,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":1,"summary":"no tests"}]}}\n'
`

// A hook client that goes away while its Stop is held (the user
// interrupted the agent) does not take the review's answer with it: the
// next Stop gets it.
func TestAbandonedHeldStopKeepsTheAnswer(t *testing.T) {
	a, fake := newPlanUnderReview(t, slowFailingReviewer)

	body, err := json.Marshal(api.HookRequest{RequestID: "stop-1", HoldMS: 60000, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+api.HookPath(hook.Stop), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := a.client.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	eventually.True(t, 20*time.Second, "the reviewer to start", func() bool {
		_, err := os.Stat(filepath.Join(fake, "started"))
		return err == nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the held stop was answered before the client went away")
	}
	eventually.True(t, 20*time.Second, "the review to end", func() bool {
		var st api.PlanStatus
		a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "status"), api.PlanArgs{}, &st)
		return !st.ReviewRunning
	})
	out := a.hook(hook.Stop, "stop-2", "s1")
	if !out.Output.IsBlock() || !strings.Contains(out.Output.Reason, "plan-review-1.md") || !strings.Contains(out.Output.Reason, "1 blocking") {
		t.Errorf("the stop after an abandoned held stop: %+v, want the review's answer", out.Output)
	}
}

// A supervisor that starts to stop answers a Stop it holds at once, with
// the committed wait instruction, rather than keeping its shutdown
// waiting for the review.
func TestDrainingAnswersAHeldStop(t *testing.T) {
	a, fake := newPlanUnderReview(t, "#!/bin/sh\n: > \"$(dirname \"$0\")/started\"\nexec sleep 3600\n")

	body, err := json.Marshal(api.HookRequest{RequestID: "stop-1", HoldMS: 600000, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}})
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan api.HookResponse, 1)
	go func() {
		// No t.Fatal off the test's goroutine: a failure is a zero answer.
		var out api.HookResponse
		defer func() { answer <- out }()
		res, err := a.client.Post(a.url+api.HookPath(hook.Stop), "application/json", bytes.NewReader(body))
		if err != nil {
			return
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(&out)
	}()
	eventually.True(t, 20*time.Second, "the reviewer to start", func() bool {
		_, err := os.Stat(filepath.Join(fake, "started"))
		return err == nil
	})
	a.srv.drain()
	select {
	case out := <-answer:
		if !out.Output.IsBlock() || !strings.Contains(out.Output.Reason, "drover plan wait") {
			t.Errorf("the held stop when the supervisor stops: %+v, want the wait instruction", out.Output)
		}
	case <-time.After(30 * time.Second):
		// The hold is ten minutes: only the drain answers in time.
		t.Fatal("the held stop was not answered when the supervisor started to stop")
	}
}

// The hook client cannot tell a held Stop from a session that does not
// answer, and waits for both; the supervisor can, since the session says
// when it holds: a Stop that is neither decided nor held within the Stop
// budget is an error, which the client turns into "let the agent go on".
// (A budget of a nanosecond stands in for a session that does not answer.)
func TestUndecidedStopIsGivenUpOnAtTheBudget(t *testing.T) {
	cfg := config.Defaults()
	cfg.Hook.Budget.Stop = time.Nanosecond
	a := newAPIServerConfig(t, cfg)
	r := a.do(http.MethodPost, api.HookPath(hook.Stop), api.HookRequest{RequestID: "stop-1", HoldMS: 60000, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}})
	if r.status != http.StatusInternalServerError || !strings.Contains(r.errorText(), "no decision within the Stop budget") {
		t.Errorf("a stop not decided within the budget = %d %s", r.status, r.body)
	}
	// Only a Stop is held, and so only a Stop has that bound: hold_ms on
	// another event changes nothing.
	r = a.do(http.MethodPost, api.HookPath(hook.PreCompact), api.HookRequest{RequestID: "compact-1", HoldMS: 60000, Input: hook.Input{SessionID: "s1", HookEventName: "PreCompact"}})
	if r.status != http.StatusOK {
		t.Errorf("a PreCompact with hold_ms = %d %s", r.status, r.body)
	}
}

// A Stop given up on at the budget that the session holds afterwards
// (the decision came late) is let go too: the review's answer is not
// spent on a Stop nobody waits for, the next Stop gets it.
func TestStopGivenUpOnKeepsTheReviewsAnswer(t *testing.T) {
	cfg := config.Defaults()
	cfg.Hook.Budget.Stop = time.Nanosecond
	a, _ := newPlanUnderReviewConfig(t, slowFailingReviewer, cfg)

	r := a.do(http.MethodPost, api.HookPath(hook.Stop), api.HookRequest{RequestID: "stop-1", HoldMS: 60000, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}})
	if r.status != http.StatusInternalServerError {
		t.Fatalf("a stop not decided within the budget = %d %s", r.status, r.body)
	}
	eventually.True(t, 20*time.Second, "the review to end", func() bool {
		var st api.PlanStatus
		a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "status"), api.PlanArgs{}, &st)
		return st.LastReview != nil && !st.ReviewRunning
	})
	out := a.hook(hook.Stop, "stop-2", "s1")
	if !out.Output.IsBlock() || !strings.Contains(out.Output.Reason, "plan-review-1.md") || !strings.Contains(out.Output.Reason, "1 blocking") {
		t.Errorf("the stop after a stop given up on: %+v, want the review's answer", out.Output)
	}
}

// costlyFailingReviewer is failingReviewer whose run costs $0.50.
const costlyFailingReviewer = `#!/bin/sh
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"structured_output":{"verdict":"FAIL","findings":[{"severity":"blocking","file":"plan.md","line":1,"summary":"no tests"}]}}\n'
`

// TestPlanWaitingForTheUserIsOnTheStream: a plan whose next review would
// pass max_reviews, or whose reviewer budget the first review spent, lets
// the Stop through and waits for the user: the stream (and so notify's
// needs-review) says needs_review for its session, after the decision.
func TestPlanWaitingForTheUserIsOnTheStream(t *testing.T) {
	for _, tc := range []struct{ name, key, value string }{
		{"max_reviews", "max_reviews", "1"},
		{"the reviewer budget", "budget_usd", "0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newPlanUnderReview(t, costlyFailingReviewer)
			var st api.PlanStatus
			a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "set"), api.PlanArgs{PlanID: "demo", Key: tc.key, Value: tc.value}, &st)
			stop := func(id string) hook.Output {
				var out api.HookResponse
				a.decode(http.MethodPost, api.HookPath(hook.Stop), api.HookRequest{RequestID: id, HoldMS: 60000, Input: hook.Input{SessionID: "s1", HookEventName: "Stop"}}, &out)
				return out.Output
			}
			if out := stop("stop-1"); !out.IsBlock() || !strings.Contains(out.Reason, "plan-review-1.md") {
				t.Fatalf("the stop held for the first review: %+v", out)
			}
			a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "advance"), api.PlanArgs{Phase: "post-review"}, &st)
			if out := stop("stop-2"); out.IsBlock() {
				t.Fatalf("the stop past %s: %+v, want it let through", tc.key, out)
			}
			// The session answers its next message once the effects
			// of the Stop's decision ran: the event is out by then.
			a.decode(http.MethodPost, api.WorkflowPath("s1", "plan", "status"), api.PlanArgs{}, &st)
			end := a.marker()
			s := a.follow(0)
			defer s.close()
			var waits []api.Event
			for _, e := range s.until(t, func(e api.Event) bool { return e.ID == end }) {
				if e.Kind == api.EventNeedsReview && e.Session == "s1" {
					waits = append(waits, e)
				}
			}
			if len(waits) != 1 || !strings.Contains(string(waits[0].Data), `"plan":"demo"`) {
				t.Errorf("needs_review events %+v, want one for plan demo", waits)
			}
		})
	}
}
