package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/events"
	"github.com/drover-dev/drover/internal/hook"
	"github.com/drover-dev/drover/internal/notify"
)

// TestAQueueFinishedByAStopIsNotified: the Stop that ends a queue (its
// review found no more tasks) is answered as ever, and the webhook gets a
// done notification for the session. Neither a notify.command that fails
// on every event nor a webhook that does not answer changes a decision or
// holds one up, and once the webhook answers the done still reaches it.
func TestAQueueFinishedByAStopIsNotified(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		hang    bool
	}{
		{"a failing command", "cat >/dev/null; exit 3", false},
		{"a webhook that holds its requests", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan notify.Message, 16)
			release := make(chan struct{})
			wh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var m notify.Message
				if err := json.Unmarshal(body, &m); err != nil {
					t.Errorf("webhook body %q: %v", body, err)
				}
				got <- m
				if tc.hang {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
			}))
			defer wh.Close()
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free()
			cfg := config.Defaults()
			cfg.Queue.GitCommitCheck = false
			cfg.Notify.Webhook = wh.URL + "/hook/secret-token"
			cfg.Notify.Command = tc.command
			a := newAPIServerConfig(t, cfg)
			if tc.hang {
				// The notifier is held at the webhook from here on.
				a.srv.events.Publish(context.Background(), events.Draft{Kind: api.EventNeedsReview, Run: "r0", Data: api.ReviewData{Task: "a"}})
				<-got
			}

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
			// Once the webhook answers, the done arrives all the same.
			free()
			timeout := time.After(30 * time.Second)
			for {
				select {
				case m := <-got:
					if m.Kind == api.EventNeedsReview {
						continue // the held one, tried again
					}
					if m.Event != notify.Done || m.Kind != api.EventTaskDone || m.Session != "s1" || !strings.Contains(m.Text, "s1 is done") {
						t.Errorf("notification = %+v, want s1's queue done", m)
					}
					return
				case <-timeout:
					t.Fatal("no done notification at the webhook")
				}
			}
		})
	}
}
