package core

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// pairListen returns the server side of a loopback TCP connection accepted
// by a Listen listener, and the client side.
func pairListen(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = Listen(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, client
}

// readResult reads from c in a goroutine and returns the channel of its
// result.
func readResult(c net.Conn, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, n))
		done <- err
	}()
	return done
}

// awaitRead waits, with a bound, for the result of a read started with
// readResult.
func awaitRead(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the read did not return within 10s", what)
		return nil
	}
}

// TestReadDeadlines checks that read deadlines set on a Listen connection
// while no read is in progress (which reach the connection underneath only
// before its next read) act as they would on the connection itself: on the
// next read, on a read in progress, and on the connection Hijacked returns.
func TestReadDeadlines(t *testing.T) {
	past := time.Unix(1, 0)
	t.Run("set before the read", func(t *testing.T) {
		s, _ := pairListen(t)
		s.SetReadDeadline(past)
		err := awaitRead(t, readResult(s, 10), "deadline in the past")
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after a deadline in the past: %v, want a timeout", err)
		}
		// Cleared, then a new one: the last one counts.
		s.SetReadDeadline(time.Time{})
		s.SetReadDeadline(past)
		if err := awaitRead(t, readResult(s, 10), "deadline in the past again"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after clearing and a deadline in the past: %v, want a timeout", err)
		}
	})
	t.Run("cleared before the read", func(t *testing.T) {
		s, c := pairListen(t)
		s.SetReadDeadline(past)
		s.SetReadDeadline(time.Time{})
		done := readResult(s, 10)
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := awaitRead(t, done, "deadline cleared"); err != nil {
			t.Fatalf("read after the deadline was cleared: %v", err)
		}
	})
	t.Run("set during the read", func(t *testing.T) {
		s, _ := pairListen(t)
		s.SetReadDeadline(time.Now().Add(time.Hour))
		done := readResult(s, 10)
		rc := s.(*reasonConn)
		for deadline := time.Now().Add(10 * time.Second); rc.reading.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the read did not start within 10s")
			}
			time.Sleep(time.Millisecond)
		}
		s.SetReadDeadline(past)
		if err := awaitRead(t, done, "deadline set during the read"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read given a deadline in the past: %v, want a timeout", err)
		}
	})
	t.Run("hijacked", func(t *testing.T) {
		s, c := pairListen(t)
		s.SetReadDeadline(past)
		raw := Hijacked(s)
		if err := awaitRead(t, readResult(raw, 10), "hijacked, deadline in the past"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read of the hijacked connection after a deadline in the past: %v, want a timeout", err)
		}
		s2, c2 := pairListen(t)
		s2.SetReadDeadline(past)
		s2.SetReadDeadline(time.Time{})
		raw = Hijacked(s2)
		done := readResult(raw, 10)
		if _, err := c2.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := awaitRead(t, done, "hijacked, deadline cleared"); err != nil {
			t.Fatalf("read of the hijacked connection after the deadline was cleared: %v", err)
		}
		_ = c
	})
}

// TestConnContextValuesBelow checks that core's values carried by the
// context a connection's context derives from (a server's BaseContext) are
// found through it, and that those it does not carry are not.
func TestConnContextValuesBelow(t *testing.T) {
	s, _ := pairListen(t)
	id := &Identity{ID: 7}
	rec := &RouteRecorder{}
	base := context.WithValue(NewIdentityContext(WithRouteRecorder(context.Background(), rec), id), showErrorsKey{}, true)
	ctx := ConnContext(base, s)
	if got := IdentityFromContext(ctx); got != id {
		t.Errorf("identity below the connection's context: %v, want %v", got, id)
	}
	if got := RouteRecorderFrom(ctx); got != rec {
		t.Errorf("route recorder below the connection's context: %p, want %p", got, rec)
	}
	if !showErrors(ctx) {
		t.Error("ShowErrors below the connection's context: not seen")
	}
	bare := ConnContext(context.Background(), s)
	if got := IdentityFromContext(bare); got != nil {
		t.Errorf("identity of a bare connection context: %v, want none", got)
	}
	if got := RouteRecorderFrom(bare); got != nil {
		t.Errorf("route recorder of a bare connection context: %p, want none", got)
	}
	if showErrors(bare) {
		t.Error("ShowErrors of a bare connection context: seen")
	}
	above := NewIdentityContext(bare, id)
	if got := IdentityFromContext(above); got != id {
		t.Errorf("identity above the connection's context: %v, want %v", got, id)
	}
}
