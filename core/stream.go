package core

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Media types of streamed answers (see [WriteStream]).
const (
	TypeEventStream = "text/event-stream"
	TypeNDJSON      = "application/x-ndjson"
)

// DefaultKeepAlive is how long a stream stays silent before [WriteStream]
// writes a keep-alive (an SSE comment line, or an empty NDJSON line).
const DefaultKeepAlive = 15 * time.Second

// Event is one event of a streamed answer. ID and Name become the id: and
// event: lines of a Server-Sent Event (left out when empty; NDJSON carries
// only the value). Value is rendered like any value (see [Render]); an
// [EventData] value is written as it is.
type Event struct {
	ID, Name string
	Value    any
}

// EventSource is a streamed answer ([Response].Stream): the host calls Next
// until it returns an error, and then Close, exactly once, whatever ended
// the stream (the end of the source, a client that went away, the server's
// shutdown). Next returns io.EOF at the end; it must return when ctx ends
// (the client went away or the server is shutting down), with ctx's error.
// A source uses the ctx given to Next: the handler's own context may end
// before the stream does. Next and Close are never called concurrently.
type EventSource interface {
	Next(ctx context.Context) (Event, error)
	Close() error
}

// EventData is an event value already rendered for the stream it goes to
// (see [RenderEvent]): the stream writer writes its bytes unchanged. An
// isolated plugin's events cross the process boundary as EventData, so they
// reach the wire byte for byte as they would compiled in.
type EventData []byte

// EventStream reports whether a request with header h asks for Server-Sent
// Events: its Accept header names text/event-stream (parameters and case
// aside). Otherwise a stream is written as newline-delimited JSON.
func EventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), TypeEventStream) {
				return true
			}
		}
	}
	return false
}

// RenderEvent returns the data of an event whose value is v: for
// Server-Sent Events (sse) v rendered in the request's representation (its
// ACCEPT variable, see [Request.Accept]), else v rendered as JSON. An
// [EventData] v is returned as it is.
func RenderEvent(req *Request, sse bool, v any) []byte {
	if d, ok := v.(EventData); ok {
		return d
	}
	if !sse {
		return AppendJSON(nil, v)
	}
	typ := "application/json"
	if req != nil {
		typ = req.Accept()
	}
	if Negotiate(typ) == TypeHTML {
		// An event is a fragment, not a page.
		return appendHTMLFragment(nil, v)
	}
	_, body := Render(typ, v)
	return body
}

// StreamOptions tunes [WriteStream]. The zero value keeps alive every
// [DefaultKeepAlive] and ends the stream only with its source or client.
type StreamOptions struct {
	// KeepAlive is the silence after which a keep-alive is written; 0 means
	// DefaultKeepAlive, a negative value none.
	KeepAlive time.Duration
	// Stop, when closed, ends the stream as if the client had gone away
	// (the server is shutting down). Nil never does.
	Stop <-chan struct{}
}

