package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/api"
)

// serve runs h on a fresh unix socket and returns its path.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return path
}

// The hand-written transport against Go's own server: bodies of every
// size (small ones get a Content-Length, large ones come chunked), the
// method, host and path, and a proxy in the environment ignored.
func TestRoundTripAgainstNetHTTP(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	path := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ N int }
		if r.Method == http.MethodPost {
			if _, err := fmt.Fscan(r.Body, &in.N); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"got":%q,"pad":%q}`, r.Method+" "+r.Host+" "+r.URL.Path, strings.Repeat("x", in.N))
	}))
	for _, n := range []int{0, 10, 5000, 1 << 20} {
		resp, err := roundTrip(context.Background(), path, methodPost, "/v1/x", []byte(fmt.Sprint(n)))
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		want := fmt.Sprintf(`{"got":"POST %s /v1/x","pad":%q}`, api.Host, strings.Repeat("x", n))
		if resp.status != 200 || string(resp.body) != want {
			t.Errorf("%d: status %d, body of %d bytes, want %d", n, resp.status, len(resp.body), len(want))
		}
	}
	resp, err := roundTrip(context.Background(), path, methodGet, "/v1/health", nil)
	if err != nil || !strings.Contains(string(resp.body), "GET "+api.Host+" /v1/health") {
		t.Errorf("GET: %+v, %v", resp, err)
	}
}

func TestErrorsAndStatus(t *testing.T) {
	path := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":"no pending tasks"}`)
		case "/broken":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":"saving session s1: disk full"}`)
		case "/plain":
			w.WriteHeader(http.StatusNotFound)
		case "/drop":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case "/slow":
			<-r.Context().Done()
		}
	}))
	c := New(path)
	err := c.do(context.Background(), methodGet, "/json", nil, nil)
	// A refusal reads as the supervisor's message alone: the status
	// means nothing to the user (issue 12, item 22).
	if StatusCode(err) != http.StatusConflict || err.Error() != "no pending tasks" {
		t.Errorf("an API error: %v", err)
	}
	if err := c.do(context.Background(), methodGet, "/broken", nil, nil); err == nil || err.Error() != "the supervisor failed (HTTP 500): saving session s1: disk full" {
		t.Errorf("a failure of the supervisor: %v", err)
	}
	if err := c.do(context.Background(), methodGet, "/plain", nil, nil); StatusCode(err) != 404 || !strings.Contains(err.Error(), "Not Found") {
		t.Errorf("a plain error status: %v", err)
	}
	// A supervisor that dies mid-request may or may not have acted: the
	// caller sees "unavailable" and asks again with the same request id.
	if err := c.do(context.Background(), methodPost, "/drop", struct{}{}, nil); !IsUnavailable(err) {
		t.Errorf("a dropped connection: %v, want unavailable", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.do(ctx, methodGet, "/slow", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || IsUnavailable(err) || time.Since(start) > 5*time.Second {
		t.Errorf("past the deadline: %v after %v", err, time.Since(start))
	}
	none := New(filepath.Join(t.TempDir(), "none.sock"))
	if _, err := none.Health(context.Background()); !IsUnavailable(err) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no socket: %v, want unavailable and not-exist", err)
	}
}

// An answer that would not fit the cap is refused, whatever its framing.
func TestResponseCap(t *testing.T) {
	for _, in := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffff\r\n",
	} {
		path := filepath.Join(t.TempDir(), "s.sock")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_, _ = c.Write([]byte(in))
			c.Close()
		}()
		_, err = roundTrip(context.Background(), path, methodGet, "/", nil)
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// A server that answers before it has read the whole request (a body over
// its cap) and closes makes the write fail; its answer is still the
// answer, not "unavailable", which would have the hook client send the
// request again and again until its budget ran out.
func TestAnswerBeforeTheWholeRequest(t *testing.T) {
	path := serve(t, http.MaxBytesHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, `{"error":"request body too large"}`, http.StatusBadRequest)
		}
	}), 1<<10))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := roundTrip(ctx, path, methodPost, "/", []byte(strings.Repeat("x", 32<<20)))
	if err != nil || resp.status != http.StatusBadRequest {
		t.Errorf("got %d, %v; want the server's 400", resp.status, err)
	}
}
