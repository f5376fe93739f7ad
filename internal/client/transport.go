package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/sockets"
)

// This file speaks just enough HTTP/1.1 to the supervisor: one request per
// connection (Connection: close), a JSON body with a Content-Length, and
// an answer with a Content-Length, chunked, or ended by the close. It is
// not net/http because drover runs as a new process on every hook event and
// net/http (with the TLS and certificate code it links) adds about a
// millisecond to every start (see cmd/drover's BenchmarkHookStop).

// response is the supervisor's answer: its status and body.
type response struct {
	status int
	reason string
	body   []byte
}

// roundTrip sends one request to the socket and reads the whole answer.
// Failing to connect, or losing the connection before the status line, is
// ErrUnavailable: the supervisor is gone or going, and a request carries
// what makes it safe to send again.
func roundTrip(ctx context.Context, socket, method, path string, body []byte) (response, error) {
	conn, err := sockets.Dial(ctx, socket)
	if err != nil {
		return response{}, unavailable(ctx, path, socket, err)
	}
	defer conn.Close()
	// The context bounds the whole exchange: its end unblocks a read or
	// write at once (after ctx.Err is set, so the error says why).
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var req bytes.Buffer
	req.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + api.Host + "\r\nConnection: close\r\n")
	if body != nil {
		req.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	req.WriteString("\r\n")
	req.Write(body)
	_, werr := conn.Write(req.Bytes())

	// A server may answer before it has read the whole request (a body
	// over its cap) and close: the write then fails, but the answer is
	// there to read, and it is the answer, not "unavailable".
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		if werr != nil {
			err = werr
		}
		return response{}, unavailable(ctx, path, socket, err)
	}
	resp, err := parseStatus(line)
	if err != nil {
		return response{}, fmt.Errorf("reading %s response: %w", path, err)
	}
	if resp.body, err = readBody(r); err != nil {
		if ctx.Err() != nil {
			return response{}, fmt.Errorf("calling %s: %w", path, ctx.Err())
		}
		return response{}, fmt.Errorf("reading %s response: %w", path, err)
	}
	return resp, nil
}

func unavailable(ctx context.Context, path, socket string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("calling %s: %w", path, ctx.Err())
	}
	return fmt.Errorf("calling %s on %s: %w: %w", path, socket, ErrUnavailable, err)
}

// parseStatus reads "HTTP/1.1 200 OK".
func parseStatus(line string) (response, error) {
	line = strings.TrimRight(line, "\r\n")
	proto, rest, _ := strings.Cut(line, " ")
	code, reason, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || status < 100 || status > 999 {
		return response{}, fmt.Errorf("malformed status line %q", line)
	}
	return response{status: status, reason: reason}, nil
}

// readBody reads the header lines and then the body, capped at
// maxResponseBytes.
func readBody(r *bufio.Reader) ([]byte, error) {
	length, chunked, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	switch {
	case chunked:
		return readChunked(r)
	case length > maxResponseBytes:
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxResponseBytes)
	case length >= 0:
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("reading the body: %w", err)
		}
		return body, nil
	}
	return readCapped(r)
}

// readChunked decodes a chunked body.
func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading a chunk size: %w", err)
		}
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			// The trailer, if any, is not needed: the connection closes.
			return body, nil
		}
		if int64(len(body))+n > maxResponseBytes {
			return nil, fmt.Errorf("the answer is larger than %d bytes", maxResponseBytes)
		}
		start := len(body)
		body = append(body, make([]byte, n)...)
		if _, err := io.ReadFull(r, body[start:]); err != nil {
			return nil, fmt.Errorf("reading a chunk: %w", err)
		}
		if _, err := r.Discard(2); err != nil { // the chunk's CRLF
			return nil, fmt.Errorf("reading a chunk: %w", err)
		}
	}
}

// readCapped reads a body delimited by the connection's close.
func readCapped(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxResponseBytes)
	}
	return body, nil
}

// readHeader reads the header lines up to the blank line, and returns the
// body's Content-Length (-1 for none) and whether it is chunked.
func readHeader(r *bufio.Reader) (length int, chunked bool, err error) {
	length = -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, false, fmt.Errorf("reading the header: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return length, chunked, nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return 0, false, fmt.Errorf("malformed header line %q", line)
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return 0, false, fmt.Errorf("malformed Content-Length %q", value)
			}
			length = n
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		}
	}
}
