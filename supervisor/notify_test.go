package supervisor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/notify"
)

// TestAQueueFinishedByAStopIsNotified: the Stop that ends a queue (its
// review found no more tasks) is answered as ever, and the webhook gets a
// done notification for the session; a notify.command that fails on every
// event changes no decision.
func TestAQueueFinishedByAStopIsNotified(t *testing.T) {
	got := make(chan notify.Message, 16)
	wh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m notify.Message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("webhook body %q: %v", body, err)
		}
		got <- m
	}))
	defer wh.Close()
	cfg := config.Defaults()
	cfg.Queue.GitCommitCheck = false
	cfg.Notify.Webhook = wh.URL + "/hook/secret-token"
	cfg.Notify.Command = "cat >/dev/null; exit 3"
	a := newAPIServerConfig(t, cfg)

	var added api.AddResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "tasks"), api.AddRequest{Prompt: "write the parser"}, &added)
	var started api.CommandResponse
	a.decode(http.MethodPost, api.SessionPath("s1", "start"), nil, &started)
	if out := a.hook(hook.Stop, "r1", "s1"); !out.Output.IsBlock() {
		t.Fatalf("stop with a pending task = %+v, want a block", out)
	}
	// The agent did the task.
	if err := os.Rename(added.Path, strings.TrimSuffix(added.Path, ".md")+".done.md"); err != nil {
		t.Fatal(err)
	}
	if out := a.hook(hook.Stop, "r2", "s1"); !out.Output.IsBlock() {
		t.Fatalf("stop with an empty queue = %+v, want the review's block", out)
	}
	if out := a.hook(hook.Stop, "r3", "s1"); out.Output.IsBlock() {
		t.Fatalf("stop after a review that found nothing = %+v, want it allowed", out)
	}
	if s := a.sessionState("s1"); s.State != "off" {
		t.Errorf("queue state = %q, want off", s.State)
	}
	select {
	case m := <-got:
		if m.Event != notify.Done || m.Kind != api.EventTaskDone || m.Session != "s1" || !strings.Contains(m.Text, "s1 is done") {
			t.Errorf("notification = %+v, want s1's queue done", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no done notification at the webhook")
	}
}
