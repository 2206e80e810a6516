package client_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reso-project/reso/client"
	"github.com/reso-project/reso/internal/poll"
)

// The tests of this file play servers that end connections at once, as an
// overloaded node or a balancer in front of a dead one does (issue 36):
// each attempt ends when its connection ends and the next comes after the
// back-off, not after ConnectTimeout; the back-off grows across attempts
// that open and are closed at once, and starts again after a connection
// that proved itself.

// slowTimeout is a ConnectTimeout far longer than the wait for the
// attempts: an attempt that waits it out cannot be followed by another
// within attemptsBound.
const (
	slowTimeout   = time.Minute
	attemptsBound = 30 * time.Second
	wantAttempts  = 4
)

func quick() *client.Options {
	return &client.Options{BackoffMin: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond, ConnectTimeout: slowTimeout}
}

// ending is a server that ends every connection at once; seen counts
// the connections (the attempts: the Go client makes nothing else).
type ending struct {
	url  string
	seen atomic.Int64
}

// tcpEnding serves each accepted connection with end, on a loopback port.
func tcpEnding(t *testing.T, end func(net.Conn)) *ending {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &ending{url: "ws://" + ln.Addr().String() + "/channel"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.seen.Add(1)
			go end(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return s
}

// httpEnding answers each request with h, on a loopback port.
func httpEnding(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *ending {
	t.Helper()
	s := &ending{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.seen.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel"
	return s
}

// endingServers are the servers of the tests, by what they do.
func endingServers(t *testing.T) map[string]*ending {
	return map[string]*ending{
		"resets at once": tcpEnding(t, func(c net.Conn) {
			c.(*net.TCPConn).SetLinger(0) // close sends a RST
			c.Close()
		}),
		"closes after the request": tcpEnding(t, func(c net.Conn) {
			http.ReadRequest(bufio.NewReader(c))
			c.Close()
		}),
		"upgrades and closes with 1013": httpEnding(t, func(w http.ResponseWriter, r *http.Request) {
			if c, err := websocket.Accept(w, r, nil); err == nil {
				c.Close(websocket.StatusTryAgainLater, "overloaded")
			}
		}),
		"upgrades and closes with no code": httpEnding(t, func(w http.ResponseWriter, r *http.Request) {
			if c, err := websocket.Accept(w, r, nil); err == nil {
				c.CloseNow()
			}
		}),
		"answers 503": httpEnding(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "503 Service Unavailable", http.StatusServiceUnavailable)
		}),
	}
}

// TestAttemptsEndWithTheirConnection: against a server that resets at
// once, one that closes after the request, one that upgrades and closes
// (with 1013 and with no code) and one that answers 503, the client makes
// attempt after attempt with a ConnectTimeout of a minute: each ends with
// its connection. None of them ends the client.
func TestAttemptsEndWithTheirConnection(t *testing.T) {
	for what, s := range endingServers(t) {
		t.Run(what, func(t *testing.T) {
			c := client.New(s.url, quick())
			defer c.Close()
			if !poll.Wait(attemptsBound, func() bool { return s.seen.Load() >= wantAttempts }) {
				t.Fatalf("waited %v for %d attempts (the server saw %d) with ConnectTimeout %v", attemptsBound, wantAttempts, s.seen.Load(), slowTimeout)
			}
			if err := c.Err(); err != nil {
				t.Errorf("the client ended: %v", err)
			}
		})
	}
}

// TestBackoffGrows: attempts that fail, and connections closed at once
// after the upgrade (an overloaded node's 1013, or no code), all count as
// failed attempts: the back-off grows across them instead of starting
// again at BackoffMin after each upgrade; and the attempts alternate
// between the two URLs.
func TestBackoffGrows(t *testing.T) {
	servers := endingServers(t)
	other := servers["closes after the request"]
	for _, what := range []string{"upgrades and closes with 1013", "upgrades and closes with no code", "answers 503", "resets at once"} {
		t.Run(what, func(t *testing.T) {
			s := servers[what]
			before := s.seen.Load() + other.seen.Load()
			opt := quick()
			opt.URLs = []string{other.url}
			c := client.New(s.url, opt)
			defer c.Close()
			const n = 2 * wantAttempts
			made := func() int64 { return s.seen.Load() + other.seen.Load() - before }
			if !poll.Wait(attemptsBound, func() bool { return made() >= n && client.FailedAttempts(c) >= n-1 }) {
				t.Fatalf("waited %v for %d attempts counted as failed (made %d, counted %d)", attemptsBound, n-1, made(), client.FailedAttempts(c))
			}
			if s.seen.Load() < wantAttempts-1 || other.seen.Load() < wantAttempts-1 {
				t.Errorf("attempts on %s: %d, on the other URL: %d; want them to alternate", what, s.seen.Load(), other.seen.Load())
			}
		})
	}
}

// TestBackoffAfterProvenConnection: a connection on which a frame came
// from the server proved itself: when it ends, the back-off starts again
// from BackoffMin; one that ended before any frame did not, and the count
// goes on.
func TestBackoffAfterProvenConnection(t *testing.T) {
	srv := newScripted(t)
	opt := quick()
	opt.BackoffMax = slowTimeout // a connection open that long would count as proven
	opt.ConnectTimeout = wait
	c := client.New(srv.url, opt)
	defer c.Close()
	for round := 1; round <= 3; round++ {
		p := srv.accept()
		p.close() // no frame
		if !poll.Wait(wait, func() bool { return client.FailedAttempts(c) == round }) {
			t.Fatalf("waited %v for round %d: count %d, want %d", wait, round, client.FailedAttempts(c), round)
		}
	}
	p := srv.accept()
	p.responder()
	if err := c.WaitOpen(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), "/r"); err != nil {
		t.Fatal(err)
	}
	if !poll.Wait(wait, func() bool { return client.FailedAttempts(c) == 0 }) {
		t.Fatalf("waited %v for the count reset by the first frame; it is %d", wait, client.FailedAttempts(c))
	}
}