// appendSSE appends one Server-Sent Event: id and event lines when set,
// then one data: line per line of data (a trailing line break dropped; CR,
// LF and CRLF all break lines), then the blank line that ends the event.
func appendSSE(dst []byte, id, name string, data []byte) []byte {
	if id != "" {
		dst = append(dst, "id: "...)
		dst = appendSSEField(dst, id)
		dst = append(dst, '\n')
	}
	if name != "" {
		dst = append(dst, "event: "...)
		dst = appendSSEField(dst, name)
		dst = append(dst, '\n')
	}
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
		if n := len(data); n > 0 && data[n-1] == '\r' {
			data = data[:n-1]
		}
	} else if n > 0 && data[n-1] == '\r' {
		data = data[:n-1]
	}
	for {
		dst = append(dst, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			dst = append(dst, data...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n')
}

// appendSSEField appends an id or event name, its line breaks replaced by
// spaces (a field is one line).
func appendSSEField(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// WriteStream writes a streamed answer (resp.Stream): the status line,
// resp's headers and cookies, then each event as the source gives it,
// flushed at once. A request whose Accept header asks for
// text/event-stream (see [EventStream]) gets Server-Sent Events
// (Content-Type: text/event-stream; "id: ID", "event: NAME", one "data: "
// line per line of the value rendered in the request's representation, a
// blank line); any other gets newline-delimited JSON (Content-Type:
// application/x-ndjson; one line of JSON per event). Both get
// Cache-Control: no-cache. After opt.KeepAlive of silence a keep-alive is
// written (":" and a blank line for SSE, an empty line for NDJSON), so
// proxies keep the stream and a client that went away is noticed: a failed
// write ends the stream.
//
// The stream ends when the source ends (io.EOF or another error), the
// request's context ends, the client closes its connection (a [Listen]
// connection tells at once, although it holds that io.EOF back from
// net/http), a write fails or opt.Stop is closed; the context
// given to Next is then cancelled, and Close is called exactly once, after
// Next has returned. A HEAD request gets the header only (the source is
// closed unread).
func WriteStream(w http.ResponseWriter, r *http.Request, resp *Response, opt StreamOptions) {
	src := resp.Stream
	defer src.Close()
	req := Prepare(r)
	sse := EventStream(r.Header)
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	h.Del("Content-Length")
	if sse {
		h.Set("Content-Type", TypeEventStream)
	} else {
		h.Set("Content-Type", TypeNDJSON)
	}
	h.Set("Cache-Control", "no-cache")
	for _, c := range resp.Cookies {
		http.SetCookie(w, c)
	}
	code := resp.Code
	if code == 0 {
		code = http.StatusOK
	}
	WriteStatus(w, r, code, resp.Reason)
	rc := http.NewResponseController(w)
	if r.Method == http.MethodHead {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	keepAlive := opt.KeepAlive
	if keepAlive == 0 {
		keepAlive = DefaultKeepAlive
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// A client that closed its connection is gone, although the connection
	// holds its io.EOF back for half-closing clients (see Listen): a stream
	// would otherwise only notice at its next write.
	gone := peerGone(r)
	type next struct {
		ev  Event
		err error
	}
	events := make(chan next)
	var producer sync.WaitGroup
	producer.Go(func() {
		for {
			ev, err := src.Next(ctx)
			select {
			case events <- next{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	// Close (deferred above) runs after Next has returned.
	defer producer.Wait()
	defer cancel()

	var tick <-chan time.Time
	var ticker *time.Ticker
	if keepAlive > 0 {
		ticker = time.NewTicker(keepAlive)
		defer ticker.Stop()
		tick = ticker.C
	}
	var buf []byte
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if ticker != nil {
			ticker.Reset(keepAlive)
		}
		return true
	}
	for {
		select {
		case n := <-events:
			if n.err != nil {
				return // io.EOF, or a failure: the stream ends either way
			}
			data := RenderEvent(req, sse, n.ev.Value)
			buf = buf[:0]
			if sse {
				buf = appendSSE(buf, n.ev.ID, n.ev.Name, data)
			} else {
				buf = append(append(buf, bytes.TrimRight(data, "\r\n")...), '\n')
			}
			if !write(buf) {
				return
			}
		case <-tick:
			ka := []byte("\n")
			if sse {
				ka = []byte(":\n\n")
			}
			if !write(ka) {
				return
			}
		case <-ctx.Done():
			return
		case <-gone:
			return
		case <-opt.Stop:
			return
		}
	}
}

// EventsFunc adapts a function that sends events on a channel to an
// [EventSource]: f runs in its own goroutine when Next is first called,
// sends events on out until it returns, and must return when ctx ends. Its
// error (nil means io.EOF) ends the stream. Close cancels ctx and waits for
// f to return.
func EventsFunc(f func(ctx context.Context, out chan<- Event) error) EventSource {
	return &funcSource{f: f}
}

type funcSource struct {
	f      func(ctx context.Context, out chan<- Event) error
	start  sync.Once
	out    chan Event
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

func (s *funcSource) Next(ctx context.Context) (Event, error) {
	s.start.Do(func() {
		var fctx context.Context
		fctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
		s.out = make(chan Event)
		s.done = make(chan struct{})
		go func() {
			defer close(s.done)
			err := s.f(fctx, s.out)
			if err == nil {
				err = io.EOF
			}
			s.err = err
		}()
	})
	select {
	case ev := <-s.out:
		return ev, nil
	case <-s.done:
		return Event{}, s.err
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

func (s *funcSource) Close() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	return nil
}

var (
	_ EventSource = (*funcSource)(nil)
)
