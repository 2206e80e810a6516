package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReasonPhraseOnlyForItsAnswer: the exact phrase reaches HTTP/1.0 and
// HTTP/1.1 status lines, and an announcement, used or not, never reaches a
// later answer such as net/http's own 400 for an unparsable request.
func TestReasonPhraseOnlyForItsAnswer(t *testing.T) {
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/path":
			WriteError(w, r, Status(400, "Invalid Path"))
		case "/unused":
			// A writer in between answers another code: the phrase
			// announced for 400 is not used, and must not linger.
			WriteError(&codeWriter{ResponseWriter: w, code: 409}, r, Status(400, "Invalid Path"))
		}
	}))
	addr := srv.Listener.Addr().String()
	const (
		invalid10 = "HTTP/1.0 400 Invalid Path\r\nContent-Length: 17\r\nContent-Type: text/plain\r\nDate: -\r\n"
		invalid11 = "HTTP/1.1 400 Invalid Path\r\nContent-Length: 17\r\nContent-Type: text/plain\r\nDate: -\r\n"
		body      = "\r\n400 Invalid Path\n"
		keepAlive = "Connection: keep-alive\r\n"
		close     = "Connection: close\r\n"
		bad       = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
		conflict  = "HTTP/1.1 409 Conflict\r\nContent-Length: 17\r\nContent-Type: text/plain\r\nDate: -\r\n\r\n400 Invalid Path\n"
	)
	cases := []struct{ name, request, want string }{
		{"http/1.0", "GET /path HTTP/1.0\r\n\r\n", invalid10 + body},
		{"http/1.0 keep-alive", "GET /path HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
			invalid10 + keepAlive + body + bad},
		{"http/1.1", "GET /path HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
			invalid11 + body + bad},
		{"unused announcement", "GET /unused HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
			conflict + bad},
		{"unused then http/1.0", "GET /unused HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /path HTTP/1.0\r\n\r\n",
			conflict + invalid10 + body},
		{"after keep-alive", "GET /path HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			invalid11 + body + invalid11 + close + body},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := noDate(exchange(t, addr, c.request, false))
			if got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// codeWriter answers code whatever code it is asked for.
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (c *codeWriter) WriteHeader(int) { c.ResponseWriter.WriteHeader(c.code) }

func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestHalfCloseKeepsContext: a request followed by a half-close is answered
// in full with its context alive, and the connection then ends.
func TestHalfCloseKeepsContext(t *testing.T) {
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Wait until net/http's background read has met the client's EOF.
		c := r.Context().Value(connKey{}).(*reasonConn)
		for !c.eof.Load() {
			if r.Context().Err() != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := r.Context().Err(); err != nil {
			WriteError(w, r, fmt.Errorf("context ended: %w", err))
			return
		}
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "alive")
	}))
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		// Pipelined: both answered.
		"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		got := noDate(exchange(t, srv.Listener.Addr().String(), req, true))
		proto := req[strings.Index(req, "HTTP/"):][:8]
		one := proto + " 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nDate: -\r\n"
		if proto == "HTTP/1.0" {
			one += "Connection: keep-alive\r\n"
		}
		one += "\r\nalive"
		want := strings.Repeat(one, strings.Count(req, "GET "))
		if got != want {
			t.Errorf("%q answered\n%q\nwant\n%q", req, got, want)
		}
	}
}

// TestClientGoneAnswersNothing: WriteError closes the connection without an
// answer when the client went away.
func TestClientGoneAnswersNothing(t *testing.T) {
	srv := newWireServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		cancel()
		WriteError(w, r.WithContext(ctx), fmt.Errorf("plugin: %w", context.Canceled))
	}))
	if got := exchange(t, srv.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false); got != "" {
		t.Errorf("answered %q", got)
	}
}

