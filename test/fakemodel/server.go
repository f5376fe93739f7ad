// Package fakemodel is a scripted stand-in for a model API, for tests that
// drive real agent CLIs offline. It speaks three wire protocols on one
// port: the Anthropic Messages API for Claude Code (pointed at it with
// ANTHROPIC_BASE_URL=URL()), the OpenAI Responses API for the Codex CLI (a
// model provider whose base_url is ResponsesURL()), and the Gemini API for
// the Gemini CLI (GOOGLE_GEMINI_BASE_URL=URL()). A Scenario says what the
// "model" answers, in the same terms for each, and the server records every
// request so that a test can check what the CLI sent (hook block reasons,
// expanded slash commands, tool results).
//
// A request that no rule answers gets an API error (HTTP 400,
// "fakemodel: no rule matched: ...") and is listed by Unmatched, so a test
// that forgot a case fails instead of hanging.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxBody caps a request body; the CLI's requests are about 100 KB.
const maxBody = 32 << 20

// Server is a running fake model. Its methods are safe for concurrent use.
type Server struct {
	rules []compiledRule
	logf  func(format string, args ...any)
	addr  string

	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	used     []int // per rule: how often it answered
	seq      int
	requests []Request
	closed   bool
}

// Option configures Start.
type Option func(*options)

type options struct {
	addr string
	logf func(format string, args ...any)
}

// WithAddr makes the server listen on addr instead of 127.0.0.1:0.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithLogf makes the server log one line per request through logf, such
// as testing.T.Logf.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(o *options) { o.logf = logf }
}

// Start validates sc and serves it on a fresh loopback port (see WithAddr)
// until Close is called or ctx ends.
func Start(ctx context.Context, sc *Scenario, opts ...Option) (*Server, error) {
	o := options{addr: "127.0.0.1:0"}
	for _, opt := range opts {
		opt(&o)
	}
	rules, err := sc.compile()
	if err != nil {
		return nil, fmt.Errorf("starting fake model: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("starting fake model: listening on %s: %w", o.addr, err)
	}
	s := &Server{
		rules: rules,
		logf:  o.logf,
		addr:  ln.Addr().String(),
		used:  make([]int, len(rules)),
		done:  make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		// Serve returns ErrServerClosed after Close; nothing to report.
		_ = s.srv.Serve(ln)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// URL is the base URL to put in ANTHROPIC_BASE_URL or
// GOOGLE_GEMINI_BASE_URL, e.g. "http://127.0.0.1:41234".
func (s *Server) URL() string { return "http://" + s.addr }

// ResponsesURL is the base_url of a Codex model provider: URL() + "/v1",
// to which Codex appends "/responses".
func (s *Server) ResponsesURL() string { return s.URL() + "/v1" }

// Close stops the server and drops open connections. It is safe to call
// more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	_ = s.srv.Close()
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Messages returns the Messages API requests received so far, in order.
func (s *Server) Messages() []Request {
	return filter(s.Requests(), func(r Request) bool { return r.Kind == KindMessages })
}

// Turns returns the model requests of every protocol received so far, in
// order.
func (s *Server) Turns() []Request {
	return filter(s.Requests(), func(r Request) bool { return r.Kind.Turn() })
}

// Unmatched returns the model requests that no rule answered (or that
// could not be parsed). A test should fail when it is not empty.
func (s *Server) Unmatched() []Request {
	return filter(s.Requests(), func(r Request) bool { return r.Kind.Turn() && !r.Matched() })
}

// Unknown returns the requests to paths the server does not serve. The CLI
// 2.1.197 probes "HEAD /" at start; it works on with the 404.
func (s *Server) Unknown() []Request {
	return filter(s.Requests(), func(r Request) bool { return r.Kind == KindOther })
}

// Used reports how often each rule answered, by rule index.
func (s *Server) Used() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.used)
}

func filter(rs []Request, keep func(Request) bool) []Request {
	var out []Request
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// ServeHTTP answers one request and records it.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	r := Request{
		Seq:       seq,
		Time:      time.Now(),
		Method:    req.Method,
		Path:      req.URL.RequestURI(),
		Header:    req.Header.Clone(),
		Body:      body,
		SessionID: req.Header.Get("X-Claude-Code-Session-Id"),
		Rule:      -1,
		Kind:      KindOther,
	}
	p := messagesProtocol
	geminiModel, geminiMethod, isGemini := geminiPath(req.URL.Path)
	if req.Method == http.MethodPost {
		switch path := strings.TrimSuffix(req.URL.Path, "/"); {
		case path == "/v1/messages":
			r.Kind = KindMessages
		case path == "/v1/messages/count_tokens":
			r.Kind = KindCountTokens
		case path == "/v1/responses":
			r.Kind = KindResponses
			r.SessionID = req.Header.Get("Session-Id")
			p = responsesProtocol
		case isGemini && geminiMethod == "countTokens":
			r.Kind = KindCountTokens
			p = geminiProtocol(geminiModel, false)
		case isGemini:
			r.Kind = KindGenerate
			p = geminiProtocol(geminiModel, geminiMethod == "streamGenerateContent")
		}
	}
	if err != nil {
		r.Error = fmt.Sprintf("reading body: %v", err)
		s.finish(&r)
		writeJSON(w, http.StatusBadRequest, p.errorBody(http.StatusBadRequest, "invalid_request_error", "fakemodel: "+r.Error))
		return
	}

	switch r.Kind {
	case KindOther:
		r.Error = "unknown endpoint"
		s.finish(&r)
		writeJSON(w, http.StatusNotFound, errorBody("not_found_error",
			fmt.Sprintf("fakemodel: no endpoint %s %s", req.Method, req.URL.Path)))
	case KindCountTokens:
		s.finish(&r)
		if isGemini {
			writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"totalTokens":%d}`, estimateTokens(len(body))))
			return
		}
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"input_tokens":%d}`, estimateTokens(len(body))))
	default:
		s.answerTurn(w, &r, p)
	}
}

