package websocket

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
)

// finalListener counts the connections it accepted that the garbage
// collector found unreachable, with a finalizer on each.
type finalListener struct {
	net.Listener
	accepted, freed atomic.Int64
}

func (l *finalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
		runtime.SetFinalizer(c, func(any) { l.freed.Add(1) })
	}
	return c, err
}

// An open session over a connection of core.Listen (as reso serves) keeps
// none of core's wrapper of it: the wrapper, its request slot and scratch
// space serve net/http only, and an idle WebSocket that kept them would
// hold 0.6 KiB more for its whole life.
func TestSessionLetsCoreWrapperGo(t *testing.T) {
	tr := New(Options{})
	sessions := make(chan core.Session, 1)
	router := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := tr.Accept(w, r, "mem")
		if err != nil {
			core.WriteError(w, r, err)
			return
		}
		sessions <- s // the handler returns; the session lives on
	})
	srv := httptest.NewUnstartedServer(router)
	// The finalizers go on core's wrappers, which core.Listen returns.
	fl := &finalListener{Listener: core.Listen(srv.Listener)}
	srv.Listener = fl
	srv.Config.ConnContext = core.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)

	c := mustDial(t, srv)
	s := <-sessions
	ctx := context.Background()
	if err := s.Send(ctx, core.Message{Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.ReadMessage(); err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
	if n := fl.accepted.Load(); n != 1 {
		t.Fatalf("%d connections accepted, want 1", n)
	}
	deadline := time.Now().Add(wait)
	for fl.freed.Load() == 0 {
		runtime.GC()
		if time.Now().After(deadline) {
			t.Fatal("core's wrapper of the connection is still reachable while the session is open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The session still works both ways over what it kept.
	if err := c.WriteMessage(websocket.TextMessage, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv(ctx)
	if err != nil || string(m.Data) != "ping" {
		t.Fatalf("Recv %q, %v", m.Data, err)
	}
	if err := s.Send(ctx, core.Message{Data: []byte("pong")}); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.ReadMessage(); err != nil || string(b) != "pong" {
		t.Fatalf("read %q, %v", b, err)
	}
	_ = s.Close(core.CloseNormal, "")
}
