package channelhost_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
)

// NewHandler mounts the doors of a tree on a plain net/http server, under
// /rt/channel, behind the server's own authentication, which names the
// caller with core.NewIdentityContext (auth.Optional does the same).
func ExampleNewHandler() {
	tree, err := channel.New(context.Background(), nil, channel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tree.Close()
	d := channelhost.NewHandler(tree, channelhost.Options{})
	defer d.Close(context.Background())

	// The server's own authentication: X-User names the caller.
	identify := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u := r.Header.Get("X-User"); u != "" {
				r = r.WithContext(core.NewIdentityContext(r.Context(), &core.Identity{Email: u}))
			}
			next.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	h := identify(http.StripPrefix("/rt/channel", d))
	mux.Handle("/rt/channel", h)  // the WebSocket door
	mux.Handle("/rt/channel/", h) // the HTTP door and GET kept open
	srv := httptest.NewServer(mux)
	defer srv.Close()
	srv.Config.RegisterOnShutdown(d.GoAway)

	do := func(method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-User", "ann@example.com")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(method, path, resp.Status, resp.Header.Get("Location"), string(b))
	}
	do("PUT", "/rt/channel/rooms/lobby", `{"topic": "welcome"}`)
	do("GET", "/rt/channel/rooms/lobby", "")
	do("GET", "/rt/channel/rooms/lobby?rules", "")
	// Output:
	// PUT /rt/channel/rooms/lobby 200 OK  {}
	// GET /rt/channel/rooms/lobby 200 OK  {"topic":"welcome"}
	// GET /rt/channel/rooms/lobby?rules 200 OK  {"resource":"/rooms/lobby","rules":"","group":null,"owner":"ann@example.com","effective":"self:cruds group:cruds auth:cruds anon:cruds"}
}

// The WebSocket door alone, mounted at /live: each text message is one
// message for the tree, replies and notifications come back as text
// messages (docs/channel.md#the-websocket-door).
func ExampleHandler_WebSocket() {
	tree, err := channel.New(context.Background(), nil, channel.Options{Epoch: "e1"}) // fixed for the output
	if err != nil {
		log.Fatal(err)
	}
	defer tree.Close()
	d := channelhost.NewHandler(tree, channelhost.Options{})
	defer d.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/live", d.WebSocket())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/live", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, msg := range []string{
		`{"method":"SUBSCRIBE","resource":"/rooms/lobby","msg_id":1}`,
		`{"method":"PUT","resource":"/rooms/lobby","entity":{"topic":"welcome"},"msg_id":2}`,
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			log.Fatal(err)
		}
	}
	for range 3 {
		_, frame, err := c.ReadMessage()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(regexp.MustCompile(`"from":"[^"]*"`).ReplaceAllString(string(frame), `"from":"..."`))
	}
	// Output:
	// {"msg_id":1,"code":"success","epoch":"e1"}
	// {"notify":"PUT","resource":"/rooms/lobby","type":"application/json","entity":{"topic":"welcome"},"from":"...","seq":1}
	// {"msg_id":2,"code":"success"}
}

// The GET kept open alone, mounted under /watch/: a GET of a tree path
// answers its state, then each change (Server-Sent Events for a client
// that asks for text/event-stream, else one JSON line each).
func ExampleHandler_Watch() {
	tree, err := channel.New(context.Background(), nil, channel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tree.Close()
	d := channelhost.NewHandler(tree, channelhost.Options{})
	defer d.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/watch/", http.StripPrefix("/watch", d.Watch()))
	mux.Handle("/rooms/", d.HTTP()) // the HTTP door at the root: /rooms/... is the tree path
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/watch/rooms/lobby")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	state, _ := lines.ReadString('\n')
	fmt.Print(state)
	req, _ := http.NewRequest("PUT", srv.URL+"/rooms/lobby", strings.NewReader(`{"topic":"welcome"}`))
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	put.Body.Close()
	change, _ := lines.ReadString('\n')
	fmt.Print(regexp.MustCompile(`"from":"[^"]*"`).ReplaceAllString(change, `"from":"..."`))
	// Output:
	// {"resource":"/rooms/lobby","type":null,"entity":null}
	// {"notify":"PUT","resource":"/rooms/lobby","type":"application/json","entity":{"topic":"welcome"},"from":"...","seq":1}
}