func TestClientGone(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	timedOut, cancel2 := context.WithDeadline(live, time.Unix(1, 0))
	defer cancel2()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"cancelled", cancelled, context.Canceled, true},
		{"wrapped", cancelled, fmt.Errorf("x: %w", context.Canceled), true},
		{"deadline error of a cancelled request", cancelled, context.DeadlineExceeded, true},
		{"live request", live, context.Canceled, false},
		{"request's own deadline", timedOut, context.DeadlineExceeded, false},
		{"other error", cancelled, errors.New("boom"), false},
		{"status error", cancelled, ErrNotFound, false},
		{"nil", cancelled, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequestWithContext(c.ctx, "GET", "/", nil)
			if got := ClientGone(r, c.err); got != c.want {
				t.Errorf("ClientGone = %v, want %v", got, c.want)
			}
		})
	}
}

// heldConn returns a reasonConn whose peer has closed, and a read of one
// byte on it running; the read's error arrives on the channel.
func heldConn(t *testing.T) (*reasonConn, chan error) {
	t.Helper()
	a, b := net.Pipe()
	b.Close()
	c := &reasonConn{Conn: a}
	t.Cleanup(func() { c.Close() })
	errc := make(chan error, 1)
	go func() {
		var buf [1]byte
		_, err := c.Read(buf[:])
		errc <- err
	}()
	for !c.eof.Load() {
		time.Sleep(time.Millisecond)
	}
	return c, errc
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

// TestHeldRead: a one-byte read that meets EOF waits for a deadline in the
// past (net/http's abort), a deadline that passes, or Close; deadlines set
// while it waits count; ordinary reads then return io.EOF.
func TestHeldRead(t *testing.T) {
	t.Run("abort", func(t *testing.T) {
		c, errc := heldConn(t)
		c.SetReadDeadline(time.Unix(1, 0))
		if err := <-errc; !isTimeout(err) {
			t.Errorf("held read: %v, want a timeout", err)
		}
		c.SetReadDeadline(time.Time{})
		if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Errorf("next read: %d %v, want io.EOF", n, err)
		}
	})
	t.Run("deadline passes", func(t *testing.T) {
		c, errc := heldConn(t)
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if err := <-errc; !isTimeout(err) {
			t.Errorf("held read: %v, want a timeout", err)
		}
	})
	t.Run("later deadline replaced by an earlier one", func(t *testing.T) {
		c, errc := heldConn(t)
		c.SetDeadline(time.Now().Add(time.Hour))
		c.SetReadDeadline(time.Time{})
		c.SetDeadline(time.Unix(1, 0))
		if err := <-errc; !isTimeout(err) {
			t.Errorf("held read: %v, want a timeout", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		c, errc := heldConn(t)
		c.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Errorf("held read: %v, want net.ErrClosed", err)
		}
	})
	t.Run("one byte read again", func(t *testing.T) {
		c, errc := heldConn(t)
		c.SetReadDeadline(time.Unix(1, 0))
		<-errc
		c.SetReadDeadline(time.Time{})
		go func() {
			var buf [1]byte
			_, err := c.Read(buf[:])
			errc <- err
		}()
		c.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Errorf("second held read: %v, want net.ErrClosed", err)
		}
	})
	t.Run("data and larger reads pass", func(t *testing.T) {
		a, b := net.Pipe()
		c := &reasonConn{Conn: a}
		defer c.Close()
		go func() { b.Write([]byte("xy")); b.Close() }()
		var one [1]byte
		if n, err := c.Read(one[:]); n != 1 || err != nil || one[0] != 'x' {
			t.Errorf("one byte: %d %v %q", n, err, one[:n])
		}
		buf := make([]byte, 10)
		if n, err := c.Read(buf); n != 1 || err != nil {
			t.Errorf("rest: %d %v", n, err)
		}
		if n, err := c.Read(buf); n != 0 || err != io.EOF {
			t.Errorf("after the peer closed, an ordinary read: %d %v, want io.EOF at once", n, err)
		}
	})
}
