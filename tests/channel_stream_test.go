package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	ID    string // the id: field ("" when absent)
	HasID bool
	Event string // the event: field
	Data  string // the data: lines joined by "\n"
}

// String shows the event as its fields.
func (e sseEvent) String() string {
	id := "-"
	if e.HasID {
		id = e.ID
	}
	return fmt.Sprintf("{id %s event %q data %s}", id, e.Event, e.Data)
}

// readEvent reads one event as the EventSource of a browser does: lines
// ending in LF, CRLF or CR; comments (":") skipped; "data" lines joined; an
// event is dispatched at a blank line when it had a data line. It returns
// io.EOF at the end of the stream.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	var e sseEvent
	var data []string
	hasData := false
	for {
		line, err := readSSELine(br)
		if err != nil {
			return e, err
		}
		if line == "" {
			if hasData {
				e.Data = strings.Join(data, "\n")
				return e, nil
			}
			e = sseEvent{}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data = append(data, value)
			hasData = true
		case "id":
			e.ID, e.HasID = value, true
		case "event":
			e.Event = value
		}
	}
}

// readSSELine reads one line without its end (LF, CRLF or CR).
func readSSELine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				br.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

// stream is a GET kept open on a raw connection: its answer's status line
// and header, then its body read event by event or line by line, every
// read bounded by the hang guard.
type stream struct {
	t    *testing.T
	conn net.Conn
	Resp response // status line and header; no body
	body *bufio.Reader
}

// openStream sends GET target with the headers and reads the head of the
// answer; the connection is closed when t ends.
func (cs *chanServer) openStream(target string, headers ...string) *stream {
	cs.t.Helper()
	conn, err := net.DialTimeout("tcp", cs.Addr, wait)
	if err != nil {
		cs.t.Fatal(err)
	}
	cs.t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", target, cs.Addr)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	conn.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(conn, b.String()); err != nil {
		cs.t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	line, err := peekLine(br)
	if err != nil {
		cs.t.Fatalf("GET %s: reading the status line: %v", target, err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		cs.t.Fatalf("GET %s: %v", target, err)
	}
	s := &stream{t: cs.t, conn: conn, Resp: response{StatusLine: strings.TrimRight(line, "\r\n"), Header: resp.Header}}
	s.body = bufio.NewReader(resp.Body)
	return s
}

// event returns the next Server-Sent Event or fails the test.
func (s *stream) event() sseEvent {
	s.t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(wait))
	e, err := readEvent(s.body)
	if err != nil {
		s.t.Fatalf("reading an event: %v", err)
	}
	return e
}

// line returns the next line (without its LF) of a newline-delimited JSON
// stream or fails the test.
func (s *stream) line() string {
	s.t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(wait))
	l, err := s.body.ReadString('\n')
	if err != nil {
		s.t.Fatalf("reading a line (read %q): %v", l, err)
	}
	return strings.TrimSuffix(l, "\n")
}

// TestSSEReader checks the harness's event reader on a fixed stream: the
// parsing rules of the EventSource of browsers (comments, several data
// lines, CRLF and CR ends, events without data not dispatched).
func TestSSEReader(t *testing.T) {
	t.Parallel()
	in := ": keep-alive\n\n" +
		"id: 7\ndata: {\"a\":1}\n\n" +
		"data: line 1\r\ndata:line 2\r\n\r\n" +
		"event: x\rid: 9\rdata: z\r\r" +
		"id: 10\n\n" +
		"data: last\n"
	br := bufio.NewReader(strings.NewReader(in))
	want := []sseEvent{
		{ID: "7", HasID: true, Data: `{"a":1}`},
		{Data: "line 1\nline 2"},
		{ID: "9", HasID: true, Event: "x", Data: "z"},
	}
	for i, w := range want {
		e, err := readEvent(br)
		if err != nil || e != w {
			t.Fatalf("event %d: %v %v, want %v", i, e, err, w)
		}
	}
	// An event without its blank line is never dispatched.
	if e, err := readEvent(br); err != io.EOF {
		t.Errorf("an event cut short: %v %v, want io.EOF", e, err)
	}
}
