package doors_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins/doors"
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
	d := doors.NewHandler(tree, doors.Options{})
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
