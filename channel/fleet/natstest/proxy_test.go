package natstest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// echo is a loopback server that sends back every line it gets, each
// prefixed with its name, and keeps what it got.
type echo struct {
	name string
	ln   net.Listener
	mu   sync.Mutex
	got  []string
}

// startEcho starts an echo server until t ends.
func startEcho(t *testing.T, name string) *echo {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{name: name, ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(time.Minute))
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					e.mu.Lock()
					e.got = append(e.got, strings.TrimSpace(line))
					e.mu.Unlock()
					if _, err := io.WriteString(c, e.name+" "+line); err != nil {
						return
					}
				}
			})
		}
	})
	return e
}

// lines returns what e got.
func (e *echo) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// call sends line on c and returns the answer's line, or the error.
func call(c net.Conn, r *bufio.Reader, line string) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	s, err := r.ReadString('\n')
	return strings.TrimSpace(s), err
}

// TestProxy: a proxy passes bytes both ways to its target; SetTarget
// sends new connections elsewhere; Stall holds what is sent (the target
// gets nothing) until Heal delivers it in order; Drop ends the open
// connections and resets new ones until Heal.
func TestProxy(t *testing.T) {
	a, b := startEcho(t, "a"), startEcho(t, "b")
	p, err := NewProxy(a.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	c, r := dial()
	if got, err := call(c, r, "1"); got != "a 1" || err != nil {
		t.Fatalf("through the proxy: %q, %v; want \"a 1\"", got, err)
	}
	if n := p.Conns(); n != 1 {
		t.Errorf("Conns() = %d, want 1", n)
	}

	p.SetTarget(b.ln.Addr().String())
	c2, r2 := dial()
	if got, err := call(c2, r2, "2"); got != "b 2" || err != nil {
		t.Fatalf("after SetTarget: %q, %v; want \"b 2\"", got, err)
	}
	if got, err := call(c, r, "3"); got != "a 3" || err != nil {
		t.Fatalf("the connection open before SetTarget: %q, %v; want \"a 3\"", got, err)
	}

	p.Stall()
	if _, err := io.WriteString(c2, "4\n"); err != nil {
		t.Fatal(err)
	}
	c2.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if s, err := r2.ReadString('\n'); !isTimeout(err) || s != "" {
		t.Fatalf("while stalled: read %q, %v; want nothing", s, err)
	}
	if got := b.lines(); len(got) != 1 {
		t.Fatalf("while stalled the target got %q, want only the line before", got)
	}
	p.Heal()
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if s, err := r2.ReadString('\n'); strings.TrimSpace(s) != "b 4" || err != nil {
		t.Fatalf("healed: %q, %v; want \"b 4\"", s, err)
	}

	p.Drop()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("dropped: an open connection still reads")
	}
	// A new connection is reset: by the time the dial returns (its
	// error then) or at its first read.
	if c3, err := net.Dial("tcp", p.Addr()); err == nil {
		defer c3.Close()
		c3.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c3, "5\n")
		if _, err := bufio.NewReader(c3).ReadString('\n'); err == nil {
			t.Fatal("dropped: a new connection was passed on")
		}
	}
	p.Heal()
	c4, r4 := dial()
	if got, err := call(c4, r4, "6"); got != "b 6" || err != nil {
		t.Fatalf("healed after the drop: %q, %v; want \"b 6\"", got, err)
	}
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