// protocol is what differs between the wire protocols of a model turn:
// how the request is read, how an error and an answer are written.
type protocol struct {
	parse     func(body []byte, r *Request) error
	errorBody func(status int, typ, message string) []byte
	write     func(w http.ResponseWriter, rp reply, r *Request)
}

var messagesProtocol = protocol{
	parse:     parseMessagesRequest,
	errorBody: func(_ int, typ, message string) []byte { return errorBody(typ, message) },
	write:     writeMessages,
}

var responsesProtocol = protocol{
	parse:     parseResponsesRequest,
	errorBody: responsesError,
	write:     writeResponses,
}

// geminiProtocol reads the model from the path and the streaming from the
// method, which the body does not carry.
func geminiProtocol(model string, stream bool) protocol {
	return protocol{
		parse: func(body []byte, r *Request) error {
			r.Stream = stream
			return parseGeminiRequest(body, model, r)
		},
		errorBody: geminiError,
		write:     writeGemini,
	}
}

// answerTurn picks the rule for a model request and sends its answer in
// the request's protocol.
func (s *Server) answerTurn(w http.ResponseWriter, r *Request, p protocol) {
	if err := p.parse(r.Body, r); err != nil {
		r.Error = err.Error()
		s.finish(r)
		writeJSON(w, http.StatusBadRequest, p.errorBody(http.StatusBadRequest, "invalid_request_error", "fakemodel: "+r.Error))
		return
	}
	cr, groups, ok := s.pick(r)
	if !ok {
		r.Error = "no rule matched: " + r.Summary()
		s.finish(r)
		writeJSON(w, http.StatusBadRequest, p.errorBody(http.StatusBadRequest, "invalid_request_error", "fakemodel: "+r.Error))
		return
	}
	if e := cr.Answer.Error; e != nil {
		r.Status = e.Status
		s.finish(r)
		msg := e.Message
		if msg == "" {
			msg = "fakemodel: scripted " + e.Type
		}
		for k, v := range e.Headers {
			w.Header().Set(k, v)
		}
		writeJSON(w, e.Status, p.errorBody(e.Status, e.Type, msg))
		return
	}
	rp, err := render(cr, groups, r)
	if err != nil {
		r.Error = err.Error()
		r.Status = http.StatusInternalServerError
		s.finish(r)
		writeJSON(w, http.StatusInternalServerError, p.errorBody(http.StatusInternalServerError, "api_error", "fakemodel: "+r.Error))
		return
	}
	s.finish(r)
	p.write(w, rp, r)
}

// writeMessages sends a rendered reply for a Messages API request.
func writeMessages(w http.ResponseWriter, rp reply, r *Request) {
	if !r.Stream {
		b, err := json.Marshal(rp.msg)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody("api_error", "fakemodel: "+err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// A write error means the client went away; the request is recorded.
	_ = writeEvents(w, rp.events())
}

// pick finds the first rule that accepts r and has answers left, counts
// the use and notes it in r.
func (s *Server) pick(r *Request) (compiledRule, []string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, cr := range s.rules {
		if cr.Times > 0 && s.used[i] >= cr.Times {
			continue
		}
		groups, ok := cr.match(r)
		if !ok {
			continue
		}
		s.used[i]++
		r.Rule = i
		r.RuleName = cr.Name
		return cr, groups, true
	}
	return compiledRule{}, nil, false
}

// finish records r. The status defaults to what the handler
// is about to send: 200 unless r carries an error.
func (s *Server) finish(r *Request) {
	if r.Status == 0 {
		switch {
		case r.Kind == KindOther:
			r.Status = http.StatusNotFound
		case r.Error != "":
			r.Status = http.StatusBadRequest
		default:
			r.Status = http.StatusOK
		}
	}
	s.mu.Lock()
	// Keep Seq order although concurrent requests may finish out of order.
	i, _ := slices.BinarySearchFunc(s.requests, r.Seq, func(x Request, seq int) int { return x.Seq - seq })
	s.requests = slices.Insert(s.requests, i, *r)
	s.mu.Unlock()
	if s.logf != nil {
		who := "unmatched"
		if r.Matched() {
			who = Rule{Name: r.RuleName}.label(r.Rule)
		}
		if !r.Kind.Turn() {
			who = r.Kind.String()
		}
		s.logf("fakemodel: %s -> %d %s", r.Summary(), r.Status, who)
	}
}

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
