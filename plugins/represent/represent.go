// Package represent is the plugin of the representation prefixes (routes 1
// and 2 of docs/wire.md#example-routes): /xml/<path> and /plain/<path>
// continue as the same method on /<path> with ACCEPT text/xml or text/plain,
// /json/<path> with ACCEPT application/json. Its routes only rewrite;
// matching continues.
package represent

import (
	"context"

	"github.com/reso-project/reso/plugins"
)

// Plugin is the representation plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns routes 1 and 2 of the example application
// (docs/wire.md#example-routes).
func (Plugin) Routes(context.Context, plugins.Services) ([]plugins.Route, error) {
	return []plugins.Route{
		{
			Match:   "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)",
			Rewrite: "GET,PUT,POST /%(path)s",
			Assign:  []string{"ACCEPT=text/%(type)s"},
		},
		{
			Match:   "GET,PUT,POST /json/(?P<path>.*)",
			Rewrite: "GET,PUT,POST /%(path)s",
			Assign:  []string{"ACCEPT=application/json"},
		},
	}, nil
}

var _ plugins.Plugin = Plugin{}
