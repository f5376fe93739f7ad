package supervisor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/atomicfile"
)

// The dashboard listener (ui.enabled, metrics.enabled): HTTP on 127.0.0.1
// only, since a browser cannot reach a unix socket, and so behind a token
// that only the project's owner can read. Its address goes to a file next
// to the token, for drover ui to find it.
const (
	// uiTokenFile and uiAddrFile are under the project's state folder.
	uiTokenFile = "ui-token"
	uiAddrFile  = "ui-addr"
	// uiTokenBytes is the token's entropy (hex-encoded in the file).
	uiTokenBytes = 32
)

// uiToken returns the project's dashboard token from dir, creating it
// (owner-only, 0600) the first time: it is made once per project, so that
// a URL the user bookmarked keeps working across supervisor restarts.
func uiToken(dir string) (string, error) {
	path := filepath.Join(dir, uiTokenFile)
	data, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(data))
		if len(tok) >= 2*uiTokenBytes {
			// An older file made looser (by hand, or a umask) is put back
			// to owner-only: the token is the listener's only guard.
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("restricting the dashboard token %q: %w", path, err)
			}
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the dashboard token %q: %w", path, err)
	}
	b := make([]byte, uiTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the dashboard token: %w", err)
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the dashboard token: %w", err)
	}
	return tok, nil
}

// authorized reports whether r carries tok, as "Authorization: Bearer
// TOKEN" or ?token=TOKEN, compared in constant time.
func authorized(r *http.Request, tok string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got = r.URL.Query().Get("token")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
}

// uiRoutes is the dashboard listener's handler: a request without the
// token gets 401 and nothing else; /metrics is served when m is set; the
// rest is 404 (the pages are to come).
func uiRoutes(tok string, m *metrics) http.Handler {
	mux := http.NewServeMux()
	if m != nil {
		mux.Handle("GET /metrics", m.handler())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
			http.Error(w, "401 unauthorized: the token is in .drover/state/ui-token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// startUI starts the dashboard listener on 127.0.0.1:port, writes its
// address (host:port) to the state folder's ui-addr, and returns the
// address and the function that stops it, which waits for the requests
// in flight up to ctx's end.
func (s *Server) startUI(port int) (addr string, stop func(context.Context), err error) {
	dir := s.opts.Paths.StateDir
	tok, err := uiToken(dir)
	if err != nil {
		return "", nil, err
	}
	addrFile := filepath.Join(dir, uiAddrFile)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		// The address a supervisor that died left is no listener of ours.
		_ = os.Remove(addrFile)
		return "", nil, fmt.Errorf("listening on 127.0.0.1:%d (ui.port): %w", port, err)
	}
	addr = ln.Addr().String()
	if err := atomicfile.Write(addrFile, []byte(addr+"\n"), 0o600); err != nil {
		_ = ln.Close()
		return "", nil, fmt.Errorf("writing the dashboard address: %w", err)
	}
	srv := &http.Server{
		Handler:           uiRoutes(tok, s.metrics),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("dashboard listener", zap.Error(err))
		}
	}()
	s.log.Info("dashboard listening", zap.String("addr", addr), zap.Bool("metrics", s.metrics != nil))
	return addr, func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
		// A later drover ui must not find a listener that is gone.
		if err := os.Remove(addrFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("removing the dashboard address", zap.Error(err))
		}
	}, nil
}
