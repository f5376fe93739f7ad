package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// TestUIPrintsAURLThatAnswers: drover ui --print starts the supervisor
// and its dashboard (ui.enabled is off) and prints a 127.0.0.1 URL with
// the token: a browser that opens it is given the token's cookie and
// sent on to the sessions page at the address without the token (200),
// and the same address without the token nor the cookie answers 401. A
// second drover ui finds the same listener.
func TestUIPrintsAURLThatAnswers(t *testing.T) {
	p := newProj(t)
	p.must("", "do", "--session", "ui-session", "write the parser")
	printed := strings.TrimSpace(p.must("", "ui", "--print"))
	u, err := url.Parse(printed)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Query().Get("token") == "" {
		t.Fatalf("drover ui --print = %q, want http://127.0.0.1:PORT/?token=...", printed)
	}
	if again := strings.TrimSpace(p.must("", "ui", "--open=false")); !strings.Contains(again, printed) {
		t.Errorf("a second drover ui printed %q, want the same URL %q", again, printed)
	}
	for _, tc := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"with the token", printed, http.StatusOK, `data-session="ui-session"`},
		{"without the token", "http://" + u.Host + "/", http.StatusUnauthorized, "401 unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := (&http.Client{Jar: jar}).Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
				t.Errorf("GET %s = %d\n%s\nwant %d with %q", tc.name, res.StatusCode, body, tc.code, tc.want)
			}
			if res.Request.URL.Query().Has("token") {
				t.Errorf("GET %s ended at %s with the token in its query, want the address without it", tc.name, res.Request.URL.Path)
			}
		})
	}
}
