package websocket_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	gorilla "github.com/gorilla/websocket"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/websocket"
)

// echo is a plugin with one session route that sends back what it gets.
var echo = plugins.PluginFunc(func(context.Context, plugins.Services) ([]plugins.Route, error) {
	return []plugins.Route{{
		Match: "GET /echo",
		Session: core.SessionHandlerFunc(func(ctx context.Context, _ *core.Request, s core.Session) error {
			for {
				m, err := s.Recv(ctx)
				if err != nil {
					return nil // the client closed: nothing failed
				}
				if err := s.Send(ctx, m); err != nil {
					return nil
				}
			}
		}),
	}}, nil
})

// New gives the host its WebSocket door: session routes then accept
// WebSocket handshakes, with the default limits.
func ExampleNew() {
	host := &pluginhost.Host{Services: plugins.Services{Settings: pluginhost.NewSettings(nil)}, BodyLimit: 1 << 20}
	host.Sessions = websocket.New(websocket.Options{
		Origins: []string{"https://app.example.org"},
	})
	table, err := host.Routes(context.Background(), []pluginhost.Entry{{Name: "echo", Plugin: echo}})
	if err != nil {
		fmt.Println(err)
		return
	}
	router, err := core.NewRouter(table)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(router)
	defer srv.Close()

	c, _, err := gorilla.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/echo", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_ = c.WriteMessage(gorilla.TextMessage, []byte(`{"hello": "world"}`))
	typ, p, err := c.ReadMessage()
	fmt.Println(typ == gorilla.TextMessage, string(p), err)
	// Output:
	// true {"hello": "world"} <nil>
}
