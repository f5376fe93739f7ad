package agentrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// now is a Friday afternoon in UTC: the time the limit texts are read at.
var limitNow = time.Date(2026, 11, 27, 13, 20, 0, 0, time.UTC)

func TestParseLimit(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		text  string
		limit bool
		reset time.Time
	}{
		{name: "real CLI 429", text: "API Error: Request rejected (429) · This request would exceed the rate limit for your organization", limit: true},
		{name: "real CLI 529", text: "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.", limit: true},
		{name: "repeated 529", text: "API Error: Repeated 529 Overloaded errors", limit: true},
		{name: "epoch form", text: "Claude AI usage limit reached|1795786200", limit: true, reset: time.Unix(1795786200, 0).UTC()},
		{name: "clock pm", text: "You've hit your limit · resets 3pm", limit: true, reset: time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)},
		{name: "clock passed today", text: "5-hour limit reached ∙ resets 1pm", limit: true, reset: time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC)},
		{name: "clock with zone", text: "You've hit your session limit · resets 11:50pm (Europe/Paris)", limit: true, reset: time.Date(2026, 11, 27, 23, 50, 0, 0, paris)},
		{name: "will reset at", text: "Claude usage limit reached. Your limit will reset at 2pm (Etc/UTC).", limit: true, reset: time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)},
		{name: "24h clock", text: "usage limit reached, resets at 14:05", limit: true, reset: time.Date(2026, 11, 27, 14, 5, 0, 0, time.UTC)},
		{name: "date and clock", text: "You've hit your weekly limit · resets Dec 2, 9am", limit: true, reset: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)},
		{name: "date passed this year", text: "You've hit your weekly limit · resets Jan 2, 9am", limit: true, reset: time.Date(2027, 1, 2, 9, 0, 0, 0, time.UTC)},
		{name: "timestamp", text: "You've hit your limit. Your limit will reset at 2026-11-27 18:00:00", limit: true, reset: time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)},
		{name: "RFC 3339", text: "API Error: Request rejected (429) · usage limit reached, resets at 2026-11-27T14:30:00+01:00", limit: true, reset: time.Date(2026, 11, 27, 13, 30, 0, 0, time.UTC)},
		{name: "gemini quota", text: `{"error":{"code":429,"message":"Quota exceeded for metric generate_content_requests","status":"RESOURCE_EXHAUSTED"}}`, limit: true},
		{name: "codex usage limit", text: "You've hit your usage limit. Try again in 2 hours.", limit: true, reset: limitNow.Add(2 * time.Hour)},
		{name: "retry after", text: "429 Too Many Requests: retry after 30 seconds", limit: true, reset: limitNow.Add(30 * time.Second)},
		{name: "try again in minutes", text: "Rate limit exceeded, try again in 5 minutes", limit: true, reset: limitNow.Add(5 * time.Minute)},
		{name: "bare hour is no clock", text: "rate limit: resets 5", limit: true},
		{name: "not a clock", text: "usage limit reached, resets 13pm", limit: true},
		{name: "not a limit", text: "Not logged in · Please run /login"},
		{name: "other status", text: "API Error: 500 Internal server error"},
		{name: "empty", text: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := ParseLimit(tt.text, limitNow)
			if ok != tt.limit {
				t.Fatalf("ParseLimit(%q) limit = %v, want %v", tt.text, ok, tt.limit)
			}
			if !l.Reset.Equal(tt.reset) {
				t.Errorf("ParseLimit(%q) reset = %v, want %v", tt.text, l.Reset, tt.reset)
			}
			if ok && l.Message != tt.text {
				t.Errorf("message %q, want the text", l.Message)
			}
		})
	}
}

