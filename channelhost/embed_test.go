package channelhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/middleware/auth/sqlitestore"
)

const (
	annEmail    = "ann@example.com"
	annPassword = "secret"
)

// embedded is a plain net/http server that mounts the doors of a tree the
// obvious way, behind auth.Optional: all of them under /rt/channel, each
// door alone under /ws, /http and /watch, and the HTTP door as a
// core.Handler under /raw.
type embedded struct {
	srv   *httptest.Server
	doors *channelhost.Handler
}

func newEmbedded(t *testing.T) *embedded {
	t.Helper()
	ctx := t.Context()
	rules, err := channel.ParseRules(strings.NewReader("/p self:cruds group:cruds auth:cruds anon:r\n/q self:cruds group:cruds auth:cruds anon:-\n"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := channel.New(ctx, nil, channel.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	store, err := sqlitestore.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	secret, err := auth.LoadSecret("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Store: store, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Register(ctx, annEmail, annPassword); err != nil {
		t.Fatal(err)
	}
	d := channelhost.NewHandler(tree, channelhost.Options{Challenge: a.Challenge})
	optional := auth.Optional(a)
	mux := http.NewServeMux()
	all := optional(http.StripPrefix("/rt/channel", d))
	mux.Handle("/rt/channel", all)
	mux.Handle("/rt/channel/", all)
	mux.Handle("/ws", optional(http.StripPrefix("/ws", d.WebSocket())))
	mux.Handle("/http/", optional(http.StripPrefix("/http", d.HTTP())))
	mux.Handle("/watch/", optional(http.StripPrefix("/watch", d.Watch())))
	// The door as a core.Handler, mounted with core.HTTP alone.
	mux.Handle("/raw/", optional(http.StripPrefix("/raw", core.HTTP(&doors.Door{Tree: channelhost.TreeOf(tree)}))))
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = core.Listen(srv.Listener)
	srv.Config.ConnContext = core.ConnContext
	srv.Config.RegisterOnShutdown(d.GoAway)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &embedded{srv: srv, doors: d}
}

// do sends a request, as ann when ann is set, and returns the status line,
// the Location and WWW-Authenticate headers and the body.
func (e *embedded) do(t *testing.T, method, path, body string, ann bool) (status, location, challenge, text string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if ann {
		req.SetBasicAuth(annEmail, annPassword)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, resp.Header.Get("Location"), resp.Header.Get("WWW-Authenticate"), string(b)
}

// owner reads the owner of the tree path p through the HTTP door.
func (e *embedded) owner(t *testing.T, p string) string {
	t.Helper()
	status, _, _, body := e.do(t, "GET", "/rt/channel"+p+"?rules", "", true)
	var r struct{ Owner string }
	if err := json.Unmarshal([]byte(body), &r); err != nil || status != "200 OK" {
		t.Fatalf("RULES %s: %s %s", p, status, body)
	}
	return r.Owner
}

// dial opens a WebSocket to path, as ann when ann is set.
func (e *embedded) dial(t *testing.T, path string, ann bool) *gorilla.Conn {
	t.Helper()
	h := http.Header{}
	if ann {
		req, _ := http.NewRequest("GET", "/", nil)
		req.SetBasicAuth(annEmail, annPassword)
		h = req.Header
	}
	c, resp, err := gorilla.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+path, h)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

// exec sends one message on c and returns the code of its reply.
func exec(t *testing.T, c *gorilla.Conn, msg string) string {
	t.Helper()
	if err := c.WriteMessage(gorilla.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			MsgID int `json:"msg_id"`
			Code  string
		}
		if json.Unmarshal(data, &r) == nil && r.MsgID != 0 {
			return r.Code
		}
	}
}

// TestEmbeddedIdentity mounts every door the obvious way behind
// auth.Optional and checks that an authenticated write is seen as that
// user (the rule auth:cruds anon:r lets only her write), that an
// anonymous one is refused, and that a GET kept open of a path only
// authenticated callers read opens for her alone.
func TestEmbeddedIdentity(t *testing.T) {
	e := newEmbedded(t)
	for _, door := range []string{"/rt/channel", "/http", "/raw"} {
		path := "/p/" + strings.TrimPrefix(door, "/rt/")
		if status, _, challenge, _ := e.do(t, "PUT", door+path, `{"a":1}`, false); status != "401 Unauthorized" || (challenge == "") != (door == "/raw") {
			t.Errorf("%s: anonymous PUT: %s, challenge %q", door, status, challenge)
		}
		if status, _, _, body := e.do(t, "PUT", door+path, `{"a":1}`, true); status != "200 OK" {
			t.Fatalf("%s: PUT as ann: %s %s", door, status, body)
		}
		if got := e.owner(t, path); got != annEmail {
			t.Errorf("%s: owner %q, want %q", door, got, annEmail)
		}
	}
	for _, door := range []string{"/rt/channel", "/ws"} {
		path := "/p/ws" + strings.ReplaceAll(door, "/", "-")
		anon := e.dial(t, door, false)
		if code := exec(t, anon, `{"method":"PUT","resource":"`+path+`","entity":1,"msg_id":1}`); code == "success" {
			t.Errorf("%s: anonymous PUT over WebSocket succeeded", door)
		}
		c := e.dial(t, door, true)
		if code := exec(t, c, `{"method":"PUT","resource":"`+path+`","entity":1,"msg_id":1}`); code != "success" {
			t.Fatalf("%s: PUT as ann over WebSocket: %s", door, code)
		}
		if got := e.owner(t, path); got != annEmail {
			t.Errorf("%s: owner %q, want %q", door, got, annEmail)
		}
	}
	if status, _, _, body := e.do(t, "PUT", "/http/q/x", `{"b":2}`, true); status != "200 OK" {
		t.Fatalf("PUT /q/x: %s %s", status, body)
	}
	for _, door := range []string{"/rt/channel", "/watch"} {
		target := door + "/q/x"
		if door == "/rt/channel" {
			target += "?watch"
		}
		if status, _, _, _ := e.do(t, "GET", target, "", false); status != "401 Unauthorized" {
			t.Errorf("%s: anonymous GET kept open: %s", door, status)
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+target, nil)
		req.SetBasicAuth(annEmail, annPassword)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
		if resp.Status != "200 OK" || !strings.Contains(line, `"entity":{"b":2}`) {
			t.Errorf("%s: GET kept open as ann: %s %q %v", door, resp.Status, line, err)
		}
	}
}

// TestEmbeddedLocation checks that answers name paths as the client sees
// them: a POST through the HTTP door mounted under /rt/channel answers
// Location: /rt/channel/...; and that a door refuses methods it does not
// serve.
func TestEmbeddedLocation(t *testing.T) {
	e := newEmbedded(t)
	for _, door := range []string{"/rt/channel", "/http", "/raw"} {
		status, location, _, body := e.do(t, "POST", door+"/p/a%20room", `{"m":"hi"}`, true)
		if status != "201 Created" || !strings.HasPrefix(location, door+"/p/a%20room/") {
			t.Fatalf("%s: POST: %s, Location %q, %s", door, status, location, body)
		}
		if status, _, _, body := e.do(t, "GET", location, "", false); status != "200 OK" || body != `{"m":"hi"}` {
			t.Errorf("%s: GET %s: %s %s", door, location, status, body)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"PATCH", "/rt/channel/p"},
		{"POST", "/rt/channel"},
		{"PUT", "/watch/p"},
		{"DELETE", "/ws"},
	} {
		if status, _, _, _ := e.do(t, c.method, c.path, "", true); status != "405 Method Not Allowed" {
			t.Errorf("%s %s: %s", c.method, c.path, status)
		}
	}
}
