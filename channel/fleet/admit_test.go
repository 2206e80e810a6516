package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/channel/fleet/natstest"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware"
	wstransport "github.com/reso-project/reso/websocket"
)

// admitBehind: a node's doors behind middleware.Admit with the node's
// Behind, as app wires them (-fleet-max-lag), over real sockets. Caught
// up, the node takes WebSockets and GETs kept open; held behind the log,
// it answers a new WebSocket handshake and a GET kept open with 503, the
// reason as text and Retry-After, at once, while a WebSocket opened
// before stays open and answers; released and caught up, it takes them
// again.
func admitBehind(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{Heartbeat: time.Minute})
	w, lag := ns[0], ns[1]
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	behind := core.Status(http.StatusServiceUnavailable, "Behind the Log")
	admit := middleware.Admit(func() error {
		if lag.f.Behind() != nil {
			return behind
		}
		return nil
	}, lag.f.cfg.MaxLag)
	d := channelhost.NewHandler(lag.tree, channelhost.Options{Transport: wstransport.New(wstransport.Options{})})
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = d.Close(cctx)
	})
	srv := httptest.NewServer(admit(http.StripPrefix("/channel", d)))
	t.Cleanup(srv.Close)
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel"
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	dial := func() (*websocket.Conn, *http.Response, error) {
		c, resp, err := dialer.DialContext(ctx, wsURL, nil)
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, resp, err
	}
	// roundTrip sends a GET on c and reads its reply.
	roundTrip := func(c *websocket.Conn, id int) error {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"method":"GET","resource":"/admit?deep=0","msg_id":%d}`, id)); err != nil {
			return err
		}
		for {
			_, m, err := c.ReadMessage()
			if err != nil {
				return err
			}
			var f struct {
				MsgID *int   `json:"msg_id"`
				Code  string `json:"code"`
			}
			if err := json.Unmarshal(m, &f); err != nil {
				return err
			}
			if f.MsgID != nil && *f.MsgID == id {
				if f.Code != "success" {
					return fmt.Errorf("reply %s", m)
				}
				return nil
			}
		}
	}
	watch := func() (*http.Response, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/channel/admit?watch", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return resp, "" // a stream: its first event is enough
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// admitted dials a WebSocket, and asks for a GET kept open, until the
	// node admits them: a node that is not held may still be behind for
	// a moment on a loaded machine, and then refuses them, rightly.
	admitted := func(what string) *websocket.Conn {
		t.Helper()
		for {
			c, resp, err := dial()
			if err == nil {
				if resp, body := watch(); resp.StatusCode == http.StatusOK {
					return c
				} else if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("%s, a GET kept open got %d %q", what, resp.StatusCode, body)
				}
			} else if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s, a WebSocket handshake got %v: %v", what, resp, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s, the node refused new connections for a minute (%v)", what, lag.f.Behind())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wc := connect(t, w, "")
	if r := wc.do(`{"method":"PUT","resource":"/admit","entity":{},"persistent":true}`); code(r) != "success" {
		t.Fatal(r)
	}
	before := admitted("caught up")
	if err := roundTrip(before, 1); err != nil {
		t.Fatal(err)
	}

	h := make(chan struct{})
	lag.f.held.Store(&h)
	released := false
	release := func() {
		if !released {
			released = true
			lag.f.held.Store(nil)
			close(h)
		}
	}
	defer release()
	// Awaited: the held node is behind (it knows of the write below for
	// longer than MaxLag without applying it); until then it may admit.
	for i := 0; ; i++ {
		if r := wc.do(fmt.Sprintf(`{"method":"PUT","resource":"/admit/x%d","entity":{},"persistent":true}`, i)); code(r) != "success" {
			t.Fatal(r)
		}
		if lag.f.Behind() != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the held node is not behind the log a minute on")
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, resp, err := dial()
	if c != nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("behind, a WebSocket handshake got %v, %v; want 503", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "503 Behind the Log\n" || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("behind, a WebSocket handshake got %q %q; want 503 Behind the Log as text with Retry-After 2", resp.Header, body)
	}
	if resp, body := watch(); resp.StatusCode != http.StatusServiceUnavailable || body != "503 Behind the Log\n" || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("behind, a GET kept open got %d %q %q", resp.StatusCode, resp.Header, body)
	}
	// The WebSocket opened before stays and answers (a GET reads the
	// local tree once its barrier is applied: after the release).
	release()
	if err := roundTrip(before, 2); err != nil {
		t.Fatalf("the WebSocket opened before the node fell behind: %v", err)
	}
	// Awaited: caught up, the node takes new connections again.
	applied, _ := w.f.Position()
	if err := lag.tree.WaitApplied(ctx, applied); err != nil {
		t.Fatal(err)
	}
	for {
		err := lag.f.Behind()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("released node: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := admitted("caught up again")
	if err := roundTrip(after, 3); err != nil {
		t.Fatal(err)
	}
}
