package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/represent"
)

// greeter is a plugin with one route; it reads a shared setting from the host.
var greeter = plugins.PluginFunc(func(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
	settings := host.Settings
	if settings == nil {
		return nil, errors.New("greeter: the host offers no settings")
	}
	return []plugins.Route{{
		Match: "GET /hello",
		Handler: core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			name, err := settings.Setting(ctx, "name")
			if err != nil {
				return nil, err
			}
			return core.Value(req, core.Node{Name: "hello", Content: name}), nil
		}),
	}}, nil
})

// Host turns the ordered plugin list into a route table for core.Router:
// the representation prefixes first, so /xml/hello reaches the greeter.
func ExampleHost() {
	m := &pluginhost.Host{
		Services:  plugins.Services{Settings: pluginhost.NewSettings(map[string]string{"name": "world"})},
		BodyLimit: 1 << 20,
	}
	table, err := m.Routes(context.Background(), []pluginhost.Entry{
		{Name: "represent", Plugin: represent.Plugin{}},
		{Name: "greeter", Plugin: greeter},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	router, err := core.NewRouter(table)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, target := range []string{"/hello", "/xml/hello"} {
		w := httptest.NewRecorder()
		router.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		fmt.Println(target, w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	// Output:
	// /hello 200 application/json {"hello": "world"}
	// /xml/hello 200 text/xml <hello>world</hello>
}
