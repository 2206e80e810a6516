// Package private is the authenticated resource of the example application
// (route 8 of docs/wire.md#example-routes): GET /private/<path> answers the
// node path whose content is the remaining path. The route asks the host for
// an identity; the plugin never sees credentials.
package private

import (
	"context"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Plugin is the private plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns route 8 (the authenticated GET /private/) of the example
// application (docs/wire.md#example-routes).
func (Plugin) Routes(context.Context, plugins.Services) ([]plugins.Route, error) {
	return []plugins.Route{{Match: "GET /private/", Identity: plugins.IdentityRequired, Handler: core.Resource(resource{})}}, nil
}

type resource struct{}

// Get answers {"path": <remaining path>}.
func (resource) Get(_ context.Context, req *core.Request) (any, error) {
	return core.Node{Name: "path", Content: req.Path}, nil
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Getter    = resource{}
)