// detectLimit reads the limit from what the run reported, and only from
// a run that failed as a limit would make it fail.
func TestDetectLimit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		res    Result
		limit  bool
		status int
		reset  time.Time
	}{
		{name: "429 result", res: Result{SawResult: true, IsError: true, APIErrorStatus: 429, FinalText: "API Error: Request rejected (429) · resets at 14:00"}, limit: true, status: 429, reset: time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)},
		{name: "529 status, plain text", res: Result{SawResult: true, IsError: true, APIErrorStatus: 529, FinalText: "the server is busy"}, limit: true, status: 529},
		{name: "synthetic message error only", res: Result{ExitCode: 1, apiError: "rate_limit"}, limit: true},
		{name: "usage text in the error result", res: Result{SawResult: true, IsError: true, FinalText: "Claude AI usage limit reached|1795786200"}, limit: true, reset: time.Unix(1795786200, 0).UTC()},
		{name: "stderr without a result", res: Result{ExitCode: 1, Stderr: "starting\nError: You've hit your limit · resets 3pm"}, limit: true, reset: time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)},
		{name: "other error", res: Result{SawResult: true, IsError: true, FinalText: "Not logged in"}},
		{name: "other status", res: Result{SawResult: true, IsError: true, APIErrorStatus: 500, FinalText: "API Error: 500"}},
		{name: "a finished agent writing of rate limits", res: Result{ExitCode: 1, SawResult: true, FinalText: "Added the rate limit middleware."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := detectLimit(&tt.res, limitNow)
			if (l != nil) != tt.limit {
				t.Fatalf("detectLimit = %+v, want a limit: %v", l, tt.limit)
			}
			if l != nil && (l.Status != tt.status || !l.Reset.Equal(tt.reset) || l.Message == "") {
				t.Errorf("limit %+v, want status %d reset %v and a message", l, tt.status, tt.reset)
			}
		})
	}
}

// A run that ends on what the real CLI prints for a 429 has its limit in
// the result, next to the usual agent error.
func TestRunReportsLimit(t *testing.T) {
	res, err := Run(context.Background(), fakeSpec(t, "limit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Limit == nil {
		t.Fatalf("Result.Err %v, Limit %+v; want both", res.Err, res.Limit)
	}
	want := time.Date(2026, 1, 1, 12, 30, 0, 0, time.UTC)
	if l := res.Limit; l.Status != 429 || !l.Reset.Equal(want) || !strings.Contains(l.Message, "Request rejected (429)") {
		t.Errorf("limit %+v, want 429 resetting at %v", l, want)
	}
	if res.APIErrorStatus != 429 || !errors.Is(res.Err, ErrAgentError) && res.ExitCode != 1 {
		t.Errorf("result %+v", res)
	}
	// An agent that fails otherwise met no limit.
	res, err = Run(context.Background(), fakeSpec(t, "fail"), nil)
	if err != nil || res.Err == nil || res.Limit != nil {
		t.Errorf("failing agent: Err %v, Limit %+v", res.Err, res.Limit)
	}
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{
		"API Error: Request rejected (429) · This request would exceed the rate limit for your organization",
		"API Error: 529 Overloaded. This is a server-side issue",
		"Claude AI usage limit reached|1795786200",
		"You've hit your session limit · resets 11:50pm (America/Los_Angeles)",
		"You've hit your weekly limit · resets Apr 23, 3pm",
		"usage limit reached, resets at 2026-11-27T14:30:00+01:00",
		"Your limit will reset at 2026-05-09 18:00:00",
		"rate limit: try again in 5 minutes",
		"resets 12am (Nowhere/Zone)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, ok := ParseLimit(text, limitNow)
		again, ok2 := ParseLimit(text, limitNow)
		if ok != ok2 || !l.Reset.Equal(again.Reset) || l.Message != again.Message {
			t.Fatal("ParseLimit is not deterministic")
		}
		if !ok {
			if l != (Limit{}) {
				t.Fatalf("no limit, but %+v", l)
			}
			return
		}
		if len(l.Message) > maxLimitMessage || utf8.ValidString(text) && !utf8.ValidString(l.Message) {
			t.Fatalf("message of %d bytes: %q", len(l.Message), l.Message)
		}
		// A clock time is the next one after now; only an absolute time
		// (a Unix time, a date) may be earlier.
		if m := resetClock.FindStringSubmatch(text); !l.Reset.IsZero() && m != nil && m[1] == "" && resetEpoch.FindString(text) == "" && resetStamp.FindString(text) == "" && !l.Reset.After(limitNow) {
			t.Fatalf("clock reset %v not after now in %q", l.Reset, text)
		}
	})
}
