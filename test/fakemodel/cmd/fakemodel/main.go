// Command fakemodel serves a fakemodel scenario on loopback, to try a
// scenario against the real Claude Code CLI by hand:
//
//	go run ./test/fakemodel/cmd/fakemodel -scenario s.yaml -record out.jsonl
//	ANTHROPIC_BASE_URL=<printed URL> ANTHROPIC_API_KEY=dummy claude --print "..."
//
// The same port serves the Codex CLI (a model provider with base_url
// <printed URL>/v1 and wire_api "responses") and the Gemini CLI
// (GOOGLE_GEMINI_BASE_URL=<printed URL>); test/othercli has their offline
// configuration.
//
// It logs one line per request to stderr. On SIGINT or SIGTERM it writes the
// recorded requests (with their raw bodies) as JSON lines to -record, and
// exits 1 if a request went unanswered.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/drover-dev/drover/test/fakemodel"
)

func main() {
	scenario := flag.String("scenario", "", "scenario YAML `file` (required)")
	addr := flag.String("addr", "127.0.0.1:0", "listen `address`")
	record := flag.String("record", "", "write the recorded requests as JSON lines to `file` on exit")
	flag.Parse()
	if *scenario == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *scenario, *addr, *record, os.Stdout); err != nil {
		log.SetFlags(0)
		log.Fatalf("fakemodel: %v", err)
	}
}

func run(ctx context.Context, scenarioPath, addr, recordPath string, stdout io.Writer) error {
	sc, err := fakemodel.LoadScenario(scenarioPath)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	srv, err := fakemodel.Start(ctx, sc, fakemodel.WithAddr(addr), fakemodel.WithLogf(logger.Printf))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, srv.URL())
	<-ctx.Done()
	srv.Close()

	if recordPath != "" {
		if err := writeRecord(recordPath, srv.Requests()); err != nil {
			return err
		}
	}
	if n := len(srv.Unmatched()); n > 0 {
		return fmt.Errorf("%d request(s) matched no rule", n)
	}
	return nil
}

// recordLine is one request in the -record file.
type recordLine struct {
	Seq       int             `json:"seq"`
	Kind      string          `json:"kind"`
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Status    int             `json:"status"`
	Rule      int             `json:"rule"`
	RuleName  string          `json:"rule_name,omitempty"`
	Error     string          `json:"error,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Header    map[string]any  `json:"header"`
	Body      json.RawMessage `json:"body,omitempty"`
	BodyText  string          `json:"body_text,omitempty"`
}

func writeRecord(path string, reqs []fakemodel.Request) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating record file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing record file: %w", cerr)
		}
	}()
	enc := json.NewEncoder(f)
	for _, r := range reqs {
		line := recordLine{
			Seq: r.Seq, Kind: r.Kind.String(), Method: r.Method, Path: r.Path, Status: r.Status,
			Rule: r.Rule, RuleName: r.RuleName, Error: r.Error, SessionID: r.SessionID,
			Header: map[string]any{},
		}
		for k, v := range r.Header {
			line.Header[k] = v
		}
		if json.Valid(r.Body) {
			line.Body = r.Body
		} else {
			line.BodyText = string(r.Body)
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("writing record file: %w", err)
		}
	}
	return nil
}
