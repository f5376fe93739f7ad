package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/internal/sockets"
)

// maxEventLine caps one line of the event stream: an event is small, so
// a longer line is a broken peer.
const maxEventLine = 1 << 20

// ErrStreamEnded is returned by Events when the supervisor ended the
// stream: it stopped, or the client fell behind and was dropped. The
// client resumes after the last event it got.
var ErrStreamEnded = errors.New("the supervisor ended the event stream")

// Events reads the supervisor's event stream (GET /v1/events) from the
// first event after since, calling fn with each in order, until ctx ends
// (nil), fn fails (its error), or the stream ends: with follow, the
// stream goes on until the supervisor ends it (ErrStreamEnded); without,
// it ends after the events the supervisor holds (nil).
func (c *Client) Events(ctx context.Context, since uint64, follow bool, fn func(api.Event) error) error {
	path := api.PathEvents
	if !follow {
		path += "?follow=false"
	}
	conn, err := sockets.Dial(ctx, c.Socket)
	if err != nil {
		return unavailable(ctx, path, c.Socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + api.Host + "\r\nConnection: close\r\nAccept: text/event-stream\r\n"
	if since > 0 {
		req += "Last-Event-ID: " + strconv.FormatUint(since, 10) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return unavailable(ctx, path, c.Socket, err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return unavailable(ctx, path, c.Socket, err)
	}
	resp, err := parseStatus(line)
	if err != nil {
		return fmt.Errorf("reading %s response: %w", path, err)
	}
	if resp.status != 200 {
		if resp.body, err = readBody(r); err != nil {
			return fmt.Errorf("reading %s response: %w", path, err)
		}
		return apiError(resp)
	}
	length, chunked, err := readHeader(r)
	if err != nil {
		return fmt.Errorf("reading %s response: %w", path, err)
	}
	var body io.Reader = r
	switch {
	case chunked:
		body = &chunkReader{r: r}
	case length >= 0:
		body = io.LimitReader(r, int64(length))
	}
	err = readEvents(bufio.NewReader(body), fn)
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, io.EOF):
		if follow {
			return ErrStreamEnded
		}
		return nil
	}
	if fe := (*fnError)(nil); errors.As(err, &fe) {
		return fe.err
	}
	return fmt.Errorf("%w: %w", ErrStreamEnded, err)
}

// fnError is an error of Events' callback, which Events returns as it is.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// readEvents parses Server-Sent Events from r: each event's data line is
// one api.Event as JSON; comments (heartbeats) and the id and event
// lines, which repeat what the JSON says, are skipped.
func readEvents(r *bufio.Reader, fn func(api.Event) error) error {
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: read the rest of it, capped.
			rest, rerr := r.ReadString('\n')
			if len(line)+len(rest) > maxEventLine {
				return fmt.Errorf("an event line is longer than %d bytes", maxEventLine)
			}
			line, err = append(append([]byte(nil), line...), rest...), rerr
		}
		if err != nil {
			return err
		}
		data, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r\n"), "data:")
		if !ok {
			continue
		}
		var e api.Event
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &e); err != nil {
			return fmt.Errorf("decoding an event: %w", err)
		}
		if err := fn(e); err != nil {
			return &fnError{err}
		}
	}
}

// chunkReader reads a chunked body as a stream: each chunk as it comes.
type chunkReader struct {
	r    *bufio.Reader
	left int64 // bytes left in the current chunk
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("reading a chunk size: %w", err)
		}
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		if _, err := c.r.Discard(2); err != nil { // the chunk's CRLF
			return n, fmt.Errorf("reading a chunk: %w", err)
		}
	}
	return n, err
}
