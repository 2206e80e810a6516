// Package represent is the plugin of the representation prefixes (routes 1
// and 2 of docs/wire.md#example-routes): /xml/<path>, /plain/<path> and
// /html/<path> continue as the same method on /<path> with ACCEPT text/xml,
// text/plain or text/html (and LINK_PREFIX /xml, /plain or /html, which HTML
// pages put before the urls they link, so that they link to HTML pages),
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
			Match:   "GET,PUT,POST /(?P<type>xml|plain|html)/(?P<path>.*)",
			Rewrite: "GET,PUT,POST /%(path)s",
			Assign:  []string{"ACCEPT=text/%(type)s", "LINK_PREFIX=/%(type)s"},
		},
		{
			Match:   "GET,PUT,POST /json/(?P<path>.*)",
			Rewrite: "GET,PUT,POST /%(path)s",
			Assign:  []string{"ACCEPT=application/json"},
		},
	}, nil
}

var _ plugins.Plugin = Plugin{}
