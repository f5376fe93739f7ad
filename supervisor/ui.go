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
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/atomicfile"
	"github.com/drover-dev/drover/internal/dashboard"
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

// uiCookiePrefix begins the name of the cookie that carries the token in
// a browser; the listener's port ends it, since cookies are per host, not
// per port, and two projects' dashboards on 127.0.0.1 must not take each
// other's.
const uiCookiePrefix = "drover-ui-"

// uiCookieName is the token cookie's name for a request to host.
func uiCookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		port = "0"
	}
	return uiCookiePrefix + port
}

// uiCredential says where r's token came from: "bearer" (the
// Authorization header), "query" (?token=, a link drover ui printed),
// "cookie" (set by an earlier ?token=), or "" (none of them holds tok).
// Each is compared in constant time.
func uiCredential(r *http.Request, tok string) string {
	same := func(got string) bool {
		return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if same(got) {
			return "bearer"
		}
		return ""
	}
	if got := r.URL.Query().Get("token"); got != "" {
		if same(got) {
			return "query"
		}
		return ""
	}
	if c, err := r.Cookie(uiCookieName(r.Host)); err == nil && same(c.Value) {
		return "cookie"
	}
	return ""
}

// withoutToken is the path and query of u with every token parameter
// taken out, the others kept as they came: where a GET that brought the
// token in its URL is sent on. A path that begins with // keeps one
// slash, or a browser would read it as another host.
func withoutToken(u *url.URL) string {
	var keep []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		key, _, _ := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(key); part == "" || err == nil && k == "token" {
			continue
		}
		keep = append(keep, part)
	}
	loc := "/" + strings.TrimLeft(u.EscapedPath(), "/")
	if len(keep) > 0 {
		loc += "?" + strings.Join(keep, "&")
	}
	return loc
}

// uiRoutes is the dashboard listener's handler: a request without the
// token gets 401 and nothing else; the pages (internal/dashboard) and the
// event stream are served, and /metrics when metrics are on. A request
// that brought the token as ?token= gets it back as an HttpOnly,
// SameSite=Strict cookie for this listener, so that the page's links and
// its event stream work without it in every URL; a GET is answered with
// a redirect (303) to its URL without the token, so that the token stays
// out of the address bar and the browser's history (a page's: not
// /metrics or /events, whose clients are programs).
func (s *Server) uiRoutes(tok string, pages *dashboard.Renderer) http.Handler {
	mux := http.NewServeMux()
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.handler())
	}
	s.dashboardRoutes(mux, pages)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		how := uiCredential(r, tok)
		if how == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
			http.Error(w, "401 unauthorized: the token is in .drover/state/ui-token", http.StatusUnauthorized)
			return
		}
		if how == "query" {
			http.SetCookie(w, &http.Cookie{
				Name: uiCookieName(r.Host), Value: tok, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode,
			})
			// Not /metrics nor /events: scrapers and stream clients
			// keep no cookies, and a redirect would leave them at 401.
			if r.Method == http.MethodGet && r.URL.Path != "/metrics" && r.URL.Path != "/events" {
				http.Redirect(w, r, withoutToken(r.URL), http.StatusSeeOther)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// startUI starts the dashboard listener on 127.0.0.1:port, writes its
// address (host:port) to the state folder's ui-addr, and returns the
// address, the token it checks, and the function that stops it, which
// waits for the requests in flight up to ctx's end.
func (s *Server) startUI(port int) (addr, tok string, stop func(context.Context), err error) {
	dir := s.opts.Paths.StateDir
	tok, err = uiToken(dir)
	if err != nil {
		return "", "", nil, err
	}
	addrFile := filepath.Join(dir, uiAddrFile)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		// The address a supervisor that died left is no listener of ours.
		_ = os.Remove(addrFile)
		return "", "", nil, fmt.Errorf("listening on 127.0.0.1:%d (ui.port): %w", port, err)
	}
	addr = ln.Addr().String()
	if err := atomicfile.Write(addrFile, []byte(addr+"\n"), 0o600); err != nil {
		_ = ln.Close()
		return "", "", nil, fmt.Errorf("writing the dashboard address: %w", err)
	}
	pages, err := dashboard.NewRenderer()
	if err != nil {
		_ = ln.Close()
		return "", "", nil, err
	}
	srv := &http.Server{
		Handler:           s.uiRoutes(tok, pages),
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
	return addr, tok, func(ctx context.Context) {
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

// uiListener is the dashboard listener while it runs: started with the
// supervisor when ui.enabled or metrics.enabled, or later by drover ui
// (POST /v1/ui), and stopped with the supervisor. tok is the token it
// checks, read once at its start: the URL drover ui prints must hold that
// one, even if the file changed since.
type uiListener struct {
	mu   sync.Mutex
	addr string
	tok  string
	stop func(context.Context)
}

// openUI starts the dashboard listener on ui.port unless it runs, and
// returns its address and token.
func (s *Server) openUI() (addr, tok string, err error) {
	s.ui.mu.Lock()
	defer s.ui.mu.Unlock()
	if s.ui.stop != nil {
		return s.ui.addr, s.ui.tok, nil
	}
	select {
	case <-s.draining:
		return "", "", errors.New("the supervisor is stopping")
	default:
	}
	addr, tok, stop, err := s.startUI(s.cfg.Load().UI.Port)
	if err != nil {
		return "", "", err
	}
	s.ui.addr, s.ui.tok, s.ui.stop = addr, tok, stop
	return addr, tok, nil
}

// closeUI stops the dashboard listener if it runs, waiting for its
// requests in flight up to ctx's end.
func (s *Server) closeUI(ctx context.Context) {
	s.ui.mu.Lock()
	stop := s.ui.stop
	s.ui.addr, s.ui.tok, s.ui.stop = "", "", nil
	s.ui.mu.Unlock()
	if stop != nil {
		stop(ctx)
	}
}

// serveUI starts the dashboard listener if it is not on (drover ui) and
// answers its URL with the token: the socket is the owner's only, as the
// token file is.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	addr, tok, err := s.openUI()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("starting the dashboard: %w", err))
		return
	}
	s.log.Info("dashboard asked for", zap.String("addr", addr))
	writeJSON(w, http.StatusOK, api.UIResponse{Addr: addr, URL: "http://" + addr + "/?token=" + tok})
}
